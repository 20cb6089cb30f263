#include "sim/scheduler.hpp"

#include <algorithm>
#include <cassert>

namespace nicemu {

namespace {

uint32_t slot_of(EventId id) {
  return uint32_t(id);
}
uint32_t generation_of(EventId id) {
  return uint32_t(id >> 32);
}

} // namespace

// Origins change twice per slice, events are scheduled far less often: the
// origin's counter is looked up when it is first needed.
uint64_t Scheduler::next_seq() {
  if (origin_seq_for_ != origin_.id || !origin_seq_) {
    // unordered_map nodes stay put: the pointer outlives later insertions.
    origin_seq_ = &next_seq_[origin_.id];
    origin_seq_for_ = origin_.id;
  }
  return (*origin_seq_)++;
}

EventId Scheduler::schedule(Time when, const char *name, Callback fn,
                            int priority) {
  assert(when >= now_ && "events cannot be scheduled in the past");
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = uint32_t(slots_.size());
    slots_.emplace_back();
  }
  Slot &s = slots_[slot];
  s.fn = std::move(fn);
  s.name = name;
  s.live = true;
  ++live_;
  heap_.push_back(
      {Key{when, priority, origin_.id, next_seq()}, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
  if (on_earlier_)
    on_earlier_(when);
  return (EventId(s.generation) << 32) | slot;
}

void Scheduler::release(uint32_t slot) {
  Slot &s = slots_[slot];
  s.fn = nullptr;
  s.name = nullptr;
  s.live = false;
  ++s.generation;
  --live_;
  free_slots_.push_back(slot);
}

bool Scheduler::is_pending(EventId id) const {
  uint32_t slot = slot_of(id);
  return slot < slots_.size() && slots_[slot].live &&
         slots_[slot].generation == generation_of(id);
}

bool Scheduler::cancel(EventId id) {
  if (!is_pending(id))
    return false;
  release(slot_of(id)); // its heap entry is now stale
  return true;
}

void Scheduler::drop_stale() const {
  while (!heap_.empty()) {
    const Entry &top = heap_.front();
    const Slot &s = slots_[top.slot];
    if (s.live && s.generation == top.generation)
      return;
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
    heap_.pop_back();
  }
}

Time Scheduler::next_time() const {
  drop_stale();
  return heap_.empty() ? kTimeNever : heap_.front().key.when;
}

// The caller has made sure the top entry is live (drop_stale).
void Scheduler::run_top() {
  Entry top = heap_.front();
  std::pop_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
  heap_.pop_back();
  now_ = top.key.when;
  Callback fn = std::move(slots_[top.slot].fn);
  release(top.slot);
  fn();
}

void Scheduler::run_until(Time until) {
  while (next_time() <= until && !heap_.empty())
    run_top();
  if (until > now_ && until != kTimeNever)
    now_ = until;
}

void Scheduler::run_until(Time until, EventOrigin held) {
  for (;;) {
    drop_stale();
    if (heap_.empty())
      break;
    const Key &k = heap_.front().key;
    if (k.when > until || (k.when == until && k.origin >= held.id))
      break;
    run_top();
  }
  if (until > now_ && until != kTimeNever)
    now_ = until;
}

bool Scheduler::run_next() {
  if (next_time() == kTimeNever)
    return false;
  run_top();
  return true;
}

void Scheduler::advance_to(Time t) {
  assert(t <= next_time() && "advance_to would skip an event");
  if (t > now_)
    now_ = t;
}

} // namespace nicemu
