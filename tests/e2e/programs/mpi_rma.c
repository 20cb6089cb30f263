/* One-sided communication on nicemu's MPI, on 2 or more ranks
 * (test_mpi.cpp): windows of the three kinds (MPI_Win_create on malloc and
 * MPI_Alloc_mem memory, MPI_Win_allocate, MPI_Win_create_dynamic with
 * attached memory) with every synchronisation (fence, post/start/complete/
 * wait, shared and exclusive locks, flush, flush_local, lock_all), MPI_Put
 * and MPI_Get data checked, derived datatypes on both sides, a target that
 * sits in MPI_Barrier while it is written, exclusive locks from every rank
 * around a read-modify-write, and the errors (errors return).
 *
 *   mpi_rma [--locks strict]   (sets NICEMU_MPI_LOCKS before MPI_Init) */
#include "mpi_test.h"

#define WSIZE 200000L /* bytes in each rank's window */
#define CHUNK 1000L

enum flavor { CREATE, ALLOC_MEM, ALLOCATE, DYNAMIC };
static const char *flavor_names[4] = {"create", "alloc_mem", "allocate",
                                      "dynamic"};

struct window {
  enum flavor flavor;
  MPI_Win win;
  unsigned char *base;
  MPI_Aint remote[64]; /* dynamic: every rank's attached memory */
};

static int next(void);
static int prev(void);

static struct window open_window(enum flavor f) {
  struct window w;
  int i;
  MPI_Aint mine[64];
  w.flavor = f;
  w.base = NULL;
  switch (f) {
  case CREATE: {
    /* Memory the card reaches already (a rendezvous message landed in
     * it) gains remote access for the window. */
    static unsigned char half[WSIZE / 2];
    w.base = malloc(WSIZE);
    fill(half, WSIZE / 2, 90 + me);
    OK(MPI_Sendrecv(half, WSIZE / 2, MPI_BYTE, next(), 1, w.base + WSIZE / 4,
                    WSIZE / 2, MPI_BYTE, prev(), 1, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE));
    EXPECT(check(w.base + WSIZE / 4, WSIZE / 2, 90 + prev()) < 0,
           "a rendezvous message into the window's memory");
    OK(MPI_Win_create(w.base, WSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.win));
    break;
  }
  case ALLOC_MEM:
    OK(MPI_Alloc_mem(WSIZE, MPI_INFO_NULL, &w.base));
    OK(MPI_Win_create(w.base, WSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.win));
    break;
  case ALLOCATE:
    OK(MPI_Win_allocate(WSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.base,
                        &w.win));
    break;
  case DYNAMIC:
    w.base = malloc(WSIZE);
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w.win));
    OK(MPI_Win_attach(w.win, w.base, WSIZE));
    break;
  }
  memset(w.base, 0, WSIZE);
  for (i = 0; i < nranks; ++i)
    mine[i] = 0;
  OK(MPI_Get_address(w.base, &mine[me]));
  OK(MPI_Allreduce(mine, w.remote, nranks, MPI_AINT, MPI_SUM, MPI_COMM_WORLD));
  OK(MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  return w;
}

static void close_window(struct window *w) {
  OK(MPI_Barrier(MPI_COMM_WORLD));
  if (w->flavor == DYNAMIC)
    OK(MPI_Win_detach(w->win, w->base));
  OK(MPI_Win_free(&w->win));
  EXPECT(w->win == MPI_WIN_NULL, "freed window");
  if (w->flavor == CREATE || w->flavor == DYNAMIC)
    free(w->base);
  if (w->flavor == ALLOC_MEM)
    OK(MPI_Free_mem(w->base));
}

/* Where byte `offset` of `target`'s window is, as MPI_Put names it. */
static MPI_Aint at(const struct window *w, int target, MPI_Aint offset) {
  return w->flavor == DYNAMIC ? w->remote[target] + offset : offset;
}

static int next(void) {
  return (me + 1) % nranks;
}

static int prev(void) {
  return (me + nranks - 1) % nranks;
}

/* Each rank puts CHUNK bytes and 100 KB into the next rank's window and
 * gets CHUNK bytes from the previous one, between fences. */
static void fence(struct window *w) {
  static unsigned char mine[100000], got[CHUNK];
  fill(w->base + 150000, CHUNK, 300 + me); /* what the next rank gets */
  fill(mine, 100000, me);
  OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win));
  OK(MPI_Put(mine, CHUNK, MPI_BYTE, next(), at(w, next(), 0), CHUNK, MPI_BYTE,
             w->win));
  OK(MPI_Put(mine, 100000, MPI_BYTE, next(), at(w, next(), 2 * CHUNK), 100000,
             MPI_BYTE, w->win));
  OK(MPI_Get(got, CHUNK, MPI_BYTE, prev(), at(w, prev(), 150000), CHUNK,
             MPI_BYTE, w->win));
  OK(MPI_Win_fence(0, w->win));
  EXPECT(check(w->base, CHUNK, prev()) < 0, "%s fence: put",
         flavor_names[w->flavor]);
  EXPECT(check(w->base + 2 * CHUNK, 100000, prev()) < 0, "%s fence: large put",
         flavor_names[w->flavor]);
  EXPECT(check(got, CHUNK, 300 + prev()) < 0, "%s fence: get",
         flavor_names[w->flavor]);
  OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
}

static MPI_Group one_rank_group(int rank) {
  MPI_Group world, g;
  OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  OK(MPI_Group_incl(world, 1, &rank, &g));
  OK(MPI_Group_free(&world));
  return g;
}

/* A ring: each rank exposes its window to the previous rank and accesses
 * the next one's. */
static void pscw(struct window *w) {
  static unsigned char mine[CHUNK], got[CHUNK];
  MPI_Group to = one_rank_group(next()), from = one_rank_group(prev());
  int round;
  for (round = 0; round < 3; ++round) {
    fill(mine, CHUNK, 10 * round + me);
    fill(w->base + 4 * CHUNK, CHUNK, 20 * round + me);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Win_post(from, 0, w->win));
    OK(MPI_Win_start(to, 0, w->win));
    OK(MPI_Put(mine, CHUNK, MPI_BYTE, next(), at(w, next(), 0), CHUNK, MPI_BYTE,
               w->win));
    OK(MPI_Get(got, CHUNK, MPI_BYTE, next(), at(w, next(), 4 * CHUNK), CHUNK,
               MPI_BYTE, w->win));
    OK(MPI_Win_complete(w->win));
    EXPECT(check(got, CHUNK, 20 * round + next()) < 0, "%s pscw: get",
           flavor_names[w->flavor]);
    OK(MPI_Win_wait(w->win));
    EXPECT(check(w->base, CHUNK, 10 * round + prev()) < 0, "%s pscw: put",
           flavor_names[w->flavor]);
  }
  OK(MPI_Group_free(&to));
  OK(MPI_Group_free(&from));
}

/* Rank 0 writes every rank's window (its own too) under shared locks,
 * with unlock, with flush, with flush_local; the others wait in
 * MPI_Barrier meanwhile. */
static void passive(struct window *w) {
  static unsigned char mine[CHUNK], back[CHUNK];
  int t, i;
  if (me == 0)
    for (t = 0; t < nranks; ++t) {
      fill(mine, CHUNK, 40 + t);
      OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win));
      OK(MPI_Put(mine, CHUNK, MPI_BYTE, t, at(w, t, 0), CHUNK, MPI_BYTE,
                 w->win));
      OK(MPI_Win_unlock(t, w->win));
      OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win));
      for (i = 0; i < 20; ++i) {
        fill(mine, CHUNK, 50 + i + t);
        OK(MPI_Put(mine, CHUNK, MPI_BYTE, t, at(w, t, CHUNK), CHUNK, MPI_BYTE,
                   w->win));
        OK(MPI_Win_flush(t, w->win));
        memset(back, 0, CHUNK);
        OK(MPI_Get(back, CHUNK, MPI_BYTE, t, at(w, t, CHUNK), CHUNK, MPI_BYTE,
                   w->win));
        OK(MPI_Win_flush_local(t, w->win));
        EXPECT(check(back, CHUNK, 50 + i + t) < 0, "%s: flush then get from %d",
               flavor_names[w->flavor], t);
      }
      OK(MPI_Win_unlock(t, w->win));
    }
  OK(MPI_Barrier(MPI_COMM_WORLD));
  EXPECT(check(w->base, CHUNK, 40 + me) < 0, "%s: written under a lock",
         flavor_names[w->flavor]);
  EXPECT(check(w->base + CHUNK, CHUNK, 50 + 19 + me) < 0,
         "%s: written under flushes", flavor_names[w->flavor]);
}

/* Every rank adds 1 to a counter in rank 0's window, 10 times, under an
 * exclusive lock: get, flush, put, unlock. */
static void exclusive_counter(struct window *w) {
  int i;
  long counter;
  memset(w->base + 5 * CHUNK, 0, sizeof counter);
  OK(MPI_Barrier(MPI_COMM_WORLD));
  for (i = 0; i < 10; ++i) {
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));
    OK(MPI_Get(&counter, 1, MPI_LONG, 0, at(w, 0, 5 * CHUNK), 1, MPI_LONG,
               w->win));
    OK(MPI_Win_flush(0, w->win));
    ++counter;
    OK(MPI_Put(&counter, 1, MPI_LONG, 0, at(w, 0, 5 * CHUNK), 1, MPI_LONG,
               w->win));
    OK(MPI_Win_unlock(0, w->win));
  }
  OK(MPI_Barrier(MPI_COMM_WORLD));
  if (me == 0) {
    memcpy(&counter, w->base + 5 * CHUNK, sizeof counter);
    EXPECT(counter == 10L * nranks, "%s: counter %ld, want %ld",
           flavor_names[w->flavor], counter, 10L * nranks);
  }
}

/* Every rank writes its slot in every window under lock_all. */
static void lock_all(struct window *w) {
  static unsigned char mine[100];
  int t;
  fill(mine, 100, 70 + me);
  OK(MPI_Win_lock_all(0, w->win));
  for (t = 0; t < nranks; ++t)
    OK(MPI_Put(mine, 100, MPI_BYTE, t, at(w, t, 6 * CHUNK + 100 * me), 100,
               MPI_BYTE, w->win));
  OK(MPI_Win_flush_all(w->win));
  OK(MPI_Win_flush_local_all(w->win));
  OK(MPI_Win_sync(w->win));
  OK(MPI_Win_unlock_all(w->win));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  for (t = 0; t < nranks; ++t)
    EXPECT(check(w->base + 6 * CHUNK + 100 * t, 100, 70 + t) < 0,
           "%s lock_all: slot %d", flavor_names[w->flavor], t);
}

/* A vector on the origin, another on the target. */
static void with_datatypes(struct window *w) {
  MPI_Datatype every2, every3;
  int src[60], got[60], i;
  int *target = (int *)(w->base + 8 * CHUNK);
  OK(MPI_Type_vector(20, 1, 2, MPI_INT, &every2));
  OK(MPI_Type_vector(20, 1, 3, MPI_INT, &every3));
  OK(MPI_Type_commit(&every2));
  OK(MPI_Type_commit(&every3));
  for (i = 0; i < 60; ++i) {
    src[i] = 1000 * me + i;
    target[i] = -1;
  }
  OK(MPI_Barrier(MPI_COMM_WORLD));
  OK(MPI_Win_lock(MPI_LOCK_SHARED, next(), 0, w->win));
  OK(MPI_Put(src, 1, every2, next(), at(w, next(), 8 * CHUNK), 1, every3,
             w->win));
  OK(MPI_Win_unlock(next(), w->win));
  OK(MPI_Barrier(MPI_COMM_WORLD));
  for (i = 0; i < 60; ++i)
    if (target[i] != (i % 3 ? -1 : 1000 * prev() + i / 3 * 2)) {
      EXPECT(0, "%s: strided put, int %d = %d", flavor_names[w->flavor], i,
             target[i]);
      break;
    }
  for (i = 0; i < 60; ++i)
    got[i] = -2;
  OK(MPI_Win_lock(MPI_LOCK_SHARED, next(), 0, w->win));
  OK(MPI_Get(got, 1, every2, next(), at(w, next(), 8 * CHUNK), 1, every3,
             w->win));
  OK(MPI_Win_unlock(next(), w->win));
  for (i = 0; i < 40; ++i)
    if (got[i] != (i % 2 ? -2 : 1000 * me + i)) {
      EXPECT(0, "%s: strided get, int %d = %d", flavor_names[w->flavor], i,
             got[i]);
      break;
    }
  OK(MPI_Type_free(&every2));
  OK(MPI_Type_free(&every3));
}

static void errors(struct window *w) {
  char b[16] = {0};
  MPI_Group g;
  int size = -1;
  FAILS(MPI_ERR_RMA_SYNC,
        MPI_Put(b, 1, MPI_BYTE, next(), at(w, next(), 0), 1, MPI_BYTE, w->win));
  FAILS(MPI_ERR_LOCKTYPE, MPI_Win_lock(99, 0, 0, w->win));
  FAILS(MPI_ERR_RANK, MPI_Win_lock(MPI_LOCK_SHARED, nranks, 0, w->win));
  FAILS(MPI_ERR_RMA_SYNC, MPI_Win_unlock(0, w->win));
  FAILS(MPI_ERR_RMA_SYNC, MPI_Win_flush(0, w->win));
  FAILS(MPI_ERR_RMA_SYNC, MPI_Win_complete(w->win));
  FAILS(MPI_ERR_RMA_SYNC, MPI_Win_wait(w->win));
  FAILS(MPI_ERR_UNSUPPORTED_OPERATION,
        MPI_Accumulate(b, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, w->win));
  FAILS(MPI_ERR_UNSUPPORTED_OPERATION,
        MPI_Fetch_and_op(b, b + 8, MPI_INT, 0, 0, MPI_SUM, w->win));
  FAILS(MPI_ERR_UNSUPPORTED_OPERATION,
        MPI_Compare_and_swap(b, b + 4, b + 8, MPI_INT, 0, 0, w->win));
  FAILS(MPI_ERR_UNSUPPORTED_OPERATION,
        MPI_Get_accumulate(b, 1, MPI_INT, b + 8, 1, MPI_INT, 0, 0, 1, MPI_INT,
                           MPI_SUM, w->win));
  OK(MPI_Win_get_group(w->win, &g));
  OK(MPI_Group_size(g, &size));
  EXPECT(size == nranks, "window group of %d", size);
  OK(MPI_Group_free(&g));
  OK(MPI_Win_lock(MPI_LOCK_SHARED, next(), 0, w->win));
  FAILS(MPI_ERR_RMA_SYNC, MPI_Win_lock(MPI_LOCK_SHARED, next(), 0, w->win));
  FAILS(MPI_ERR_TYPE,
        MPI_Put(b, 2, MPI_BYTE, next(), at(w, next(), 0), 1, MPI_BYTE, w->win));
  if (w->flavor == DYNAMIC) {
    /* Memory the target never attached: its card refuses, and the flush
     * says so. */
    OK(MPI_Put(b, 8, MPI_BYTE, next(), 4096, 8, MPI_BYTE, w->win));
    FAILS(MPI_ERR_RMA_RANGE, MPI_Win_flush(next(), w->win));
    FAILS(MPI_ERR_RMA_ATTACH, MPI_Win_detach(w->win, b));
  } else {
    FAILS(MPI_ERR_RMA_RANGE,
          MPI_Put(b, 8, MPI_BYTE, next(), WSIZE - 4, 8, MPI_BYTE, w->win));
    FAILS(MPI_ERR_DISP,
          MPI_Put(b, 8, MPI_BYTE, next(), -1, 8, MPI_BYTE, w->win));
    FAILS(MPI_ERR_RMA_FLAVOR, MPI_Win_attach(w->win, b, 16));
  }
  FAILS(MPI_ERR_RMA_SYNC, MPI_Win_free(&w->win));
  OK(MPI_Win_unlock(next(), w->win));
  OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
  FAILS(MPI_ERR_RMA_SYNC,
        MPI_Put(b, 1, MPI_BYTE, next(), at(w, next(), 0), 1, MPI_BYTE, w->win));
}

int main(int argc, char **argv) {
  const char *locks = test_option(argc, argv, "--locks");
  int f;
  if (locks)
    setenv("NICEMU_MPI_LOCKS", locks, 1);
  test_init(&argc, &argv);
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  for (f = CREATE; f <= DYNAMIC; ++f) {
    struct window w = open_window((enum flavor)f);
    errors(&w);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    fence(&w);
    pscw(&w);
    passive(&w);
    exclusive_counter(&w);
    lock_all(&w);
    with_datatypes(&w);
    close_window(&w);
  }
  return test_finish();
}
