// timer_irq: a periodic timer of 1000 cycles interrupts the core; the
// handler clears the line and counts. main sleeps (`wait`) between
// interrupts until it has seen 10, then stops the timer.
// Expect: "ticks 10\n", exit code 0, about 10 * 1000 cycles of virtual time,
// 10 interrupts taken through the runtime's stub.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

namespace {

volatile uint32_t ticks;

void on_interrupt(uint32_t cause) {
  if (cause & NICEMU_IRQ_TIMER) {
    fw::irq_clear(NICEMU_IRQ_TIMER);
    ticks = ticks + 1;
  }
}

} // namespace

int main() {
  fw::irq_handler(on_interrupt);
  fw::timer_start(fw::cycles() + 1000, 1000);
  fw::irq_enable(NICEMU_IRQ_TIMER);
  fw::irq_master(true);
  // A tick between the test and `wait` would cost one extra period of
  // sleep; with 1000 cycles per tick and a loop of a few instructions it
  // cannot happen here.
  while (ticks < 10)
    fw::sleep();
  fw::timer_stop();
  fw::irq_master(false);
  fw::printf("ticks %u\n", static_cast<unsigned>(ticks));
  return 0;
}
