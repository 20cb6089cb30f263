// `nicemu bench speed`: how fast nicemu emulates, case by case, in one
// process so that the ratios compare: host programs on 2 nodes (GAM on niam,
// FM on via), barrier loops on 8, 64 and 1024 nodes, and one node whose
// firmware sleeps through a virtual second beside a variant that busy-polls
// through it. Virtual figures come from the runs and never change between
// them; wall times from steady_clock around each case.
#pragma once

#include "bench/bench_hooks.hpp"
#include "sim/time.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

struct SpeedCase {
  std::string name;    // "gam_pingpong", "barrier_8", "poll_1s", ...
  std::string command; // the `nicemu run` it stands for
  std::string model;   // as the image names it
  uint32_t nodes = 0;
  int rounds = 0;      // barriers, for the barrier loops; else 0
  std::string skipped; // why it did not run; empty: it ran
  std::string shrunk;  // what --quick changed; empty: run as documented
  Time virtual_time = 0;
  // Summed over the NIC cores: what their firmware cost the emulator.
  uint64_t instructions = 0, cycles = 0, slept_cycles = 0;
  // Of `instructions`, those of polling-loop iterations the emulator
  // skipped (counted, not emulated: Cpu::fast_forwarded).
  uint64_t fast_forwarded_instructions = 0;
  double wall_seconds = 0;      // steady_clock around the whole case
  double loop_wall_seconds = 0; // the simulation loop alone (RunResult)
  int threads = 1;              // threads emulating the nodes

  bool ran() const { return skipped.empty(); }
  double virtual_seconds() const { return double(virtual_time) / 1e12; }
  double virtual_per_wall() const {
    return wall_seconds > 0 ? virtual_seconds() / wall_seconds : 0;
  }
  // Instructions emulated per wall second (skipped ones left out).
  double mips() const {
    return wall_seconds > 0
               ? double(instructions - fast_forwarded_instructions) /
                     wall_seconds / 1e6
               : 0;
  }
  // Wall time per virtual second: the figure the polling pair compares.
  double wall_per_virtual_second() const {
    return virtual_time ? wall_seconds / virtual_seconds() : 0;
  }
};

struct SpeedBenchFigures {
  bool quick = false;
  std::vector<SpeedCase> cases;
  // The case named `name`, or null.
  const SpeedCase *find(const std::string &name) const;
  // Wall per virtual second of poll_1s over that of sleep_1s; 0 unless both
  // ran.
  double polling_ratio() const;
  // Wall per virtual second of case `name` over that of case `base`; 0
  // unless both ran.
  double wall_ratio(const std::string &name, const std::string &base) const;
};

struct SpeedBenchOptions {
  std::string firmware_dir; // niam.img, via.img, sleep_1s.img, poll_1s.img
  std::string programs_dir; // gam_pingpong, fm_pingpong, niam_bench_barrier
  bool quick = false;       // skips the 1024-node case, fewer barriers
  unsigned threads = 0;     // for the cores' slices; 0: default_threads
  BenchHooks hooks;
};

SpeedBenchFigures run_speed_bench(const SpeedBenchOptions &options);

} // namespace nicemu
