// Host program of `nicemu bench niam`: rank 0 copies its memory into rank
// 1's with bcopy, for sizes 4 B .. MAX (default 64 KiB) by factors of 4,
// transfers back to back then one sync, and prints "bcopy BYTES MB_PER_S"
// (virtual time) per size; every rank prints "peak_rss_kib N". Run with
//   nicemu run -n 2 --firmware niam.img -- niam_bench_bcopy [MAX]
#include "guarded_main.hpp"
#include "peak_rss.hpp"

#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>

namespace host = nicemu::host;

namespace {

// About 1 MiB per size for large transfers so the pipeline is full; 64 for
// small ones, which are bound by the per-transfer cost anyway.
uint32_t repetitions(size_t bytes) {
  return bytes < 4096 ? 64 : uint32_t((1u << 20) / bytes);
}

} // namespace

int run(int argc, char **argv) {
  size_t max = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 64 << 10;
  if (max < 4 || host::size() < 2)
    return 2;
  void *src = host::am_alloc(max), *dst = host::am_alloc(max);
  host::barrier();
  int failures = 0;
  for (size_t n = 4; n <= max; n *= 4) {
    if (host::rank() == 0) {
      uint32_t reps = repetitions(n);
      double start = host::now_us();
      for (uint32_t i = 0; i < reps; ++i)
        host::bcopy(0, src, 1, dst, n);
      failures += host::sync() != 0;
      double us = host::now_us() - start;
      std::printf("bcopy %zu %.4f\n", n, double(n) * reps / us);
    }
    host::barrier();
  }
  std::printf("peak_rss_kib %ld\n", peak_rss_kib());
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  return guarded_main([&] { return run(argc, argv); });
}
