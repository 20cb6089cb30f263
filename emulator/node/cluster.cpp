#include "node/cluster.hpp"

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

Time network_lookahead(const Model &model, const Fabric &fabric) {
  return required_timing(model, "tx_dma.gap") + fabric.min_path_latency();
}

std::unique_ptr<Fabric> make_fabric(Scheduler &scheduler, const Model &model,
                                    uint32_t nodes,
                                    const std::string &topology_file) {
  FabricParams params = fabric_params(model);
  Topology topology = topology_file.empty()
                          ? make_topology(nodes, params.switch_ports)
                          : read_topology(topology_file, params.switch_ports);
  if (topology.nodes != nodes)
    throw Error(topology_file + ": the topology has " +
                std::to_string(topology.nodes) + " nodes, the run has " +
                std::to_string(nodes));
  return std::make_unique<Fabric>(scheduler, params, std::move(topology));
}

} // namespace nicemu
