// The scheduler: the only owner of virtual time.
//
// Devices schedule named events; the run loop executes them in order of
// (time, priority, origin, sequence). The origin is who scheduled the event:
// another event (or the run loop), a node's core during its slice, or a
// host's request; the sequence counts per origin. So events at the same time
// and priority run in an order that does not depend on how the cores'
// slices happened to interleave, which makes every run with the same inputs
// identical whatever the slicing (a debugger's single steps included).
#pragma once

#include "sim/time.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace nicemu {

using EventId = uint64_t;

// Who schedules the events from now on (Scheduler::set_origin).
struct EventOrigin {
  uint64_t id = 0; // 0: an event (or the loop); 1 + n: node n's core;
                   // 2^32 + r: host r's request
  static EventOrigin events() { return {}; }
  static EventOrigin core(uint32_t node) { return {1 + uint64_t(node)}; }
  static EventOrigin host(uint32_t rank) { return {(1ull << 32) + rank}; }
};

class Scheduler {
public:
  using Callback = std::function<void()>;

  // Schedules `fn` at `when` (>= now()). Lower priority values run first
  // among events at the same time. `name` appears in traces and errors.
  EventId schedule(Time when, std::string name, Callback fn, int priority = 0);
  // Cancels a pending event; returns false if it already ran or was unknown.
  bool cancel(EventId id);

  // Events scheduled from now on come from `origin`; returns the previous
  // origin, to restore.
  EventOrigin set_origin(EventOrigin origin) {
    return std::exchange(origin_, origin);
  }

  Time now() const { return now_; }
  // Time of the earliest pending event, or kTimeNever.
  Time next_time() const;
  bool empty() const { return queue_.empty(); }
  size_t pending() const { return queue_.size(); }

  // Runs every event with time <= `until`, in order, then sets now() to
  // `until` (never backwards). Events scheduled by callbacks at or before
  // `until` run in the same call.
  void run_until(Time until);
  // Runs the single earliest event, advancing now() to its time.
  bool run_next();
  // Moves now() forward without running anything (must not skip an event).
  void advance_to(Time t);

  // Called whenever the earliest pending time may have become earlier, so a
  // running core can shorten its slice.
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
  struct Event {
    std::string name;
    Callback fn;
    EventId id;
  };
  void run_event(std::map<Key, Event>::iterator it);

  Time now_ = 0;
  EventId next_id_ = 0;
  EventOrigin origin_;
  std::map<uint64_t, uint64_t> next_seq_; // by origin
  std::map<Key, Event> queue_;
  std::map<EventId, Key> by_id_;
  std::function<void(Time)> on_earlier_;
};

} // namespace nicemu
