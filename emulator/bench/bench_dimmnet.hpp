// `nicemu bench dimmnet`: DIMMnet-1 (martini, dimmnet.img) in each
// reference set-up A-F, with the host program dimmnet_bench run in this
// process as `nicemu run -n 2` runs it: the AOTF round trip and one-way
// time, where the one-way time goes stage by stage (from the card's own
// record of the last packet), the host's own store and load costs, BOTF,
// AOTF and PUSH bandwidth from 8 bytes to 4 KiB, and the wall time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

// One stage of the one-way path of an 8-byte AOTF word, in nanoseconds.
struct DimmnetStage {
  std::string name;
  double ns = 0;
};

struct DimmnetBandwidth {
  uint32_t bytes = 0;
  double botf_mb_per_s = 0, aotf_mb_per_s = 0, push_mb_per_s = 0;
};

struct DimmnetSetup {
  std::string name;        // "D"
  std::string description; // link, host, clocks
  int rounds = 0;
  double rtt_us = 0;
  double one_way_us = 0; // half the round trip
  // Store to LLCM write of the last AOTF packet, and its stages; the rest
  // of the one-way time is the receiver's polling (it notices the word
  // with its first load that starts after the write).
  std::vector<DimmnetStage> stages;
  double store_to_llcm_ns = 0;
  double store_ns = 0, load_ns = 0; // the host's own costs
  std::vector<DimmnetBandwidth> bandwidth;
  uint32_t crossover_bytes = 0; // first size where BOTF beats AOTF (0: none)
  uint32_t push_crossover_bytes = 0; // first size where PUSH beats BOTF
  double wall_seconds = 0;           // of this set-up's runs
  double wall_us_per_round_trip = 0; // aotf_pingpong's run, per round trip
};

// AOTF against interrupt-AOTF (the word written into LLCM by the receiving
// core) in the Send/Receive experiments' set-up (variant SR: one switch).
struct DimmnetInterruptFigures {
  std::string setup, description;
  int rounds = 0;
  double aotf_rtt_us = 0, interrupt_rtt_us = 0; // one way: half
};

struct DimmnetBenchFigures {
  std::string model;
  std::vector<DimmnetSetup> setups;
  DimmnetInterruptFigures interrupt; // rounds 0: not measured
};

struct DimmnetBenchOptions {
  std::string firmware;            // dimmnet.img; empty: the shipped one
  std::string programs_dir;        // dimmnet_bench; empty: next to nicemu
  bool quick = false;              // fewer rounds and messages
  std::vector<std::string> setups; // empty: A-F
  bool interrupt = true;           // AOTF vs interrupt-AOTF in set-up SR
};

DimmnetBenchFigures run_dimmnet_bench(const DimmnetBenchOptions &options);

} // namespace nicemu
