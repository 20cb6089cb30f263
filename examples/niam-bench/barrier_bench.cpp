// Host program of `nicemu bench niam`: times ROUNDS barriers (default 100)
// on the virtual clock. Rank 0 prints "barrier_us X" (the mean); every rank
// prints "peak_rss_kib N". Run with
//   nicemu run -n 8 --firmware niam.img -- niam_bench_barrier [ROUNDS]
#include "guarded_main.hpp"
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

int main(int argc, char **argv) {
  return guarded_main([&] { return run(argc, argv); });
}
