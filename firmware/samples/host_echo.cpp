// host_echo: serves the host program tests/e2e/programs/host_echo.cpp. The
// host writes a request into the mailbox by PIO; the firmware fetches the
// host's buffer by host DMA, adds one to every word, writes the result back
// into the host's buffer by DMA, then DMAs the request number into the
// host's flag word, which the host is waiting on.
//
// Mailbox (word offsets): 0 request number (written last), 1 bus address of
// the data, 2 length in bytes (<= 256), 3 bus address of the flag word.
// The firmware sleeps between requests (woken by the mailbox doorbell,
// NICEMU_IRQ_HOST) and while its DMAs run (NICEMU_IRQ_HDMA).
// Expect: one request served per mailbox change; the host checks the data;
// the node's summary shows most cycles asleep.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

namespace {

uint32_t data[64];
uint32_t flag;

void dma(uint32_t host, void *card, uint32_t bytes, bool to_host) {
  fw::hdma_start(host, card, bytes, to_host, /*irq=*/true);
  while (!(fw::hdma_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    fw::sleep();
  fw::irq_clear(NICEMU_IRQ_HDMA);
}

} // namespace

int main() {
  volatile uint32_t *box = fw::mailbox();
  uint32_t served = 0;
  // Wake-on-event: the lines wake `wait`; IRQ_MASTER stays off.
  fw::irq_enable(NICEMU_IRQ_HOST | NICEMU_IRQ_HDMA);
  for (;;) {
    while (box[0] == served) {
      fw::sleep();
      fw::irq_clear(NICEMU_IRQ_HOST);
    }
    served = box[0];
    uint32_t bytes = box[2] > sizeof data ? sizeof data : box[2];
    dma(box[1], data, bytes, false);
    for (uint32_t i = 0; i < bytes / 4; ++i)
      data[i] += 1;
    dma(box[1], data, bytes, true);
    flag = served;
    dma(box[3], &flag, 4, true);
  }
}
