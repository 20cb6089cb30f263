// Runs described by a recording (nicemu run --record) or a checkpoint
// file: the options and inputs they were made with, for nicemu replay and
// nicemu debug --replay (docs/replay.md).
#pragma once

#include "cli/run_setup.hpp"
#include "fabric/tap_bridge.hpp"
#include "host/host_tape.hpp"

#include <string>

namespace nicemu::cli {

// How the recorded run ended, from its recording's trailer.
struct RecordedEnd {
  std::string stopped_by; // the signal that stopped it; empty: none
  Time end = 0;           // its virtual time at the end
  // A run with --tap: its TAP device's name, and the bridge's figures as
  // its summary showed them.
  std::string tap;
  TapStats tap_stats;
};

// The run a recording (or a checkpoint file's description) names: its
// options into `o`, how it ended into `recorded`, and its model, flashes
// and topology. Throws nicemu::Error naming `path` for a damaged one.
RunInputs recorded_inputs(const std::string &path, const HostTape::Contents &c,
                          ClusterOptions &o, RecordedEnd &recorded);
// The recording at `path`, loaded into `tape` for playing, and its run.
RunInputs replay_inputs(const std::string &path, ClusterOptions &o,
                        RecordedEnd &recorded, HostTape &tape);
// A replay of a run with --tap: the frames Linux sent enter the network at
// their recorded times, and each frame the cluster offers Linux is
// compared with the recorded one.
void play_outside(HostTape &tape, Fabric &fabric);

// "3291.498 us".
std::string format_time_us(Time t);

} // namespace nicemu::cli
