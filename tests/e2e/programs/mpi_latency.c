/* Ping-pong latency between ranks 0 and 1, over a range of message sizes,
 * in virtual microseconds (half a round trip), the way MPI benchmark
 * suites measure it; the other ranks wait. Options come before MPI_Init.
 *
 *   mpi_latency [-m MIN:MAX] [-i ITERATIONS] [-x WARMUP]
 *
 * Prints "# nicemu MPI ping-pong latency", a column header, then one line
 * per size: "<bytes> <microseconds>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct settings {
  long min, max;
  int iterations, warmup;
};

static int parse(int argc, char **argv, struct settings *s) {
  int c;
  s->min = 0;
  s->max = 1 << 16;
  s->iterations = 100;
  s->warmup = 10;
  while ((c = getopt(argc, argv, "m:i:x:")) != -1) {
    switch (c) {
    case 'm':
      if (sscanf(optarg, "%ld:%ld", &s->min, &s->max) != 2)
        return 0;
      break;
    case 'i':
      s->iterations = atoi(optarg);
      break;
    case 'x':
      s->warmup = atoi(optarg);
      break;
    default:
      return 0;
    }
  }
  return s->min >= 0 && s->max >= s->min && s->iterations > 0 && s->warmup >= 0;
}

static long next_size(long size) {
  return size == 0 ? 1 : size * 2;
}

int main(int argc, char **argv) {
  struct settings s;
  int rank, size, ok = parse(argc, argv, &s);
  char *out, *in;
  long bytes;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!ok || size < 2) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_latency [-m MIN:MAX] [-i ITERATIONS] "
                      "[-x WARMUP], on 2 or more ranks\n");
    MPI_Finalize();
    return 1;
  }
  out = malloc((size_t)s.max + 1);
  in = malloc((size_t)s.max + 1);
  memset(out, 'o', (size_t)s.max + 1);
  if (rank == 0) {
    printf("# nicemu MPI ping-pong latency\n");
    printf("%-10s%18s\n", "# bytes", "latency (us)");
  }
  for (bytes = s.min; bytes <= s.max; bytes = next_size(bytes)) {
    int i, peer = 1 - rank;
    double start = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; rank < 2 && i < s.warmup + s.iterations; ++i) {
      if (i == s.warmup)
        start = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(out, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(in, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(in, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        MPI_Send(out, (int)bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
      }
    }
    if (rank == 0) {
      double us = (MPI_Wtime() - start) * 1e6 / (2.0 * s.iterations);
      printf("%-10ld%18.2f\n", bytes, us);
      fflush(stdout);
    }
  }
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
