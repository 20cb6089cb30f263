/* One-sided latency or bandwidth from rank 0 to rank 1's window, over a
 * range of sizes, with a chosen kind of window and synchronisation; in
 * the passive modes rank 1 only waits in MPI_Barrier. A window is created
 * and freed for every size. Options come before MPI_Init.
 *
 *   mpi_onesided [-o put|get] [-w create|allocate|dynamic]
 *                [-s fence|pscw|lock|flush|flush_local|lock_all]
 *                [-m MIN:MAX] [-i ITERATIONS] [-x WARMUP] [-W OPS]
 *
 * Latency (no -W): virtual microseconds per operation with its
 * synchronisation. Bandwidth (-W OPS): OPS operations per synchronisation,
 * decimal MB/s. Prints a "# nicemu MPI ..." line saying which, a column
 * header, then "<bytes> <figure>" per size. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum sync { FENCE, PSCW, LOCK, FLUSH, FLUSH_LOCAL, LOCK_ALL };
enum kind { CREATE, ALLOCATE, DYNAMIC };

static const char *sync_names[] = {"fence", "pscw",        "lock",
                                   "flush", "flush_local", "lock_all"};
static const char *kind_names[] = {"create", "allocate", "dynamic"};

struct settings {
  int get, ops, iterations, warmup;
  enum sync sync;
  enum kind kind;
  long min, max;
};

static int find(const char *name, const char **names, int n) {
  int i;
  for (i = 0; i < n; ++i)
    if (strcmp(name, names[i]) == 0)
      return i;
  return -1;
}

static int parse(int argc, char **argv, struct settings *s) {
  int c, v;
  memset(s, 0, sizeof *s);
  s->sync = FLUSH;
  s->kind = ALLOCATE;
  s->min = 1;
  s->max = 1 << 16;
  s->iterations = 100;
  s->warmup = 10;
  while ((c = getopt(argc, argv, "o:w:s:m:i:x:W:")) != -1) {
    switch (c) {
    case 'o':
      if (strcmp(optarg, "put") && strcmp(optarg, "get"))
        return 0;
      s->get = strcmp(optarg, "get") == 0;
      break;
    case 'w':
      if ((v = find(optarg, kind_names, 3)) < 0)
        return 0;
      s->kind = (enum kind)v;
      break;
    case 's':
      if ((v = find(optarg, sync_names, 6)) < 0)
        return 0;
      s->sync = (enum sync)v;
      break;
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
    case 'W':
      s->ops = atoi(optarg);
      break;
    default:
      return 0;
    }
  }
  return s->min > 0 && s->max >= s->min && s->iterations > 0 &&
         s->warmup >= 0 && s->ops >= 0;
}

struct window {
  MPI_Win win;
  char *memory;    /* ours, for create and dynamic */
  MPI_Aint target; /* displacement of byte 0 at rank 1 */
};

static struct window open_window(const struct settings *s, long bytes) {
  struct window w = {MPI_WIN_NULL, NULL, 0};
  char *base = NULL;
  MPI_Aint mine = 0;
  if (s->kind == ALLOCATE) {
    MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w.win);
    return w;
  }
  w.memory = malloc((size_t)bytes);
  if (s->kind == CREATE) {
    MPI_Win_create(w.memory, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w.win);
    return w;
  }
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w.win);
  MPI_Win_attach(w.win, w.memory, bytes);
  MPI_Get_address(w.memory, &mine);
  /* Rank 1's address, to rank 0 (an absolute displacement). */
  w.target = mine;
  MPI_Bcast(&w.target, 1, MPI_AINT, 1, MPI_COMM_WORLD);
  return w;
}

static void close_window(struct window *w) {
  MPI_Win_free(&w->win);
  free(w->memory);
}

static void op(const struct settings *s, struct window *w, char *buf,
               long bytes, int j) {
  MPI_Aint at = w->target + (MPI_Aint)bytes * j; /* each its own place */
  if (s->get)
    MPI_Get(buf, (int)bytes, MPI_CHAR, 1, at, (int)bytes, MPI_CHAR, w->win);
  else
    MPI_Put(buf, (int)bytes, MPI_CHAR, 1, at, (int)bytes, MPI_CHAR, w->win);
}

/* One step: `count` operations from rank 0 and their synchronisation. */
static void step(const struct settings *s, struct window *w, MPI_Group peer,
                 int rank, char *buf, long bytes, int count) {
  int j;
  if (s->sync == FENCE) {
    for (j = 0; rank == 0 && j < count; ++j)
      op(s, w, buf, bytes, j);
    MPI_Win_fence(0, w->win);
    return;
  }
  if (s->sync == PSCW) {
    if (rank == 1) {
      MPI_Win_post(peer, 0, w->win);
      MPI_Win_wait(w->win);
    } else {
      MPI_Win_start(peer, 0, w->win);
      for (j = 0; j < count; ++j)
        op(s, w, buf, bytes, j);
      MPI_Win_complete(w->win);
    }
    return;
  }
  if (rank != 0)
    return;
  if (s->sync == LOCK)
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w->win);
  if (s->sync == LOCK_ALL)
    MPI_Win_lock_all(0, w->win);
  for (j = 0; j < count; ++j)
    op(s, w, buf, bytes, j);
  if (s->sync == LOCK)
    MPI_Win_unlock(1, w->win);
  if (s->sync == LOCK_ALL)
    MPI_Win_unlock_all(w->win);
  if (s->sync == FLUSH)
    MPI_Win_flush(1, w->win);
  if (s->sync == FLUSH_LOCAL)
    MPI_Win_flush_local(1, w->win);
}

static double measure(const struct settings *s, MPI_Group peer, int rank,
                      char *buf, long bytes) {
  int i, count = s->ops ? s->ops : 1;
  struct window w = open_window(s, bytes * count);
  int held = s->sync == FLUSH || s->sync == FLUSH_LOCAL;
  double start = 0, seconds;
  if (s->sync == FENCE)
    MPI_Win_fence(0, w.win);
  if (held && rank == 0)
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win);
  for (i = 0; rank < 2 && i < s->warmup + s->iterations; ++i) {
    if (i == s->warmup)
      start = MPI_Wtime();
    step(s, &w, peer, rank, buf, bytes, count);
  }
  seconds = MPI_Wtime() - start;
  if (held && rank == 0)
    MPI_Win_unlock(1, w.win);
  MPI_Barrier(MPI_COMM_WORLD); /* rank 1 waits here in passive modes */
  close_window(&w);
  if (s->ops)
    return (double)bytes * count * s->iterations / 1e6 / seconds;
  return seconds * 1e6 / s->iterations;
}

int main(int argc, char **argv) {
  struct settings s;
  int rank, size, other, ok = parse(argc, argv, &s);
  MPI_Group world, peer;
  char *buf;
  long bytes;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!ok || size != 2) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_onesided [-o put|get] [-w create|allocate|"
                      "dynamic] [-s fence|pscw|lock|flush|flush_local|"
                      "lock_all] [-m MIN:MAX] [-i N] [-x N] [-W OPS], on 2 "
                      "ranks\n");
    MPI_Finalize();
    return 1;
  }
  other = 1 - rank;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_incl(world, 1, &other, &peer);
  buf = malloc((size_t)s.max);
  memset(buf, 'b', (size_t)s.max);
  if (rank == 0) {
    printf("# nicemu MPI_%s %s, window %s, synchronisation %s\n",
           s.get ? "Get" : "Put", s.ops ? "bandwidth" : "latency",
           kind_names[s.kind], sync_names[s.sync]);
    printf("%-10s%18s\n", "# bytes", s.ops ? "MB/s" : "latency (us)");
  }
  for (bytes = s.min; bytes <= s.max; bytes *= 2) {
    double figure = measure(&s, peer, rank, buf, bytes);
    if (rank == 0) {
      printf("%-10ld%18.2f\n", bytes, figure);
      fflush(stdout);
    }
  }
  MPI_Group_free(&peer);
  MPI_Group_free(&world);
  free(buf);
  MPI_Finalize();
  return 0;
}
