// What `nicemu run` and `nicemu debug` share: the options that describe a
// run (model, flash, nodes, network, limits, host program), booting the
// cluster, and the exit code at the end (the summary: run_summary.hpp).
#pragma once

#include "host/cluster_run.hpp"
#include "nicemu/model.hpp"
#include "sim/time.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nicemu::cli {

// Exit codes besides the firmware's own (documented in README/docs).
constexpr int kExitFault = 125, kExitMaxTime = 124, kExitDeadlock = 126,
              kExitBudget = 122;

struct ClusterOptions {
  std::string model, flash, firmware, max_time, topology; // model: run_model
  uint32_t nodes = 1;
  uint32_t procs_per_node = 1;      // --procs-per-node
  std::vector<std::string> program; // host program and its arguments
  int64_t watchdog = -1;
  double host_timeout = 60;     // wall seconds, --host-timeout
  bool tag_output = false;      // --tag-output
  bool no_leases = false;       // --no-leases
  bool no_fast_forward = false; // --no-fast-forward
  bool no_core_queue = false;   // --no-core-queue
  unsigned threads = 0;         // --threads; 0: the cores available
  LinkFaults link_faults;       // --link-corrupt, --link-loss, --fault-seed
};

// What a run reads before it starts: from the files the options name, or
// from a recording (nicemu replay, nicemu debug --replay).
struct RunInputs {
  Model model;
  std::vector<uint8_t> flash;
  std::map<uint32_t, std::shared_ptr<const std::vector<uint8_t>>> node_flash;
  std::optional<std::string> model_text, topology_text; // files' texts
  std::string model_file; // where model_text came from
};

// --model, --flash, --firmware, -n, --topology, --max-time, --watchdog,
// --host-timeout, and the injected link faults.
void add_cluster_options(CLI::App &cmd, ClusterOptions &o);
// `program` after --: call last, after the subcommand's own options.
void add_program_option(CLI::App &cmd, ClusterOptions &o);

// The model of the run: --model, else the one the image was built for
// (--firmware, or the image in --flash), else lanai4. An image built for
// another model than --model is refused, as `nicemu flash` refuses it.
Model run_model(const ClusterOptions &o);
// The flash the nodes boot: --flash, or --firmware as if flashed.
std::vector<uint8_t> boot_flash(const ClusterOptions &o, const Model &model);
// --node-firmware NODE=IMAGE: each image as if flashed, by node. Throws
// nicemu::Error naming the option for a malformed value or a bad image.
std::map<uint32_t, std::shared_ptr<const std::vector<uint8_t>>>
node_flashes(const std::vector<std::string> &values, const Model &model);
// --max-time, or kTimeNever.
Time max_run_time(const ClusterOptions &o);
// --threads, with 0 (the default) as the cores this process may use.
unsigned run_threads(const ClusterOptions &o);
// Whether the threads were left to nicemu (neither --threads nor
// $NICEMU_THREADS): the run then uses them only while they pay.
bool run_threads_adaptive(const ClusterOptions &o);
// What the host processes get from the options (--host-timeout).
HostOptions host_options(const ClusterOptions &o);
// Boots the cluster of `in` (which must outlive it); firmware console lines go
// to stdout as
// "[nodeN] ...", except while `muted` says so (a debugger running a
// stretch again). `tape`: a replay's recording, played instead of the
// host programs (null: none); `network`: a network even for one node.
std::unique_ptr<Cluster>
start_run_cluster(const ClusterOptions &o, const RunInputs &in,
                  RunEvents *events,
                  std::function<bool(uint32_t node)> muted = {},
                  HostTape *tape = nullptr, bool network = false);
// --checkpoint-every TEXT of `command`: a virtual time, or 0 (none).
Time checkpoint_interval(const std::string &text, const std::string &command);

// Packets the network dropped for their route bytes (a firmware bug): how
// many, and the first ones with why. Printed with -q too, as faults are.
void print_misroutes(Simulation &sim);
int outcome_exit_code(Simulation &sim, const RunResult &r);
// The same from every node's exit code, in node order (a spread run's).
int outcome_exit_code(const RunResult &r,
                      const std::vector<uint32_t> &exit_codes);

} // namespace nicemu::cli
