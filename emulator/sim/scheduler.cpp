#include "sim/scheduler.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>

namespace nicemu {

namespace {

uint32_t slot_of(EventId id) {
  return uint32_t(id);
}
uint32_t generation_of(EventId id) {
  return uint32_t(id >> 32);
}

std::atomic<uint64_t> next_serial{1};

// A thread's origin, for the scheduler with that serial (any other
// scheduler sees events()), and that scheduler's counter for it.
struct ThreadOrigin {
  uint64_t serial = 0;
  EventOrigin origin;
  uint64_t *seq = nullptr; // looked up when first needed
};
thread_local ThreadOrigin thread_origin;

} // namespace

Scheduler::Scheduler() : serial_(next_serial.fetch_add(1)) {}

EventOrigin Scheduler::set_origin(EventOrigin origin) {
  ThreadOrigin &t = thread_origin;
  EventOrigin was = t.serial == serial_ ? t.origin : EventOrigin::events();
  t = {serial_, origin, nullptr};
  return was;
}

std::unique_lock<std::mutex> Scheduler::lock_if_concurrent() const {
  return concurrent_ ? std::unique_lock(mutex_)
                     : std::unique_lock<std::mutex>();
}

// Origins change twice per slice, events are scheduled far less often: the
// origin's counter is looked up when it is first needed.
uint64_t Scheduler::next_seq() {
  ThreadOrigin &t = thread_origin;
  if (t.serial != serial_) // this thread's origin is another scheduler's
    return next_seq_[EventOrigin::events().id]++;
  if (!t.seq) // unordered_map nodes stay put: the pointer outlives insertions
    t.seq = &next_seq_[t.origin.id];
  return (*t.seq)++;
}

EventId Scheduler::schedule(Time when, const char *name, Callback fn,
                            int priority) {
  assert(when >= now_ && "events cannot be scheduled in the past");
  auto lock = lock_if_concurrent();
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
  uint64_t origin = thread_origin.serial == serial_ ? thread_origin.origin.id
                                                    : EventOrigin::events().id;
  heap_.push_back(
      {Key{when, priority, origin, next_seq()}, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
  EventId id = (EventId(s.generation) << 32) | slot;
  if (lock)
    lock.unlock();
  if (on_earlier_) // the running core's own slice, on this thread
    on_earlier_(when);
  return id;
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
  auto lock = lock_if_concurrent();
  uint32_t slot = slot_of(id);
  return slot < slots_.size() && slots_[slot].live &&
         slots_[slot].generation == generation_of(id);
}

bool Scheduler::cancel(EventId id) {
  auto lock = lock_if_concurrent();
  uint32_t slot = slot_of(id);
  if (slot >= slots_.size() || !slots_[slot].live ||
      slots_[slot].generation != generation_of(id))
    return false;
  release(slot); // its heap entry is now stale
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
