// Setting up a run as `nicemu run` does: the network, the nodes booted from
// one flash image, and the host programs (one process per node). Shared by
// the run command and the benchmarks so both measure the same thing.
#pragma once

#include "host/hosts.hpp"
#include "nicemu/model.hpp"
#include "node/simulation.hpp"
#include "observe/run_events.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nicemu {

struct ClusterSpec {
  uint32_t nodes = 1;
  std::string topology; // empty: the generated network
  // The topology file's text, when it is not read from `topology` (a
  // replay has it from its recording; `topology` then names it).
  std::optional<std::string> topology_text;
  bool network = false; // build the network even for one node (--tap)
  std::vector<std::string> program; // host program and arguments; empty: none
  // Host processes per node (the card's board must let processes share
  // it: DIMMnet-1's).
  uint32_t procs_per_node = 1;
  HostOptions host_options;
  std::optional<uint64_t> watchdog_cycles; // overrides the model's default
  bool fast_forward = true; // of polling loops (--no-fast-forward: off)
  bool core_queue = true;   // Simulation::set_core_queue (--no-core-queue)
  // Threads for the cores' slices (Simulation::set_threads, --threads);
  // a board that cannot (Board::cores_run_in_parallel) uses one.
  // `adaptive_threads`: the number was left to nicemu, which then uses the
  // workers only while they pay (Simulation::set_threads).
  unsigned threads = 1;
  bool adaptive_threads = false;
  LinkFaults link_faults; // injected on every cable
  // Nodes that boot another flash than the others (nicemu run
  // --node-firmware): a rogue card among honest ones, an old firmware
  // against a new one.
  std::map<uint32_t, std::shared_ptr<const std::vector<uint8_t>>> node_flash;
  // One rank's share of a cluster spread over ranks: the nodes it builds
  // (empty: every node). The network is built whole on every rank.
  std::vector<bool> owned;
  // Receives each console line of each node's firmware.
  std::function<void(uint32_t node, const std::string &line)> console;
  // Observers of the run (traces, packet captures); must outlive the
  // cluster. Null: none.
  RunEvents *events = nullptr;
  // A request to stop (SIGINT, SIGTERM) that the run and the wait for the
  // hosts honour, and who watches the run go (progress); both must outlive
  // the cluster. Null: none.
  const StopRequest *stop = nullptr;
  RunMonitor *monitor = nullptr;
  // nicemu run --record: what the hosts put into the run is kept here;
  // nicemu replay: played from here instead of starting the program (whose
  // argv then only says how many ranks). Must outlive the cluster. Null:
  // neither.
  HostTape *tape = nullptr;
};

// The hosts are declared after the simulation so they are stopped before the
// nodes that point at their memory go away.
struct Cluster {
  Simulation sim;
  std::unique_ptr<HostGroup> hosts; // null without a host program
};

// Builds the network, boots every node from `flash` and starts the host
// programs. `model` must outlive the cluster. Throws nicemu::Error.
std::unique_ptr<Cluster>
start_cluster(const Model &model,
              std::shared_ptr<const std::vector<uint8_t>> flash,
              const ClusterSpec &spec);

} // namespace nicemu
