/* One-sided MPI in plain C99 on <mpi.h>, on two ranks:
 *
 * 1. active target, fence: each rank MPI_Puts its numbers into the other's
 *    window (MPI_Win_allocate), and after a fence MPI_Gets them back;
 * 2. passive target, lock/unlock: rank 0 alone writes into rank 1's window
 *    (MPI_Win_create on malloc'd memory) under an exclusive lock, reads it
 *    back under a shared lock, while rank 1 only waits in MPI_Barrier; then
 *    rank 1 reads its own window under a lock of its own.
 *
 *   nicemu run -n 2 --model uzura \
 *       --firmware build/firmware/uzura/uzura.img \
 *       -- build/examples/mpi_onesided [ints]
 *
 * Every value is checked; each step prints how many were right and its
 * virtual time, and each rank ends with "rank R of 2: ok" (or FAILED, and
 * exit status 1). */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

static int rank, failures;

/* What rank `r` writes at index `i` in step `step`. */
static int value(int step, int r, int i) {
  return step * 1000000 + r * 100000 + i * 3 + 1;
}

/* Counts the elements of `got` equal to value(step, r, i), and says so. */
static void expect(const char *what, const int *got, int n, int step, int r) {
  int i, right = 0;
  for (i = 0; i < n; ++i)
    right += got[i] == value(step, r, i);
  printf("rank %d: %s: %d of %d values right\n", rank, what, right, n);
  if (right != n)
    ++failures;
}

static void fence_step(int n) {
  int peer = 1 - rank, *window, *mine = malloc(n * sizeof *mine), i;
  MPI_Win win;
  double t0;
  MPI_Win_allocate(n * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &window, &win);
  for (i = 0; i < n; ++i) {
    mine[i] = value(1, rank, i);
    window[i] = 0;
  }
  MPI_Win_fence(0, win);
  t0 = MPI_Wtime();
  MPI_Put(mine, n, MPI_INT, peer, 0, n, MPI_INT, win);
  MPI_Win_fence(0, win);
  printf("rank %d: fence: put %d ints into rank %d's window, %.3f us\n", rank,
         n, peer, (MPI_Wtime() - t0) * 1e6);
  expect("fence: my window after the peer's put", window, n, 1, peer);
  for (i = 0; i < n; ++i)
    mine[i] = 0;
  t0 = MPI_Wtime();
  MPI_Get(mine, n, MPI_INT, peer, 0, n, MPI_INT, win);
  MPI_Win_fence(0, win);
  printf("rank %d: fence: got %d ints from rank %d's window, %.3f us\n", rank,
         n, peer, (MPI_Wtime() - t0) * 1e6);
  expect("fence: what I got back (my own put)", mine, n, 1, rank);
  MPI_Win_free(&win);
  free(mine);
}

static void origin(int n, MPI_Win win) {
  int *buf = malloc(n * sizeof *buf), i;
  double t0 = MPI_Wtime();
  for (i = 0; i < n; ++i)
    buf[i] = value(2, rank, i);
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
  MPI_Put(buf, n, MPI_INT, 1, 0, n, MPI_INT, win);
  MPI_Win_unlock(1, win);
  printf("rank 0: lock: put %d ints into rank 1's window under an exclusive "
         "lock, %.3f us\n",
         n, (MPI_Wtime() - t0) * 1e6);
  for (i = 0; i < n; ++i)
    buf[i] = 0;
  t0 = MPI_Wtime();
  MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
  MPI_Get(buf, n, MPI_INT, 1, 0, n, MPI_INT, win);
  MPI_Win_unlock(1, win);
  printf("rank 0: lock: got %d ints from rank 1's window under a shared "
         "lock, %.3f us\n",
         n, (MPI_Wtime() - t0) * 1e6);
  expect("lock: what I got back", buf, n, 2, 0);
  free(buf);
}

static void lock_step(int n) {
  int *memory = calloc(n, sizeof *memory), *copy = malloc(n * sizeof *copy), i;
  MPI_Win win;
  MPI_Win_create(memory, n * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                 MPI_COMM_WORLD, &win);
  if (rank == 0)
    origin(n, win);
  /* Rank 1 makes no one-sided call meanwhile: the barrier is where it
   * waits (and where its lock manager grants rank 0's exclusive lock). */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
    for (i = 0; i < n; ++i)
      copy[i] = memory[i];
    MPI_Win_unlock(1, win);
    expect("lock: my window after rank 0's put", copy, n, 2, 0);
  }
  MPI_Win_free(&win);
  free(memory);
  free(copy);
}

int main(int argc, char **argv) {
  int nranks = 0, n = argc > 1 ? atoi(argv[1]) : 1000;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks != 2 || n < 1) {
    if (rank == 0)
      fprintf(stderr, "mpi_onesided: run on 2 ranks, with ints >= 1\n");
    MPI_Finalize();
    return 1;
  }
  fence_step(n);
  lock_step(n);
  printf("rank %d of 2: %s\n", rank, failures ? "FAILED" : "ok");
  MPI_Finalize();
  return failures ? 1 : 0;
}
