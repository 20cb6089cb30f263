// An NI Active Messages host program: every rank times 100 barriers and an
// all-reduce on the virtual clock; rank 0 prints the figures. Run with
//   nicemu run -n 8 --firmware build/firmware/niam/niam.img --
//   build/examples/niam_barrier
#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>

namespace host = nicemu::host;

int run() {
  constexpr int kRounds = 100;
  host::barrier(); // everyone is up
  double start = host::now_us();
  for (int i = 0; i < kRounds; ++i)
    host::barrier();
  double barrier_us = (host::now_us() - start) / kRounds;
  int32_t sum = host::allreduce_sum(int32_t(host::rank()));
  if (host::rank() == 0)
    std::printf("%u nodes: barrier %.3f us (virtual), sum of ranks %d\n",
                host::size(), barrier_us, sum);
  return sum == int32_t(host::size() * (host::size() - 1) / 2) ? 0 : 1;
}

// The library throws nicemu::host::Error when a call cannot be made (a bad
// argument, or the cluster stopping because another rank failed): say why
// and exit, rather than abort.
int main() {
  try {
    return run();
  } catch (const nicemu::host::Error &e) {
    const char *rank = std::getenv("NICEMU_RANK"); // the library may be gone
    std::fprintf(stderr, "rank %s: %s\n", rank ? rank : "?", e.what());
    return 1;
  }
}
