#include "bench/bench_niam.hpp"

#include "host/cluster_run.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nicemu {

namespace {

namespace fs = std::filesystem;

fs::path exe_dir() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return {};
  exe[n] = 0;
  return fs::path(exe).parent_path();
}

// Installed next to nicemu, else the build tree's (like bench cpu).
std::string default_niam_image() {
  fs::path installed = exe_dir() / "../share/nicemu/firmware/niam.img";
  if (fs::exists(installed))
    return installed.lexically_normal().string();
#ifdef NICEMU_FIRMWARE_BUILD_DIR
  return NICEMU_FIRMWARE_BUILD_DIR "/../niam/niam.img";
#else
  return "niam.img";
#endif
}

std::string default_programs_dir() {
  fs::path installed = exe_dir() / "../lib/nicemu/examples";
  if (fs::exists(installed / "niam_bench_barrier"))
    return installed.lexically_normal().string();
#ifdef NICEMU_EXAMPLES_BUILD_DIR
  return NICEMU_EXAMPLES_BUILD_DIR;
#else
  return ".";
#endif
}

std::vector<uint8_t> read_niam_flash(const std::string &path,
                                     std::string &model_name) {
  if (!fs::exists(path))
    throw Error("bench: " + path +
                " not found (build the firmware, or give --firmware)");
  std::vector<uint8_t> bytes = read_file_bytes(path);
  model_name = decode_image(bytes).model;
  return bytes;
}

// What the hosts print to stdout, gathered in an unlinked file: all ranks
// append to it, and it is read once the run is over.
class CapturedOutput {
public:
  CapturedOutput() : file_(std::tmpfile()) {
    if (!file_)
      throw Error("bench: cannot create a temporary file");
    fcntl(fileno(file_), F_SETFL, O_APPEND);
  }
  ~CapturedOutput() { std::fclose(file_); }
  CapturedOutput(const CapturedOutput &) = delete;
  CapturedOutput &operator=(const CapturedOutput &) = delete;

  int fd() const { return fileno(file_); }
  std::string text() const {
    std::string out;
    std::rewind(file_);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;)
      out.append(buf, n);
    return out;
  }

private:
  std::FILE *file_;
};

struct HostRun {
  std::string output; // the hosts' stdout
  Time virtual_time = 0;
  double run_wall = 0;   // the simulation loop
  double total_wall = 0; // from building the cluster to the last reap
};

struct BenchContext {
  Model model;
  std::shared_ptr<const std::vector<uint8_t>> flash;
  std::string programs_dir;
};

std::string describe_failure(const RunResult &r, const HostGroup &hosts,
                             const std::string &output) {
  std::string what = r.message;
  for (size_t i = 0; i < hosts.outcomes().size(); ++i)
    what += "\n  host " + std::to_string(i) + " " + hosts.outcomes()[i];
  return what + "\n  output:\n" + output;
}

HostRun run_hosts(const BenchContext &c, uint32_t nodes,
                  std::vector<std::string> program) {
  CapturedOutput out;
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.program = std::move(program);
  spec.program[0] = c.programs_dir + "/" + spec.program[0];
  spec.host_options.stdout_fd = out.fd();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Cluster> cluster = start_cluster(c.model, c.flash, spec);
  RunResult r = cluster->sim.run();
  cluster->hosts->stop();
  std::chrono::duration<double> total =
      std::chrono::steady_clock::now() - start;
  HostRun run{out.text(), r.end_time, r.wall_seconds, total.count()};
  if (r.outcome != RunOutcome::Halted || cluster->hosts->exit_code() != 0)
    throw Error(
        "bench: " + spec.program[0] + " on " + std::to_string(nodes) +
        " nodes failed: " + describe_failure(r, *cluster->hosts, run.output));
  return run;
}

// The values of the lines "KEY VALUE..." the hosts printed, in order.
std::vector<std::vector<double>> values_of(const std::string &output,
                                           const std::string &key) {
  std::vector<std::vector<double>> found;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string word;
    if (!(words >> word) || word != key)
      continue;
    found.emplace_back();
    for (double v; words >> v;)
      found.back().push_back(v);
  }
  return found;
}

double single_value(const HostRun &run, const std::string &key) {
  auto found = values_of(run.output, key);
  if (found.size() != 1 || found[0].size() != 1)
    throw Error("bench: expected one '" + key +
                "' line from the hosts, got:\n" + run.output);
  return found[0][0];
}

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

BenchContext bench_context(const NiamBenchOptions &o, std::string &model) {
  std::string image = o.firmware.empty() ? default_niam_image() : o.firmware;
  std::vector<uint8_t> bytes = read_niam_flash(image, model);
  BenchContext c{load_model(model), nullptr,
                 o.programs_dir.empty() ? default_programs_dir()
                                        : o.programs_dir};
  if (bytes.size() > c.model.flash_size)
    throw Error("bench: " + image + " is larger than the flash");
  bytes.resize(c.model.flash_size, 0xFF);
  c.flash = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  if (!fs::exists(c.programs_dir + "/niam_bench_barrier"))
    throw Error("bench: no niam_bench_barrier in " + c.programs_dir +
                " (build the examples, or give --programs-dir)");
  return c;
}

} // namespace

NiamBenchFigures run_niam_bench(const NiamBenchOptions &o) {
  NiamBenchFigures f;
  BenchContext c = bench_context(o, f.model);
  f.barrier_rounds = o.quick ? 20 : 100;
  measure_am(c, o, f);
  measure_bcopy(c, o, f);
  measure_speed(c, o, f);
  measure_barriers(c, o, f); // last: its largest run sets the memory figure
  return f;
}

LogpFigures run_logp_bench(const NiamBenchOptions &o) {
  LogpFigures f;
  BenchContext c = bench_context(o, f.model);
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
