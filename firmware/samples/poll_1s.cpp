// poll_1s: sleep_1s without `wait`. The same one second of virtual time in
// 1000 one-shot timer deadlines of 1 ms, but the core busy-polls
// IRQ_PENDING for the timer line instead of sleeping until it rises, as
// firmware that never idles does. `nicemu bench speed` runs the two side by
// side: the wall time of a polled virtual second against a slept one (the
// baseline for fast-forwarding such loops).
// Expect: "polled 1000 ms\n", exit code 0, clock_hz() cycles of virtual time
// (plus start-up), every one of them emulated.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

int main() {
  const uint64_t hz = fw::clock_hz();
  const uint64_t start = fw::cycles();
  fw::irq_master(false);
  fw::irq_enable(NICEMU_IRQ_TIMER);
  for (uint32_t ms = 1; ms <= 1000; ++ms) {
    fw::timer_start(start + ms * hz / 1000);
    while (!(fw::irq_pending() & NICEMU_IRQ_TIMER)) {
    }
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
  fw::puts("polled 1000 ms");
  return 0;
}
