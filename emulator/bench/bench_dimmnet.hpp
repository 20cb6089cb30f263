// `nicemu bench dimmnet`: DIMMnet-1 (martini, dimmnet.img) in each
// reference set-up A-F, with the host program dimmnet_bench run in this
// process as `nicemu run -n 2` runs it: the AOTF round trip and one-way
// time, where the one-way time goes stage by stage (from the card's own
// record of the last packet), the host's own store and load costs, BOTF,
// AOTF and PUSH bandwidth from 8 bytes to 64 KiB, and the wall time; then
// the protocols: barrier and global sums (dimm_collectives) per set-up on 2
// and 8 nodes and against the node count, and DIMM_Send/DIMM_Recv
// (dimm_sendrecv) against the message size in both arrival orders.
#pragma once

#include "bench/bench_hooks.hpp"

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

// Barrier and global sums on `nodes` nodes: mean virtual time of a call on
// rank 0, every rank calling in a loop.
struct DimmnetCollectives {
  std::string setup;
  uint32_t nodes = 0;
  int rounds = 0;
  double barrier_us = 0;
  double allreduce_us[4] = {}; // unsigned, unsigned long long, float, double
};

// One message of `bytes` from the later party's call to the end of the
// Recv, by each path.
struct DimmnetSendRecvPoint {
  uint32_t bytes = 0;
  double recv_first_botf_us = 0, recv_first_push_us = 0, send_first_pull_us = 0;
};

struct DimmnetSendRecv {
  std::string setup, description;
  bool receive_status = false;                          // instead of notices
  std::vector<std::pair<uint32_t, double>> pingpong_us; // bytes, half RTT
  std::vector<DimmnetSendRecvPoint> points;
  uint32_t push_beats_botf_from = 0; // first size (Recv first); 0: none
  double wall_seconds = 0;
};

struct DimmnetBenchFigures {
  std::string model;
  std::vector<DimmnetSetup> setups;
  DimmnetInterruptFigures interrupt;           // rounds 0: not measured
  std::vector<DimmnetCollectives> collectives; // each set-up, 2 and 8 nodes
  std::vector<DimmnetCollectives> collective_curve; // set-up D, 2-64 nodes
  std::vector<DimmnetSendRecv> sendrecv;            // set-ups SR and SR-status
  double protocols_wall_seconds = 0;                // of the protocols' runs
};

struct DimmnetBenchOptions {
  std::string firmware;            // dimmnet.img; empty: the shipped one
  std::string programs_dir;        // dimmnet_bench; empty: next to nicemu
  bool quick = false;              // fewer rounds and messages
  std::vector<std::string> setups; // empty: A-F
  bool interrupt = true;           // AOTF vs interrupt-AOTF in set-up SR
  bool collectives = true;         // barrier and global sums
  bool sendrecv = true;            // DIMM_Send/DIMM_Recv
  BenchHooks hooks;                // stop request, progress line
};

DimmnetBenchFigures run_dimmnet_bench(const DimmnetBenchOptions &options);

} // namespace nicemu
