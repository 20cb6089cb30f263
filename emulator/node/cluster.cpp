#include "node/cluster.hpp"

#include "nicemu/error.hpp"

namespace nicemu {

Time network_lookahead(const Model &model, const Fabric &fabric) {
  return model.timing("tx_dma.gap") + fabric.min_path_latency();
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
