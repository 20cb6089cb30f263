// `nicemu bench niam`: the NI Active Messages firmware (niam.img) on the
// lanai4 model with host programs, run in this process exactly as `nicemu
// run` runs them: barrier latency against node count, bcopy bandwidth
// against size, virtual against wall time, and what a large run costs.
#pragma once

#include "bench/bench_hooks.hpp"
#include "bench/bench_hosts.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

struct NiamBarrierFigure {
  uint32_t nodes = 0;
  int rounds = 0;        // barriers run
  double latency_us = 0; // virtual, mean over the rounds
  double wall_seconds = 0;
};

struct NiamBcopyFigure {
  uint64_t bytes = 0;
  double mb_per_s = 0; // virtual
};

struct NiamBenchFigures {
  std::string model;
  int barrier_rounds = 0;
  std::vector<NiamBarrierFigure> barrier;
  std::vector<NiamBcopyFigure> bcopy; // 2 nodes
  // Active Messages with host handlers, 2 nodes: round trip, the host's
  // time in one send (overhead) and the interval between arrivals of
  // back-to-back sends (gap).
  double am_rtt_us = 0, am_overhead_us = 0, am_gap_us = 0;
  // The 8-node barrier loop: virtual time of the run over its wall time.
  uint32_t speed_nodes = 0;
  int speed_rounds = 0;
  double speed_virtual_seconds = 0, speed_wall_seconds = 0;
  // What the NIC cores did in that loop, summed over them: the instructions
  // the emulator had to run, and the cycles they spent in `wait`.
  uint64_t speed_instructions = 0, speed_cycles = 0, speed_slept_cycles = 0;
  // The largest barrier run: wall time from start to the last process
  // reaped, and peak resident memory (see docs/benchmarks.md).
  uint32_t largest_nodes = 0;
  int largest_rounds = 0; // barriers in that run
  double largest_wall_seconds = 0;
  long emulator_peak_kib = 0, hosts_peak_kib = 0;
  // The largest sum of the proportional set sizes (PSS: shared pages split
  // among the processes that share them) of the emulator and every host
  // process, sampled while the run went on: what the run took together.
  long peak_pss_kib = 0;
  int pss_samples = 0;
};

struct NiamBenchOptions {
  std::string firmware;     // niam.img; empty: the shipped one
  std::string programs_dir; // niam_bench_*; empty: next to nicemu
  bool quick = false;       // 2 and 4 nodes, sizes up to 4 KiB, fewer rounds
  // Barrier runs go 2, 4, .. 64, 256, 1024 nodes, up to this many.
  uint32_t max_nodes = 1024;
  BenchHooks hooks; // stop request, progress line
};

NiamBenchFigures run_niam_bench(const NiamBenchOptions &options);

// `nicemu bench niam --loss P...`: NI-AM on links that lose packets, with
// the reliable mode (niam_reliable.img), 2 nodes: bcopy goodput, AM round
// trip and barrier latency at each loss rate, beside the same figures
// without loss and with the lean image (niam.img) measured in the same run.
struct NiamLossRow {
  std::string image; // "niam_reliable.img", or "niam.img" for the baseline
  double loss = 0;   // per packet and cable crossed
  double bcopy_mb_per_s = 0, am_rtt_us = 0, barrier_us = 0;
  // Summed over the three runs: the fabric's packets, the ones it lost,
  // and the packets the NICs sent again (NIAM_BOX_STAT_RESENT).
  uint64_t packets_sent = 0, packets_lost = 0, resent = 0;
};

struct NiamLossFigures {
  std::string model;
  uint64_t bcopy_bytes = 0; // per transfer
  int am_rounds = 0, barrier_rounds = 0;
  uint64_t fault_seed = 1;
  std::vector<NiamLossRow> rows; // the lean baseline first, then by loss
};

struct NiamLossOptions {
  std::string firmware; // niam_reliable.img; empty: the shipped one
  std::string baseline; // niam.img; empty: the shipped one
  std::string programs_dir;
  std::vector<double> loss; // the rates measured besides 0
  uint64_t fault_seed = 1;
  bool quick = false;
  BenchHooks hooks;
};

NiamLossFigures run_niam_loss_bench(const NiamLossOptions &options);

// The speed row's barrier loop: many rounds, so that starting the processes
// is a small part of the run.
inline constexpr uint32_t kSpeedLoopNodes = 8;
inline constexpr int kSpeedLoopRounds = 1000, kSpeedLoopRoundsQuick = 100;

// `rounds` barriers of niam_bench_barrier on `nodes` nodes of `c` (niam.img):
// the runs of the barrier table and of the speed row (8 nodes, 1000 rounds),
// which `nicemu bench speed` makes too.
HostRun run_barrier_loop(const BenchContext &c, uint32_t nodes, int rounds);

// `nicemu bench logp`: LogP/LogGP parameters of Active Messages with host
// handlers on 2 nodes (examples/niam-bench/logp_bench.cpp says how each is
// measured), beside the model inputs they come from.
struct LogpFigures {
  std::string model;
  int rounds = 0;
  double rtt_us = 0, L_us = 0, o_send_us = 0, o_recv_us = 0, poll_empty_us = 0,
         g_us = 0, G_ns_per_byte = 0;
  std::vector<std::pair<uint64_t, double>> bulk_gap_us; // (bytes, interval)
  // Model inputs (documented in the model file), in us or ns per byte.
  double clock_mhz = 0, pio_write_us = 0, pio_read_us = 0, poll_us = 0,
         host_dma_to_card_ns_per_byte = 0, host_dma_to_host_ns_per_byte = 0,
         tx_ns_per_byte = 0, link_ns_per_byte = 0, link_latency_us = 0,
         switch_latency_us = 0;
};

LogpFigures run_logp_bench(const NiamBenchOptions &options);

} // namespace nicemu
