#include "node/simulation.hpp"

#include "nicemu/error.hpp"
#include "sim/live_bits.hpp"
#include "sim/state_archive.hpp"

#include <algorithm>
#include <chrono>

namespace nicemu {

namespace {

// The node whose core runs a slice on this thread (slices of one round may
// run on several threads at once).
thread_local Node *slice_node = nullptr;

} // namespace

Node &Simulation::add_node(const Model &model, NodeConfig config) {
  nodes_.push_back(
      std::make_unique<Node>(model, scheduler_, std::move(config)));
  Node *node = nodes_.back().get();
  const size_t index = nodes_.size() - 1;
  running_bits_.resize(index / 64 + 1, 0);
  due_bits_.resize(index / 64 + 1, 0);
  queue_pos_.push_back(kNotQueued);
  deferred_.emplace_back();
  node->set_state_observer([this, index](NodeState was, NodeState now) {
    node_state_changed(index, was, now);
  });
  force_bits_.resize(index / 64 + 1, 0);
  node->set_interrupt_observer([this, index] { interrupt_due(index); });
  // An event the running core schedules before its slice's end shortens
  // the slice. Events other cores schedule in the same round do not: they
  // reach this node no sooner than the lookahead (slice_end).
  scheduler_.set_on_earlier_event([](Time t) {
    if (slice_node && slice_node->state() == NodeState::Running)
      slice_node->cpu().limit_slice(slice_node->clock().cycle_at_or_after(t));
  });
  return *node;
}

void Simulation::node_state_changed(size_t index, NodeState was,
                                    NodeState now) {
  if (at_once_) { // the node's own core, in its slice: taken at round's end
    Deferred &d = deferred_[index];
    if (!d.changed)
      d.was = was;
    d.changed = true;
    d.now = now;
    return;
  }
  const uint64_t bit = uint64_t(1) << (index % 64);
  if (now == NodeState::Running)
    running_bits_[index / 64] |= bit;
  else
    running_bits_[index / 64] &= ~bit;
  auto ended = [](NodeState s) {
    return s == NodeState::Halted || s == NodeState::Faulted;
  };
  faulted_ += (now == NodeState::Faulted) - (was == NodeState::Faulted);
  finished_ += ended(now) - ended(was);
  // The core queue follows: a core that starts running joins the round
  // if the scan of the nodes has yet to reach it (as for_each_running
  // would visit it), else the queue.
  if (!queue_in_use())
    return;
  if (now == NodeState::Running && was != NodeState::Running) {
    if (in_round_ && index > round_index_)
      due_bits_[index / 64] |= bit;
    else if (!(in_round_ && index == round_index_))
      queue_push(index);
  } else if (now != NodeState::Running) {
    queue_remove(index);
  }
}

// A running core takes a due interrupt when its next slice starts, even an
// empty one; the scan of every core gives it that slice at once (this
// round if the scan has yet to reach it, else the next: the core that
// raised it in its own slice too), so the queue does too: the interrupt,
// and a fault it may raise, happen in the same round either way.
void Simulation::interrupt_due(size_t index) {
  if (!queue_in_use())
    return;
  if (at_once_) {
    deferred_[index].interrupt = true;
    return;
  }
  const uint64_t bit = uint64_t(1) << (index % 64);
  if (in_round_ && index > round_index_) {
    due_bits_[index / 64] |= bit;
  } else {
    force_bits_[index / 64] |= bit;
    forced_ = true;
  }
}

bool Simulation::due(size_t index) const {
  return (due_bits_[index / 64] >> (index % 64)) & 1;
}

template <class F> void Simulation::for_each_running(F f) const {
  for_each_live_bit(running_bits_, [&](size_t i) { f(*nodes_[i]); });
}

// The core queue is a binary min-heap that knows where each core stands in
// it (queue_pos_), so that a core leaves it in O(log N) when it stops
// running or an interrupt takes it into the round.
void Simulation::queue_place(size_t pos) {
  queue_pos_[queue_[pos].index] = uint32_t(pos);
}

void Simulation::queue_sift_up(size_t pos) {
  while (pos > 0) {
    size_t parent = (pos - 1) / 2;
    if (!(queue_[parent] > queue_[pos]))
      break;
    std::swap(queue_[parent], queue_[pos]);
    queue_place(pos);
    pos = parent;
  }
  queue_place(pos);
}

void Simulation::queue_sift_down(size_t pos) {
  for (;;) {
    size_t least = pos;
    for (size_t child : {2 * pos + 1, 2 * pos + 2})
      if (child < queue_.size() && queue_[least] > queue_[child])
        least = child;
    if (least == pos)
      break;
    std::swap(queue_[least], queue_[pos]);
    queue_place(pos);
    pos = least;
  }
  queue_place(pos);
}

void Simulation::queue_push(size_t index) {
  if (queue_pos_[index] != kNotQueued || queue_stale_)
    return; // the rebuild will take it
  queue_.push_back({nodes_[index]->time(), uint32_t(index)});
  queue_sift_up(queue_.size() - 1);
}

void Simulation::queue_remove(size_t index) {
  const uint32_t pos = queue_pos_[index];
  if (pos == kNotQueued || queue_stale_)
    return;
  queue_pos_[index] = kNotQueued;
  const Queued last = queue_.back();
  queue_.pop_back();
  if (pos == queue_.size())
    return;
  queue_[pos] = last;
  queue_sift_down(pos);
  queue_sift_up(queue_pos_[last.index]);
}

void Simulation::queue_rebuild() {
  queue_.clear();
  std::fill(queue_pos_.begin(), queue_pos_.end(), kNotQueued);
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->state() == NodeState::Running && !due(i))
      queue_.push_back({nodes_[i]->time(), uint32_t(i)});
  std::make_heap(queue_.begin(), queue_.end(), std::greater<Queued>());
  for (size_t pos = 0; pos < queue_.size(); ++pos)
    queue_place(pos);
  queue_stale_ = false;
}

// A core may run up to the earliest event pending when the round started,
// and no further ahead of any other running core than the lookahead:
// anything another core does, the events it schedules included, reaches
// this one only that much later. The other cores' times are those at the
// start of the round (never later than now: conservative), kept as the two
// earliest so that each core's bound is O(1). So is the hosts' earliest
// action: hosts change it only between rounds, so it is taken once per
// round. Nothing a core does in its slice moves another core's end, so the
// slices of a round could run in any order, or at once.
Time Simulation::slice_end(const Node &node, Time max_time) const {
  Time end = std::min({event_bound_, max_time, wall_limit_, host_action_,
                       node.time() + kLongestSlice});
  if (lookahead_ == kTimeNever)
    return end;
  Time others = node.node_id() == earliest_node_ ? second_earliest_ : earliest_;
  if (others != kTimeNever)
    end = std::min(end, others + lookahead_);
  return end;
}

void Simulation::note_core_times() {
  earliest_ = second_earliest_ = kTimeNever;
  earliest_node_ = UINT32_MAX;
  for_each_running([this](const Node &n) {
    Time t = n.time();
    if (t < earliest_) {
      second_earliest_ = earliest_;
      earliest_ = t;
      earliest_node_ = n.node_id();
    } else if (t < second_earliest_) {
      second_earliest_ = t;
    }
  });
}

Time Simulation::earliest_core_time() const {
  if (queue_in_use() && !queue_stale_)
    return queue_.empty() ? kTimeNever : queue_.front().time;
  Time t = kTimeNever;
  for_each_running([&t](const Node &n) { t = std::min(t, n.time()); });
  return t;
}

Time Simulation::present() const {
  Time t = scheduler_.now();
  for_each_running([&t](const Node &n) { t = std::max(t, n.time()); });
  return t;
}

Time Simulation::quiet_until(Time now, uint32_t node, uint32_t rank) const {
  if (input_)
    return now;
  Time t = lookahead_ == kTimeNever ? kTimeNever : now + lookahead_;
  if (fabric_)
    t = std::min(t, fabric_->earliest_arrival(now));
  const uint64_t host = host_event_owner(rank);
  t = scheduler_.earliest_pending(t, [node, host](const EventTag &tag) {
    if (tag.owner == 0 || tag.owner == host)
      return true; // unknown, or the host's own
    if (tag.owner == kFabricEventOwner || tag.owner >> 63)
      return false; // packets: above; other hosts: through their cards
    return (tag.owner >> 32) == uint64_t(node) + 1; // device_event_owner
  });
  return std::max(now, t);
}

// The latest time any node has reached, asleep or halted included: where a
// run that can go no further ended (a lone core that went to sleep with
// nothing scheduled never moved the scheduler's clock).
Time Simulation::latest_node_time() const {
  Time t = scheduler_.now();
  for (const auto &n : nodes_)
    t = std::max(t, n->time());
  return t;
}

// Whether a stop was requested: the run ends where it stands.
bool Simulation::stopped(RunResult &result) const {
  if (!stop_requested())
    return false;
  result.outcome = RunOutcome::Stopped;
  result.end_time = latest_node_time();
  result.message = "stopped on request";
  return true;
}

// Whether the run is over: a fault, a failed host, everything finished.
bool Simulation::finished(RunResult &result) const {
  if (faulted_)
    for (const auto &n : nodes_)
      if (n->state() == NodeState::Faulted) {
        result.outcome = RunOutcome::Faulted;
        result.end_time = n->time();
        return true;
      }
  if (external_ && !external_->failure().empty()) {
    result.outcome = RunOutcome::HostFailed;
    result.end_time = scheduler_.now();
    result.message = external_->failure();
    return true;
  }
  // With host programs the run is theirs: it ends when they all have, even
  // if the firmware loops forever, as NIC firmware does.
  bool done = external_ ? external_->finished() : finished_ == nodes_.size();
  if (!done)
    return false;
  result.outcome = RunOutcome::Halted;
  result.end_time = scheduler_.now();
  if (!external_)
    for (const auto &n : nodes_)
      result.end_time = std::max(result.end_time, n->time());
  return true;
}

void Simulation::run_slice(Node &n, Time max_time) {
  slice_node = &n;
  Time end = slice_end(n, max_time);
  if (debugger_) // a slice may end at any block boundary
    end = std::min(end, n.time() + debugger_->max_slice());
  // What the core schedules is ordered by its node, not by when in the
  // round its slice ran (Scheduler, "origin").
  EventOrigin was = scheduler_.set_origin(EventOrigin::core(n.node_id()));
  n.run_until(end);
  scheduler_.set_origin(was);
  slice_node = nullptr;
}

// A round: each running core, in node order, runs a slice up to its end
// (slice_end). Without the core queue, every running core is visited, and
// those already at or past their end run nothing. With it, only the cores
// that can run are taken from the queue: those before the round's bound
// (no core's end is later), and those with an interrupt due; they run in
// node order, and go back into the queue at their new times. So a round
// costs the cores that run, not all of them (1024 cores, a few due).
void Simulation::run_round(Time max_time) {
  event_bound_ = scheduler_.next_time();
  if (!queue_in_use()) {
    if (lookahead_ != kTimeNever)
      note_core_times();
    for_each_running([this, max_time](Node &n) { run_slice(n, max_time); });
    return;
  }
  note_due_cores();
  run_queued_cores(max_time);
}

// The cores due this round (an interrupt forced them) leave the queue, and
// the two earliest running cores are noted (note_core_times): the queue's
// top, the smaller of its children, and the due cores.
void Simulation::note_due_cores() {
  if (forced_) { // the forced cores leave the queue for the round
    for (size_t w = 0; w < force_bits_.size(); ++w) {
      const uint64_t forced = force_bits_[w] & running_bits_[w];
      due_bits_[w] |= forced;
      force_bits_[w] = 0;
      for (uint64_t bits = forced; bits; bits &= bits - 1)
        queue_remove(w * 64 + unsigned(__builtin_ctzll(bits)));
    }
    forced_ = false;
  }
  if (queue_stale_)
    queue_rebuild();
  Queued first{kTimeNever, UINT32_MAX};
  Time second = kTimeNever;
  auto consider = [&](Queued q) {
    if (q > first) {
      second = std::min(second, q.time);
    } else {
      second = first.time;
      first = q;
    }
  };
  for (size_t i = 0; i < 3 && i < queue_.size(); ++i)
    consider(queue_[i]);
  for (size_t w = 0; w < due_bits_.size(); ++w)
    for (uint64_t bits = due_bits_[w]; bits; bits &= bits - 1) {
      size_t i = w * 64 + unsigned(__builtin_ctzll(bits));
      if (nodes_[i]->state() == NodeState::Running)
        consider({nodes_[i]->time(), uint32_t(i)});
    }
  earliest_ = first.time;
  second_earliest_ = second;
  earliest_node_ =
      first.index == UINT32_MAX ? UINT32_MAX : nodes_[first.index]->node_id();
}

// The cores before the round's bound (or due) run their slices, in node
// order, and go back into the queue at their new times.
void Simulation::run_queued_cores(Time max_time) {
  // No core's slice ends later than this: the others run nothing.
  Time bound = std::min({event_bound_, max_time, wall_limit_, host_action_});
  if (lookahead_ != kTimeNever && second_earliest_ != kTimeNever)
    bound = std::min(bound, second_earliest_ + lookahead_);
  while (!queue_.empty() && queue_.front().time < bound) {
    uint32_t i = queue_.front().index;
    queue_remove(i);
    due_bits_[i / 64] |= uint64_t(1) << (i % 64);
  }
  in_round_ = true;
  run_due_cores(max_time);
  in_round_ = false;
  for (size_t w = 0; w < due_bits_.size(); ++w) {
    for (uint64_t bits = due_bits_[w]; bits; bits &= bits - 1) {
      size_t i = w * 64 + unsigned(__builtin_ctzll(bits));
      if (nodes_[i]->state() == NodeState::Running)
        queue_push(i);
    }
    due_bits_[w] = 0;
  }
}

void Simulation::set_threads(unsigned threads, bool adaptive) {
  threads_ = std::max(1u, threads);
  adaptive_threads_ = adaptive;
}

unsigned Simulation::threads_used() const {
  if (governor_ && !governor_->ever_chose_parallel())
    return 1; // only its trials used the workers
  return threads_used_;
}

bool Simulation::threads_usable() const {
  if (threads_ < 2 || !queue_in_use() || nodes_.size() < 2)
    return false;
  if (debugger_) // it holds the run from inside one core's hooks
    return false;
  for (const auto &n : nodes_) // a profiler sees every block, in order
    if (n->block_observer())
      return false;
  return true;
}

void Simulation::run_due_cores(Time max_time) {
  round_cores_.clear();
  if (workers_ && (!governor_ || governor_->parallel(slices_run_)))
    for_each_live_bit(due_bits_,
                      [&](size_t i) { round_cores_.push_back(uint32_t(i)); });
  if (round_cores_.size() >= 2)
    return run_due_cores_at_once(max_time);
  for_each_live_bit(due_bits_, [&](size_t i) { // cores added meanwhile too
    round_index_ = i;
    if (nodes_[i]->state() == NodeState::Running) {
      run_slice(*nodes_[i], max_time);
      ++slices_run_;
    }
  });
}

// The slices of the round run at once, each on whichever thread takes it.
// No slice's end depends on another slice (slice_end), and what a slice
// does to the world outside its node is either ordered whatever the thread
// (the scheduler's events, by origin; the fabric's flights, by the events
// that move them) or held until the round's end and then taken in node
// order (console lines, fault reports, the node's changes of state): so
// the run is the same as with the slices one after another.
void Simulation::run_due_cores_at_once(Time max_time) {
  for (uint32_t i : round_cores_)
    nodes_[i]->hold_output(true);
  at_once_ = true;
  scheduler_.set_concurrent(true);
  std::function<void(size_t)> job = [&](size_t k) {
    Node &n = *nodes_[round_cores_[k]];
    if (n.state() == NodeState::Running)
      run_slice(n, max_time);
  };
  std::exception_ptr error;
  slices_run_ += round_cores_.size();
  try {
    workers_->run(round_cores_.size(), job);
  } catch (...) {
    error = std::current_exception();
  }
  scheduler_.set_concurrent(false);
  at_once_ = false;
  for (uint32_t i : round_cores_) {
    round_index_ = i;
    Deferred d = std::exchange(deferred_[i], Deferred{});
    if (d.changed && d.was != d.now)
      node_state_changed(i, d.was, d.now);
    if (d.interrupt)
      interrupt_due(i);
    nodes_[i]->hold_output(false);
    nodes_[i]->release_output();
  }
  if (error)
    std::rethrow_exception(error);
}

RunResult Simulation::run(Time max_time) {
  if (ranks_)
    return run_over_ranks(max_time);
  auto wall_start = std::chrono::steady_clock::now();
  RunResult result;
  prepare_threads();
  // With input in wall time: virtual time never passes the wall clock.
  auto wall_now = [&wall_start] {
    return Time(std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - wall_start)
                    .count()) *
           1000;
  };
  for (;;) {
    if (stopped(result))
      break;
    if (monitor_)
      monitor_->between_rounds(*this);
    if (checkpoints_ && scheduler_.now() >= checkpoints_->next_due())
      checkpoints_->take(*this);
    if (debugger_) {
      debugger_->between_slices();
      if (debugger_->killed()) {
        result.outcome = RunOutcome::Killed;
        result.end_time = scheduler_.now();
        result.message = "killed by the debugger";
        break;
      }
      if (stopped(result)) // asked while the debugger held the run
        break;
    }
    if (external_) {
      external_->poll();
      // The hosts are done: firmware that never sleeps must not run on.
      if (finished(result))
        break;
    }
    if (input_) {
      input_->poll(present());
      wall_limit_ = wall_now();
    }
    host_action_ = external_ ? external_->earliest_action() : kTimeNever;
    run_round(max_time);
    if (finished(result))
      break;
    // Run every event the cores have reached, or jump to the next one if all
    // cores sleep; but never past a host that may still act.
    Time t = std::min(earliest_core_time(), scheduler_.next_time());
    Time host = external_ ? external_->earliest_action() : kTimeNever;
    if (input_) {
      // Ahead of the wall clock (or nothing to do but wait for input):
      // sleep until it catches up or input arrives, at most 20 ms at a time
      // so that hosts that end are seen.
      Time target = std::min({t, host, max_time});
      Time wall = wall_now();
      if (target > wall) {
        if (workers_)
          workers_->rest();
        input_->wait(
            int64_t(std::min<Time>((target - wall + 999) / 1000, 20'000'000)));
        continue;
      }
    }
    if (host <= t && host < max_time) {
      // Everything before the host's call; of the events at its time, those
      // of the cores and devices (host requests there wait: another host
      // may still ask at that time).
      scheduler_.run_until(host, EventOrigin::host(0));
      if (external_)
        external_->events_ran();
      if (workers_) // the hosts need the cores more than idle workers
        workers_->rest();
      external_->wait();
      continue;
    }
    if (t == kTimeNever && !input_) {
      result.outcome = RunOutcome::Deadlock;
      result.end_time = latest_node_time();
      result.message = deadlock_message();
      break;
    }
    if (t >= max_time) {
      scheduler_.run_until(max_time);
      if (external_)
        external_->events_ran();
      result.outcome = RunOutcome::MaxTime;
      result.end_time = max_time;
      break;
    }
    scheduler_.run_until(t);
    if (external_)
      external_->events_ran();
  }
  end_run(result, wall_start);
  return result;
}

void Simulation::set_ranks(RankSync *ranks) {
  if (ranks && (debugger_ || input_ || checkpoints_))
    throw Error("run: the debugger, input in wall time and checkpoints are "
                "not available in a run spread over ranks yet");
  ranks_ = ranks;
  if (ranks_)
    ranks_->set_view([this] { return rank_view(false); });
}

// This rank's figures as they stand (RankSync::agree, and what an owner
// tells with each card event).
RankView Simulation::rank_view(bool latest) {
  RankView v;
  note_due_cores();
  v.first_core = earliest_;
  v.first_node = earliest_node_;
  v.second_core = second_earliest_;
  v.nodes = nodes_.size();
  v.finished = finished_;
  if (faulted_)
    for (const auto &n : nodes_)
      if (n->state() == NodeState::Faulted) {
        v.faulted_node = n->node_id();
        v.faulted_time = n->time();
        break;
      }
  if (latest)
    v.latest_node = latest_node_time();
  v.stop = stop_requested();
  if (external_) {
    v.host_action = external_->earliest_action();
    v.hosts_done = external_->finished();
    v.host_failure = external_->failure();
    v.halts = faulted_ > 0 || external_->failing();
  }
  return v;
}

// The run loop of one rank of a cluster spread over several
// (docs/distributed.md): the rounds of one process, every bound and every
// decision taken from the cluster's figures, the events run in the order
// of one process (RankSync::run_until). Every rank goes through the same
// rounds and ends the same way. One collective a round (RankSync::agree),
// after the cores' slices: the events then run up to the earliest core,
// and the next slices are bounded by the cluster as it stands after them,
// which every rank knows from what the owners told with each card event
// (RankSync::current). How slices are cut changes no result
// (kLongestSlice), so the hosts' requests taken in after the events wait
// for the next round's bounds.
RunResult Simulation::run_over_ranks(Time max_time) {
  auto wall_start = std::chrono::steady_clock::now();
  RunResult result;
  if (!queue_in_use())
    throw Error("run: a run spread over ranks needs the core queue");
  prepare_threads();
  // Where a run that went no further ended: the latest any node reached.
  auto latest = [this] {
    return std::max(scheduler_.now(),
                    ranks_->agree(rank_view(true)).latest_node);
  };
  // How a run with host programs ends (as finished() says in one
  // process): a node faulted, a host failed, or every host ended.
  auto hosts_ended = [&](const RankView &all) {
    if (!external_)
      return false;
    if (!all.host_failure.empty()) {
      result.outcome = RunOutcome::HostFailed;
      result.end_time = scheduler_.now();
      result.message = all.host_failure;
      return true;
    }
    if (!all.hosts_done)
      return false;
    result.outcome = RunOutcome::Halted;
    result.end_time = scheduler_.now();
    return true;
  };
  for (;;) {
    if (monitor_)
      monitor_->between_rounds(*this);
    if (external_)
      external_->poll();
    RankView all = ranks_->agree(rank_view(false));
    if (all.stop) {
      result.outcome = RunOutcome::Stopped;
      result.end_time = latest();
      result.message = "stopped on request";
      break;
    }
    if (all.faulted_node != UINT32_MAX) {
      result.outcome = RunOutcome::Faulted;
      result.end_time = all.faulted_time;
      break;
    }
    if (hosts_ended(all))
      break;
    if (!external_ && all.finished == all.nodes) {
      result.outcome = RunOutcome::Halted;
      result.end_time = latest();
      break;
    }
    Time t = std::min(all.first_core, ranks_->next_event_time());
    Time host = all.host_action;
    if (host <= t && host < max_time) {
      // As in one process; only the ranks whose hosts are the ones to act
      // wait for them (the others wait for those in the next agree).
      ranks_->run_until(host, EventOrigin::host(0));
      external_->events_ran();
      if (workers_)
        workers_->rest();
      if (external_->earliest_action() == host)
        external_->wait();
      continue;
    }
    if (t == kTimeNever) {
      result.outcome = RunOutcome::Deadlock;
      result.end_time = latest();
      result.message = deadlock_message();
      break;
    }
    if (t >= max_time) {
      ranks_->run_until(max_time);
      if (external_)
        external_->events_ran();
      result.outcome = RunOutcome::MaxTime;
      result.end_time = max_time;
      break;
    }
    ranks_->run_until(t);
    if (external_)
      external_->events_ran();
    // A fault or a failed host in those events ends a run with host
    // programs before any more slices, as in one process.
    RankView now = ranks_->current();
    if (external_ && now.halts)
      continue;
    note_due_cores(); // this rank's; the bounds are the cluster's
    earliest_ = now.first_core;
    earliest_node_ = now.first_node;
    second_earliest_ = now.second_core;
    host_action_ = now.host_action;
    event_bound_ = ranks_->next_event_time();
    run_queued_cores(max_time);
  }
  end_run(result, wall_start);
  return result;
}

// Packets left in the network at a deadlock wait for links other packets
// hold (a cycle of wormholes) or for a receiver that never takes them; the
// message says so instead of "nothing left to do".
// No more threads than cores to share a round.
void Simulation::prepare_threads() {
  threads_used_ = threads_usable()
                      ? unsigned(std::min<size_t>(threads_, nodes_.size()))
                      : 1;
  if (threads_used_ > 1 && (!workers_ || workers_->threads() != threads_used_))
    workers_ = std::make_unique<CoreWorkers>(threads_used_);
  else if (threads_used_ == 1)
    workers_.reset();
  governor_.reset();
  if (workers_ && adaptive_threads_)
    governor_ = std::make_unique<ThreadGovernor>();
}

void Simulation::end_run(RunResult &result,
                         std::chrono::steady_clock::time_point start) {
  if (workers_)
    workers_->rest();
  for (auto &n : nodes_)
    n->flush_console();
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

// The network's part (network_deadlock) and the hosts' (who waits where).
std::string Simulation::deadlock_message() const {
  std::string message = network_deadlock();
  if (std::string who = external_ ? external_->describe_stall() : "";
      !who.empty())
    message += " (" + who + ")";
  return message;
}

std::string Simulation::network_deadlock() const {
  uint64_t stuck = fabric_ ? fabric_->packets_in_network() : 0;
  if (stuck == 0)
    return external_ ? "every host waits for its NIC and no NIC has anything "
                       "left to do"
                     : "every node is asleep and no event is pending that "
                       "could wake one";
  return std::string(external_ ? "every host waits for its NIC and every NIC "
                                 "sleeps"
                               : "every node is asleep") +
         ", but " + std::to_string(stuck) +
         (stuck == 1 ? " packet is" : " packets are") +
         " stuck in the network, waiting for a link another packet holds or "
         "for a receiver that never takes it (a wormhole deadlock, or a NIC "
         "that stopped receiving)";
}

// The run loop keeps nothing between rounds but the cores due for an
// interrupt; the core queue is made again from the nodes' times.
void ExternalActor::save_state(StateWriter &) const {
  throw Error("checkpoint: a run with host programs cannot be saved in a "
              "checkpoint file yet");
}

void ExternalActor::load_state(StateReader &in) {
  in.fail("this run cannot be restored from a checkpoint");
}

void Simulation::save_state(StateWriter &out) const {
  out.section("run");
  out.u64(nodes_.size());
  out.fields(force_bits_, forced_);
  for (const auto &n : nodes_)
    n->save_state(out);
  out.flag(fabric_ != nullptr);
  if (fabric_)
    fabric_->save_state(out);
  out.flag(external_ != nullptr);
  if (external_)
    external_->save_state(out);
  scheduler_.save(out); // last: the events' owners are restored by then
}

void Simulation::load_state(StateReader &in) {
  in.section("run");
  if (in.u64() != nodes_.size())
    in.fail("it holds another number of nodes");
  std::vector<uint64_t> force;
  in.fields(force, forced_);
  if (force.size() != force_bits_.size())
    in.fail("it holds another number of nodes");
  force_bits_ = std::move(force);
  for (auto &n : nodes_)
    n->load_state(in);
  if (in.flag() != (fabric_ != nullptr))
    in.fail(fabric_ ? "it has no network" : "it has a network");
  if (fabric_)
    fabric_->load_state(in);
  if (in.flag() != (external_ != nullptr))
    in.fail(external_ ? "it has no host programs" : "it has host programs");
  if (external_)
    external_->load_state(in);
  scheduler_.load(in);
  queue_stale_ = true; // the nodes' times are the checkpoint's
}

} // namespace nicemu
