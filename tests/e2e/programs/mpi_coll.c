/* Collectives and communicators on nicemu's MPI, on 2 or more ranks
 * (test_mpi.cpp): MPI_Barrier (on the virtual clock), MPI_Bcast from every
 * root and of every size kind, MPI_Reduce and MPI_Allreduce with every
 * predefined operation on the basic types against results computed here,
 * MPI_IN_PLACE, MPI_Comm_dup/split/free, groups, and context ids reused
 * after many communicators. */
#include "mpi_test.h"

#include <unistd.h>

/* The barrier holds everyone until the last arrives: rank r sleeps r x
 * 100 us of virtual time first. */
static void barrier(void) {
  double t0, t1;
  int i;
  OK(MPI_Barrier(MPI_COMM_WORLD));
  t0 = MPI_Wtime();
  usleep((useconds_t)(me * 100));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  t1 = MPI_Wtime();
  EXPECT(t1 - t0 >= (nranks - 1) * 100e-6, "left the barrier after %.1f us",
         (t1 - t0) * 1e6);
  for (i = 0; i < 20; ++i)
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

static void bcast(void) {
  long sizes[5] = {0, 1, 1000, 8193, 100000};
  static char buf[100000];
  int root, i;
  for (root = 0; root < nranks; ++root)
    for (i = 0; i < 5; ++i) {
      if (me == root)
        fill(buf, sizes[i], root * 10 + i);
      else
        memset(buf, 0, sizeof buf);
      OK(MPI_Bcast(buf, (int)sizes[i], MPI_CHAR, root, MPI_COMM_WORLD));
      EXPECT(check(buf, sizes[i], root * 10 + i) < 0, "%ld bytes from root %d",
             sizes[i], root);
    }
  {
    double d[3] = {0, 0, 0};
    if (me == nranks - 1) {
      d[0] = 1.5;
      d[1] = -2.25;
      d[2] = 1e300;
    }
    OK(MPI_Bcast(d, 3, MPI_DOUBLE, nranks - 1, MPI_COMM_WORLD));
    EXPECT(d[0] == 1.5 && d[1] == -2.25 && d[2] == 1e300, "doubles");
  }
}

/* Each rank's value of element i: small integers, exact in every type. */
static long value(int rank, int i) {
  return (rank * 7 + i * 3) % 11 - 3;
}

#define N 37

/* out == want, element by element (long double has padding bytes that
 * memcmp would compare). */
#define EXPECT_SAME(...)                                                       \
  do {                                                                         \
    int k_, equal_ = 1;                                                        \
    for (k_ = 0; k_ < N; ++k_)                                                 \
      equal_ &= out[k_] == want[k_];                                           \
    EXPECT(equal_, __VA_ARGS__);                                               \
  } while (0)

/* Reduces value(r, i) for every op that applies to type T, to every root
 * and to all, and compares with the result computed here. */
#define REDUCTIONS(T, MPIT, ARITH, LOGIC, BITS)                                \
  do {                                                                         \
    T in[N], out[N], want[N];                                                  \
    MPI_Op ops[10] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX, MPI_LAND,          \
                      MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};         \
    int o, i, r, root;                                                         \
    for (o = 0; o < 10; ++o) {                                                 \
      int applies = o < 4 ? ARITH : o < 7 ? LOGIC : BITS;                      \
      for (i = 0; i < N; ++i) {                                                \
        in[i] = (T)value(me, i);                                               \
        want[i] = (T)value(0, i);                                              \
        for (r = 1; r < nranks; ++r) {                                         \
          T v = (T)value(r, i), w = want[i];                                   \
          switch (o) {                                                         \
          case 0:                                                              \
            want[i] = (T)(w + v);                                              \
            break;                                                             \
          case 1:                                                              \
            want[i] = (T)times(w, v);                                          \
            break;                                                             \
          case 2:                                                              \
            want[i] = v < w ? v : w;                                           \
            break;                                                             \
          case 3:                                                              \
            want[i] = v > w ? v : w;                                           \
            break;                                                             \
          case 4:                                                              \
            want[i] = (T)(w && v);                                             \
            break;                                                             \
          case 5:                                                              \
            want[i] = (T)(w || v);                                             \
            break;                                                             \
          case 6:                                                              \
            want[i] = (T)(!w != !v);                                           \
            break;                                                             \
          default:                                                             \
            want[i] = reduce_bits(o, w, v);                                    \
          }                                                                    \
        }                                                                      \
      }                                                                        \
      if (!applies) {                                                          \
        FAILS(MPI_ERR_OP,                                                      \
              MPI_Allreduce(in, out, N, MPIT, ops[o], MPI_COMM_WORLD));        \
        continue;                                                              \
      }                                                                        \
      for (root = 0; root < nranks; ++root) {                                  \
        memset(out, 0, sizeof out);                                            \
        OK(MPI_Reduce(in, out, N, MPIT, ops[o], root, MPI_COMM_WORLD));        \
        if (me == root)                                                        \
          EXPECT_SAME("%s op %d root %d", #MPIT, o, root);                     \
      }                                                                        \
      memset(out, 0, sizeof out);                                              \
      OK(MPI_Allreduce(in, out, N, MPIT, ops[o], MPI_COMM_WORLD));             \
      EXPECT_SAME("%s op %d (all)", #MPIT, o);                                 \
      memcpy(out, in, sizeof out);                                             \
      OK(MPI_Allreduce(MPI_IN_PLACE, out, N, MPIT, ops[o], MPI_COMM_WORLD));   \
      EXPECT_SAME("%s op %d (in place)", #MPIT, o);                            \
    }                                                                          \
  } while (0)

#define reduce_bits(o, w, v) ((o) == 7 ? (w & v) : (o) == 8 ? (w | v) : (w ^ v))
#define times(w, v) ((w) * (v))

static void reductions(void) {
  REDUCTIONS(int, MPI_INT, 1, 1, 1);
  REDUCTIONS(long, MPI_LONG, 1, 1, 1);
  REDUCTIONS(short, MPI_SHORT, 1, 1, 1);
  REDUCTIONS(unsigned, MPI_UNSIGNED, 1, 1, 1);
  REDUCTIONS(long long, MPI_LONG_LONG, 1, 1, 1);
  REDUCTIONS(signed char, MPI_SIGNED_CHAR, 1, 1, 1);
  REDUCTIONS(unsigned char, MPI_BYTE, 0, 0, 1);
  REDUCTIONS(int, MPI_INT32_T, 1, 1, 1);
  REDUCTIONS(unsigned long long, MPI_UINT64_T, 1, 1, 1);
#undef reduce_bits
#define reduce_bits(o, w, v) (w)
  REDUCTIONS(float, MPI_FLOAT, 1, 0, 0);
  REDUCTIONS(double, MPI_DOUBLE, 1, 0, 0);
  REDUCTIONS(long double, MPI_LONG_DOUBLE, 1, 0, 0);
#undef reduce_bits
#undef times
#define reduce_bits(o, w, v) (w)
#define times(w, v) ((w) && (v))
  REDUCTIONS(_Bool, MPI_C_BOOL, 0, 1, 0);
#undef reduce_bits
#undef times
  {
    int x = me, y = -1;
    /* MPI_IN_PLACE at the root of MPI_Reduce; a large one (rendezvous). */
    static double big[20000], sum[20000];
    int i;
    y = x;
    OK(MPI_Reduce(me == 0 ? MPI_IN_PLACE : &x, &y, 1, MPI_INT, MPI_SUM, 0,
                  MPI_COMM_WORLD));
    if (me == 0)
      EXPECT(y == nranks * (nranks - 1) / 2, "in place at the root: %d", y);
    for (i = 0; i < 20000; ++i)
      big[i] = me + i * 0.5;
    OK(MPI_Allreduce(big, sum, 20000, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    for (i = 0; i < 20000; ++i)
      if (sum[i] != nranks * (nranks - 1) / 2 + nranks * i * 0.5)
        break;
    EXPECT(i == 20000, "a large all-reduce: element %d", i);
  }
}

/* A duplicate's messages never match the original's. */
static void dup_keeps_messages_apart(void) {
  MPI_Comm dup;
  int a = 0, b = 0, size, rank;
  OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  OK(MPI_Comm_size(dup, &size));
  OK(MPI_Comm_rank(dup, &rank));
  EXPECT(size == nranks && rank == me, "dup: %d of %d", rank, size);
  if (me == 0) {
    a = 1;
    b = 2;
    OK(MPI_Send(&a, 1, MPI_INT, 1, 5, dup));
    OK(MPI_Send(&b, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
  } else if (me == 1) {
    OK(MPI_Recv(&b, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Recv(&a, 1, MPI_INT, 0, 5, dup, MPI_STATUS_IGNORE));
    EXPECT(a == 1 && b == 2, "dup %d, world %d", a, b);
  }
  OK(MPI_Barrier(dup));
  OK(MPI_Comm_free(&dup));
  EXPECT(dup == MPI_COMM_NULL, "freed communicator");
}

/* Even and odd ranks, in reverse order; the last rank stays out. */
static void split(void) {
  MPI_Comm half;
  int color = me == nranks - 1 && nranks > 2 ? MPI_UNDEFINED : me % 2;
  int size = -1, rank = -1, sum = -1, members = 0, r;
  OK(MPI_Comm_split(MPI_COMM_WORLD, color, -me, &half));
  if (color == MPI_UNDEFINED) {
    EXPECT(half == MPI_COMM_NULL, "no communicator for MPI_UNDEFINED");
    return;
  }
  for (r = 0; r < nranks; ++r)
    if (r % 2 == color && !(r == nranks - 1 && nranks > 2))
      ++members;
  OK(MPI_Comm_size(half, &size));
  OK(MPI_Comm_rank(half, &rank));
  EXPECT(size == members, "size %d, want %d", size, members);
  /* Keys -me: the highest world rank is rank 0. */
  OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_MAX, half));
  if (rank == 0)
    EXPECT(sum == me, "rank 0 of the half is world rank %d", me);
  {
    int token = rank == 0 ? 1000 + color : -1;
    OK(MPI_Bcast(&token, 1, MPI_INT, 0, half));
    EXPECT(token == 1000 + color, "broadcast in the half: %d", token);
  }
  {
    MPI_Group world_group, half_group;
    int zero = 0, in_world = -1;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    OK(MPI_Comm_group(half, &half_group));
    OK(MPI_Group_translate_ranks(half_group, 1, &zero, world_group, &in_world));
    EXPECT(in_world == sum, "rank 0 of the half in the world: %d", in_world);
    OK(MPI_Group_free(&half_group));
    OK(MPI_Group_free(&world_group));
  }
  OK(MPI_Comm_free(&half));
}

static void groups(void) {
  MPI_Group world, some, empty;
  int ranks[2], out[3], in[3], size = -1, rank = -1;
  OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  OK(MPI_Group_size(world, &size));
  OK(MPI_Group_rank(world, &rank));
  EXPECT(size == nranks && rank == me, "world group %d %d", size, rank);
  ranks[0] = nranks - 1;
  ranks[1] = 0;
  OK(MPI_Group_incl(world, 2, ranks, &some));
  OK(MPI_Group_size(some, &size));
  OK(MPI_Group_rank(some, &rank));
  EXPECT(size == 2, "size %d", size);
  EXPECT(rank == (me == nranks - 1 ? 0
                  : me == 0        ? 1
                                   : MPI_UNDEFINED),
         "rank %d", rank);
  in[0] = 0;
  in[1] = 1;
  in[2] = MPI_PROC_NULL;
  OK(MPI_Group_translate_ranks(some, 3, in, world, out));
  EXPECT(out[0] == nranks - 1 && out[1] == 0 && out[2] == MPI_PROC_NULL,
         "translated %d %d %d", out[0], out[1], out[2]);
  OK(MPI_Group_incl(world, 0, ranks, &empty));
  EXPECT(empty == MPI_GROUP_EMPTY, "an empty group");
  ranks[1] = nranks - 1;
  FAILS(MPI_ERR_RANK, MPI_Group_incl(world, 2, ranks, &empty));
  OK(MPI_Group_free(&some));
  OK(MPI_Group_free(&world));
  EXPECT(world == MPI_GROUP_NULL, "freed group");
}

/* More communicators than there are context ids, one at a time. */
static void many_communicators(int count) {
  int i, v = 0;
  for (i = 0; i < count; ++i) {
    MPI_Comm c;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    if (i % 500 == 0) {
      int one = 1;
      OK(MPI_Allreduce(&one, &v, 1, MPI_INT, MPI_SUM, c));
      EXPECT(v == nranks, "sum over dup %d: %d", i, v);
    }
    OK(MPI_Comm_free(&c));
  }
}

int main(int argc, char **argv) {
  const char *many = test_option(argc, argv, "--communicators");
  test_init(&argc, &argv);
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  barrier();
  bcast();
  reductions();
  dup_keeps_messages_apart();
  split();
  groups();
  many_communicators(many ? atoi(many) : 10);
  return test_finish();
}
