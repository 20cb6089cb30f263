// What the command line gives a benchmark (`nicemu bench niam`, `logp`,
// `via`, `dimmnet`): a stop request (SIGINT, SIGTERM), passed on to each
// run of host programs (bench_hosts.hpp).
#pragma once

#include "sim/stop_request.hpp"

namespace nicemu {

// What the command line gives a benchmark's runs; null: nothing.
struct BenchHooks {
  // SIGINT, SIGTERM: the run in progress stops, its hosts are stopped, and
  // the benchmark throws Stopped instead of giving figures.
  const StopRequest *stop = nullptr;
};

} // namespace nicemu
