// Host program of `nicemu bench logp`: the LogP parameters of Active
// Messages with host handlers between ranks 0 and 1, measured the way
// Culler, Liu, Martin and Yoshikawa measured real interfaces ("Assessing
// Fast Network Interfaces", IEEE Micro, 1996), with LogGP's per-byte gap G
// (Alexandrov et al., 1995). Rank 0 prints, in virtual time:
//   logp_rtt_us X         round trip: a message whose handler replies
//   logp_os_us X          o_send: host time in one send to an idle NIC
//   logp_or_us X          o_recv: host time in the poll that runs one
//                         arrived message (an empty handler)
//   logp_poll_empty_us X  a poll that finds nothing, for comparison
//   logp_g_us X           g: interval between arrivals of back-to-back sends
//   logp_L_us X           L = rtt/2 - o_send - o_recv
//   logp_bulk_gap_us S X  interval between back-to-back bulk messages of S
//                         bytes (two sizes)
//   logp_G_ns_per_byte X  G: the extra interval per byte between them
// Run with
//   nicemu run -n 2 --firmware niam.img -- niam_bench_logp [ROUNDS]
#include "guarded_main.hpp"

#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace host = nicemu::host;

namespace {

constexpr size_t kSmallBulk = 4096, kLargeBulk = 32768;

int pongs, sinks;
uint32_t arrivals;
double first_arrival, last_arrival;

void pong(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {
  ++pongs;
}
void ping(uint32_t src, uint32_t, uint32_t, uint32_t, uint32_t) {
  host::am_send(src, pong);
}
void sink(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {
  ++sinks;
}

void note_arrival() {
  last_arrival = host::now_us();
  if (arrivals++ == 0)
    first_arrival = last_arrival;
}
void stream(uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {
  note_arrival();
}
void bulk_stream(uint32_t, void *, size_t, uint64_t, uint64_t) {
  note_arrival();
}

// Rank 1's figures, in nanoseconds, sent to rank 0.
uint32_t or_ns, empty_ns, g_ns, small_gap_ns, large_gap_ns;
int reports;
void report_recv(uint32_t, uint32_t o, uint32_t empty, uint32_t g, uint32_t) {
  or_ns = o;
  empty_ns = empty;
  g_ns = g;
  ++reports;
}
void report_bulk(uint32_t, uint32_t small, uint32_t large, uint32_t, uint32_t) {
  small_gap_ns = small;
  large_gap_ns = large;
  ++reports;
}

// Receiver side of a burst: the mean interval between the first and the
// last of `count` arrivals, in ns.
uint32_t receive_burst(uint32_t count) {
  arrivals = 0;
  while (arrivals < count)
    host::am_wait();
  return uint32_t((last_arrival - first_arrival) * 1000 / (count - 1));
}

} // namespace

int run(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 100;
  if (rounds < 4 || host::size() < 2)
    return 2;
  const bool sender = host::rank() == 0, receiver = host::rank() == 1;
  std::vector<char> payload(kLargeBulk, 'x');
  host::barrier();

  // Round trip.
  double rtt = 0;
  if (sender) {
    double start = host::now_us();
    for (int i = 0; i < rounds; ++i) {
      host::am_send(1, ping);
      while (pongs <= i)
        host::am_wait();
    }
    rtt = (host::now_us() - start) / rounds;
  }
  host::barrier(); // the receiver serves the pings while it waits here

  // o_send: sends spaced out so the NIC has always taken the previous one.
  // o_recv: the receiver computes while each message arrives, then times
  // the poll that runs it; polls that found no message or two are not
  // counted, and give the cost of an empty poll.
  constexpr double kSpacing = 200; // us
  double os = 0;
  if (sender) {
    for (int i = 0; i < rounds; ++i) {
      host::compute(uint64_t(kSpacing * 1e6));
      double t = host::now_us();
      host::am_send(1, sink);
      os += host::now_us() - t;
    }
    os /= rounds;
  } else if (receiver) {
    double one = 0, empty = 0;
    int ones = 0, empties = 0;
    host::compute(uint64_t(kSpacing / 2 * 1e6)); // poll between arrivals
    while (sinks < rounds) {
      host::compute(uint64_t(kSpacing * 1e6));
      int before = sinks;
      double t = host::now_us();
      host::am_poll();
      double spent = host::now_us() - t;
      if (sinks == before + 1) {
        one += spent;
        ++ones;
      } else if (sinks == before) {
        empty += spent;
        ++empties;
      }
    }
    // A few polls that surely find nothing.
    for (int i = 0; i < 10; ++i) {
      double t = host::now_us();
      host::am_poll();
      empty += host::now_us() - t;
      ++empties;
    }
    or_ns = ones ? uint32_t(one / ones * 1000) : 0;
    empty_ns = uint32_t(empty / empties * 1000);
  }
  host::barrier();

  // g: back to back, the NICs set the pace; measured where they land.
  if (sender) {
    for (int i = 0; i < rounds; ++i)
      host::am_send(1, stream);
  } else if (receiver) {
    g_ns = receive_burst(uint32_t(rounds));
    host::am_send(0, report_recv, or_ns, empty_ns, g_ns);
  }
  host::barrier();

  // G: bursts of bulk messages of two sizes.
  const int bulk_rounds = rounds / 4 < 4 ? 4 : rounds / 4;
  for (size_t bytes : {kSmallBulk, kLargeBulk}) {
    if (sender) {
      for (int i = 0; i < bulk_rounds; ++i)
        host::am_send_bulk(1, bulk_stream, payload.data(), bytes);
    } else if (receiver) {
      uint32_t gap = receive_burst(uint32_t(bulk_rounds));
      (bytes == kSmallBulk ? small_gap_ns : large_gap_ns) = gap;
    }
    host::barrier();
  }
  if (receiver)
    host::am_send(0, report_bulk, small_gap_ns, large_gap_ns);
  host::barrier(); // rank 0 runs the reports while it waits here

  if (sender) {
    if (reports != 2)
      return 3;
    double orecv = or_ns / 1000.0;
    std::printf("logp_rtt_us %.4f\n", rtt);
    std::printf("logp_os_us %.4f\n", os);
    std::printf("logp_or_us %.4f\n", orecv);
    std::printf("logp_poll_empty_us %.4f\n", empty_ns / 1000.0);
    std::printf("logp_g_us %.4f\n", g_ns / 1000.0);
    std::printf("logp_L_us %.4f\n", rtt / 2 - os - orecv);
    std::printf("logp_bulk_gap_us %zu %.4f\n", kSmallBulk,
                small_gap_ns / 1000.0);
    std::printf("logp_bulk_gap_us %zu %.4f\n", kLargeBulk,
                large_gap_ns / 1000.0);
    std::printf("logp_G_ns_per_byte %.4f\n",
                double(large_gap_ns - small_gap_ns) /
                    double(kLargeBulk - kSmallBulk));
  }
  return 0;
}

int main(int argc, char **argv) {
  return guarded_main([&] { return run(argc, argv); });
}
