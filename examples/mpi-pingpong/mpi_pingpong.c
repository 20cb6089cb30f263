/* MPI ping-pong between ranks 0 and 1, in plain C99 on <mpi.h>: for each
 * size, rank 0 sends a message, rank 1 sends it back; MPI_Wtime (the
 * virtual clock) times the round trips. Rank 0 checks every echo against
 * what it sent.
 *
 *   build/bin/nicemu-mpicc -O2 mpi_pingpong.c -o mpi_pingpong   # or CMake's
 *                                                               # nicemu::mpi
 *   nicemu run -n 2 --model uzura \
 *       --firmware build/firmware/uzura/uzura.img \
 *       -- build/examples/mpi_pingpong [round-trips] [max-bytes]
 *
 * Prints one line per size: bytes, round trip and one way (half of it) in
 * virtual microseconds. */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP 5 /* round trips before the timed ones */

static unsigned char fill(long size, int round, long i) {
  return (unsigned char)(i * 7 + size + round * 13 + 1);
}

/* Rank 0: the message of `round`, sent and echoed; 1 if the echo is right. */
static int ping(unsigned char *out, unsigned char *in, long size, int round) {
  long i;
  for (i = 0; i < size; ++i)
    out[i] = fill(size, round, i);
  memset(in, 0, (size_t)size);
  MPI_Send(out, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
  MPI_Recv(in, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return memcmp(in, out, (size_t)size) == 0;
}

/* Rank 1: the echo. */
static void pong(unsigned char *in, long size) {
  MPI_Recv(in, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Send(in, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  int rank = 0, nranks = 0, round;
  int rounds = argc > 1 ? atoi(argv[1]) : 100;
  long max = argc > 2 ? atol(argv[2]) : 65536L, size, wrong = 0;
  unsigned char *out, *in;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks != 2 || rounds < 1 || max < 1) {
    if (rank == 0)
      fprintf(stderr, "mpi_pingpong: run on 2 ranks, with round-trips >= 1 "
                      "and max-bytes >= 1\n");
    MPI_Finalize();
    return 1;
  }
  out = malloc((size_t)max);
  in = malloc((size_t)max);
  if (!out || !in)
    MPI_Abort(MPI_COMM_WORLD, 1);
  if (rank == 0)
    printf("# MPI ping-pong, %d round trips per size (virtual time)\n"
           "# %8s %14s %14s\n",
           rounds, "bytes", "round trip us", "one way us");
  for (size = 1; size <= max; size *= 4) {
    double start = 0, us;
    MPI_Barrier(MPI_COMM_WORLD);
    for (round = 0; round < WARMUP + rounds; ++round) {
      if (round == WARMUP)
        start = MPI_Wtime();
      if (rank == 0)
        wrong += !ping(out, in, size, round);
      else
        pong(in, size);
    }
    us = (MPI_Wtime() - start) * 1e6 / rounds;
    if (rank == 0)
      printf("%10ld %14.3f %14.3f\n", size, us, us / 2);
  }
  if (rank == 0) {
    if (wrong)
      printf("mpi_pingpong: FAILED: %ld echoes differ from what was sent\n",
             wrong);
    else
      printf("mpi_pingpong: every echo checked, ok\n");
  }
  free(out);
  free(in);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
