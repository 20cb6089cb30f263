// Host side of the niam firmware's collectives, run on every rank: checks
// that no rank leaves a barrier before the last one entered it, that the
// all-reduces give every rank the right result, the fuzzy barrier, the error
// cases and the unknown-handler counter; rank 0 prints the latencies in
// virtual microseconds. Exit status 0 when everything held.
//
//   niam_barrier_prog [ROUNDS]   the checks above, ROUNDS timed calls (100)
//   niam_barrier_prog idle MS    barrier, MS ms of computing without the
//                                NIC, barrier (the NICs should sleep)
//   niam_barrier_prog fuzzy      the fuzzy barrier with skewed arrivals
#include <nicemu/host.hpp>

#include "niam_checks.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace host = nicemu::host;

namespace {

int32_t now_ns() {
  return static_cast<int32_t>(host::now_ps() / 1000);
}

// Rank (r + k) % P computes longest in round k; nobody may leave before the
// slowest rank entered, which an all-reduce (max) tells afterwards.
void check_barrier_order(uint32_t rounds) {
  uint32_t p = host::size(), r = host::rank();
  for (uint32_t k = 0; k < rounds; ++k) {
    host::compute(uint64_t((r + k) % p) * 1000000); // (r + k) % P us
    int32_t entered = now_ns();
    host::barrier();
    int32_t left = now_ns();
    int32_t last_in = host::allreduce_max(entered);
    expect(left > last_in, "left the barrier before the last rank entered",
           left, last_in);
  }
}

void check_reductions() {
  int32_t p = static_cast<int32_t>(host::size());
  int32_t r = static_cast<int32_t>(host::rank());
  expect(host::allreduce_sum(r) == p * (p - 1) / 2, "sum of ranks",
         host::allreduce_sum(r), p * (p - 1) / 2);
  expect(host::allreduce_min(r) == 0, "min of ranks", host::allreduce_min(r),
         0);
  expect(host::allreduce_max(r) == p - 1, "max of ranks",
         host::allreduce_max(r), p - 1);
  expect(host::allreduce_min(-r - 5) == -p - 4, "min of -rank-5",
         host::allreduce_min(-r - 5), -p - 4);
  // Wrapping sum: INT32_MAX on every rank.
  int32_t wrapped = static_cast<int32_t>(uint32_t(INT32_MAX) * uint32_t(p));
  expect(host::allreduce_sum(INT32_MAX) == wrapped, "wrapping sum",
         host::allreduce_sum(INT32_MAX), wrapped);
}

// The code an Error thrown by `f` carries; 0 if it throws none.
template <class F> long code_thrown(F f) {
  try {
    f();
  } catch (const host::Error &e) {
    return long(e.code());
  }
  return 0;
}

void check_errors() {
  const long state = long(host::ErrorCode::State);
  long code = code_thrown([] { host::barrier_wait(); });
  expect(code == state, "barrier_wait without barrier_post throws State", code,
         state);
  host::barrier_post();
  code = code_thrown([] { host::allreduce_sum(1); });
  expect(code == state, "a second collective while one is pending throws State",
         code, state);
  host::barrier_wait();
  int on_stack = 0;
  const long bad = long(host::ErrorCode::BadArgument);
  code = code_thrown([&] { host::bus_address(&on_stack); });
  expect(code == bad, "memory not from alloc is a BadArgument", code, bad);
}

// An AM naming handler 99 is counted and dropped; requests are served in
// order, so after the next barrier it has been seen.
void check_unknown_handler() {
  const uint32_t args[6] = {1, 2, 3, 4, 5, 6};
  host::am_request(99, args);
  host::barrier();
  expect(host::am_unknown_handlers() == 1, "unknown handlers counted",
         host::am_unknown_handlers(), 1);
  expect(host::am_bad_packets() == 0, "bad packets", host::am_bad_packets(), 0);
}

template <class F> double average_us(uint32_t n, F f) {
  host::barrier(); // start together
  double start = host::now_us();
  for (uint32_t i = 0; i < n; ++i)
    f();
  return (host::now_us() - start) / n;
}

// Posts, computes 20 us, waits: the barrier completes during the work.
double fuzzy_wait_us() {
  host::barrier();
  host::barrier_post();
  host::compute(20000000);
  double start = host::now_us();
  host::barrier_wait();
  return host::now_us() - start;
}

// A long stretch of host work between two barriers, without a NIC call:
// the test reads from the run summary that every NIC slept through it.
int idle_mode(uint32_t ms) {
  host::barrier();
  double start = host::now_us();
  host::compute(uint64_t(ms) * 1000000000);
  double end = host::now_us();
  host::barrier();
  expect(end - start >= ms * 1000.0, "computed us", long(end - start),
         long(ms) * 1000);
  if (host::rank() == 0)
    std::printf("idle %u nodes: computed %.3f us between barriers\n",
                host::size(), end - start);
  std::printf("rank %u of %u: %s\n", host::rank(), host::size(),
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}

// The fuzzy barrier with skewed arrivals, one round per rank. In round k
// rank r computes d = ((r + k) % P) * 50 us, posts, then waits: the rank
// with d = 0 posts first, the one with d = (P - 1) * 50 us last. All ranks
// leave the barrier before `start` within its exit skew, which is far less
// than the time from the last post to any rank's completion, so each rank
// checks locally that barrier_wait returned no earlier than start +
// (P - 1) * 50 us; an all-reduce (max) of the post times then checks it
// exactly. The first poster checks that barrier_post returned at once, then
// works as long as the slowest rank before waiting: the work overlaps the
// barrier, so it leaves with the others (had the post blocked until the
// barrier completed, it would leave a whole work time after them).
int fuzzy_mode() {
  constexpr uint64_t kStep = 50000000; // 50 us
  const uint32_t p = host::size(), r = host::rank();
  const uint64_t slowest = uint64_t(p - 1) * kStep;
  uint64_t post_ps = 0, lag_ps = 0, left_min = ~0ull, left_max = 0;
  for (uint32_t k = 0; k < p; ++k) {
    const uint64_t delay = uint64_t((r + k) % p) * kStep;
    host::barrier();
    const uint64_t start = host::now_ps();
    host::compute(delay);
    const uint64_t before_post = host::now_ps();
    host::barrier_post();
    const uint64_t posted = host::now_ps();
    if (delay == 0) {
      post_ps = posted - start;
      // Posting is one PIO write: far less than the slowest rank's work.
      expect(post_ps < 2000000, "ps in barrier_post (first poster)",
             long(post_ps), 2000000);
      host::compute(slowest); // useful work while the others arrive
    }
    host::barrier_wait();
    const uint64_t left = host::now_ps();
    expect(left >= start + slowest,
           "left the fuzzy barrier before the slowest rank posted: ps after "
           "start",
           long(left - start), long(slowest));
    left_min = std::min(left_min, left - start);
    left_max = std::max(left_max, left - start);
    const int32_t last_post =
        host::allreduce_max(static_cast<int32_t>(before_post / 1000));
    expect(static_cast<int32_t>(left / 1000) > last_post,
           "left the fuzzy barrier before the last post (ns)",
           long(left / 1000), long(last_post));
    const int32_t first_left =
        host::allreduce_min(static_cast<int32_t>(left / 1000));
    if (delay == 0) {
      lag_ps = (left / 1000 - uint64_t(first_left)) * 1000;
      expect(lag_ps < slowest / 2,
             "the first poster's work did not overlap the barrier: ps after "
             "the first rank left",
             long(lag_ps), long(slowest / 2));
    }
  }
  std::printf("fuzzy rank %u of %u: post %.3f us, left %.3f..%.3f us after "
              "start, slowest post %.3f us, first poster lag %.3f us\n",
              r, p, post_ps / 1e6, left_min / 1e6, left_max / 1e6,
              slowest / 1e6, lag_ps / 1e6);
  std::printf("rank %u of %u: %s\n", r, p, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 2 && std::strcmp(argv[1], "idle") == 0)
    return idle_mode(uint32_t(std::atoi(argv[2])));
  if (argc > 1 && std::strcmp(argv[1], "fuzzy") == 0)
    return fuzzy_mode();
  uint32_t n = argc > 1 ? uint32_t(std::atoi(argv[1])) : 100;
  check_barrier_order(4);
  check_reductions();
  check_errors();
  check_unknown_handler();
  double barrier_us = average_us(n, [] { host::barrier(); });
  double reduce_us = average_us(n, [] { host::allreduce_sum(1); });
  double fuzzy_us = fuzzy_wait_us();
  if (host::rank() == 0)
    std::printf("niam %u nodes: barrier %.3f us, allreduce %.3f us, fuzzy "
                "wait %.3f us after 20 us of work (%u rounds each)\n",
                host::size(), barrier_us, reduce_us, fuzzy_us, n);
  std::printf("rank %u of %u: %s\n", host::rank(), host::size(),
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
