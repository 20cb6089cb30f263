// Barrier and global sum timing on DIMMnet-1, any number of nodes (2-64 and
// more) of the martini card with the dimmnet firmware:
//
//   nicemu run -n 8 --model martini:D
//       --firmware build/firmware/dimmnet/dimmnet.img
//       -- build/examples/dimm_collectives [ROUNDS]      (one line)
//
// Rank 0 prints the mean time of a barrier and of a global sum of each type
// (unsigned, unsigned long long, float, double): from the start of the
// call on the last rank to arrive to its end on the last rank to leave is
// what users feel, but with every rank calling in a loop, the mean time per
// call on rank 0 is the figure (as the reference measured it).
//
// --raw (for `nicemu bench dimmnet`): lines "KEY VALUE" instead:
//   rounds N
//   barrier_us X        mean time of one barrier
//   allreduce_us T X    mean time of one global sum of type T (DIMM_UNSIGNED
//                       .. DIMM_DOUBLE)
#include <nicemu/dimmnet.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void must(int code, const char *what) {
  if (code != DIMM_OK) {
    std::fprintf(stderr, "dimm_collectives: %s: %s (%s)\n", what,
                 dimm_strerror(code), dimm_last_error());
    std::exit(1);
  }
}

} // namespace

int main(int argc, char **argv) {
  int rounds = 200;
  bool raw = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--raw") == 0)
      raw = true;
    else
      rounds = std::atoi(argv[i]);
  }
  if (rounds < 1) {
    std::fprintf(stderr, "usage: dimm_collectives [ROUNDS] [--raw]\n");
    return 2;
  }
  dimm_card *card = nullptr;
  dimm_comm *comm = nullptr;
  must(dimm_open(1, 0, &card), "dimm_open");
  must(dimm_comm_open(card, nullptr, &comm), "dimm_comm_open");
  int rank = dimm_comm_rank(comm), size = dimm_comm_size(comm);

  // One of each first: the kick pages' first HTLB misses are not timed.
  must(dimm_barrier(comm), "barrier");
  double start = dimm_time_ns(card);
  for (int i = 0; i < rounds; ++i)
    must(dimm_barrier(comm), "barrier");
  double barrier_us = (dimm_time_ns(card) - start) / rounds / 1000;

  const char *names[] = {"unsigned", "unsigned long long", "float", "double"};
  double sum_us[4] = {};
  unsigned u = 3;
  unsigned long long ull = 3;
  float f = 1.5f;
  double d = 1.5;
  const void *values[4] = {&u, &ull, &f, &d};
  for (int type = DIMM_UNSIGNED; type <= DIMM_DOUBLE; ++type) {
    const void *value = values[type];
    unsigned char out[8];
    must(dimm_allreduce(comm, value, out, type, DIMM_SUM), "allreduce");
    must(dimm_barrier(comm), "barrier");
    start = dimm_time_ns(card);
    for (int i = 0; i < rounds; ++i)
      must(dimm_allreduce(comm, value, out, type, DIMM_SUM), "allreduce");
    sum_us[type] = (dimm_time_ns(card) - start) / rounds / 1000;
  }

  if (rank == 0) {
    if (raw) {
      std::printf("rounds %d\nbarrier_us %.4f\n", rounds, barrier_us);
      for (int type = 0; type < 4; ++type)
        std::printf("allreduce_us %d %.4f\n", type, sum_us[type]);
    } else {
      std::printf("dimm collectives: %d nodes, mean of %d calls\n", size,
                  rounds);
      std::printf("  %-29s %8.3f us\n", "barrier", barrier_us);
      for (int type = 0; type < 4; ++type)
        std::printf("  global sum %-18s %8.3f us\n", names[type], sum_us[type]);
    }
  }
  dimm_comm_close(comm);
  dimm_close(card);
  return 0;
}
