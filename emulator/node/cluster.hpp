// Building a cluster: the network from the model's link and switch figures
// and a topology (generated, or from a file).
#pragma once

#include "fabric/fabric.hpp"
#include "nicemu/model.hpp"

#include <memory>
#include <string>

namespace nicemu {

// Link and switch parameters of a model; throws nicemu::Error naming the
// missing key when the model has no network figures. A model with
// [params.ethernet] gets Ethernet framing (preamble, interframe gap, minimum
// frame); [params.switch] store_and_forward = 1 makes its switches
// store-and-forward.
FabricParams fabric_params(const Model &model);

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
