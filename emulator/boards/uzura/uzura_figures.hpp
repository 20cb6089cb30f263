// The UZURA model's figures as the card's blocks use them (docs/uzura.md,
// "Where the times come from"), and the PCI-X bus they share.
#pragma once

#include "nicemu/model.hpp"
#include "sim/time.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace nicemu::uzura {

struct Figures {
  // The host's side (charged to the host program).
  Time pio_read = 0, pio_write = 0, doorbell = 0;
  Time poll_nic_register = 0;    // and the bus is busy as long
  Time nic_poll_host_memory = 0; // one poll by the card; bus busy as long
  Time interrupt = 0;            // card -> waiting host
  // PCI-X DMA: a transfer of b bytes occupies the bus fixed + b x per_byte.
  // From the spec's 64-byte host -> card message (0.76 us) and 4 KB blocks
  // (4.02 us to the card, 3.89 us to the host), with the fixed part of the
  // two directions taken to be the same (nicemu's choice).
  Time to_card_fixed = 0, to_host_fixed = 0;
  double to_card_ps_per_byte = 0, to_host_ps_per_byte = 0;
  Time dma_after_doorbell = 0;
  // Each discontiguous piece of a transfer beyond the first is a bus
  // transaction of its own: its address and attribute phases, two PCI-X
  // clocks (nicemu's choice: the spec measures contiguous blocks only).
  Time extra_piece = 0;
  // Translation: one lookup in the card SRAM, one probe of the host table.
  Time sram_lookup = 0, host_lookup = 0;
  // The packet path's stages (spec), and the link's rate.
  Time send_non_pl4 = 0, send_pl4 = 0, receive_pl4 = 0, receive_non_pl4 = 0;
  Time mac_send = 0, mac_receive = 0; // the spec's send+receive, halved
  Time link_ps_per_byte = 0;

  static Figures from(const Model &model);
  static std::vector<ModelKey> model_keys();

  Time to_card(uint32_t bytes, uint32_t pieces = 1) const {
    return to_card_fixed + Time(to_card_ps_per_byte * bytes + 0.5) +
           (pieces > 1 ? (pieces - 1) * extra_piece : 0);
  }
  Time to_host(uint32_t bytes, uint32_t pieces = 1) const {
    return to_host_fixed + Time(to_host_ps_per_byte * bytes + 0.5) +
           (pieces > 1 ? (pieces - 1) * extra_piece : 0);
  }
};

// The PCI-X bus between the card and its host: DMA transfers, the card's
// polls of host memory and the host's polls of card registers each hold it
// for their time, one after the other.
class PcixBus {
public:
  // Holds the bus for `duration` from `earliest` or as soon as it is free;
  // returns when the use starts. While the card polls host memory, polls
  // of `poll_` each fill the bus whenever nothing else holds it, back to
  // back from when it went free: a transfer waits for the poll in progress.
  Time occupy(Time earliest, Time duration) {
    Time start = std::max(earliest, free_at_);
    if (poll_ && earliest > free_at_) {
      Time polls = (earliest - free_at_ + poll_ - 1) / poll_;
      start = free_at_ + polls * poll_;
      busy_ += polls * poll_;
    }
    free_at_ = start + duration;
    busy_ += duration;
    return start;
  }
  // The card polls host memory for `period` at a time (0: it does not).
  void set_polling(Time period) { poll_ = period; }
  // When a poll that starts no earlier than `at` ends: what the card reads
  // at `at` it has read by then.
  Time poll_seen(Time at) const {
    if (at <= free_at_)
      return free_at_ + poll_;
    return free_at_ + ((at - free_at_ + poll_ - 1) / poll_) * poll_ + poll_;
  }
  Time free_at() const { return free_at_; }
  Time busy_total() const { return busy_; }
  // A checkpoint's (the polling period comes from the engine's NOTIFY).
  void restore(Time free_at, Time busy) {
    free_at_ = free_at;
    busy_ = busy;
  }

private:
  Time free_at_ = 0, busy_ = 0, poll_ = 0;
};

} // namespace nicemu::uzura
