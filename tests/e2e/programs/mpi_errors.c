/* Errors and the environment on nicemu's MPI (test_mpi.cpp).
 *
 *   mpi_errors           on 2 or more ranks: bad arguments return their
 *                        error codes under MPI_ERRORS_RETURN; error
 *                        strings and classes; the environment calls
 *   mpi_errors abort     rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7) while
 *                        rank 0 waits in MPI_Recv: the run ends, status 7
 *   mpi_errors fatal     rank 1 sends to a rank that does not exist under
 *                        the default handler: the run ends, status 1
 *   mpi_errors early     a call before MPI_Init: the run ends, status 1
 *   mpi_errors init      MPI_Init alone (run outside nicemu: it fails) */
#include "mpi_test.h"

static void bad_arguments(void) {
  int x = 0, flag = 0, count = 0;
  MPI_Request req = MPI_REQUEST_NULL, reqs[2];
  MPI_Status st;
  MPI_Comm comm;
  MPI_Datatype t;
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
  EXPECT(eh == MPI_ERRORS_RETURN, "errhandler %x", eh);
  FAILS(MPI_ERR_COMM, MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL));
  FAILS(MPI_ERR_COMM, MPI_Send(&x, 1, MPI_INT, 0, 0, (MPI_Comm)0x31000777));
  FAILS(MPI_ERR_COMM, MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_INT));
  FAILS(MPI_ERR_RANK, MPI_Send(&x, 1, MPI_INT, nranks, 0, MPI_COMM_WORLD));
  FAILS(MPI_ERR_RANK, MPI_Send(&x, 1, MPI_INT, -5, 0, MPI_COMM_WORLD));
  FAILS(MPI_ERR_RANK,
        MPI_Send(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD));
  FAILS(MPI_ERR_RANK, MPI_Recv(&x, 1, MPI_INT, nranks, 0, MPI_COMM_WORLD, &st));
  FAILS(MPI_ERR_TAG, MPI_Send(&x, 1, MPI_INT, 0, -1, MPI_COMM_WORLD));
  FAILS(MPI_ERR_TAG, MPI_Send(&x, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD));
  FAILS(MPI_ERR_TAG, MPI_Irecv(&x, 1, MPI_INT, 0, -7, MPI_COMM_WORLD, &req));
  FAILS(MPI_ERR_COUNT, MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD));
  FAILS(MPI_ERR_TYPE, MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD));
  FAILS(MPI_ERR_TYPE, MPI_Send(&x, 1, MPI_COMM_WORLD, 0, 0, MPI_COMM_WORLD));
  FAILS(MPI_ERR_BUFFER, MPI_Send(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD));
  FAILS(MPI_ERR_REQUEST, MPI_Wait(NULL, &st));
  req = (MPI_Request)0x35000999;
  FAILS(MPI_ERR_REQUEST, MPI_Wait(&req, &st));
  FAILS(MPI_ERR_REQUEST, MPI_Test(&req, &flag, &st));
  reqs[0] = MPI_REQUEST_NULL;
  reqs[1] = (MPI_Request)0x35000999;
  FAILS(MPI_ERR_REQUEST, MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
  FAILS(MPI_ERR_COUNT, MPI_Waitall(-1, reqs, MPI_STATUSES_IGNORE));
  req = MPI_REQUEST_NULL;
  FAILS(MPI_ERR_REQUEST, MPI_Request_free(&req));
  FAILS(MPI_ERR_ROOT, MPI_Bcast(&x, 1, MPI_INT, nranks, MPI_COMM_WORLD));
  FAILS(MPI_ERR_ROOT,
        MPI_Reduce(&x, &count, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD));
  FAILS(MPI_ERR_OP,
        MPI_Allreduce(&x, &count, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
  FAILS(MPI_ERR_OP,
        MPI_Allreduce(&x, &count, 1, MPI_INT, MPI_REPLACE, MPI_COMM_WORLD));
  FAILS(MPI_ERR_OP,
        MPI_Allreduce(&x, &count, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD));
  FAILS(MPI_ERR_COMM, MPI_Comm_dup(MPI_COMM_NULL, &comm));
  comm = MPI_COMM_WORLD;
  FAILS(MPI_ERR_COMM, MPI_Comm_free(&comm));
  FAILS(MPI_ERR_ARG, MPI_Comm_split(MPI_COMM_WORLD, -3, 0, &comm));
  FAILS(MPI_ERR_GROUP, MPI_Group_size(MPI_GROUP_NULL, &x));
  FAILS(MPI_ERR_WIN, MPI_Win_fence(0, MPI_WIN_NULL));
  FAILS(MPI_ERR_ARG, MPI_Comm_set_errhandler(MPI_COMM_WORLD, 12));
  FAILS(MPI_ERR_KEYVAL, MPI_Comm_get_attr(MPI_COMM_WORLD, 5, &t, &flag));
  FAILS(MPI_ERR_INFO,
        MPI_Win_create_dynamic((MPI_Info)0x38000005, MPI_COMM_WORLD, &x));
  FAILS(MPI_ERR_SIZE, MPI_Alloc_mem(-1, MPI_INFO_NULL, &t));
  /* More than the card can reach (the arena is 64 MiB a rank). */
  FAILS(MPI_ERR_NO_MEM, MPI_Alloc_mem(100 << 20, MPI_INFO_NULL, &t));
  FAILS(MPI_ERR_ARG, MPI_Error_string(1000, NULL, &x));
  FAILS(MPI_ERR_OTHER, MPI_Init(NULL, NULL));
  /* The self communicator is still fatal: a returned error there would
   * mean the handler of WORLD was used. */
  OK(MPI_Comm_get_errhandler(MPI_COMM_SELF, &eh));
  EXPECT(eh == MPI_ERRORS_ARE_FATAL, "MPI_COMM_SELF's handler %x", eh);
}

static void strings_and_classes(void) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0, cls = -1, code;
  for (code = MPI_SUCCESS; code <= MPI_ERR_LASTCODE; ++code) {
    OK(MPI_Error_string(code, s, &len));
    EXPECT(len > 0 && len == (int)strlen(s) && strncmp(s, "MPI_", 4) == 0,
           "code %d: '%s'", code, s);
    OK(MPI_Error_class(code, &cls));
    EXPECT(cls == code, "class of %d: %d", code, cls);
  }
  OK(MPI_Error_string(MPI_ERR_TRUNCATE, s, &len));
  EXPECT(strstr(s, "MPI_ERR_TRUNCATE") != NULL, "'%s'", s);
}

static void environment(void) {
  int v = 0, sv = 0, flag = 0, len = 0, provided = -1, *attr = NULL;
  char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
  double t0, t1;
  void *mem = NULL;
  MPI_Aint a1 = 0, a2 = 0;
  int pair[2];
  OK(MPI_Get_version(&v, &sv));
  EXPECT(v == 3 && sv == 1 && MPI_VERSION == 3, "version %d.%d", v, sv);
  OK(MPI_Get_library_version(lib, &len));
  EXPECT(strstr(lib, "nicemu") != NULL && len == (int)strlen(lib), "'%s'", lib);
  OK(MPI_Get_processor_name(name, &len));
  {
    char want[32];
    snprintf(want, sizeof want, "node%d", me);
    EXPECT(strcmp(name, want) == 0, "processor name '%s'", name);
  }
  OK(MPI_Initialized(&flag));
  EXPECT(flag == 1, "initialized");
  OK(MPI_Finalized(&flag));
  EXPECT(flag == 0, "not finalized");
  OK(MPI_Query_thread(&provided));
  EXPECT(provided == MPI_THREAD_FUNNELED, "thread level %d", provided);
  OK(MPI_Is_thread_main(&flag));
  EXPECT(flag == 1, "main thread");
  t0 = MPI_Wtime();
  OK(MPI_Barrier(MPI_COMM_WORLD));
  t1 = MPI_Wtime();
  EXPECT(t1 > t0 && t1 - t0 < 1e-3, "a barrier took %g s", t1 - t0);
  EXPECT(MPI_Wtick() > 0 && MPI_Wtick() <= 1e-6, "tick %g", MPI_Wtick());
  OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag));
  EXPECT(flag && attr && *attr >= 32767, "MPI_TAG_UB");
  {
    int big = attr ? *attr : 0, got = -1;
    if (nranks > 1 && me < 2) {
      OK(MPI_Sendrecv(&big, 1, MPI_INT, 1 - me, big, &got, 1, MPI_INT, 1 - me,
                      big, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      EXPECT(got == big, "a message with tag MPI_TAG_UB");
    }
  }
  OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &attr, &flag));
  EXPECT(flag && *attr == 1, "MPI_WTIME_IS_GLOBAL");
  OK(MPI_Alloc_mem(1 << 20, MPI_INFO_NULL, &mem));
  EXPECT(mem != NULL, "MPI_Alloc_mem");
  memset(mem, 1, 1 << 20);
  OK(MPI_Free_mem(mem));
  OK(MPI_Get_address(&pair[0], &a1));
  OK(MPI_Get_address(&pair[1], &a2));
  EXPECT(a2 - a1 == (MPI_Aint)sizeof(int), "addresses %ld apart",
         (long)(a2 - a1));
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int provided = -1, x = 0;
  if (strcmp(mode, "early") == 0) {
    MPI_Comm_rank(MPI_COMM_WORLD, &x);
    return 0; /* not reached: errors are fatal */
  }
  if (strcmp(mode, "init") == 0) {
    int r = MPI_Init(&argc, &argv);
    printf("MPI_Init returned %d\n", r);
    return r == MPI_SUCCESS ? 0 : 2;
  }
  OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  EXPECT(provided == MPI_THREAD_FUNNELED, "provided %d", provided);
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
  if (strcmp(mode, "abort") == 0) {
    if (me == 1)
      MPI_Abort(MPI_COMM_WORLD, 7);
    else
      MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    printf("rank %d: still running after MPI_Abort\n", me);
    return 0;
  }
  if (strcmp(mode, "fatal") == 0) {
    if (me == 1)
      MPI_Send(&x, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
    else
      MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    printf("rank %d: still running after a fatal error\n", me);
    return 0;
  }
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  bad_arguments();
  strings_and_classes();
  environment();
  return test_finish();
}
