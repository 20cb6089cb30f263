#include "node/cluster.hpp"

#include "boards/board.hpp"
#include "nicemu/error.hpp"
#include "nicemu/regs.h"

namespace nicemu {

namespace {

// Firmware on a source-routed network sends the route bytes the ROUTE
// device gives it, which holds NICEMU_ROUTE_MAX_BYTES of them: a longer
// route could not be sent (the firmware would write past its table).
void check_route_table(const Topology &topology, const std::string &origin) {
  if (auto r = topology.route_longer_than(NICEMU_ROUTE_MAX_BYTES))
    throw Error(origin + ": the route from node " + std::to_string(r->from) +
                " to node " + std::to_string(r->to) + " crosses " +
                std::to_string(r->bytes) +
                " switches, but the ROUTE device holds at most " +
                std::to_string(NICEMU_ROUTE_MAX_BYTES) +
                " route bytes (one per switch; docs/fabric.md)");
}

} // namespace

Time network_lookahead(const Model &model, const Fabric &fabric) {
  return checked_board(model).network_lookahead(model, fabric);
}

Topology cluster_topology(const Model &model, uint32_t nodes,
                          const std::string &topology_file,
                          const std::string *topology_text) {
  const Board &board = checked_board(model);
  FabricParams params = board.network(model);
  Topology topology =
      topology_text
          ? parse_topology(*topology_text, topology_file, params.switch_ports)
      : topology_file.empty()
          ? board.default_topology(nodes, model, params)
          : read_topology(topology_file, params.switch_ports);
  if (topology.nodes != nodes)
    throw Error(topology_file + ": the topology has " +
                std::to_string(topology.nodes) + " nodes, the run has " +
                std::to_string(nodes));
  if (!params.ethernet && !params.table_routing)
    check_route_table(topology, topology_file.empty()
                                    ? "the generated network of " +
                                          std::to_string(nodes) + " nodes"
                                    : topology_file);
  return topology;
}

std::unique_ptr<Fabric> make_fabric(Scheduler &scheduler, const Model &model,
                                    uint32_t nodes,
                                    const std::string &topology_file,
                                    const std::string *topology_text) {
  return std::make_unique<Fabric>(
      scheduler, checked_board(model).network(model),
      cluster_topology(model, nodes, topology_file, topology_text));
}

} // namespace nicemu
