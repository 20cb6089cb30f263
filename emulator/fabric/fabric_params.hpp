// The network's figures from a model: link and switch parameters, and the
// model keys they come from (a board with a network lists these).
#pragma once

#include "fabric/fabric.hpp"
#include "nicemu/model.hpp"

#include <vector>

namespace nicemu {

// Link and switch parameters of a model; throws nicemu::Error naming the
// missing key when the model has no network figures. A model with
// [params.ethernet] gets Ethernet framing (preamble, interframe gap, minimum
// frame); [params.switch] store_and_forward = 1 makes its switches
// store-and-forward.
FabricParams fabric_params(const Model &model);

// The keys fabric_params() reads; `ethernet`: the links carry Ethernet
// frames, so [params.ethernet] is required.
std::vector<ModelKey> fabric_model_keys(bool ethernet);

} // namespace nicemu
