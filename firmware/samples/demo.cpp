// demo: the firmware README command 1 flashes and runs. The card introduces
// itself, measures the cycle cost of a small packet handler with the cycle
// counter, sleeps through five timer interrupts and reports their latency,
// then halts with exit code 0. Every figure it prints is deterministic.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

namespace {

constexpr uint32_t kPacketBytes = 256;
constexpr uint32_t kTicks = 5;

uint8_t packet[kPacketBytes];
volatile uint32_t ticks;
volatile uint32_t tick_cycles[kTicks];

// RFC 1071 Internet checksum: what a NIC computes for every IP packet.
uint16_t __attribute__((noinline)) checksum(const uint8_t *data, uint32_t n) {
  uint32_t sum = 0;
  for (uint32_t i = 0; i + 1 < n; i += 2)
    sum += uint32_t(data[i]) << 8 | data[i + 1];
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

void on_interrupt(uint32_t cause) {
  if (cause & NICEMU_IRQ_TIMER) {
    if (ticks < kTicks)
      tick_cycles[ticks] = uint32_t(fw::cycles());
    ticks = ticks + 1;
    fw::irq_clear(NICEMU_IRQ_TIMER);
  }
}

uint32_t nanoseconds(uint64_t cycles) {
  return uint32_t(cycles * 1'000'000'000ull / fw::clock_hz());
}

} // namespace

int main() {
  fw::printf("nicemu demo firmware: node %u of %u, core clock %u MHz\n",
             unsigned(fw::node_id()), unsigned(fw::node_count()),
             unsigned(fw::clock_hz() / 1'000'000));

  for (uint32_t i = 0; i < kPacketBytes; ++i)
    packet[i] = uint8_t(i * 7 + 1);
  uint64_t start = fw::cycles();
  uint16_t sum = checksum(packet, kPacketBytes);
  uint64_t spent = fw::cycles() - start;
  fw::printf("checksum of a %u-byte packet: 0x%04x in %u cycles (%u ns)\n",
             unsigned(kPacketBytes), unsigned(sum), unsigned(spent),
             unsigned(nanoseconds(spent)));

  // A periodic timer every 100 us; the core sleeps between interrupts.
  uint32_t period = fw::clock_hz() / 10'000;
  uint32_t first = uint32_t(fw::cycles()) + period;
  fw::irq_handler(on_interrupt);
  fw::timer_start(first, period);
  fw::irq_enable(NICEMU_IRQ_TIMER);
  fw::irq_master(true);
  while (ticks < kTicks)
    fw::sleep();
  fw::timer_stop();
  fw::irq_master(false);
  for (uint32_t i = 0; i < kTicks; ++i) {
    uint32_t latency = tick_cycles[i] - (first + i * period);
    fw::printf("timer interrupt %u: handler reached %u cycles after the "
               "deadline (%u ns)\n",
               unsigned(i + 1), unsigned(latency),
               unsigned(nanoseconds(latency)));
  }
  fw::printf("done: %u interrupts taken while asleep\n", unsigned(ticks));
  return 0;
}
