// A run: nodes on one scheduler, advanced together in virtual time.
//
// Each core runs in slices that end at the next pending event (at a block
// boundary); then every event up to the cores' time runs; then interrupts
// are taken. A sleeping core is not run at all: time jumps to the event that
// wakes it.
#pragma once

#include "fabric/fabric.hpp"
#include "node/core_workers.hpp"
#include "node/node.hpp"
#include "node/thread_governor.hpp"
#include "sim/rank_sync.hpp"
#include "sim/scheduler.hpp"
#include "sim/stop_request.hpp"
#include "sim/wall_clock_input.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace nicemu {

// Something outside the cores that acts at virtual times of its own: the
// host processes. The run never passes the earliest time it may act.
class ExternalActor {
public:
  virtual ~ExternalActor() = default;
  // Takes in whatever it has posted (requests become scheduled events).
  virtual void poll() = 0;
  // The earliest virtual time at which it may still act on its own.
  virtual Time earliest_action() const = 0;
  // The simulation has run every event at the time it stands at, but the
  // actor's own requests there: what was answered at that time may go out.
  virtual void events_ran() = 0;
  // Blocks (in wall time) until it may have posted something.
  virtual void wait() = 0;
  // Done: the run is complete.
  virtual bool finished() const = 0;
  // Non-empty when it failed (a host crashed): the run stops.
  virtual std::string failure() const = 0;
  // Failed already, though failure() may say so only from the next poll.
  virtual bool failing() const { return !failure().empty(); }
  // When nothing can move any more: who waits and who is gone, for the
  // message that ends the run.
  virtual std::string describe_stall() const { return ""; }
  // Checkpoints (Simulation::save_state): its state, before the pending
  // events (whose owners it may hold). By default it cannot be saved.
  virtual void save_state(StateWriter &out) const;
  virtual void load_state(StateReader &in);
};

// A debugger of the whole run (debug/gdb_target.hpp). It sees the run
// between slices, where every core stands at a block boundary; it stops a
// core inside a slice through the core's own hooks (CpuDebugger).
class RunDebugger {
public:
  virtual ~RunDebugger() = default;
  // Between two rounds of slices: may hold the run (block in wall time)
  // while the debugger looks; virtual time stands still meanwhile.
  virtual void between_slices() = 0;
  // The debugger ended the run (GDB's kill).
  virtual bool killed() const = 0;
  // The longest slice while debugging, so that an interrupt gets through.
  virtual Time max_slice() const = 0;
};

class Simulation;

// Watches a run go, for people (the progress line of the command line). It
// is told between two rounds of slices and may read the run, never change
// it; what it does in wall time never reaches virtual time.
class RunMonitor {
public:
  virtual ~RunMonitor() = default;
  virtual void between_rounds(const Simulation &sim) = 0;
};

// Takes checkpoint files of a run (nicemu run --checkpoint-dir; the
// command line writes them). Called between two rounds of slices, once the
// scheduler's time has reached next_due().
class RunCheckpoints {
public:
  virtual ~RunCheckpoints() = default;
  virtual Time next_due() const = 0;
  virtual void take(const Simulation &sim) = 0;
};

enum class RunOutcome {
  Halted,     // every node halted
  Faulted,    // a node faulted (the run stops at the first fault)
  MaxTime,    // virtual time reached --max-time
  Deadlock,   // every live node sleeps and no event is pending
  HostFailed, // a host process failed
  Killed,     // the debugger ended the run
  Stopped,    // a stop was requested from outside (SIGINT, SIGTERM)
};

struct RunResult {
  RunOutcome outcome = RunOutcome::Halted;
  Time end_time = 0;
  double wall_seconds = 0;
  std::string message; // what stopped the run, for people
};

class Simulation {
public:
  Scheduler &scheduler() { return scheduler_; }
  const Scheduler &scheduler() const { return scheduler_; }
  // The network between the nodes (owned by the run), and how far apart in
  // virtual time the cores may run (see network_lookahead).
  void set_fabric(std::unique_ptr<Fabric> fabric, Time lookahead) {
    fabric_ = std::move(fabric);
    lookahead_ = lookahead;
  }
  Fabric *fabric() { return fabric_.get(); }
  // The host processes, when the run has them: it ends when they finish.
  void set_external(ExternalActor *external) { external_ = external; }
  // The debugger, when one may attach (nicemu run --gdb).
  void set_debugger(RunDebugger *debugger) { debugger_ = debugger; }
  // Input from outside in wall time (nicemu run --tap); paces the run.
  void set_wall_clock_input(WallClockInput *input) { input_ = input; }
  // A request to stop from outside (a signal): the run ends, as Stopped,
  // before its next round of slices. Null: none.
  void set_stop_request(const StopRequest *stop) { stop_ = stop; }
  bool stop_requested() const { return stop_ && stop_->requested(); }
  // Who watches the run go (progress). Null: nobody.
  void set_monitor(RunMonitor *monitor) { monitor_ = monitor; }
  // Who takes checkpoint files. Null: nobody.
  void set_checkpoints(RunCheckpoints *c) { checkpoints_ = c; }
  // A checkpoint: the whole run's state between two rounds of slices (the
  // nodes, the network, pending events), for load_state into a run built
  // afresh from the same inputs, which then goes on exactly as this one
  // does (docs/replay.md, "Checkpoint files"). Throws nicemu::Error when a
  // part cannot be saved (it says which). Host programs are not saved.
  void save_state(StateWriter &out) const;
  void load_state(StateReader &in);
  // The core queue (on by default): a round gives slices only to the cores
  // that are due, taken from a queue ordered by their times, instead of
  // visiting every running core (nicemu run --no-core-queue). The same
  // cores run, in the same order: results are identical either way. A run
  // with a debugger always visits every core.
  void set_core_queue(bool on) { core_queue_on_ = on; }
  // Threads for the cores' slices (nicemu run --threads): the slices of a
  // round run on up to this many threads at once, this one included.
  // Results are identical for any number (docs/architecture.md, "Threads").
  // Only cards whose devices allow it (Board::cores_run_in_parallel) ask
  // for more than one; a run with a debugger, a profiler, or without the
  // core queue uses one.
  // `adaptive` (the user left the number to nicemu): a round goes to the
  // workers only while that runs faster on this machine, measured as the
  // run goes (node/thread_governor.hpp); the results are the same either
  // way.
  void set_threads(unsigned threads, bool adaptive = false);
  // The threads the last run used: 1 if it could not use more, or if the
  // governor never chose the workers (its trials use them, briefly).
  unsigned threads_used() const;
  // The threads a round had when it went to the workers (1: none).
  unsigned workers_threads() const { return workers_ ? threads_used_ : 1; }
  // With adaptive threads: the governor of the last run (null: none).
  const ThreadGovernor *thread_governor() const { return governor_.get(); }
  Node &add_node(const Model &model, NodeConfig config);
  std::vector<std::unique_ptr<Node>> &nodes() { return nodes_; }
  const std::vector<std::unique_ptr<Node>> &nodes() const { return nodes_; }

  RunResult run(Time max_time = kTimeNever);

  // One rank of a cluster spread over several (docs/distributed.md): its
  // nodes are the ones added here; `ranks` keeps the events and the
  // decisions in step with the other ranks. Refused with host programs, a
  // debugger, input in wall time or checkpoints (not built yet).
  void set_ranks(RankSync *ranks);

  // The virtual time the run has reached: the scheduler's, or the latest
  // running core's (no core is past it).
  Time present() const;

  // Asked at `now` (between rounds, every core at or past it), of a node
  // whose core has slept since before then: the earliest time anything
  // could wake it, as far as the same answer holds in every run however
  // the cores' slices fell (host leases: HostAgent::deliver_reply). Cores
  // may be ahead of `now`, and have scheduled different events there from
  // run to run; but whatever a core does from `now` on reaches another
  // node a lookahead later at the soonest. So: one lookahead, the packets
  // in the network (Fabric::earliest_arrival), and the node's own pending
  // events, those of its host (`rank`) and those without an owner, if
  // sooner. `now` itself with input from outside (it comes at any time).
  Time quiet_until(Time now, uint32_t node, uint32_t rank) const;

  // No slice is longer than this, so that a stop request and the progress
  // line are seen at least that often in virtual time, even by a core that
  // runs alone with nothing scheduled. How slices are cut changes no result
  // (docs/architecture.md, "Time").
  static constexpr Time kLongestSlice = 1'000'000'000; // 1 ms

  // A deadlock's message without the hosts' part (RunExternal::
  // describe_stall): what the network holds. A run spread over ranks adds
  // the hosts of every rank to it (cli/run_spread.cpp).
  std::string network_deadlock() const;

private:
  Time earliest_core_time() const;
  RunResult run_over_ranks(Time max_time);
  RankView rank_view(bool latest);
  Time slice_end(const Node &node, Time max_time) const;
  bool finished(RunResult &result) const;
  bool stopped(RunResult &result) const;
  void note_core_times();
  // Keeps running_bits_ and the counts below with a node's state.
  void node_state_changed(size_t index, NodeState was, NodeState now);
  // Calls f(node) for each running node in node order, as a scan of all
  // nodes that skips the others would: a node later in the order that
  // starts running during the calls is visited too.
  template <class F> void for_each_running(F f) const;
  Time latest_node_time() const;
  std::string deadlock_message() const;
  void prepare_threads();
  void end_run(RunResult &result, std::chrono::steady_clock::time_point start);
  // The core queue (set_core_queue).
  struct Queued {
    Time time;
    uint32_t index;
    bool operator>(const Queued &o) const {
      return time != o.time ? time > o.time : index > o.index;
    }
  };
  void run_round(Time max_time);
  void note_due_cores();
  void run_queued_cores(Time max_time);
  void run_slice(Node &n, Time max_time);
  void run_due_cores(Time max_time);
  void run_due_cores_at_once(Time max_time);
  bool threads_usable() const;
  void queue_push(size_t index);
  void queue_remove(size_t index);
  void queue_place(size_t pos);
  void queue_sift_up(size_t pos);
  void queue_sift_down(size_t pos);
  void queue_rebuild();
  bool due(size_t index) const;
  void interrupt_due(size_t index);
  bool queue_in_use() const { return core_queue_on_ && !debugger_; }

  Scheduler scheduler_;
  std::unique_ptr<Fabric> fabric_;
  std::vector<std::unique_ptr<Node>> nodes_;
  Time lookahead_ = kTimeNever; // no network: nodes never affect each other
  ExternalActor *external_ = nullptr;
  RankSync *ranks_ = nullptr;
  RunDebugger *debugger_ = nullptr;
  WallClockInput *input_ = nullptr;
  const StopRequest *stop_ = nullptr;
  RunMonitor *monitor_ = nullptr;
  RunCheckpoints *checkpoints_ = nullptr;
  // With input_: the wall-clock time since the run started, as virtual
  // time, at the start of the round; no slice ends later.
  Time wall_limit_ = kTimeNever;
  // The hosts' earliest possible action, at the start of the round.
  Time host_action_ = kTimeNever;
  // The earliest pending event, at the start of the round.
  Time event_bound_ = kTimeNever;
  // The two earliest running cores' times at the start of a round.
  Time earliest_ = kTimeNever, second_earliest_ = kTimeNever;
  uint32_t earliest_node_ = UINT32_MAX; // its node id
  // Bit i: nodes_[i] is running. The rounds visit only those, so that a
  // round costs the running nodes, not all of them (1024 nodes waiting in
  // a barrier).
  std::vector<uint64_t> running_bits_;
  size_t faulted_ = 0, finished_ = 0; // nodes in those states
  // The core queue: a min-heap of the running cores not in the round,
  // by (time, index); due_bits_ marks the cores of the round being run.
  bool core_queue_on_ = true;
  std::vector<Queued> queue_;
  static constexpr uint32_t kNotQueued = UINT32_MAX;
  std::vector<uint32_t> queue_pos_; // per node: its place in queue_
  std::vector<uint64_t> due_bits_;
  // Cores with an interrupt due that the round cannot take any more: due
  // in the next one.
  std::vector<uint64_t> force_bits_;
  bool forced_ = false;
  bool queue_stale_ = true; // made again from the nodes (at a run's start)
  bool in_round_ = false;
  size_t round_index_ = 0; // the core whose slice runs, in a round
  // Threads (set_threads): while the slices of a round run at once, what
  // a node's core tells the simulation about itself waits here, by node,
  // until the round's end, when it is taken in node order.
  unsigned threads_ = 1, threads_used_ = 1;
  bool adaptive_threads_ = false;
  std::unique_ptr<CoreWorkers> workers_;
  std::unique_ptr<ThreadGovernor> governor_; // with adaptive_threads_
  uint64_t slices_run_ = 0; // the governor's measure of work done
  bool at_once_ = false;    // the slices of this round run at once
  struct Deferred {
    bool changed = false, interrupt = false;
    NodeState was = NodeState::Reset, now = NodeState::Reset;
  };
  std::vector<Deferred> deferred_;
  std::vector<uint32_t> round_cores_; // the round's cores, in node order
};

} // namespace nicemu
