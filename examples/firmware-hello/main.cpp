// A minimal firmware: greet, count a few timer ticks, exit.
#include <nicemu/fw.hpp>

namespace fw = nicemu::fw;

int main() {
  fw::printf("hello from an out-of-tree firmware on node %u\n",
             static_cast<unsigned>(fw::node_id()));

  // Sleep 1 ms of virtual time: arm the timer, let it wake the core.
  fw::irq_enable(NICEMU_IRQ_TIMER);
  fw::timer_start(fw::cycles() + fw::clock_hz() / 1000);
  fw::sleep();
  fw::irq_clear(NICEMU_IRQ_TIMER);

  fw::puts("bye");
  return 0;
}
