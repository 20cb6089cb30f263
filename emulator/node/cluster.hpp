// Building a cluster: the network from the model's link and switch figures
// and a topology (generated, or from a file).
#pragma once

#include "fabric/fabric.hpp"
#include "fabric/fabric_params.hpp"
#include "nicemu/model.hpp"

#include <memory>
#include <string>

namespace nicemu {

// The cabling of the run's network: `topology_file`
// empty: the board's default cabling (one crossbar up to its port count, a
// generated multi-switch network beyond; DIMMnet-1 cables two cards
// directly). `topology_text`: the file's text, already read (a replay's);
// the file's name then only names it in messages. Throws nicemu::Error if
// the topology does not suit the run (its node count, route lengths).
Topology cluster_topology(const Model &model, uint32_t nodes,
                          const std::string &topology_file,
                          const std::string *topology_text = nullptr);

// The network of the model's board (Board::network), cabled as
// cluster_topology says.
std::unique_ptr<Fabric> make_fabric(Scheduler &scheduler, const Model &model,
                                    uint32_t nodes,
                                    const std::string &topology_file,
                                    const std::string *topology_text = nullptr);

// The least virtual time between one node's action and its effect on
// another node, as the model's board says (Board::network_lookahead; the
// shared cards: the Tx engine's gap plus the shortest path). Cores may run
// this far ahead of each other.
Time network_lookahead(const Model &model, const Fabric &fabric);

} // namespace nicemu
