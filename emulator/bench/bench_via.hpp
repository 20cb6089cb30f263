// `nicemu bench via`: the VI provider firmware (via.img, docs/via.md) on the
// comet model, with the examples vipl_pingpong and fm_pingpong run in this
// process as `nicemu run -n 2` runs them: VIPL and Comet-FM one-way latency
// and bandwidth against message size, beside the link's line rate and the
// best goodput Ethernet framing allows for each size. With a loss rate,
// VIPL (reliable delivery) runs again over cables that lose frames:
// goodput and latency under loss beside the lossless figures.
#pragma once

#include "bench/bench_hooks.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

struct ViaSizeFigure {
  uint64_t bytes = 0;
  double latency_us = 0; // virtual: one way, half the mean round trip
  double mb_per_s = 0;   // virtual: a stream of messages, 1 MB = 1e6 bytes
  // What the framing makes of one message: its Ethernet frames, their
  // bytes on the wire (preamble to interframe gap, padding included), the
  // time those take at line rate, and the best goodput at line rate
  // (message bytes over wire bytes, times the line rate).
  uint32_t frames = 0;
  uint64_t wire_bytes = 0;
  double wire_us = 0;
  double bound_mb_per_s = 0;
};

// One protocol's run of its example on 2 nodes.
struct ViaSeries {
  int rounds = 0; // ping-pong round trips per size
  int stream = 0; // messages per bandwidth stream
  double wall_seconds = 0;
  std::vector<ViaSizeFigure> sizes;
};

struct ViaBenchFigures {
  std::string model;
  double line_rate_mb_per_s = 0; // link.bandwidth_MBps
  // Framing: Ethernet ([params.ethernet] of the model, the header and FCS
  // from IEEE 802.3) and the protocols' headers (via_protocol.h).
  uint32_t ethernet_header_bytes = 0, fcs_bytes = 0, preamble_bytes = 0,
           interframe_gap_bytes = 0, min_frame_bytes = 0, max_payload_bytes = 0;
  uint32_t vi_header_bytes = 0, vi_fragment_bytes = 0;
  uint32_t fm_headers_bytes = 0; // IPv4 + UDP + FM
  uint32_t fm_max_message = 0;
  ViaSeries vipl, fm; // empty when not measured
  // --loss P: the VIPL series again with P the loss rate of every cable
  // (nicemu run --link-loss P, seed `fault_seed`), beside the lossless one;
  // the frames the two cards sent again in that run (VIAFW_BOX_STAT_*).
  double loss = 0;
  uint64_t fault_seed = 1;
  ViaSeries vipl_lossy; // empty without --loss
  uint64_t retransmitted = 0, duplicates = 0;
};

struct ViaBenchOptions {
  std::string firmware;     // via.img; empty: the shipped one
  std::string programs_dir; // vipl_pingpong, fm_pingpong; empty: next to nicemu
  bool quick = false;       // every fourth size, fewer rounds
  bool vipl = true, fm = true;
  double loss = 0; // > 0: VIPL also at this loss rate per cable
  uint64_t fault_seed = 1;
  BenchHooks hooks; // stop request, progress line
};

ViaBenchFigures run_via_bench(const ViaBenchOptions &options);

} // namespace nicemu
