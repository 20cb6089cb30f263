// What the benchmarks that run host programs share (`nicemu bench niam`,
// `logp`, `via`): running the programs on an emulated cluster in this process,
// exactly as `nicemu run` runs them (start_cluster), their stdout captured for
// parsing.
#pragma once

#include "bench/bench_hooks.hpp"
#include "fabric/fabric.hpp"
#include "nicemu/model.hpp"
#include "sim/time.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nicemu {

// A flash image, the model it names and where its host programs are.
struct BenchContext {
  Model model;
  std::shared_ptr<const std::vector<uint8_t>> flash; // padded to the flash
  std::string programs_dir;
  std::string model_name; // as the image names it
  BenchHooks hooks;
  LinkFaults link_faults; // injected on every cable (none by default)
  unsigned threads = 1;   // for the cores' slices (Simulation::set_threads)
  bool adaptive_threads = false; // used only while they pay
};

// Reads `image` (a path; "not found" says to give --firmware) and loads its
// model; checks that `programs_dir` holds `probe`. Throws nicemu::Error.
BenchContext bench_context(const std::string &image,
                           const std::string &programs_dir,
                           const std::string &probe,
                           const BenchHooks &hooks = {});

// Tells the progress line how many runs are coming (if there is one).
void plan_runs(const BenchContext &c, int runs);

struct HostRun {
  std::string output; // the hosts' stdout
  Time virtual_time = 0;
  double run_wall = 0;   // the simulation loop
  double total_wall = 0; // from building the cluster to the last reap
  // Summed over the NIC cores: what their firmware cost the emulator.
  uint64_t instructions = 0, cycles = 0, slept_cycles = 0;
  uint64_t fast_forwarded_instructions = 0; // of `instructions`
  unsigned threads = 1; // that emulated the cores (Simulation::threads_used)
};

// Runs `program` (its name in the programs directory, then its arguments)
// on `nodes` nodes. Throws nicemu::Error, with the hosts' output, unless
// the run halts with every host exiting 0; Stopped once a stop was
// requested (its hosts stopped and reaped first).
// `inspect`, if given, looks at the cluster after the run, before it goes.
struct Cluster;
HostRun run_hosts(const BenchContext &c, uint32_t nodes,
                  std::vector<std::string> program,
                  const std::function<void(Cluster &)> &inspect = {});

// The values of the lines "KEY VALUE..." the hosts printed, in order.
std::vector<std::vector<double>> values_of(const std::string &output,
                                           const std::string &key);

// The value of the one line "KEY VALUE"; throws nicemu::Error otherwise.
double single_value(const HostRun &run, const std::string &key);

} // namespace nicemu
