// The messages of the step protocol (docs/distributed.md, "Events at the
// same time on different ranks"): a card's calls into the network, with
// their keys, and what an owner tells the other ranks when the network
// called into one of its cards. Written with the checkpoints' archive; a
// reader throws nicemu::Error on damaged bytes.
#pragma once

#include "fabric/fabric.hpp"
#include "sim/state_archive.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace nicemu {

void write_calls(StateWriter &out, const std::vector<FabricCall> &calls);
std::vector<FabricCall> read_calls(StateReader &in);

// An owner's card, called by the network: its answer (accept_head's; false
// for the other calls) and the calls it made meanwhile.
struct CardReply {
  bool answer = false;
  std::vector<FabricCall> calls;
};

void write_reply(StateWriter &out, const CardReply &reply);
CardReply read_reply(std::span<const uint8_t> bytes);

} // namespace nicemu
