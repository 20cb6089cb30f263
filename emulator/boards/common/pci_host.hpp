// The host side of a PCI card: the windows a host program reaches over the
// bus. Card memory by programmed I/O (32-bit words at the card's own
// addresses; a write to the mailbox page also raises NICEMU_IRQ_HOST, the
// doorbell of the NI-AM and sample firmwares), and the doorbell FIFOs (one
// 32-bit word per FIFO at NICEMU_HOST_DOORBELLS + 4 x FIFO; a full FIFO
// holds the write until the firmware pops an entry, as a PCI target
// retries it).
#pragma once

#include "devices/device.hpp"
#include "devices/doorbell.hpp"
#include "devices/host_port.hpp"

namespace nicemu {

class CardMemoryWindow final : public HostWindow {
public:
  // The card memory at [base, base + size) of `card`; `mailbox`: the card
  // address of the mailbox page. On a card several processes share
  // (`port`'s processes), card memory is the driver's: a process reaches
  // the mailbox page only, as a driver maps one page into each process,
  // and with `own_words` it writes only its own word of it
  // (NICEMU_MAILBOX_PROCESS_WORDS).
  CardMemoryWindow(DeviceHost &card, const HostPort &port, uint32_t base,
                   Time read_cost, Time write_cost, uint32_t mailbox,
                   bool own_words = false)
      : card_(card), port_(port), base_(base), read_cost_(read_cost),
        write_cost_(write_cost), mailbox_(mailbox), own_words_(own_words) {}

  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  Time posted_write_cost() const override { return write_cost_; }
  const char *call_name(bool write) const override {
    return write ? "PioWrite" : "PioRead";
  }

private:
  // Whether a process may reach [offset, offset + size): anywhere on a card
  // of its own, the mailbox page only on a shared one (for a write with
  // own_words_, its own word only).
  bool reachable(uint64_t offset, unsigned size, bool write) const;

  DeviceHost &card_;
  const HostPort &port_;
  uint32_t base_;
  Time read_cost_, write_cost_;
  uint32_t mailbox_;
  bool own_words_;
};

class DoorbellWindow final : public HostWindow {
public:
  // Each entry remembers which of `port`'s processes rang it.
  DoorbellWindow(DoorbellDevice &bell, const HostPort &port, Time write_cost)
      : bell_(bell), port_(port), write_cost_(write_cost) {}

  void read(uint64_t offset, unsigned size, Time at,
            const HostBusCompletion &done) override;
  void write(uint64_t offset, unsigned size, uint64_t value, Time at,
             HostBusCompletion done) override;
  const char *call_name(bool) const override { return "Doorbell"; }

private:
  DoorbellDevice &bell_;
  const HostPort &port_;
  Time write_cost_;
};

} // namespace nicemu
