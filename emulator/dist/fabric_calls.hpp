// The messages of the step protocol (docs/distributed.md, "Events at the
// same time on different ranks"): a card's calls into the network, with
// their keys, and what an owner tells the other ranks when the network
// called into one of its cards. Written with the checkpoints' archive; a
// reader throws nicemu::Error on damaged bytes.
#pragma once

#include "fabric/fabric.hpp"
#include "sim/state_archive.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace nicemu {

void write_calls(StateWriter &out, const std::vector<FabricCall> &calls);
std::vector<FabricCall> read_calls(StateReader &in);

// Where an event stands in the order one process gives them.
struct EventKey {
  Time when = 0;
  int priority = 0;
  uint64_t origin = 0, seq = 0;
  static EventKey of(const SavedEvent &e) {
    return {e.when, e.priority, e.origin, e.seq};
  }
  auto operator<=>(const EventKey &) const = default;
};

// What an owner tells the other ranks after its card was called by the
// network (its answer: accept_head's; false for the other calls), or after
// one of its card's events ran: the calls the card made meanwhile, and the
// owner's earliest pending card event from then on. A card's events are
// scheduled only on its owner, by its events and by the network's calls
// into it, so every rank always knows every rank's next card event, and
// no step needs a collective.
struct CardReply {
  bool answer = false;
  std::vector<FabricCall> calls;
  std::optional<EventKey> next;
};

void write_reply(StateWriter &out, const CardReply &reply);
CardReply read_reply(std::span<const uint8_t> bytes);
// One reply among other fields: reads it and leaves the rest.
CardReply read_reply(StateReader &in);

} // namespace nicemu
