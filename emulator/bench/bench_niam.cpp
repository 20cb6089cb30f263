#include "bench/bench_niam.hpp"

#include "bench/bench_hosts.hpp"
#include "bench/shipped_files.hpp"
#include "host/cluster_run.hpp"
#include "nicemu/error.hpp"
#include "nicemu/model.hpp"
#include "nicemu/niam_protocol.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace nicemu {

namespace {

long hosts_peak_kib(const HostRun &run) {
  double sum = 0;
  for (const auto &v : values_of(run.output, "peak_rss_kib"))
    sum += v.empty() ? 0 : v[0];
  return long(sum);
}

// Linux resets VmHWM when "5" is written to clear_refs; without that the
// figure is the peak of the whole bench so far (still the largest run's,
// since runs grow).
void reset_own_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

long own_peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stol(line.substr(6));
  return 0;
}

// A process's proportional set size in KiB (0 once it is gone).
long pss_kib(const std::string &pid) {
  std::ifstream rollup("/proc/" + pid + "/smaps_rollup");
  for (std::string line; std::getline(rollup, line);)
    if (line.rfind("Pss:", 0) == 0)
      return std::stol(line.substr(4));
  return 0;
}

// This process's children: the host processes of the run.
std::vector<std::string> child_pids() {
  std::vector<std::string> pids;
  std::string self = std::to_string(getpid());
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator("/proc", ec)) {
    std::string pid = e.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != pid.npos)
      continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // "pid (comm) state ppid ...": comm may hold spaces, so from the last ')'.
    size_t close = line.rfind(')');
    if (close == line.npos)
      continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state, ppid;
    rest >> state >> ppid;
    if (ppid == self)
      pids.push_back(pid);
  }
  return pids;
}

// Samples the summed PSS of the emulator and its children every `period`
// of wall time until stopped, keeping the largest sum. Wall-clock only: it
// never touches the simulation.
class PssSampler {
public:
  explicit PssSampler(std::chrono::milliseconds period)
      : thread_([this, period] {
          std::unique_lock lock(mutex_);
          do {
            lock.unlock();
            long sum = pss_kib("self");
            for (const std::string &pid : child_pids())
              sum += pss_kib(pid);
            lock.lock();
            peak_ = std::max(peak_, sum);
            ++samples_;
          } while (!wake_.wait_for(lock, period, [this] { return stop_; }));
        }) {}
  ~PssSampler() { stop(); }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
      thread_.join();
  }
  long peak_kib() const { return peak_; }
  int samples() const { return samples_; }

private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  long peak_ = 0;
  int samples_ = 0;
  std::thread thread_;
};

std::vector<uint32_t> barrier_node_counts(const NiamBenchOptions &o) {
  if (o.quick)
    return {2, 4};
  std::vector<uint32_t> n;
  for (uint32_t count : {2, 4, 8, 16, 32, 64, 256, 1024})
    if (count <= o.max_nodes)
      n.push_back(count);
  if (n.empty())
    throw Error("bench: --max-nodes must be at least 2");
  return n;
}

void measure_barriers(const BenchContext &c, const NiamBenchOptions &o,
                      NiamBenchFigures &f) {
  std::vector<uint32_t> counts = barrier_node_counts(o);
  for (uint32_t nodes : counts) {
    bool largest = nodes == counts.back();
    // 1024 nodes: a tenth of the barriers. Every round is emulated with
    // all 1024 cores, so 100 of them would take 12 to 14 minutes on 2 cores.
    int rounds =
        nodes >= 1024 ? std::max(1, f.barrier_rounds / 10) : f.barrier_rounds;
    std::unique_ptr<PssSampler> sampler;
    if (largest) {
      reset_own_peak_rss();
      sampler = std::make_unique<PssSampler>(std::chrono::milliseconds(
          nodes >= 256 ? 2000 : 10)); // reading 1000 processes takes time
    }
    HostRun run = run_barrier_loop(c, nodes, rounds);
    f.barrier.push_back(
        {nodes, rounds, single_value(run, "barrier_us"), run.total_wall});
    if (largest) {
      sampler->stop();
      f.largest_nodes = nodes;
      f.largest_rounds = rounds;
      f.largest_wall_seconds = run.total_wall;
      f.emulator_peak_kib = own_peak_rss_kib();
      f.hosts_peak_kib = hosts_peak_kib(run);
      f.peak_pss_kib = sampler->peak_kib();
      f.pss_samples = sampler->samples();
    }
  }
}

void measure_bcopy(const BenchContext &c, const NiamBenchOptions &o,
                   NiamBenchFigures &f) {
  std::string max = o.quick ? "4096" : "65536";
  HostRun run = run_hosts(c, 2, {"niam_bench_bcopy", max});
  for (const auto &v : values_of(run.output, "bcopy"))
    if (v.size() == 2)
      f.bcopy.push_back({uint64_t(v[0]), v[1]});
  if (f.bcopy.empty())
    throw Error("bench: no bcopy figures from the hosts:\n" + run.output);
}

void measure_am(const BenchContext &c, const NiamBenchOptions &o,
                NiamBenchFigures &f) {
  HostRun run = run_hosts(c, 2, {"niam_bench_am", o.quick ? "20" : "100"});
  f.am_rtt_us = single_value(run, "am_rtt_us");
  f.am_overhead_us = single_value(run, "am_overhead_us");
  f.am_gap_us = single_value(run, "am_gap_us");
}

// The speed row: the barrier loop of kSpeedLoopNodes nodes (bench_niam.hpp).
void measure_speed(const BenchContext &c, const NiamBenchOptions &o,
                   NiamBenchFigures &f) {
  f.speed_nodes = kSpeedLoopNodes;
  f.speed_rounds = o.quick ? kSpeedLoopRoundsQuick : kSpeedLoopRounds;
  HostRun run = run_barrier_loop(c, f.speed_nodes, f.speed_rounds);
  f.speed_virtual_seconds = double(run.virtual_time) / 1e12;
  f.speed_wall_seconds = run.run_wall;
  f.speed_instructions = run.instructions;
  f.speed_cycles = run.cycles;
  f.speed_slept_cycles = run.slept_cycles;
}

BenchContext niam_context(const NiamBenchOptions &o, std::string &model) {
  BenchContext c = bench_context(
      o.firmware.empty() ? shipped_image("niam.img") : o.firmware,
      o.programs_dir.empty() ? shipped_programs_dir() : o.programs_dir,
      "niam_bench_barrier", o.hooks);
  model = c.model_name;
  return c;
}

} // namespace

HostRun run_barrier_loop(const BenchContext &c, uint32_t nodes, int rounds) {
  return run_hosts(c, nodes, {"niam_bench_barrier", std::to_string(rounds)});
}

NiamBenchFigures run_niam_bench(const NiamBenchOptions &o) {
  NiamBenchFigures f;
  BenchContext c = niam_context(o, f.model);
  f.barrier_rounds = o.quick ? 20 : 100;
  plan_runs(c, 3 + int(barrier_node_counts(o).size()));
  measure_am(c, o, f);
  measure_bcopy(c, o, f);
  measure_speed(c, o, f);
  measure_barriers(c, o, f); // last: its largest run sets the memory figure
  return f;
}

namespace {

// One row of the loss table: the bcopy, AM and barrier benches on 2 nodes
// of `c` with `loss` on every cable.
NiamLossRow measure_loss_row(BenchContext c, const NiamLossOptions &o,
                             const NiamLossFigures &f, const std::string &name,
                             double loss) {
  NiamLossRow row;
  row.image = name;
  row.loss = loss;
  c.link_faults.lose = loss;
  c.link_faults.seed = o.fault_seed;
  const Model &model = c.model;
  auto count = [&row, &model](Cluster &cluster) {
    if (const Fabric *fabric = cluster.sim.fabric()) {
      row.packets_sent += fabric->stats().packets_sent;
      row.packets_lost += fabric->stats().packets_lost;
    }
    for (auto &node : cluster.sim.nodes()) {
      uint32_t resent = 0;
      if (node->card_read(model.host_mailbox() + 4 * NIAM_BOX_STAT_RESENT,
                          &resent, 4))
        row.resent += resent;
    }
  };
  HostRun bcopy = run_hosts(
      c, 2, {"niam_bench_bcopy", std::to_string(f.bcopy_bytes)}, count);
  for (const auto &v : values_of(bcopy.output, "bcopy"))
    if (v.size() == 2 && uint64_t(v[0]) == f.bcopy_bytes)
      row.bcopy_mb_per_s = v[1];
  HostRun am =
      run_hosts(c, 2, {"niam_bench_am", std::to_string(f.am_rounds)}, count);
  row.am_rtt_us = single_value(am, "am_rtt_us");
  HostRun barrier = run_hosts(
      c, 2, {"niam_bench_barrier", std::to_string(f.barrier_rounds)}, count);
  row.barrier_us = single_value(barrier, "barrier_us");
  return row;
}

} // namespace

NiamLossFigures run_niam_loss_bench(const NiamLossOptions &o) {
  for (double p : o.loss)
    if (!(p >= 0 && p < 1))
      throw Error("bench: a loss rate is a probability from 0 up to (not "
                  "including) 1");
  NiamLossFigures f;
  f.bcopy_bytes = o.quick ? 16384 : 65536;
  f.am_rounds = o.quick ? 20 : 100;
  f.barrier_rounds = o.quick ? 20 : 100;
  f.fault_seed = o.fault_seed;
  std::string programs =
      o.programs_dir.empty() ? shipped_programs_dir() : o.programs_dir;
  BenchContext reliable = bench_context(
      o.firmware.empty() ? shipped_image("niam_reliable.img") : o.firmware,
      programs, "niam_bench_barrier", o.hooks);
  BenchContext lean =
      bench_context(o.baseline.empty() ? shipped_image("niam.img") : o.baseline,
                    programs, "niam_bench_barrier", o.hooks);
  f.model = reliable.model_name;
  std::vector<double> rates = {0};
  for (double p : o.loss)
    if (p > 0)
      rates.push_back(p);
  plan_runs(reliable, 3 * int(1 + rates.size()));
  f.rows.push_back(measure_loss_row(lean, o, f, "niam.img", 0));
  for (double p : rates)
    f.rows.push_back(measure_loss_row(reliable, o, f, "niam_reliable.img", p));
  return f;
}

LogpFigures run_logp_bench(const NiamBenchOptions &o) {
  LogpFigures f;
  BenchContext c = niam_context(o, f.model);
  f.rounds = o.quick ? 20 : 100;
  plan_runs(c, 1);
  HostRun run = run_hosts(c, 2, {"niam_bench_logp", std::to_string(f.rounds)});
  f.rtt_us = single_value(run, "logp_rtt_us");
  f.L_us = single_value(run, "logp_L_us");
  f.o_send_us = single_value(run, "logp_os_us");
  f.o_recv_us = single_value(run, "logp_or_us");
  f.poll_empty_us = single_value(run, "logp_poll_empty_us");
  f.g_us = single_value(run, "logp_g_us");
  f.G_ns_per_byte = single_value(run, "logp_G_ns_per_byte");
  for (const auto &v : values_of(run.output, "logp_bulk_gap_us"))
    if (v.size() == 2)
      f.bulk_gap_us.push_back({uint64_t(v[0]), v[1]});
  const Model &m = c.model;
  auto us = [&](const char *key) { return double(m.timing(key)) / 1e6; };
  auto ns_per_byte = [&](const char *key) {
    return double(m.timing(key)) / 1e3 / 4; // per 32-bit word -> per byte
  };
  f.clock_mhz = double(m.clock_hz) / 1e6;
  f.pio_write_us = us("host.pio_write_word");
  f.pio_read_us = us("host.pio_read_word");
  f.poll_us = us("host.poll_own_memory");
  f.host_dma_to_card_ns_per_byte = ns_per_byte("host_dma.per_word_to_sram");
  f.host_dma_to_host_ns_per_byte = ns_per_byte("host_dma.per_word_to_host");
  f.tx_ns_per_byte = ns_per_byte("tx_dma.per_word");
  f.link_ns_per_byte = 1e3 / m.param("link.bandwidth_MBps");
  f.link_latency_us = us("link.latency");
  f.switch_latency_us = us("switch.latency");
  return f;
}

} // namespace nicemu
