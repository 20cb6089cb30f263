// sleep_1s: sleeps one second of virtual time in 1000 steps of 1 ms, each a
// one-shot timer deadline computed from clock_hz(). Polling style: the timer
// line is enabled but IRQ_MASTER stays off, so `wait` only wakes the core and
// the line is cleared by hand.
// Expect: "slept 1000 ms\n", exit code 0, clock_hz() cycles of virtual time
// (plus start-up), and almost no host CPU time spent.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

int main() {
  const uint64_t hz = fw::clock_hz();
  const uint64_t start = fw::cycles();
  fw::irq_master(false);
  fw::irq_enable(NICEMU_IRQ_TIMER);
  for (uint32_t ms = 1; ms <= 1000; ++ms) {
    // Absolute deadlines: no drift when hz is not a multiple of 1000.
    fw::timer_start(start + ms * hz / 1000);
    fw::sleep();
    fw::irq_clear(NICEMU_IRQ_TIMER);
  }
  fw::timer_stop();
  uint64_t elapsed = fw::cycles() - start;
  if (elapsed < hz) {
    fw::printf("woke early: %llu cycles, expected %llu\n",
               static_cast<unsigned long long>(elapsed),
               static_cast<unsigned long long>(hz));
    return 1;
  }
  fw::puts("slept 1000 ms");
  return 0;
}
