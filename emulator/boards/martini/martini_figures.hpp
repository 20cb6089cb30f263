// The figures Martini's hardware blocks read from the model: clocks, the
// stages of the host interface (DIMM clock) and of the link interface
// (SWIF clock), the queue and window sizes, the host's uncached access
// costs, and the link. Read once per card; a figure out of the hardware's
// range is refused with the model's name.
#pragma once

#include "nicemu/model.hpp"
#include "sim/time.hpp"

#include <cstdint>
#include <vector>

namespace nicemu::martini {

struct Figures {
  uint64_t dimm_hz = 0, swif_hz = 0;
  // Host interface, in DIMM cycles: a store reaches the pins, is taken in
  // (host write), queued, looked up in the HTLB, size-checked and handed
  // to the send buffer; the receiver's LLCM write.
  uint32_t to_pins = 0, host_write = 0, transaction_queue = 0, htlb_lookup = 0,
           size_check = 0, handshake = 0, llcm_write = 0;
  // Link interface, in SWIF cycles.
  uint32_t swif_send = 0, swif_receive = 0;
  uint32_t credits = 0;        // transaction queue entries
  uint32_t windows = 0;        // BOTF windows
  uint32_t aotf_max_bytes = 0; // AOTF payload
  uint32_t botf_max_bytes = 0; // BOTF payload
  bool status_address = false; // packets may carry a receive-status address
  // The host CPU's uncached 8-byte store and load to the DIMM.
  Time store = 0, load = 0;
  uint64_t bank_bytes = 0;   // each SO-DIMM bank
  Time bank_ps_per_byte = 0; // a bank's bandwidth, on either side

  static Figures from(const Model &model);
};

// Every key of the martini board: read by its blocks, by the network and
// the host launcher, or kept for reference.
std::vector<ModelKey> model_keys();

} // namespace nicemu::martini
