// The scheduler: the only owner of virtual time.
//
// Devices schedule named events; the run loop executes them in order of
// (time, priority, sequence). The sequence number is the order of scheduling,
// so events at the same time and priority run first-scheduled-first, which
// makes every run with the same inputs identical.
#pragma once

#include "sim/time.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>

namespace nicemu {

using EventId = uint64_t;

class Scheduler {
public:
  using Callback = std::function<void()>;

  // Schedules `fn` at `when` (>= now()). Lower priority values run first
  // among events at the same time. `name` appears in traces and errors.
  EventId schedule(Time when, std::string name, Callback fn, int priority = 0);
  // Cancels a pending event; returns false if it already ran or was unknown.
  bool cancel(EventId id);

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
    uint64_t seq;
    bool operator<(const Key &o) const {
      return std::tie(when, priority, seq) <
             std::tie(o.when, o.priority, o.seq);
    }
  };
  struct Event {
    std::string name;
    Callback fn;
  };
  void run_event(std::map<Key, Event>::iterator it);

  Time now_ = 0;
  uint64_t next_seq_ = 0;
  std::map<Key, Event> queue_;
  std::map<EventId, Key> by_id_;
  std::function<void(Time)> on_earlier_;
};

} // namespace nicemu
