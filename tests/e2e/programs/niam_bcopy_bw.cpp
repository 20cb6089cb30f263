// bcopy bandwidth: rank 0 copies its memory into rank 1's (into itself on
// one node), `reps` transfers back to back then one sync, for 4 B .. 64 KB,
// and prints virtual MB/s. The lanai4 model bounds it: host DMA 121 MB/s
// on each end, Tx 131 MB/s. Other ranks only take part in the barriers.
#include <nicemu/host.hpp>

#include <cstdio>
#include <cstring>

namespace host = nicemu::host;

int main() {
  constexpr size_t kMax = 64 << 10;
  auto *src = static_cast<uint8_t *>(host::am_alloc(kMax));
  auto *dst = static_cast<uint8_t *>(host::am_alloc(kMax));
  std::memset(src, 0x5A, kMax);
  host::barrier();
  uint32_t to = host::size() > 1 ? 1 : 0;
  int failures = 0;
  for (size_t n = 4; n <= kMax; n *= 4) {
    uint32_t reps = n < 4096 ? 64 : uint32_t((1u << 20) / n);
    if (host::rank() == 0) {
      double start = host::now_us();
      for (uint32_t i = 0; i < reps; ++i)
        host::bcopy(0, src, to, dst, n);
      failures += host::sync() != 0;
      double us = host::now_us() - start;
      std::printf("bcopy %zu B: %.2f MB/s (%u transfers, %.2f us each)\n", n,
                  double(n) * reps / us, reps, us / reps);
    }
    host::barrier();
  }
  if (host::rank() == to && std::memcmp(src, dst, kMax) != 0)
    ++failures;
  std::printf("rank %u of %u: %s\n", host::rank(), host::size(),
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
