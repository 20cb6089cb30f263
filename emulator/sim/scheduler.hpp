// The scheduler: the only owner of virtual time.
//
// Devices schedule named events; the run loop executes them in order of
// (time, priority, origin, sequence). The origin is who scheduled the event:
// the network or the run loop, a node's card (in one of its devices' events,
// or called by the network), a host's event, a node's core during its
// slice, or a host's request; the sequence counts per origin. So events at
// the same time and priority run in an order that does not depend on how
// the cores' slices happened to interleave, which makes every run with the
// same inputs identical whatever the slicing (a debugger's single steps
// included); nor on how one card's events fell among another's, which is
// what a run spread over several processes needs (docs/distributed.md).
#pragma once

#include "sim/time.hpp"

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nicemu {

class StateReader;
class StateWriter;
class Scheduler;

using EventId = uint64_t;

// What a pending event is, so that a checkpoint can save it and make it
// again (docs/replay.md, "Checkpoint files"): the owner that scheduled it,
// by a key the owner registered (Scheduler::add_owner; the same in every
// run of the same cluster), and what the owner needs to make its callback
// again. An event without an owner cannot be saved: a checkpoint with one
// pending is refused, naming it.
struct EventTag {
  uint64_t owner = 0; // 0: none
  uint32_t kind = 0;  // the owner's own numbering
  uint64_t a = 0, b = 0;
};

// Owner keys: the fabric, a node's device (by its place on the card), a
// host's agent.
inline constexpr uint64_t kFabricEventOwner = 1;
inline uint64_t device_event_owner(uint32_t node, uint32_t device) {
  return (uint64_t(node) + 1) << 32 | device;
}
inline uint64_t host_event_owner(uint32_t rank) {
  return uint64_t(1) << 63 | rank;
}

// A pending event as a checkpoint holds it.
struct SavedEvent {
  Time when = 0;
  int priority = 0;
  uint64_t origin = 0, seq = 0;
  EventTag tag;
  std::string name;
};

// Makes a saved event again: calls Scheduler::restore with its callback.
class EventOwner {
public:
  virtual ~EventOwner() = default;
  virtual void restore_event(Scheduler &scheduler, const SavedEvent &e) = 0;
};

// Who schedules the events from now on (Scheduler::set_origin).
struct EventOrigin {
  uint64_t id = 0; // 0: the network's events, untagged ones, the loop;
                   // 1 + n: node n's card; 2^30 + r: host r's events;
                   // 2^31 + n: node n's core; 2^32 + r: host r's request;
                   // 2^33: the outside
  static EventOrigin events() { return {}; }
  static EventOrigin card(uint32_t node) { return {1 + uint64_t(node)}; }
  static EventOrigin host_event(uint32_t rank) { return {(1ull << 30) + rank}; }
  static EventOrigin core(uint32_t node) {
    return {(1ull << 31) + uint64_t(node)};
  }
  // What an event with `tag` schedules is numbered as its owner's: a
  // device's event as its card, a host's as that host, the network's and
  // untagged ones as events().
  static EventOrigin of_event(const EventTag &tag);
  static EventOrigin host(uint32_t rank) { return {(1ull << 32) + rank}; }
  // Frames from Linux (nicemu run --tap): their order among events of the
  // same time does not depend on when the run loop took them in, so a
  // replay that puts them in at its start runs them alike.
  static EventOrigin outside() { return {1ull << 33}; }
};

inline EventOrigin EventOrigin::of_event(const EventTag &tag) {
  if (tag.owner >> 63)
    return host_event(uint32_t(tag.owner));
  uint64_t node = tag.owner >> 32;
  return node ? card(uint32_t(node - 1)) : events();
}

class Scheduler {
public:
  using Callback = std::function<void()>;

  Scheduler();
  Scheduler(const Scheduler &) = delete;
  Scheduler &operator=(const Scheduler &) = delete;

  // Schedules `fn` at `when` (>= now()). Lower priority values run first
  // among events at the same time. `name` (a string literal: it is kept,
  // not copied) says what the event is, for a debugger's eyes.
  EventId schedule(Time when, const char *name, Callback fn, int priority = 0);
  // The same, for an event a checkpoint can save.
  EventId schedule(Time when, const char *name, Callback fn, int priority,
                   const EventTag &tag);
  // Cancels a pending event; returns false if it already ran or was unknown.
  bool cancel(EventId id);
  // Whether `id` is scheduled and has neither run nor been cancelled.
  bool is_pending(EventId id) const;

  // Events this thread schedules from now on come from `origin`; returns
  // the previous origin, to restore. Each thread has its own: cores whose
  // slices run at once on several threads each schedule as themselves.
  EventOrigin set_origin(EventOrigin origin);
  // set_origin for a scope: the network calling into a card schedules as
  // that card.
  class OriginScope {
  public:
    OriginScope(Scheduler &s, EventOrigin origin)
        : s_(s), was_(s.set_origin(origin)) {}
    ~OriginScope() { s_.set_origin(was_); }
    OriginScope(const OriginScope &) = delete;
    OriginScope &operator=(const OriginScope &) = delete;

  private:
    Scheduler &s_;
    EventOrigin was_;
  };

  // While on, schedule, cancel and is_pending may be called from several
  // threads at once (the slices of a round running on worker threads);
  // everything else stays with one thread. The order events run in does
  // not depend on the order they were scheduled in: (time, priority,
  // origin, sequence) decides, and each origin is one thread's.
  void set_concurrent(bool on) { concurrent_ = on; }

  Time now() const { return now_; }
  // Time of the earliest pending event, or kTimeNever.
  Time next_time() const;
  // Time of the earliest pending event before `before` whose tag `counts`
  // accepts, else `before`. Looks at every pending event: for questions
  // asked now and then (Simulation::quiet_until), not every round.
  Time
  earliest_pending(Time before,
                   const std::function<bool(const EventTag &)> &counts) const;
  bool empty() const { return live_ == 0; }
  size_t pending() const { return live_; }

  // Runs every event with time <= `until`, in order, then sets now() to
  // `until` (never backwards). Events scheduled by callbacks at or before
  // `until` run in the same call.
  void run_until(Time until);
  // The same, but events at exactly `until` from `held` or a later origin
  // stay pending: a host still computing at `until` may yet schedule an
  // event there that sorts before them (its origin is lower), and running
  // them first would make the order depend on when its request arrived.
  void run_until(Time until, EventOrigin held);
  // Runs the single earliest event, advancing now() to its time.
  bool run_next();
  // The earliest pending event's place in the order (its key, tag and
  // name), or false if none: for a run spread over several schedulers,
  // which take their events in turn (docs/distributed.md).
  bool peek(SavedEvent &out) const;
  // The same for the earliest pending event whose tag `which` accepts (a
  // rank's next card event, the network's left aside). Looks at every
  // pending event.
  bool peek_first(const std::function<bool(const EventTag &)> &which,
                  SavedEvent &out) const;
  // The place in the order of the pending event `id`, or false if it is
  // not pending (it ran, or was cancelled).
  bool key_of(EventId id, SavedEvent &out) const;
  // Moves now() forward without running anything (must not skip an event).
  void advance_to(Time t);

  // Checkpoints. Owners of saveable events register under their key (and
  // leave before they go).
  void add_owner(uint64_t key, EventOwner *owner) { owners_[key] = owner; }
  // (With `owner`: only if the key is still that owner's.)
  void remove_owner(uint64_t key, const EventOwner *owner = nullptr) {
    if (auto it = owners_.find(key);
        it != owners_.end() && (!owner || it->second == owner))
      owners_.erase(it);
  }
  // Writes the time, the origins' counters and every pending event; throws
  // nicemu::Error naming an event that has no owner.
  void save(StateWriter &out) const;
  // Drops every pending event, then reads what save() wrote: each event is
  // made again by its owner, which calls restore().
  void load(StateReader &in);
  // Schedules `e` again, at its place in the order, with `fn`.
  EventId restore(const SavedEvent &e, const char *name, Callback fn);

  // Called with the time of every event scheduled, so that a running core
  // can end its slice before it.
  void set_on_earlier_event(std::function<void(Time)> fn) {
    on_earlier_ = std::move(fn);
  }

private:
  struct Key {
    Time when;
    int priority;
    uint64_t origin, seq;
    bool operator<(const Key &o) const {
      return std::tie(when, priority, origin, seq) <
             std::tie(o.when, o.priority, o.origin, o.seq);
    }
  };
  // Events live in reused slots; an EventId is (generation << 32 | slot),
  // so the id of an event that ran or was cancelled never matches the
  // slot's next occupant.
  struct Slot {
    Callback fn;
    const char *name = nullptr;
    EventTag tag;
    Key key{}; // its place in the order (key_of)
    uint32_t generation = 0;
    bool live = false;
  };
  // A min-heap of keys; entries whose slot has moved on (cancelled events)
  // are dropped when they reach the top.
  struct Entry {
    Key key;
    uint32_t slot, generation;
    bool operator>(const Entry &o) const { return o.key < key; }
  };
  uint64_t next_seq();
  EventId insert(const Key &key, const char *name, Callback fn,
                 const EventTag &tag);
  void drop_stale() const;
  void run_top();
  void release(uint32_t slot);

  std::unique_lock<std::mutex> lock_if_concurrent() const;

  Time now_ = 0;
  const uint64_t serial_; // tells this scheduler's thread origins apart
  std::unordered_map<uint64_t, uint64_t> next_seq_; // by origin
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  mutable std::vector<Entry> heap_;
  size_t live_ = 0;
  std::function<void(Time)> on_earlier_;
  std::unordered_map<uint64_t, EventOwner *> owners_;
  bool concurrent_ = false;
  mutable std::mutex mutex_;
};

} // namespace nicemu
