#include "sim/scheduler.hpp"

#include "nicemu/error.hpp"
#include "sim/state_archive.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <map>

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
  return schedule(when, name, std::move(fn), priority, EventTag{});
}

EventId Scheduler::schedule(Time when, const char *name, Callback fn,
                            int priority, const EventTag &tag) {
  assert(when >= now_ && "events cannot be scheduled in the past");
  auto lock = lock_if_concurrent();
  uint64_t origin = thread_origin.serial == serial_ ? thread_origin.origin.id
                                                    : EventOrigin::events().id;
  EventId id =
      insert(Key{when, priority, origin, next_seq()}, name, std::move(fn), tag);
  if (lock)
    lock.unlock();
  if (on_earlier_) // the running core's own slice, on this thread
    on_earlier_(when);
  return id;
}

EventId Scheduler::insert(const Key &key, const char *name, Callback fn,
                          const EventTag &tag) {
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
  s.tag = tag;
  s.key = key;
  s.live = true;
  ++live_;
  heap_.push_back({key, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
  return (EventId(s.generation) << 32) | slot;
}

void Scheduler::save(StateWriter &out) const {
  out.section("scheduler");
  out.u64(now_);
  std::map<uint64_t, uint64_t> seqs(next_seq_.begin(), next_seq_.end());
  out.u64(seqs.size());
  for (auto [origin, seq] : seqs) {
    out.u64(origin);
    out.u64(seq);
  }
  // In the order they run, so that the same state makes the same bytes.
  std::vector<const Entry *> live;
  for (const Entry &e : heap_)
    if (slots_[e.slot].live && slots_[e.slot].generation == e.generation)
      live.push_back(&e);
  std::sort(live.begin(), live.end(),
            [](const Entry *a, const Entry *b) { return a->key < b->key; });
  out.u64(live.size());
  for (const Entry *e : live) {
    const Slot &s = slots_[e->slot];
    if (!s.tag.owner)
      throw Error("checkpoint: the event \"" + std::string(s.name) +
                  "\" pending at " + std::to_string(e->key.when) +
                  " ps cannot be saved in a checkpoint yet");
    out.u64(e->key.when);
    out.u64(uint64_t(int64_t(e->key.priority)));
    out.u64(e->key.origin);
    out.u64(e->key.seq);
    out.fields(s.tag.owner, s.tag.kind, s.tag.a, s.tag.b);
    out.str(s.name);
  }
}

void Scheduler::load(StateReader &in) {
  in.section("scheduler");
  for (uint32_t slot = 0; slot < slots_.size(); ++slot)
    if (slots_[slot].live)
      release(slot);
  heap_.clear();
  now_ = in.u64();
  // Counters are set in place, never erased: a thread's origin keeps a
  // pointer to its counter (next_seq).
  for (auto &[origin, seq] : next_seq_)
    seq = 0;
  for (uint64_t n = in.count(1 << 24); n--;) {
    uint64_t origin = in.u64();
    next_seq_[origin] = in.u64();
  }
  for (uint64_t n = in.count(1 << 28); n--;) {
    SavedEvent e;
    e.when = in.u64();
    e.priority = int(int64_t(in.u64()));
    e.origin = in.u64();
    e.seq = in.u64();
    in.fields(e.tag.owner, e.tag.kind, e.tag.a, e.tag.b);
    e.name = in.str(256);
    if (e.when < now_)
      in.fail("the event \"" + e.name +
              "\" is due before the checkpoint's time");
    auto owner = owners_.find(e.tag.owner);
    if (owner == owners_.end())
      in.fail("the event \"" + e.name +
              "\" belongs to a part this cluster does not have");
    owner->second->restore_event(*this, e);
  }
}

EventId Scheduler::restore(const SavedEvent &e, const char *name, Callback fn) {
  return insert(Key{e.when, e.priority, e.origin, e.seq}, name, std::move(fn),
                e.tag);
}

void Scheduler::release(uint32_t slot) {
  Slot &s = slots_[slot];
  s.fn = nullptr;
  s.name = nullptr;
  s.tag = {};
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

Time Scheduler::earliest_pending(
    Time before, const std::function<bool(const EventTag &)> &counts) const {
  Time t = before;
  for (const Entry &e : heap_) {
    const Slot &s = slots_[e.slot];
    if (e.key.when < t && s.live && s.generation == e.generation &&
        counts(s.tag))
      t = e.key.when;
  }
  return t;
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
  EventOrigin origin = EventOrigin::of_event(slots_[top.slot].tag);
  release(top.slot);
  OriginScope scope(*this, origin);
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

bool Scheduler::peek(SavedEvent &out) const {
  drop_stale();
  if (heap_.empty())
    return false;
  return key_of((EventId(heap_.front().generation) << 32) | heap_.front().slot,
                out);
}

bool Scheduler::peek_first(const std::function<bool(const EventTag &)> &which,
                           SavedEvent &out) const {
  const Entry *first = nullptr;
  for (const Entry &e : heap_) {
    const Slot &s = slots_[e.slot];
    if (s.live && s.generation == e.generation &&
        (!first || e.key < first->key) && which(s.tag))
      first = &e;
  }
  return first && key_of((EventId(first->generation) << 32) | first->slot, out);
}

bool Scheduler::key_of(EventId id, SavedEvent &out) const {
  auto lock = lock_if_concurrent();
  uint32_t slot = slot_of(id);
  if (slot >= slots_.size() || !slots_[slot].live ||
      slots_[slot].generation != generation_of(id))
    return false;
  const Slot &s = slots_[slot];
  out.when = s.key.when;
  out.priority = s.key.priority;
  out.origin = s.key.origin;
  out.seq = s.key.seq;
  out.tag = s.tag;
  out.name = s.name;
  return true;
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
