// Building a cluster: the network from the model's link and switch figures
// and a topology (generated, or from a file).
#pragma once

#include "fabric/fabric.hpp"
#include "fabric/fabric_params.hpp"
#include "nicemu/model.hpp"

#include <memory>
#include <string>

namespace nicemu {

// `topology_file` empty: one crossbar up to its port count, a generated
// multi-switch network beyond.
std::unique_ptr<Fabric> make_fabric(Scheduler &scheduler, const Model &model,
                                    uint32_t nodes,
                                    const std::string &topology_file);

// The least virtual time between one node's register write and its effect
// on another node: the Tx engine's gap plus the shortest path (through a
// store-and-forward switch, that includes the shortest frame's time). Cores
// may run this far ahead of each other.
Time network_lookahead(const Model &model, const Fabric &fabric);

} // namespace nicemu
