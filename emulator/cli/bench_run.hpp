// What the `nicemu bench` commands that run host programs share around a
// benchmark: SIGINT and SIGTERM stop it cleanly (its hosts stopped, no
// figures, exit 128 + the signal through Stopped).
#pragma once

#include "cli/stop_signals.hpp"

namespace nicemu::cli {

// Runs `bench(options)` with `options.hooks` set; returns its figures.
// Throws Stopped if a stop was asked for.
template <class Options, class Bench>
auto run_bench(const Options &options, Bench bench) {
  StopSignals signals;
  Options o = options;
  o.hooks.stop = &signals.request();
  auto figures = bench(o);
  if (signals.requested()) // after the last run: still no figures
    throw Stopped(signals.request().signal());
  return figures;
}

} // namespace nicemu::cli
