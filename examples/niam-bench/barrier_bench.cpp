// Host program of `nicemu bench niam`: times ROUNDS barriers (default 100)
// on the virtual clock. Rank 0 prints "barrier_us X" (the mean); every rank
// prints "peak_rss_kib N". Run with
//   nicemu run -n 8 --firmware niam.img -- niam_bench_barrier [ROUNDS]
#include "peak_rss.hpp"

#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>

namespace host = nicemu::host;

int run(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
  if (rounds <= 0)
    return 2;
  host::barrier(); // everyone is up
  double start = host::now_us();
  for (int i = 0; i < rounds; ++i)
    host::barrier();
  double barrier_us = (host::now_us() - start) / rounds;
  if (host::rank() == 0)
    std::printf("barrier_us %.4f\n", barrier_us);
  std::printf("peak_rss_kib %ld\n", peak_rss_kib());
  return 0;
}

// The library throws nicemu::host::Error when a call cannot be made (a bad
// argument, or the cluster stopping because another rank failed): say why
// and exit, rather than abort.
int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const nicemu::host::Error &e) {
    const char *rank = std::getenv("NICEMU_RANK"); // the library may be gone
    std::fprintf(stderr, "rank %s: %s\n", rank ? rank : "?", e.what());
    return 1;
  }
}
