#include "fabric/fabric_params.hpp"

#include "fabric/ethernet.hpp"
#include "nicemu/error.hpp"

#include <cmath>
#include <optional>

namespace nicemu {

namespace {

double required_param(const Model &m, const std::string &key) {
  auto it = m.params.find(key);
  if (it == m.params.end())
    throw Error("model " + m.name + " has no network: [params] " + key +
                " is missing");
  return it->second;
}

Time required_timing(const Model &m, const std::string &key) {
  auto it = m.timing_ps.find(key);
  if (it == m.timing_ps.end())
    throw Error("model " + m.name + " has no network: [timing] " + key +
                " is missing");
  return it->second;
}

} // namespace

FabricParams fabric_params(const Model &model) {
  FabricParams p;
  double mbps = required_param(model, "link.bandwidth_MBps");
  if (mbps <= 0)
    throw Error("model " + model.name + ": link.bandwidth_MBps must be > 0");
  p.link_ps_per_byte = Time(std::llround(1e6 / mbps)); // 1e12 ps / (MB/s * 1e6)
  p.link_latency = required_timing(model, "link.latency");
  p.switch_latency = required_timing(model, "switch.latency");
  p.switch_ports = uint32_t(required_param(model, "switch.ports"));
  auto saf = model.params.find("switch.store_and_forward");
  p.store_and_forward = saf != model.params.end() && saf->second != 0;
  if (std::optional<EthernetFraming> eth = ethernet_framing(model)) {
    p.ethernet = true;
    p.preamble_bytes = eth->preamble_bytes;
    p.interframe_gap_bytes = eth->interframe_gap_bytes;
    p.min_frame_bytes = eth->min_frame_bytes;
  }
  return p;
}

std::vector<ModelKey> fabric_model_keys(bool ethernet) {
  const char *links = "network";
  std::vector<ModelKey> keys = {
      {"params.link.bandwidth_MBps", KeyUse::Required, links, kBandwidthMBps},
      {"timing.link.latency", KeyUse::Required, links},
      {"timing.switch.latency", KeyUse::Required, links},
      // A route byte names a port.
      {"params.switch.ports", KeyUse::Required, links, whole_number(1, 256)},
      {"params.switch.store_and_forward", KeyUse::Optional, links,
       whole_number(0, 1)},
      {"params.link.width_bits", KeyUse::Reference, links},
      {"params.link.ports", KeyUse::Reference, links},
  };
  if (ethernet) {
    // Their presence is what makes the links carry Ethernet frames
    // (ethernet_framing), so a board with Ethernet links requires them.
    const char *eth = "Ethernet framing";
    for (const char *key : {"params.ethernet.preamble_bytes",
                            "params.ethernet.interframe_gap_bytes",
                            "params.ethernet.min_frame_bytes",
                            "params.ethernet.max_payload_bytes"})
      keys.push_back({key, KeyUse::Required, eth, whole_number(0, 65535)});
  } else {
    keys.push_back(
        {"params.switch.route_bytes_per_hop", KeyUse::Reference, links});
    keys.push_back(
        {"timing.network.one_word_one_switch", KeyUse::Reference, links});
  }
  return keys;
}

} // namespace nicemu
