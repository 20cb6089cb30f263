// What the `nicemu bench` commands that run host programs share around a
// benchmark: SIGINT and SIGTERM stop it cleanly (its hosts stopped, no
// figures, exit 128 + the signal through Stopped), and the progress line
// shows which run it is at (cli/progress.hpp).
#pragma once

#include "cli/progress.hpp"
#include "cli/stop_signals.hpp"

#include <string>

namespace nicemu::cli {

// Runs `bench(options)` with `options.hooks` set; returns its figures, the
// progress line gone. Throws Stopped if a stop was asked for.
template <class Options, class Bench>
auto run_bench(const Options &options, ProgressMode mode,
               const std::string &name, Bench bench) {
  StopSignals signals;
  ProgressLine line(progress_wanted(mode));
  BenchProgressLine shown(line, name);
  Options o = options;
  o.hooks.stop = &signals.request();
  o.hooks.progress = line.enabled() ? &shown : nullptr;
  auto figures = bench(o);
  line.clear();
  if (signals.requested()) // after the last run: still no figures
    throw Stopped(signals.request().signal());
  return figures;
}

} // namespace nicemu::cli
