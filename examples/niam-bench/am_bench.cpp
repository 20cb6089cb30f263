// Host program of `nicemu bench niam`: Active Messages with host handlers
// between ranks 0 and 1, on the virtual clock. Rank 0 prints
//   am_rtt_us X        round trip of a small message answered by a handler
//   am_overhead_us X   host time spent in one am_send when the NIC is
//                      idle (the send overhead)
//   am_gap_us X        interval between arrivals of back-to-back messages
//                      at rank 1 (the gap: what limits the message rate)
// Run with
//   nicemu run -n 2 --firmware niam.img -- niam_bench_am [ROUNDS]
#include "guarded_main.hpp"

#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>

namespace host = nicemu::host;

namespace {

int pongs, arrivals;
double first_arrival, last_arrival;

void pong(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {
  ++pongs;
}

void ping(uint32_t src, uint32_t, uint32_t, uint32_t, uint32_t) {
  host::am_send(src, pong);
}

void sink(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {}

void stream(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {
  last_arrival = host::now_us();
  if (arrivals++ == 0)
    first_arrival = last_arrival;
}

uint32_t gap_ns; // rank 1's measurement, sent to rank 0

void report_gap(uint32_t, uint32_t ns, uint32_t, uint32_t, uint32_t) {
  gap_ns = ns;
}

} // namespace

int run(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
  if (rounds < 2 || host::size() < 2)
    return 2;
  host::barrier();
  if (host::rank() == 0) {
    double start = host::now_us();
    for (int i = 0; i < rounds; ++i) {
      host::am_send(1, ping);
      while (pongs <= i)
        host::am_wait();
    }
    std::printf("am_rtt_us %.4f\n", (host::now_us() - start) / rounds);
    // Sends spaced out so that the NIC has always taken the previous one:
    // the time inside am_send is the host's overhead alone.
    double in_send = 0;
    for (int i = 0; i < rounds; ++i) {
      host::compute(100'000'000); // 100 us
      double t = host::now_us();
      host::am_send(1, sink);
      in_send += host::now_us() - t;
    }
    std::printf("am_overhead_us %.4f\n", in_send / rounds);
    // Back to back: the NICs set the pace.
    for (int i = 0; i < rounds; ++i)
      host::am_send(1, stream);
  } else if (host::rank() == 1) {
    while (arrivals < rounds)
      host::am_wait();
    // The gap is measured where the messages land; rank 0 prints it.
    host::am_send(
        0, report_gap,
        uint32_t((last_arrival - first_arrival) * 1000 / (rounds - 1)));
  }
  host::barrier(); // rank 0 runs report_gap while it waits here
  if (host::rank() == 0)
    std::printf("am_gap_us %.4f\n", gap_ns / 1000.0);
  return 0;
}

int main(int argc, char **argv) {
  return guarded_main([&] { return run(argc, argv); });
}
