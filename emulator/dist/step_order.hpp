// Which event runs next in a run spread over ranks (docs/distributed.md,
// "No collective per step"). Every rank holds the network's events, with
// the same keys; a card's events are on its owner alone, which tells the
// others its next one whenever that changes (CardReply::next). So each rank
// knows every rank's next card event and decides alone, the same way as
// every other rank, what runs next.
#pragma once

#include "dist/fabric_calls.hpp"
#include "sim/scheduler.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace nicemu {

class StepOrder {
public:
  explicit StepOrder(uint32_t ranks) : next_card_(ranks) {}

  // Rank `rank`'s earliest pending card event is now `next` (none: it has
  // none). A rank tells itself too.
  void told(uint32_t rank, std::optional<EventKey> next);
  const std::optional<EventKey> &next_card(uint32_t rank) const {
    return next_card_.at(rank);
  }
  // A rank's own next card event: its scheduler's earliest event that is
  // not the network's. Looks at every pending event.
  static std::optional<EventKey> own_next(const Scheduler &scheduler);

  struct Step {
    enum Kind { Network, Card, Done } kind = Done;
    uint32_t rank = 0;  // Card: whose
    SavedEvent network; // Network: the event, as this rank's copy has it
  };
  // The network's earliest event if it sorts before every rank's next card
  // event (every rank runs it); else the card event that sorts first (its
  // owner runs it and tells the others); Done when neither is left.
  Step next(const Scheduler &scheduler) const;

  // A network event about to run: digest() then tells whether every rank
  // ran the same ones, in the same order, with one number per rank.
  void ran(const SavedEvent &network_event);
  uint64_t digest() const { return digest_; }

private:
  std::vector<std::optional<EventKey>> next_card_;
  uint64_t digest_ = 14695981039346656037ull; // FNV-1a's offset basis
};

} // namespace nicemu
