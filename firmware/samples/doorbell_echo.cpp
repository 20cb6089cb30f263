// doorbell_echo (comet): serves the host program
// tests/e2e/programs/doorbell_echo.cpp through the doorbell FIFOs. The
// firmware sleeps until a doorbell rings (NICEMU_IRQ_DOORBELL), then takes
// one entry from each non-empty FIFO in turn:
//
// - FIFO 0, a bus address: the host's echo log from now on (kLogRecords
//   records of 4 words), and the record count restarts at 0;
// - FIFO 0, the value 0: stop serving. The firmware writes the record
//   {0, 0, n + 1, 0} (FIFO 0 marks it), then never pops again and sleeps
//   for good, so a host that fills a FIFO stays blocked (the test of a run
//   that ends as a deadlock instead of hanging);
// - any other FIFO f, a value v: record n (the n-th value echoed, counted
//   from 0) = {v, f, n + 1, 0}, written by host DMA into record n %
//   kLogRecords of the log. The host waits on word 2 (n + 1).
//
// Values from one FIFO are echoed in the order the host rang them. An echo
// takes a host DMA (about 1 us on comet), longer than a doorbell write
// (0.51 us), so a host ringing a burst fills the FIFO and its writes are
// held until the firmware pops (the retry of docs/host-channel.md).
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

namespace {

constexpr uint32_t kLogRecords = 256;

uint32_t record[4];

void dma_to_host(uint32_t host, void *card, uint32_t bytes) {
  fw::hdma_start(host, card, bytes, /*to_host=*/true, /*irq=*/true);
  while (!(fw::hdma_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    fw::sleep();
  fw::irq_clear(NICEMU_IRQ_HDMA);
}

// Writes record n % kLogRecords of the log: {value, fifo, n + 1, 0}.
void echo(uint32_t log, uint32_t n, uint32_t value, uint32_t fifo) {
  record[0] = value;
  record[1] = fifo;
  record[2] = n + 1;
  record[3] = 0;
  dma_to_host(log + (n % kLogRecords) * sizeof record, record, sizeof record);
}

[[noreturn]] void stop_serving(uint32_t log, uint32_t echoed) {
  fw::printf("doorbell_echo: stopped after %u values\n",
             static_cast<unsigned>(echoed));
  if (log)
    echo(log, echoed, 0, 0);
  fw::irq_disable(~0u);
  for (;;)
    fw::sleep(); // nothing enabled: never wakes
}

} // namespace

int main() {
  if (!(fw::caps() & NICEMU_CAP_DOORBELL)) {
    fw::puts("doorbell_echo: this card has no doorbells");
    return 1;
  }
  const uint32_t fifos = fw::reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_FIFOS);
  uint32_t log = 0, echoed = 0;
  // Wake-on-event: the lines wake `wait`; IRQ_MASTER stays off.
  fw::irq_enable(NICEMU_IRQ_DOORBELL | NICEMU_IRQ_HDMA);
  for (;;) {
    // Cleared before looking, so a doorbell after the look wakes `wait`.
    fw::irq_clear(NICEMU_IRQ_DOORBELL);
    uint32_t ready = fw::doorbell_nonempty();
    if (!ready) {
      fw::sleep();
      continue;
    }
    for (uint32_t f = 0; f < fifos; ++f) {
      if (!(ready & (1u << f)))
        continue;
      uint32_t value = fw::doorbell_pop(f);
      if (f == 0) {
        if (value == 0)
          stop_serving(log, echoed);
        log = value;
        echoed = 0;
        continue;
      }
      if (!log)
        continue; // no log yet: dropped
      echo(log, echoed, value, f);
      ++echoed;
    }
  }
}
