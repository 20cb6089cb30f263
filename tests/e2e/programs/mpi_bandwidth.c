/* Streaming bandwidth from rank 0 to rank 1 (or both ways with -B): each
 * round posts a window of non-blocking sends from one buffer against as
 * many receives into one buffer, waits for them all, and (one way) ends
 * with a 4-byte acknowledgement. Decimal MB/s of virtual time. Options
 * come before MPI_Init.
 *
 *   mpi_bandwidth [-m MIN:MAX] [-i ROUNDS] [-x WARMUP] [-W WINDOW] [-B]
 *
 * Prints "# nicemu MPI bandwidth" (or "bidirectional bandwidth"), a column
 * header, then one line per size: "<bytes> <MB/s>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_WINDOW 1024

struct settings {
  long min, max;
  int rounds, warmup, window, both;
};

static int parse(int argc, char **argv, struct settings *s) {
  int c;
  s->min = 1;
  s->max = 1 << 16;
  s->rounds = 20;
  s->warmup = 2;
  s->window = 64;
  s->both = 0;
  while ((c = getopt(argc, argv, "m:i:x:W:B")) != -1) {
    switch (c) {
    case 'm':
      if (sscanf(optarg, "%ld:%ld", &s->min, &s->max) != 2)
        return 0;
      break;
    case 'i':
      s->rounds = atoi(optarg);
      break;
    case 'x':
      s->warmup = atoi(optarg);
      break;
    case 'W':
      s->window = atoi(optarg);
      break;
    case 'B':
      s->both = 1;
      break;
    default:
      return 0;
    }
  }
  return s->min > 0 && s->max >= s->min && s->rounds > 0 && s->warmup >= 0 &&
         s->window > 0 && s->window <= MAX_WINDOW;
}

static MPI_Request sends[MAX_WINDOW], receives[MAX_WINDOW];

/* One round: rank 0 sends (and with -B, receives), rank 1 the reverse. */
static void round_trip(int rank, const struct settings *s, char *out, char *in,
                       long bytes) {
  int j, peer = 1 - rank, n = (int)bytes, ack = 0;
  int sending = rank == 0 || s->both, receiving = rank == 1 || s->both;
  for (j = 0; receiving && j < s->window; ++j)
    MPI_Irecv(in, n, MPI_CHAR, peer, 10 + rank, MPI_COMM_WORLD, &receives[j]);
  for (j = 0; sending && j < s->window; ++j)
    MPI_Isend(out, n, MPI_CHAR, peer, 10 + peer, MPI_COMM_WORLD, &sends[j]);
  if (sending)
    MPI_Waitall(s->window, sends, MPI_STATUSES_IGNORE);
  if (receiving)
    MPI_Waitall(s->window, receives, MPI_STATUSES_IGNORE);
  if (s->both)
    return;
  if (rank == 0)
    MPI_Recv(&ack, 1, MPI_INT, 1, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  else
    MPI_Send(&ack, 1, MPI_INT, 0, 20, MPI_COMM_WORLD);
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
      fprintf(stderr, "usage: mpi_bandwidth [-m MIN:MAX] [-i ROUNDS] "
                      "[-x WARMUP] [-W WINDOW] [-B], on 2 or more ranks\n");
    MPI_Finalize();
    return 1;
  }
  out = malloc((size_t)s.max);
  in = malloc((size_t)s.max);
  memset(out, 'o', (size_t)s.max);
  if (rank == 0) {
    printf("# nicemu MPI %sbandwidth\n", s.both ? "bidirectional " : "");
    printf("%-10s%18s\n", "# bytes", "MB/s");
  }
  for (bytes = s.min; bytes <= s.max; bytes *= 2) {
    int i;
    double start = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; rank < 2 && i < s.warmup + s.rounds; ++i) {
      if (i == s.warmup)
        start = MPI_Wtime();
      round_trip(rank, &s, out, in, bytes);
    }
    if (rank == 0) {
      double seconds = MPI_Wtime() - start;
      double moved = (double)bytes * s.window * s.rounds * (s.both ? 2 : 1);
      printf("%-10ld%18.2f\n", bytes, moved / 1e6 / seconds);
      fflush(stdout);
    }
  }
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
