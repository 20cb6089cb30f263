#include "node/cluster.hpp"

#include "boards/board.hpp"
#include "nicemu/error.hpp"

namespace nicemu {

Time network_lookahead(const Model &model, const Fabric &fabric) {
  return checked_board(model).network_lookahead(model, fabric);
}

std::unique_ptr<Fabric> make_fabric(Scheduler &scheduler, const Model &model,
                                    uint32_t nodes,
                                    const std::string &topology_file) {
  const Board &board = checked_board(model);
  FabricParams params = board.network(model);
  Topology topology = topology_file.empty()
                          ? board.default_topology(nodes, model, params)
                          : read_topology(topology_file, params.switch_ports);
  if (topology.nodes != nodes)
    throw Error(topology_file + ": the topology has " +
                std::to_string(topology.nodes) + " nodes, the run has " +
                std::to_string(nodes));
  return std::make_unique<Fabric>(scheduler, params, std::move(topology));
}

} // namespace nicemu
