/* nicemu's mpi.h at compile time (test_mpi.cpp builds this as GNU C89 and
 * C99 with -pedantic, and as C++): no <errno.h> behind it (OSU's utilities
 * declare a variable named errno), constants usable in static initialisers
 * and case labels, the types MPI programs rely on. Runs without MPI_Init. */
#include <mpi.h>
#include <stdio.h>

#define STATIC_CHECK(name, cond) typedef char name[(cond) ? 1 : -1]

STATIC_CHECK(version_is_3, MPI_VERSION >= 3);
STATIC_CHECK(aint_holds_a_pointer, sizeof(MPI_Aint) >= sizeof(void *));
STATIC_CHECK(aint_is_signed, (MPI_Aint)-1 < 0);
STATIC_CHECK(count_holds_an_aint, sizeof(MPI_Count) >= sizeof(MPI_Aint));
STATIC_CHECK(success_is_zero, MPI_SUCCESS == 0);
STATIC_CHECK(codes_below_lastcode,
             MPI_ERR_TRUNCATE < MPI_ERR_LASTCODE &&
                 MPI_ERR_UNSUPPORTED_OPERATION <= MPI_ERR_LASTCODE);
STATIC_CHECK(locks_differ, MPI_LOCK_SHARED != MPI_LOCK_EXCLUSIVE);

static MPI_Comm world = MPI_COMM_WORLD; /* a static initialiser */
static MPI_Datatype types[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE};

static const char *name(MPI_Datatype t) {
  switch (t) { /* case labels */
  case MPI_CHAR:
    return "char";
  case MPI_INT:
    return "int";
  case MPI_DOUBLE:
    return "double";
  default:
    return "?";
  }
}

int main(void) {
  int errno = 0; /* as osu_util.h's CHECK() does */
  MPI_Status st;
  MPI_Request reqs[4];
  st.MPI_SOURCE = 1;
  st.MPI_TAG = 2;
  st.MPI_ERROR = MPI_SUCCESS;
  reqs[0] = MPI_REQUEST_NULL;
  errno += st.MPI_SOURCE + st.MPI_TAG + (reqs[0] == MPI_REQUEST_NULL);
  printf("mpi.h: %s %s %s, %d, world %s\n", name(types[0]), name(types[1]),
         name(types[2]), errno, world == MPI_COMM_WORLD ? "ok" : "?");
  return errno == 4 ? 0 : 1;
}
