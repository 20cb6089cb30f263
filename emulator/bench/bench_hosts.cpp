#include "bench/bench_hosts.hpp"

#include "host/cluster_run.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"

#include <fcntl.h>

#include <chrono>
#include <cstdio>
#include <sstream>

namespace nicemu {

namespace fs = std::filesystem;

namespace {

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

std::string describe_failure(const RunResult &r, const HostGroup &hosts,
                             const std::string &output) {
  std::string what = r.message;
  for (size_t i = 0; i < hosts.outcomes().size(); ++i)
    what += "\n  host " + std::to_string(i) + " " + hosts.outcomes()[i];
  return what + "\n  output:\n" + output;
}

} // namespace

BenchContext bench_context(const std::string &image,
                           const std::string &programs_dir,
                           const std::string &probe, const BenchHooks &hooks) {
  if (!fs::exists(image))
    throw Error("bench: " + image +
                " not found (build the firmware, or give --firmware)");
  std::vector<uint8_t> bytes = read_file_bytes(image);
  std::string model_name = decode_image(bytes).model;
  BenchContext c{
      load_model(model_name), nullptr, programs_dir, model_name, hooks, {}};
  if (bytes.size() > c.model.flash_size)
    throw Error("bench: " + image + " is larger than the flash");
  bytes.resize(c.model.flash_size, 0xFF);
  c.flash = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  if (!fs::exists(c.programs_dir + "/" + probe))
    throw Error("bench: no " + probe + " in " + c.programs_dir +
                " (build the examples, or give --programs-dir)");
  return c;
}

void plan_runs(const BenchContext &c, int runs) {
  if (c.hooks.progress)
    c.hooks.progress->plan(runs);
}

HostRun run_hosts(const BenchContext &c, uint32_t nodes,
                  std::vector<std::string> program,
                  const std::function<void(Cluster &)> &inspect) {
  const StopRequest *stop = c.hooks.stop;
  if (stop && stop->requested()) // asked between two runs
    throw Stopped(stop->signal());
  if (c.hooks.progress) { // "niam_bench_barrier 100, 64 nodes"
    std::string what;
    for (const std::string &word : program)
      if (word.rfind("--", 0) != 0)
        what += (what.empty() ? "" : " ") + word;
    c.hooks.progress->starting(what + ", " + std::to_string(nodes) + " nodes");
  }
  CapturedOutput out;
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.program = std::move(program);
  spec.program[0] = c.programs_dir + "/" + spec.program[0];
  spec.host_options.stdout_fd = out.fd();
  spec.stop = stop;
  spec.monitor = c.hooks.progress;
  spec.link_faults = c.link_faults;
  spec.threads = c.threads;
  spec.adaptive_threads = c.adaptive_threads;
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Cluster> cluster = start_cluster(c.model, c.flash, spec);
  RunResult r = cluster->sim.run();
  cluster->hosts->stop();
  // Whatever else ended the run (hosts that the terminal's Ctrl-C reached
  // too), a stopped benchmark gives no figures.
  if (stop && stop->requested())
    throw Stopped(stop->signal());
  std::chrono::duration<double> total =
      std::chrono::steady_clock::now() - start;
  HostRun run{out.text(), r.end_time, r.wall_seconds, total.count()};
  run.threads = cluster->sim.threads_used();
  for (const auto &node : cluster->sim.nodes()) {
    run.instructions += node->cpu().instructions();
    run.cycles += node->cpu().cycles();
    run.slept_cycles += node->sleep_cycles();
    run.fast_forwarded_instructions +=
        node->cpu().fast_forwarded().instructions;
  }
  if (r.outcome != RunOutcome::Halted || cluster->hosts->exit_code() != 0)
    throw Error(
        "bench: " + spec.program[0] + " on " + std::to_string(nodes) +
        " nodes failed: " + describe_failure(r, *cluster->hosts, run.output));
  if (inspect)
    inspect(*cluster);
  return run;
}

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

} // namespace nicemu
