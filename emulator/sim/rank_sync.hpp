// What the run loop of one rank needs from the others when one cluster is
// spread over several ranks (docs/distributed.md): each rank runs its own
// nodes' cores and card events, every rank runs the network's events, and
// every decision the loop takes (how far the cores may run, which events
// run, whether the run is over) is taken on every rank alike from the
// cluster's figures, never from one rank's. Implemented by dist/RankShare.
#pragma once

#include "sim/scheduler.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace nicemu {

// One rank's figures, or, from RankSync::agree, the cluster's.
struct RankView {
  // The two earliest running cores (node ids are the cluster's).
  Time first_core = kTimeNever;
  uint32_t first_node = UINT32_MAX;
  Time second_core = kTimeNever;
  uint64_t nodes = 0, finished = 0;   // halted or faulted; summed
  uint32_t faulted_node = UINT32_MAX; // the lowest faulted node, and its time
  Time faulted_time = 0;
  Time latest_node = 0; // the latest time any node has reached
  bool stop = false;    // a stop was requested (on any rank)
  // Host programs: the earliest time one may act, whether all have ended
  // (on every rank), and the first failure (by rank) with its message.
  Time host_action = kTimeNever;
  bool hosts_done = true;
  std::string host_failure;
  // With host programs: a node faulted or a host failed, so the run ends
  // at the next agree and no core runs another slice before it.
  bool halts = false;
};

class RankSync {
public:
  virtual ~RankSync() = default;
  // A collective: every rank gives its view and gets the cluster's. The
  // calls into the network that this rank's cores made since the last
  // agree reach the other ranks with it.
  virtual RankView agree(const RankView &mine) = 0;
  // The cluster's view as it stands now: the last agree's, with what each
  // rank told since (an owner tells its view, `view`, after each of its
  // card events and each call into its cards). The same on every rank.
  virtual RankView current() const = 0;
  virtual void set_view(std::function<RankView()> view) = 0;
  // The earliest event pending anywhere in the cluster (kTimeNever: none).
  virtual Time next_event_time() const = 0;
  // Runs every event of the cluster up to `until`, those at `until` from
  // `held` or later origins aside (Scheduler::run_until), in the order one
  // process gives them: this rank's card events here, the others' on their
  // ranks, the network's on every rank.
  virtual void run_until(Time until) = 0;
  virtual void run_until(Time until, EventOrigin held) = 0;
  virtual uint32_t rank() const = 0;
  virtual uint32_t ranks() const = 0;
};

} // namespace nicemu
