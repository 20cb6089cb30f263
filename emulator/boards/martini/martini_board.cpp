// martini: DIMMnet-1, the Martini LSI on a card in a host DIMM slot. The
// card's own blocks (HTLB, AOTF/BOTF, OTF receiver, LLCM, PUSH/PULL, the
// SO-DIMM banks, its DIMM and SWIF clocks) will live in this folder; until
// they do, the board is the core with its memory map (instruction SRAM,
// data SRAM, LLCM) and the figures those blocks will read are kept as
// reference keys, so the model file is still checked key by key.
#include "boards/board_list.hpp"
#include "boards/common/shared_parts.hpp"

namespace nicemu {

namespace {

std::vector<ModelKey> martini_keys() {
  std::vector<ModelKey> keys =
      reference_keys("DIMMnet-1 hardware, not modelled yet",
                     {
                         "timing.link.outside_swif",
                         "timing.switch.per_packet",
                         "timing.host.uncached_store_8",
                         "timing.host.uncached_load_8",
                         "timing.host.uncached_load_8_pentium4",
                         "params.sodimm.banks",
                         "params.sodimm.bank_bytes",
                         "params.sodimm.min_bank_bytes",
                         "params.sodimm.max_bank_bytes",
                         "params.clocks.dimm_hz",
                         "params.clocks.swif_hz",
                         "params.dimm_pipeline.host_write",
                         "params.dimm_pipeline.transaction_queue",
                         "params.dimm_pipeline.htlb_lookup",
                         "params.dimm_pipeline.size_check",
                         "params.dimm_pipeline.send_buffer_handshake",
                         "params.dimm_pipeline.llcm_write",
                         "params.swif_pipeline.send",
                         "params.swif_pipeline.receive",
                         "params.link.bandwidth_MBps",
                         "params.link.short_packet_pad_bytes",
                         "params.switch.ports",
                         "params.switch.multicast",
                         "params.htlb.ways",
                         "params.htlb.tag_entries",
                         "params.htlb.seed_entries",
                         "params.htlb.seed_bits",
                         "params.aotf.queue_entries",
                         "params.aotf.payload_min_bytes",
                         "params.aotf.payload_max_bytes",
                         "params.botf.windows",
                         "params.botf.payload_min_bytes",
                         "params.botf.payload_max_bytes",
                         "params.protection.max_users",
                     });
  // The host launcher charges host programs' clock reads this much.
  keys.push_back({"timing.host.clock_read", KeyUse::Optional, "host launcher"});
  return keys;
}

} // namespace

const Board &martini_board() {
  static const SharedPartsBoard board(
      "martini",
      "DIMMnet-1 (Martini): core, instruction/data SRAM and LLCM; the "
      "on-the-fly hardware comes next",
      {}, martini_keys(), {"isram", "dsram", "llcm"});
  return board;
}

} // namespace nicemu
