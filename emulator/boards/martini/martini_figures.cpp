#include "boards/martini/martini_figures.hpp"

#include "nicemu/error.hpp"
#include "nicemu/martini.h"

#include <cmath>

namespace nicemu::martini {

namespace {

uint32_t count(const Model &m, const std::string &key, uint32_t lo,
               uint32_t hi) {
  double v = m.param(key);
  if (!(v >= lo && v <= hi) || v != std::floor(v))
    throw Error("model " + m.name + ": [params] " + key + " = " +
                std::to_string(v) + " is outside " + std::to_string(lo) + ".." +
                std::to_string(hi));
  return uint32_t(v);
}

uint64_t clock(const Model &m, const std::string &key) {
  double hz = m.param(key);
  if (!(hz >= 1e6 && hz <= 1e10))
    throw Error("model " + m.name + ": [params] " + key +
                " must be a clock between 1 MHz and 10 GHz");
  return uint64_t(std::llround(hz));
}

} // namespace

Figures Figures::from(const Model &m) {
  Figures f;
  f.dimm_hz = clock(m, "clocks.dimm_hz");
  f.swif_hz = clock(m, "clocks.swif_hz");
  f.to_pins = count(m, "dimm_pipeline.to_pins", 0, 1000);
  f.host_write = count(m, "dimm_pipeline.host_write", 1, 1000);
  f.transaction_queue = count(m, "dimm_pipeline.transaction_queue", 1, 1000);
  f.htlb_lookup = count(m, "dimm_pipeline.htlb_lookup", 1, 1000);
  f.size_check = count(m, "dimm_pipeline.size_check", 1, 1000);
  f.handshake = count(m, "dimm_pipeline.send_buffer_handshake", 1, 1000);
  f.llcm_write = count(m, "dimm_pipeline.llcm_write", 1, 1000);
  f.swif_send = count(m, "swif_pipeline.send", 1, 1000);
  f.swif_receive = count(m, "swif_pipeline.receive", 1, 1000);
  f.credits = count(m, "aotf.queue_entries", 1, 1u << 20);
  f.windows = count(m, "botf.windows", 1, 64);
  f.aotf_max_bytes = count(m, "aotf.payload_max_bytes", 8, 8);
  f.botf_max_bytes =
      count(m, "botf.payload_max_bytes", 1,
            NICEMU_MARTINI_BOTF_STRIDE - NICEMU_MARTINI_STATUS_HEADER_BYTES);
  // The HTLB's shape is the contract's (nicemu/martini.h): 4 ways of 256
  // sets, one 32-byte seed per entry.
  count(m, "htlb.ways", 4, 4);
  count(m, "htlb.tag_entries", 1024, 1024);
  auto status = m.params.find("otf.status_address");
  f.status_address = status != m.params.end() && status->second != 0;
  f.bank_bytes = uint64_t(m.param("sodimm.bank_bytes"));
  if (f.bank_bytes == 0 || f.bank_bytes > NICEMU_MARTINI_SPACE_BYTES ||
      f.bank_bytes % 4096 || m.param("sodimm.banks") != 2)
    throw Error("model " + m.name +
                ": nicemu models two SO-DIMM banks of 4 KiB to 256 MiB "
                "([params.sodimm] banks, bank_bytes)");
  double mbps = m.param("sodimm.bandwidth_MBps");
  if (!(mbps > 0))
    throw Error("model " + m.name + ": sodimm.bandwidth_MBps must be > 0");
  f.bank_ps_per_byte = Time(std::llround(1e6 / mbps));
  f.store = m.timing("host.uncached_store_8");
  f.load = m.timing("host.uncached_load_8");
  return f;
}

std::vector<ModelKey> model_keys() {
  const char *iface = "the host interface (DIMM clock)";
  const char *swif = "the link interface (SWIF clock)";
  const char *host = "the host CPU on the memory bus";
  const char *net = "the RHiNET network";
  // The ranges Figures::from checks, so that the model's check names them.
  const KeyRange clock = whole_number(1e6, 1e10), stage = whole_number(1, 1000);
  const KeyRange flag = whole_number(0, 1);
  std::vector<ModelKey> keys = {
      {"params.clocks.dimm_hz", KeyUse::Required, iface, clock},
      {"params.clocks.swif_hz", KeyUse::Required, swif, clock},
      {"params.dimm_pipeline.to_pins", KeyUse::Required, iface,
       whole_number(0, 1000)},
      {"params.dimm_pipeline.host_write", KeyUse::Required, iface, stage},
      {"params.dimm_pipeline.transaction_queue", KeyUse::Required, iface,
       stage},
      {"params.dimm_pipeline.htlb_lookup", KeyUse::Required, iface, stage},
      {"params.dimm_pipeline.size_check", KeyUse::Required, iface, stage},
      {"params.dimm_pipeline.send_buffer_handshake", KeyUse::Required, iface,
       stage},
      {"params.dimm_pipeline.llcm_write", KeyUse::Required, iface, stage},
      {"params.swif_pipeline.send", KeyUse::Required, swif, stage},
      {"params.swif_pipeline.receive", KeyUse::Required, swif, stage},
      {"params.aotf.queue_entries", KeyUse::Required, iface,
       whole_number(1, 1u << 20)},
      {"params.aotf.payload_max_bytes", KeyUse::Required, iface,
       whole_number(8, 8)},
      {"params.aotf.payload_min_bytes", KeyUse::Reference, iface},
      {"params.botf.windows", KeyUse::Required, iface, whole_number(1, 64)},
      {"params.botf.payload_max_bytes", KeyUse::Required, iface,
       whole_number(1, NICEMU_MARTINI_BOTF_STRIDE -
                           NICEMU_MARTINI_STATUS_HEADER_BYTES)},
      {"params.botf.payload_min_bytes", KeyUse::Reference, iface},
      {"params.htlb.ways", KeyUse::Required, iface, whole_number(4, 4)},
      {"params.htlb.tag_entries", KeyUse::Required, iface,
       whole_number(1024, 1024)},
      {"params.htlb.seed_entries", KeyUse::Reference, iface},
      {"params.htlb.seed_bits", KeyUse::Reference, iface},
      {"params.otf.status_address", KeyUse::Optional, "the OTF receiver"},
      {"timing.host.uncached_store_8", KeyUse::Required, host},
      {"timing.host.uncached_load_8", KeyUse::Required, host},
      {"timing.host.uncached_load_8_pentium4", KeyUse::Reference, host},
      {"timing.host.poll_own_memory", KeyUse::Required, "host launcher"},
      {"timing.host.clock_read", KeyUse::Optional, "host launcher"},
      {"params.link.bandwidth_MBps", KeyUse::Required, net, kBandwidthMBps},
      {"params.link.short_packet_pad_bytes", KeyUse::Required, net,
       whole_number(0, 65535)},
      {"timing.link.outside_swif", KeyUse::Required, net},
      {"timing.switch.per_packet", KeyUse::Required, net},
      {"params.switch.ports", KeyUse::Required, net, whole_number(1, 256)},
      {"params.switch.multicast", KeyUse::Reference, net, flag},
      {"params.switch.two_nodes_switched", KeyUse::Optional, net, flag},
      {"params.protection.max_users", KeyUse::Reference, iface},
  };
  const char *banks = "the SO-DIMM banks";
  keys.push_back(
      {"params.sodimm.banks", KeyUse::Required, banks, whole_number(2, 2)});
  keys.push_back({"params.sodimm.bank_bytes", KeyUse::Required, banks,
                  whole_number(4096, NICEMU_MARTINI_SPACE_BYTES)});
  keys.push_back({"params.sodimm.bandwidth_MBps", KeyUse::Required, banks,
                  kBandwidthMBps});
  keys.push_back({"params.sodimm.min_bank_bytes", KeyUse::Reference, banks});
  keys.push_back({"params.sodimm.max_bank_bytes", KeyUse::Reference, banks});
  return keys;
}

} // namespace nicemu::martini
