/* nicemu's MPI on the UZURA card (docs/mpi.md): the MPI-3.1 C bindings of
 * the subset nicemu implements, over nicemu/uzura.h. Build with
 *     nicemu-mpicc prog.c -o prog
 * (or -I<prefix>/include/nicemu/mpi and the nicemu host library), run with
 *     nicemu run -n 2 --model uzura --firmware uzura.img -- ./prog
 *
 * Handles are integers, as in MPICH: a kind in the top byte, an index
 * below; every kind's null handle has index 0. MPI_Comm, MPI_Datatype and
 * the other handle types are therefore one C type: the compiler does not
 * catch a communicator passed as a datatype, the library does (MPI_ERR_COMM,
 * MPI_ERR_TYPE).
 *
 * Every function declared here works as MPI-3.1 says, with the limits
 * docs/mpi.md lists, or (the few marked "unsupported") returns
 * MPI_ERR_UNSUPPORTED_OPERATION through the error handler. Functions of
 * MPI-3.1 not declared here are not provided.
 *
 * MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are null pointers, as in Open
 * MPI.
 *
 * This header includes <stddef.h> only (never <errno.h>: some programs
 * declare a variable named errno). */
#ifndef NICEMU_MPI_H
#define NICEMU_MPI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPI_VERSION 3
#define MPI_SUBVERSION 1
#define NICEMU_MPI 1 /* this is nicemu's MPI */

/* ---- Integer types ------------------------------------------------------- */
typedef ptrdiff_t MPI_Aint; /* signed, as wide as a pointer */
#if defined(__GNUC__) && !defined(__cplusplus)
__extension__ typedef long long MPI_Offset; /* quiet under C89 -pedantic */
__extension__ typedef long long MPI_Count;
#else
typedef long long MPI_Offset;
typedef long long MPI_Count;
#endif

/* ---- Handles ------------------------------------------------------------- */
typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Win;
typedef int MPI_Errhandler;
typedef int MPI_Info;

#define MPI_COMM_NULL ((MPI_Comm)0x31000000)
#define MPI_COMM_WORLD ((MPI_Comm)0x31000001)
#define MPI_COMM_SELF ((MPI_Comm)0x31000002)

#define MPI_GROUP_NULL ((MPI_Group)0x32000000)
#define MPI_GROUP_EMPTY ((MPI_Group)0x32000001)

#define MPI_DATATYPE_NULL ((MPI_Datatype)0x33000000)
#define MPI_CHAR ((MPI_Datatype)0x33000001)
#define MPI_SIGNED_CHAR ((MPI_Datatype)0x33000002)
#define MPI_UNSIGNED_CHAR ((MPI_Datatype)0x33000003)
#define MPI_BYTE ((MPI_Datatype)0x33000004)
#define MPI_WCHAR ((MPI_Datatype)0x33000005)
#define MPI_SHORT ((MPI_Datatype)0x33000006)
#define MPI_UNSIGNED_SHORT ((MPI_Datatype)0x33000007)
#define MPI_INT ((MPI_Datatype)0x33000008)
#define MPI_UNSIGNED ((MPI_Datatype)0x33000009)
#define MPI_LONG ((MPI_Datatype)0x3300000a)
#define MPI_UNSIGNED_LONG ((MPI_Datatype)0x3300000b)
#define MPI_LONG_LONG_INT ((MPI_Datatype)0x3300000c)
#define MPI_LONG_LONG MPI_LONG_LONG_INT
#define MPI_UNSIGNED_LONG_LONG ((MPI_Datatype)0x3300000d)
#define MPI_FLOAT ((MPI_Datatype)0x3300000e)
#define MPI_DOUBLE ((MPI_Datatype)0x3300000f)
#define MPI_LONG_DOUBLE ((MPI_Datatype)0x33000010)
#define MPI_C_BOOL ((MPI_Datatype)0x33000011)
#define MPI_INT8_T ((MPI_Datatype)0x33000012)
#define MPI_INT16_T ((MPI_Datatype)0x33000013)
#define MPI_INT32_T ((MPI_Datatype)0x33000014)
#define MPI_INT64_T ((MPI_Datatype)0x33000015)
#define MPI_UINT8_T ((MPI_Datatype)0x33000016)
#define MPI_UINT16_T ((MPI_Datatype)0x33000017)
#define MPI_UINT32_T ((MPI_Datatype)0x33000018)
#define MPI_UINT64_T ((MPI_Datatype)0x33000019)
#define MPI_AINT ((MPI_Datatype)0x3300001a)
#define MPI_OFFSET ((MPI_Datatype)0x3300001b)
#define MPI_COUNT ((MPI_Datatype)0x3300001c)

#define MPI_OP_NULL ((MPI_Op)0x34000000)
#define MPI_MAX ((MPI_Op)0x34000001)
#define MPI_MIN ((MPI_Op)0x34000002)
#define MPI_SUM ((MPI_Op)0x34000003)
#define MPI_PROD ((MPI_Op)0x34000004)
#define MPI_LAND ((MPI_Op)0x34000005)
#define MPI_BAND ((MPI_Op)0x34000006)
#define MPI_LOR ((MPI_Op)0x34000007)
#define MPI_BOR ((MPI_Op)0x34000008)
#define MPI_LXOR ((MPI_Op)0x34000009)
#define MPI_BXOR ((MPI_Op)0x3400000a)
#define MPI_REPLACE ((MPI_Op)0x3400000b) /* accumulate only: unsupported */
#define MPI_NO_OP ((MPI_Op)0x3400000c)   /* accumulate only: unsupported */

#define MPI_REQUEST_NULL ((MPI_Request)0x35000000)
#define MPI_WIN_NULL ((MPI_Win)0x36000000)

#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0x37000000)
#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)0x37000001)
#define MPI_ERRORS_RETURN ((MPI_Errhandler)0x37000002)

#define MPI_INFO_NULL ((MPI_Info)0x38000000)

/* ---- Status -------------------------------------------------------------- */
typedef struct MPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int nicemu_cancelled;   /* reserved */
  MPI_Count nicemu_bytes; /* received: MPI_Get_count reads it */
} MPI_Status;

#define MPI_STATUS_IGNORE ((MPI_Status *)0)
#define MPI_STATUSES_IGNORE ((MPI_Status *)0)

/* ---- Other constants ----------------------------------------------------- */
#define MPI_ANY_SOURCE (-1)
#define MPI_PROC_NULL (-2)
#define MPI_ANY_TAG (-1)
#define MPI_UNDEFINED (-32766)
#define MPI_BOTTOM ((void *)0)
#define MPI_IN_PLACE ((void *)-1)

#define MPI_MAX_PROCESSOR_NAME 256
#define MPI_MAX_ERROR_STRING 256
#define MPI_MAX_LIBRARY_VERSION_STRING 256

#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

/* Attribute keys of MPI_Comm_get_attr (predefined ones only). */
#define MPI_TAG_UB 0x39000001
#define MPI_HOST 0x39000002
#define MPI_IO 0x39000003
#define MPI_WTIME_IS_GLOBAL 0x39000004
#define MPI_UNIVERSE_SIZE 0x39000005
#define MPI_APPNUM 0x39000006
#define MPI_LASTUSEDCODE 0x39000007

/* One-sided. */
#define MPI_LOCK_EXCLUSIVE 1
#define MPI_LOCK_SHARED 2
#define MPI_MODE_NOCHECK 1024
#define MPI_MODE_NOSTORE 2048
#define MPI_MODE_NOPUT 4096
#define MPI_MODE_NOPRECEDE 8192
#define MPI_MODE_NOSUCCEED 16384

/* ---- Error codes (also their own classes) -------------------------------- */
#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_REQUEST 7
#define MPI_ERR_ROOT 8
#define MPI_ERR_GROUP 9
#define MPI_ERR_OP 10
#define MPI_ERR_TOPOLOGY 11
#define MPI_ERR_DIMS 12
#define MPI_ERR_ARG 13
#define MPI_ERR_UNKNOWN 14
#define MPI_ERR_TRUNCATE 15
#define MPI_ERR_OTHER 16
#define MPI_ERR_INTERN 17
#define MPI_ERR_IN_STATUS 18
#define MPI_ERR_PENDING 19
#define MPI_ERR_KEYVAL 20
#define MPI_ERR_NO_MEM 21
#define MPI_ERR_BASE 22
#define MPI_ERR_INFO_KEY 23
#define MPI_ERR_INFO_VALUE 24
#define MPI_ERR_INFO_NOKEY 25
#define MPI_ERR_SPAWN 26
#define MPI_ERR_PORT 27
#define MPI_ERR_SERVICE 28
#define MPI_ERR_NAME 29
#define MPI_ERR_WIN 30
#define MPI_ERR_SIZE 31
#define MPI_ERR_DISP 32
#define MPI_ERR_INFO 33
#define MPI_ERR_LOCKTYPE 34
#define MPI_ERR_ASSERT 35
#define MPI_ERR_RMA_CONFLICT 36
#define MPI_ERR_RMA_SYNC 37
#define MPI_ERR_RMA_RANGE 38
#define MPI_ERR_RMA_ATTACH 39
#define MPI_ERR_RMA_SHARED 40
#define MPI_ERR_RMA_FLAVOR 41
#define MPI_ERR_UNSUPPORTED_DATAREP 42
#define MPI_ERR_UNSUPPORTED_OPERATION 43
#define MPI_ERR_FILE 44
#define MPI_ERR_NOT_SAME 45
#define MPI_ERR_AMODE 46
#define MPI_ERR_ACCESS 47
#define MPI_ERR_NO_SPACE 48
#define MPI_ERR_QUOTA 49
#define MPI_ERR_READ_ONLY 50
#define MPI_ERR_FILE_IN_USE 51
#define MPI_ERR_DUP_DATAREP 52
#define MPI_ERR_CONVERSION 53
#define MPI_ERR_IO 54
#define MPI_ERR_FILE_EXISTS 55
#define MPI_ERR_NO_SUCH_FILE 56
#define MPI_ERR_BAD_FILE 57
#define MPI_ERR_LASTCODE 57

/* ---- Environment --------------------------------------------------------- */
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Initialized(int *flag);
int MPI_Finalize(void);
int MPI_Finalized(int *flag);
int MPI_Query_thread(int *provided);
int MPI_Is_thread_main(int *flag);
int MPI_Abort(MPI_Comm comm, int errorcode);
int MPI_Get_version(int *version, int *subversion);
int MPI_Get_library_version(char *version, int *resultlen);
int MPI_Get_processor_name(char *name, int *resultlen);
double MPI_Wtime(void);
double MPI_Wtick(void);
int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr);
int MPI_Free_mem(void *base);
int MPI_Get_address(const void *location, MPI_Aint *address);

/* ---- Errors -------------------------------------------------------------- */
int MPI_Error_string(int errorcode, char *string, int *resultlen);
int MPI_Error_class(int errorcode, int *errorclass);
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler);
int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler);
int MPI_Errhandler_free(MPI_Errhandler *errhandler);

/* ---- Point to point ------------------------------------------------------ */
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest,
             int tag, MPI_Comm comm);
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest,
              int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
             MPI_Comm comm, MPI_Status *status);
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest,
              int tag, MPI_Comm comm, MPI_Request *request);
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest,
               int tag, MPI_Comm comm, MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 int dest, int sendtag, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                 MPI_Status *status);
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag,
               MPI_Status *status);

int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Waitall(int count, MPI_Request array_of_requests[],
                MPI_Status array_of_statuses[]);
int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index,
                MPI_Status *status);
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[]);
int MPI_Testany(int count, MPI_Request array_of_requests[], int *index,
                int *flag, MPI_Status *status);
int MPI_Request_free(MPI_Request *request);

/* ---- Datatypes ----------------------------------------------------------- */
int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_vector(int count, int blocklength, int stride,
                    MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride,
                            MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_commit(MPI_Datatype *datatype);
int MPI_Type_free(MPI_Datatype *datatype);
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent);

/* ---- Communicators and groups -------------------------------------------- */
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm);
int MPI_Comm_free(MPI_Comm *comm);
int MPI_Comm_group(MPI_Comm comm, MPI_Group *group);
int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val,
                      int *flag);
int MPI_Group_size(MPI_Group group, int *size);
int MPI_Group_rank(MPI_Group group, int *rank);
int MPI_Group_incl(MPI_Group group, int n, const int ranks[],
                   MPI_Group *newgroup);
int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
                              MPI_Group group2, int ranks2[]);
int MPI_Group_free(MPI_Group *group);

/* ---- Collectives --------------------------------------------------------- */
int MPI_Barrier(MPI_Comm comm);
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
              MPI_Comm comm);
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/* ---- One-sided ----------------------------------------------------------- */
int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                   MPI_Comm comm, MPI_Win *win);
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                     void *baseptr, MPI_Win *win);
int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win);
int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size);
int MPI_Win_detach(MPI_Win win, const void *base);
int MPI_Win_free(MPI_Win *win);
int MPI_Win_get_group(MPI_Win win, MPI_Group *group);
int MPI_Put(const void *origin_addr, int origin_count,
            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
            int target_count, MPI_Datatype target_datatype, MPI_Win win);
int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count,
            MPI_Datatype target_datatype, MPI_Win win);
int MPI_Win_fence(int assert, MPI_Win win);
int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win);
int MPI_Win_unlock(int rank, MPI_Win win);
int MPI_Win_lock_all(int assert, MPI_Win win);
int MPI_Win_unlock_all(MPI_Win win);
int MPI_Win_flush(int rank, MPI_Win win);
int MPI_Win_flush_local(int rank, MPI_Win win);
int MPI_Win_flush_all(MPI_Win win);
int MPI_Win_flush_local_all(MPI_Win win);
int MPI_Win_sync(MPI_Win win);
int MPI_Win_post(MPI_Group group, int assert, MPI_Win win);
int MPI_Win_start(MPI_Group group, int assert, MPI_Win win);
int MPI_Win_complete(MPI_Win win);
int MPI_Win_wait(MPI_Win win);

/* Unsupported: they check nothing and return MPI_ERR_UNSUPPORTED_OPERATION
 * through the window's error handler (the card has no atomics yet). */
int MPI_Accumulate(const void *origin_addr, int origin_count,
                   MPI_Datatype origin_datatype, int target_rank,
                   MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win win);
int MPI_Get_accumulate(const void *origin_addr, int origin_count,
                       MPI_Datatype origin_datatype, void *result_addr,
                       int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win win);
int MPI_Fetch_and_op(const void *origin_addr, void *result_addr,
                     MPI_Datatype datatype, int target_rank,
                     MPI_Aint target_disp, MPI_Op op, MPI_Win win);
int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr,
                         void *result_addr, MPI_Datatype datatype,
                         int target_rank, MPI_Aint target_disp, MPI_Win win);

#ifdef __cplusplus
}
#endif

#endif
