// Checkpoint files (nicemu run --checkpoint-dir, nicemu replay --from;
// docs/replay.md, "Checkpoint files"): the run's description, as a
// recording holds it (what the command line said and the files it read),
// and the whole cluster's state at one moment of virtual time. One gzip
// stream, so that a damaged file is refused by its CRC.
#pragma once

#include "host/host_tape.hpp"
#include "sim/time.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

struct CheckpointFile {
  HostTape::Contents run;     // manifest, blobs; the trailer is unused
  Time time = 0;              // the scheduler's time when it was taken
  std::vector<uint8_t> state; // Simulation::save_state's bytes
};

// Writes through a temporary file renamed into place, so that a checkpoint
// is either whole or absent. Throws nicemu::Error naming the file.
void write_checkpoint(const std::string &path, const CheckpointFile &c);
// Throws nicemu::Error naming the file when it is not a checkpoint of this
// build of nicemu, or a damaged one.
CheckpointFile read_checkpoint(const std::string &path);
// The name a checkpoint taken at `time` gets in its folder; the names sort
// by time.
std::string checkpoint_name(Time time);

} // namespace nicemu
