#include "boards/common/pci_host.hpp"

#include "nicemu/regs.h"

#include <algorithm>

namespace nicemu {

namespace {

constexpr const char *kDriverOnly =
    "on a card several processes share, a process reaches only the mailbox "
    "page of card memory, and writes only its own word of it: the rest is "
    "the driver's and the card's";

HostBusResult refused(Time at, const char *why) {
  return {false, 0, at, why};
}

} // namespace

bool CardMemoryWindow::reachable(uint64_t offset, unsigned size,
                                 bool write) const {
  if (port_.processes() == 1)
    return true;
  const uint64_t at = base_ + offset;
  if (write && own_words_)
    return at == mailbox_ + 4ull * (NICEMU_MAILBOX_PROCESS_WORDS +
                                    port_.local_process()) &&
           size == 4;
  return at >= mailbox_ && at + size <= mailbox_ + 4096;
}

void CardMemoryWindow::read(uint64_t offset, unsigned size, Time at,
                            const HostBusCompletion &done) {
  uint32_t word = 0;
  if (!reachable(offset, size, false))
    return (void)done(refused(at, kDriverOnly));
  if (size != 4 || offset % 4 || !card_.card_read(base_ + offset, &word, 4))
    return (void)done(
        refused(at, "PIO reads card memory in aligned 32-bit words"));
  done({true, word, at + read_cost_, {}});
}

void CardMemoryWindow::write(uint64_t offset, unsigned size, uint64_t value,
                             Time at, HostBusCompletion done) {
  uint32_t word = uint32_t(value);
  if (!reachable(offset, size, true))
    return (void)done(refused(at, kDriverOnly));
  if (size != 4 || offset % 4 || !card_.card_write(base_ + offset, &word, 4))
    return (void)done(
        refused(at, "PIO writes card memory in aligned 32-bit words"));
  if (base_ + offset - mailbox_ < 4096)
    card_.raise_irq(NICEMU_IRQ_HOST); // the mailbox doorbell
  done({true, 0, at + write_cost_, {}});
}

void DoorbellWindow::read(uint64_t, unsigned, Time at,
                          const HostBusCompletion &done) {
  done(refused(at, "doorbells are write-only"));
}

// A write lands in its FIFO at once. A full FIFO refuses it, and the write
// is held until the firmware pops an entry of that FIFO: it lands at that
// pop, and completes no earlier than it would have without the retry.
void DoorbellWindow::write(uint64_t offset, unsigned size, uint64_t value,
                           Time at, HostBusCompletion done) {
  uint32_t fifo = uint32_t(offset / 4);
  if (size != 4 || offset % 4 || fifo >= bell_.fifos())
    return (void)done(refused(at, "no such doorbell FIFO"));
  const Time finished = at + write_cost_;
  const uint32_t source = port_.local_process();
  if (bell_.push(fifo, uint32_t(value), source))
    return (void)done({true, 0, finished, {}});
  bell_.when_space(fifo, [this, fifo, value = uint32_t(value), source, finished,
                          done = std::move(done)](Time popped) {
    if (done({true, 0, std::max(finished, popped), {}}))
      bell_.push(fifo, value, source); // the pop just freed an entry
  });
}

} // namespace nicemu
