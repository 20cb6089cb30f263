// A run: nodes on one scheduler, advanced together in virtual time.
//
// Each core runs in slices that end at the next pending event (at a block
// boundary); then every event up to the cores' time runs; then interrupts
// are taken. A sleeping core is not run at all: time jumps to the event that
// wakes it.
#pragma once

#include "node/node.hpp"
#include "sim/scheduler.hpp"

#include <memory>
#include <string>
#include <vector>

namespace nicemu {

enum class RunOutcome {
  Halted,   // every node halted
  Faulted,  // a node faulted (the run stops at the first fault)
  MaxTime,  // virtual time reached --max-time
  Deadlock, // every live node sleeps and no event is pending
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
  Node &add_node(const Model &model, NodeConfig config);
  std::vector<std::unique_ptr<Node>> &nodes() { return nodes_; }

  RunResult run(Time max_time = kTimeNever);

private:
  Time earliest_core_time() const;

  Scheduler scheduler_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

} // namespace nicemu
