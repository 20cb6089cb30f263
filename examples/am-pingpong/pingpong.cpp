// Active Messages ping-pong with host handlers: rank 0 sends a message to
// rank 1, whose handler answers with one back; rank 0 times the round trip
// on the virtual clock, for small messages (4 words) and for bulk messages
// of 4 B to 64 KB. Run with
//   nicemu run -n 2 --firmware build/firmware/niam/niam.img --
//   build/examples/am_pingpong
#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace host = nicemu::host;

namespace {

int pongs;
uint32_t checksum; // of the last bulk message, as its receiver saw it

void pong(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {
  ++pongs;
}

void ping(uint32_t src, uint32_t a0, uint32_t, uint32_t, uint32_t) {
  host::am_send(src, pong, a0);
}

uint32_t sum(const void *data, size_t bytes) {
  uint32_t s = 0;
  for (size_t i = 0; i < bytes; ++i)
    s = s * 31 + static_cast<const uint8_t *>(data)[i];
  return s;
}

void bulk_pong(uint32_t, void *data, size_t bytes, uint64_t, uint64_t) {
  checksum = sum(data, bytes);
  ++pongs;
}

void bulk_ping(uint32_t src, void *data, size_t bytes, uint64_t, uint64_t) {
  host::am_send_bulk(src, bulk_pong, data, bytes);
}

} // namespace

int run() {
  constexpr int kRounds = 100;
  host::barrier();
  int failures = 0;
  if (host::rank() == 0 && host::size() > 1) {
    double start = host::now_us();
    for (int i = 0; i < kRounds; ++i) {
      host::am_send(1, ping, uint32_t(i));
      while (pongs < i + 1)
        host::am_wait();
    }
    std::printf("small AM round trip: %.3f us (virtual)\n",
                (host::now_us() - start) / kRounds);
    std::printf("%8s %14s %12s\n", "bytes", "round trip us", "MB/s");
    std::vector<uint8_t> data(host::am_max_bulk());
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = uint8_t(i * 7 + 1);
    for (size_t bytes = 4; bytes <= 65536; bytes *= 4) {
      size_t n = bytes > host::am_max_bulk() ? host::am_max_bulk() : bytes;
      constexpr int kBulkRounds = 10;
      pongs = 0;
      double t0 = host::now_us();
      for (int i = 0; i < kBulkRounds; ++i) {
        host::am_send_bulk(1, bulk_ping, data.data(), n);
        while (pongs < i + 1)
          host::am_wait();
      }
      double rtt = (host::now_us() - t0) / kBulkRounds;
      std::printf("%8zu %14.3f %12.2f\n", n, rtt, 2.0 * double(n) / rtt);
      if (checksum != sum(data.data(), n))
        ++failures;
    }
  }
  host::barrier(); // rank 1 serves while it waits here
  if (failures)
    std::printf("rank %u: %d bulk echoes came back corrupted\n", host::rank(),
                failures);
  return failures ? 1 : 0;
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
