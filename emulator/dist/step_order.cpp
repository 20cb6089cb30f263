#include "dist/step_order.hpp"

namespace nicemu {

namespace {

bool is_network(const EventTag &tag) {
  return tag.owner == kFabricEventOwner;
}

} // namespace

void StepOrder::told(uint32_t rank, std::optional<EventKey> next) {
  next_card_.at(rank) = next;
}

std::optional<EventKey> StepOrder::own_next(const Scheduler &scheduler) {
  SavedEvent e;
  if (!scheduler.peek_first([](const EventTag &t) { return !is_network(t); },
                            e))
    return std::nullopt;
  return EventKey::of(e);
}

StepOrder::Step StepOrder::next(const Scheduler &scheduler) const {
  Step step;
  const std::optional<EventKey> *first = nullptr;
  for (uint32_t r = 0; r < next_card_.size(); ++r)
    if (next_card_[r] && (!first || *next_card_[r] < **first)) {
      first = &next_card_[r];
      step.rank = r;
    }
  bool network = scheduler.peek_first(is_network, step.network);
  if (network && (!first || EventKey::of(step.network) < **first))
    step.kind = Step::Network;
  else if (first)
    step.kind = Step::Card;
  return step;
}

void StepOrder::ran(const SavedEvent &e) {
  for (uint64_t word : {e.when, uint64_t(int64_t(e.priority)), e.origin, e.seq})
    digest_ = (digest_ ^ word) * 1099511628211ull; // FNV-1a's prime
}

} // namespace nicemu
