#include "sim/scheduler.hpp"

#include <cassert>

namespace nicemu {

EventId Scheduler::schedule(Time when, std::string name, Callback fn,
                            int priority) {
  assert(when >= now_ && "events cannot be scheduled in the past");
  Time before = next_time();
  Key key{when, priority, origin_.id, next_seq_[origin_.id]++};
  EventId id = next_id_++;
  queue_.emplace(key, Event{std::move(name), std::move(fn), id});
  by_id_.emplace(id, key);
  if (when < before && on_earlier_)
    on_earlier_(when);
  return id;
}

bool Scheduler::cancel(EventId id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end())
    return false;
  queue_.erase(it->second);
  by_id_.erase(it);
  return true;
}

Time Scheduler::next_time() const {
  return queue_.empty() ? kTimeNever : queue_.begin()->first.when;
}

void Scheduler::run_event(std::map<Key, Event>::iterator it) {
  now_ = it->first.when;
  Callback fn = std::move(it->second.fn);
  by_id_.erase(it->second.id);
  queue_.erase(it);
  fn();
}

void Scheduler::run_until(Time until) {
  while (!queue_.empty() && queue_.begin()->first.when <= until)
    run_event(queue_.begin());
  if (until > now_ && until != kTimeNever)
    now_ = until;
}

bool Scheduler::run_next() {
  if (queue_.empty())
    return false;
  run_event(queue_.begin());
  return true;
}

void Scheduler::advance_to(Time t) {
  assert(t <= next_time() && "advance_to would skip an event");
  if (t > now_)
    now_ = t;
}

} // namespace nicemu
