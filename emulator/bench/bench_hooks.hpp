// What the command line gives a benchmark (`nicemu bench niam`, `logp`,
// `via`, `dimmnet`): a stop request (SIGINT, SIGTERM) and a progress line,
// passed on to each run of host programs (bench_hosts.hpp).
#pragma once

#include "node/simulation.hpp"
#include "sim/stop_request.hpp"

#include <string>

namespace nicemu {

// Told by run_hosts as each run of a benchmark starts and, as the run's
// RunMonitor, while it goes: the command line's progress line.
class BenchProgress : public RunMonitor {
public:
  // How many runs the benchmark will make, before the first.
  virtual void plan(int runs) = 0;
  // A run starts: "niam_bench_barrier 100, 64 nodes" (options left out).
  virtual void starting(const std::string &what) = 0;
};

// What the command line gives a benchmark's runs; null: nothing.
struct BenchHooks {
  // SIGINT, SIGTERM: the run in progress stops, its hosts are stopped, and
  // the benchmark throws Stopped instead of giving figures.
  const StopRequest *stop = nullptr;
  BenchProgress *progress = nullptr;
};

} // namespace nicemu
