#include "bench/bench_niam.hpp"

#include "bench/bench_hosts.hpp"
#include "nicemu/error.hpp"
#include "nicemu/model.hpp"

#include <fstream>

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

std::vector<uint32_t> barrier_node_counts(const NiamBenchOptions &o) {
  if (o.quick)
    return {2, 4};
  std::vector<uint32_t> n = {2, 4, 8, 16, 32, 64};
  if (o.large || o.huge)
    n.push_back(256);
  if (o.huge)
    n.push_back(1024);
  return n;
}

void measure_barriers(const BenchContext &c, const NiamBenchOptions &o,
                      NiamBenchFigures &f) {
  std::vector<uint32_t> counts = barrier_node_counts(o);
  for (uint32_t nodes : counts) {
    bool largest = nodes == counts.back();
    if (largest)
      reset_own_peak_rss();
    HostRun run = run_hosts(
        c, nodes, {"niam_bench_barrier", std::to_string(f.barrier_rounds)});
    f.barrier.push_back(
        {nodes, single_value(run, "barrier_us"), run.total_wall});
    if (largest) {
      f.largest_nodes = nodes;
      f.largest_wall_seconds = run.total_wall;
      f.emulator_peak_kib = own_peak_rss_kib();
      f.hosts_peak_kib = hosts_peak_kib(run);
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

// Many rounds, so that starting the processes is a small part of the run.
void measure_speed(const BenchContext &c, const NiamBenchOptions &o,
                   NiamBenchFigures &f) {
  f.speed_nodes = 8;
  f.speed_rounds = o.quick ? 100 : 1000;
  HostRun run = run_hosts(
      c, f.speed_nodes, {"niam_bench_barrier", std::to_string(f.speed_rounds)});
  f.speed_virtual_seconds = double(run.virtual_time) / 1e12;
  f.speed_wall_seconds = run.run_wall;
}

BenchContext niam_context(const NiamBenchOptions &o, std::string &model) {
  BenchContext c = bench_context(
      o.firmware.empty() ? default_shipped_image("niam", "niam.img")
                         : o.firmware,
      o.programs_dir.empty() ? default_programs_dir("niam_bench_barrier")
                             : o.programs_dir,
      "niam_bench_barrier");
  model = c.model_name;
  return c;
}

} // namespace

NiamBenchFigures run_niam_bench(const NiamBenchOptions &o) {
  NiamBenchFigures f;
  BenchContext c = niam_context(o, f.model);
  f.barrier_rounds = o.quick ? 20 : 100;
  measure_am(c, o, f);
  measure_bcopy(c, o, f);
  measure_speed(c, o, f);
  measure_barriers(c, o, f); // last: its largest run sets the memory figure
  return f;
}

LogpFigures run_logp_bench(const NiamBenchOptions &o) {
  LogpFigures f;
  BenchContext c = niam_context(o, f.model);
  f.rounds = o.quick ? 20 : 100;
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
