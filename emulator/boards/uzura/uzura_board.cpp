// uzura: the UZURA 10GbE card with FPGA offload on PCI-X. The card's own
// blocks (the fixed packet path, DMA, translation unit, PCI-X registers)
// will live in this folder; until they do, the board is the core with its
// memory map (firmware memory and the 4 MB translation SRAM) and the
// figures those blocks will read are kept as reference keys, so the model
// file is still checked key by key.
#include "boards/board_list.hpp"
#include "boards/common/shared_parts.hpp"

namespace nicemu {

namespace {

std::vector<ModelKey> uzura_keys() {
  return reference_keys("UZURA hardware, not modelled yet",
                        {
                            "timing.sram.read_latency",
                            "timing.host.pio_write_word",
                            "timing.host.pio_read_word",
                            "timing.host.doorbell_write",
                            "timing.host.nic_poll_host_memory",
                            "timing.host.interrupt",
                            "timing.host.poll_nic_register",
                            "timing.host.poll_own_memory",
                            "timing.host_dma.start_after_doorbell",
                            "timing.host_dma.to_nic_64_bytes",
                            "timing.translation.sram_lookup",
                            "timing.translation.host_lookup",
                            "timing.fpga.send_non_pl4",
                            "timing.fpga.send_pl4",
                            "timing.fpga.receive_pl4",
                            "timing.fpga.receive_non_pl4",
                            "timing.mac.send_receive",
                            "timing.block_4k.source_pcix",
                            "timing.block_4k.wire",
                            "timing.block_4k.destination_pcix",
                            "timing.switch.forward",
                            "params.host_bus.clock_hz",
                            "params.host_bus.peak_MBps",
                            "params.host.page_bytes",
                            "params.translation.entry_bytes",
                            "params.translation.table_bytes",
                            "params.translation.coverage_bytes",
                            "params.pl4.peak_MBps",
                            "params.link.ports",
                            "params.link.bandwidth_MBps",
                            "params.ethernet.preamble_bytes",
                            "params.ethernet.interframe_gap_bytes",
                            "params.ethernet.min_frame_bytes",
                            "params.ethernet.max_payload_bytes",
                            "params.switch.ports",
                            "params.switch.store_and_forward",
                        });
}

} // namespace

const Board &uzura_board() {
  static const SharedPartsBoard board(
      "uzura",
      "UZURA 10GbE (FPGA offload, PCI-X): core, firmware memory and "
      "translation SRAM; the offload hardware comes next",
      {}, uzura_keys(), {"local", "sram"});
  return board;
}

} // namespace nicemu
