// Host side of the niam firmware's collectives, run on every rank: checks
// that no rank leaves a barrier before the last one entered it, that the
// all-reduces give every rank the right result, the fuzzy barrier, the error
// cases and the unknown-handler counter; rank 0 prints the latencies in
// virtual microseconds. Exit status 0 when everything held.
#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>

namespace host = nicemu::host;

namespace {

int failures = 0;

void expect(bool ok, const char *what, long got, long want) {
  if (ok)
    return;
  ++failures;
  std::printf("rank %u: %s: got %ld, want %ld\n", host::rank(), what, got,
              want);
}

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

void check_errors() {
  bool threw = false;
  try {
    host::barrier_wait();
  } catch (const host::Error &) {
    threw = true;
  }
  expect(threw, "barrier_wait without barrier_post throws", threw, 1);
  host::barrier_post();
  threw = false;
  try {
    host::allreduce_sum(1);
  } catch (const host::Error &) {
    threw = true;
  }
  expect(threw, "a second collective while one is pending throws", threw, 1);
  host::barrier_wait();
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

} // namespace

int main(int argc, char **argv) {
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
