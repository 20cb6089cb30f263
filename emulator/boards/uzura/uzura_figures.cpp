#include "boards/uzura/uzura_figures.hpp"

#include "nicemu/error.hpp"

namespace nicemu::uzura {

namespace {
const char *const kReader = "UZURA card";
}

std::vector<ModelKey> Figures::model_keys() {
  std::vector<ModelKey> keys;
  for (const char *key :
       {"timing.host.nic_poll_host_memory", "timing.host.poll_nic_register",
        "timing.host_dma.start_after_doorbell",
        "timing.host_dma.to_nic_64_bytes", "timing.block_4k.source_pcix",
        "timing.block_4k.destination_pcix", "timing.translation.sram_lookup",
        "timing.translation.host_lookup", "timing.fpga.send_non_pl4",
        "timing.fpga.send_pl4", "timing.fpga.receive_pl4",
        "timing.fpga.receive_non_pl4", "timing.mac.send_receive"})
    keys.push_back({key, KeyUse::Required, kReader});
  keys.push_back(
      {"params.host_bus.clock_hz", KeyUse::Required, kReader, kClockHz});
  // Published figures the blocks do not read: the wire time of a 4 KB
  // block follows from the link's rate, the bus and PL4 peaks from the
  // transfers, the table's size from the SRAM. (The PCI host side and the
  // network declare the host's and the link's keys.)
  for (const char *key :
       {"timing.sram.read_latency", "timing.block_4k.wire",
        "params.translation.entry_bytes", "params.translation.table_bytes",
        "params.translation.coverage_bytes"})
    keys.push_back({key, KeyUse::Reference, kReader});
  for (const char *key : {"params.host_bus.peak_MBps", "params.pl4.peak_MBps"})
    keys.push_back({key, KeyUse::Reference, kReader, kBandwidthMBps});
  return keys;
}

Figures Figures::from(const Model &model) {
  Figures f;
  f.pio_read = model.timing("host.pio_read_word");
  f.pio_write = model.timing("host.pio_write_word");
  f.doorbell = model.timing("host.doorbell_write");
  f.poll_nic_register = model.timing("host.poll_nic_register");
  f.nic_poll_host_memory = model.timing("host.nic_poll_host_memory");
  f.interrupt = model.timing("host.interrupt");
  f.dma_after_doorbell = model.timing("host_dma.start_after_doorbell");
  // Two points per direction fix a line: 64 bytes to the card and 4 KB
  // both ways; the fixed part is the 64-byte transfer's less its bytes.
  Time small = model.timing("host_dma.to_nic_64_bytes");
  Time block_in = model.timing("block_4k.source_pcix");
  Time block_out = model.timing("block_4k.destination_pcix");
  if (block_in <= small || block_out <= small / 2)
    throw Error(model.source.string() +
                ": [timing.block_4k] must be slower than a 64-byte DMA");
  f.to_card_ps_per_byte = double(block_in - small) / (4096 - 64);
  f.to_card_fixed = small - Time(f.to_card_ps_per_byte * 64 + 0.5);
  f.to_host_fixed = f.to_card_fixed;
  f.to_host_ps_per_byte = double(block_out - f.to_host_fixed) / 4096;
  double bus_hz = model.param("host_bus.clock_hz");
  if (!(bus_hz > 0))
    throw Error(model.source.string() +
                ": params.host_bus.clock_hz must be positive");
  f.extra_piece = Time(2e12 / bus_hz + 0.5);
  f.sram_lookup = model.timing("translation.sram_lookup");
  f.host_lookup = model.timing("translation.host_lookup");
  f.send_non_pl4 = model.timing("fpga.send_non_pl4");
  f.send_pl4 = model.timing("fpga.send_pl4");
  f.receive_pl4 = model.timing("fpga.receive_pl4");
  f.receive_non_pl4 = model.timing("fpga.receive_non_pl4");
  Time mac = model.timing("mac.send_receive");
  f.mac_send = mac / 2;
  f.mac_receive = mac - mac / 2;
  double mbps = model.param("link.bandwidth_MBps");
  if (!(mbps > 0))
    throw Error(model.source.string() +
                ": params.link.bandwidth_MBps must be positive");
  f.link_ps_per_byte = Time(1e6 / mbps + 0.5);
  return f;
}

} // namespace nicemu::uzura
