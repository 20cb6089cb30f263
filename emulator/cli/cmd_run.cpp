// nicemu run --model M (--flash F | --firmware IMG) [--max-time T]
#include "cli/commands.hpp"
#include "debug/fault_report.hpp"
#include "host/cluster_run.hpp"
#include "mem/flash.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <cstdio>
#include <iostream>

namespace nicemu::cli {

namespace {

// Exit codes besides the firmware's own (documented in README/docs).
constexpr int kExitFault = 125, kExitMaxTime = 124, kExitDeadlock = 126;

struct RunOptions {
  std::string model = "lanai4", flash, firmware, max_time, topology;
  uint32_t nodes = 1;
  std::vector<std::string> program; // host program and its arguments
  int64_t watchdog = -1;
  bool quiet = false;
};

std::vector<uint8_t> boot_flash(const RunOptions &o, const Model &model) {
  if (!o.flash.empty() && !o.firmware.empty())
    throw Error("run: give either --flash or --firmware, not both");
  if (!o.flash.empty())
    return read_flash(o.flash, model);
  if (o.firmware.empty())
    throw Error("run: give the node's flash (--flash F) or an image "
                "(--firmware FW.img)");
  // --firmware: as if the image had been flashed into an erased flash.
  std::vector<uint8_t> image = read_file_bytes(o.firmware);
  try {
    decode_image(image); // say what is wrong with the file itself
  } catch (const Error &e) {
    throw Error(o.firmware + ": " + e.what());
  }
  if (image.size() > model.flash_size)
    throw Error(o.firmware + ": larger than the " + model.name + " flash");
  std::vector<uint8_t> flash(model.flash_size, 0xFF);
  std::copy(image.begin(), image.end(), flash.begin());
  return flash;
}

const char *state_name(NodeState s) {
  switch (s) {
  case NodeState::Reset:
    return "reset";
  case NodeState::Running:
    return "running";
  case NodeState::Sleeping:
    return "sleeping";
  case NodeState::Halted:
    return "halted";
  case NodeState::Faulted:
    return "faulted";
  }
  return "?";
}

void print_summary(Simulation &sim, const RunResult &r, const Model &model) {
  std::fprintf(stderr, "--- nicemu: %s model, %zu node%s ---\n",
               model.name.c_str(), sim.nodes().size(),
               sim.nodes().size() == 1 ? "" : "s");
  std::fprintf(stderr, "%-5s %-9s %5s %14s %14s %14s\n", "node", "state",
               "exit", "instructions", "cycles", "slept cycles");
  uint64_t instructions = 0;
  for (auto &n : sim.nodes()) {
    instructions += n->cpu().instructions();
    std::fprintf(stderr, "%-5u %-9s %5s %14llu %14llu %14llu\n", n->id(),
                 state_name(n->state()),
                 n->state() == NodeState::Halted
                     ? std::to_string(n->exit_code()).c_str()
                     : "-",
                 (unsigned long long)n->cpu().instructions(),
                 (unsigned long long)n->cpu().cycles(),
                 (unsigned long long)n->sleep_cycles());
  }
  double mips = r.wall_seconds > 0 ? instructions / r.wall_seconds / 1e6 : 0;
  std::fprintf(stderr,
               "virtual time %.3f us, wall time %.3f ms, %.1f emulated MIPS\n",
               double(r.end_time) / 1e6, r.wall_seconds * 1e3, mips);
}

int outcome_exit_code(Simulation &sim, const RunResult &r) {
  switch (r.outcome) {
  case RunOutcome::Faulted:
    return kExitFault;
  case RunOutcome::MaxTime:
    return kExitMaxTime;
  case RunOutcome::Deadlock:
    return kExitDeadlock;
  case RunOutcome::HostFailed:
    return 1;
  case RunOutcome::Halted:
    break;
  }
  for (auto &n : sim.nodes())
    if (n->exit_code() != 0)
      return int(n->exit_code() & 0xFF);
  return 0;
}

int run(const RunOptions &o) {
  Model model = load_model(o.model);
  std::vector<uint8_t> flash = boot_flash(o, model);
  Time max_time = kTimeNever;
  if (!o.max_time.empty()) {
    auto t = parse_duration_ps(o.max_time);
    if (!t)
      throw Error("run: --max-time '" + o.max_time +
                  "' is not a duration (e.g. 10ms, 1.5s, 200us)");
    max_time = *t;
  }
  ClusterSpec spec;
  spec.nodes = o.nodes;
  spec.topology = o.topology;
  spec.program = o.program;
  if (o.watchdog >= 0)
    spec.watchdog_cycles = uint64_t(o.watchdog);
  spec.console = [](uint32_t node, const std::string &line) {
    std::cout << "[node" << node << "] " << line << "\n" << std::flush;
  };
  std::unique_ptr<Cluster> cluster = start_cluster(
      model, std::make_shared<const std::vector<uint8_t>>(std::move(flash)),
      spec);
  Simulation &sim = cluster->sim;
  HostGroup *hosts = cluster->hosts.get();
  RunResult r = sim.run(max_time);
  if (hosts)
    hosts->stop();
  for (auto &n : sim.nodes())
    if (n->state() == NodeState::Faulted)
      std::cerr << "nicemu: " << fault_report(*n);
  if (r.outcome == RunOutcome::Deadlock)
    std::cerr << "nicemu: stopped: " << r.message << "\n";
  if (r.outcome == RunOutcome::MaxTime)
    std::cerr << "nicemu: stopped at --max-time " << o.max_time << "\n";
  if (r.outcome == RunOutcome::HostFailed)
    std::cerr << "nicemu: stopped: " << r.message << "\n";
  if (!o.quiet)
    print_summary(sim, r, model);
  if (hosts) {
    if (!o.quiet)
      for (uint32_t i = 0; i < o.nodes; ++i)
        std::fprintf(stderr, "host %u: %s\n", i, hosts->outcomes()[i].c_str());
    if (r.outcome == RunOutcome::Halted || r.outcome == RunOutcome::HostFailed)
      return hosts->exit_code() ? hosts->exit_code()
                                : (r.outcome == RunOutcome::HostFailed ? 1 : 0);
  }
  return outcome_exit_code(sim, r);
}

} // namespace

void add_run_command(CLI::App &app, ExitStatus &status) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App *cmd =
      app.add_subcommand("run", "Boot a card from flash and run its firmware");
  cmd->add_option("--model", opts->model, "model (name or .toml file)")
      ->capture_default_str();
  cmd->add_option("--flash", opts->flash, "flash file to boot from");
  cmd->add_option("--firmware", opts->firmware,
                  "boot this image directly (as if flashed)");
  cmd->add_option("-n,--nodes", opts->nodes,
                  "number of nodes (NICs), all booting the same flash")
      ->capture_default_str();
  cmd->add_option("--topology", opts->topology,
                  "network topology file (default: one crossbar up to its "
                  "port count, a generated network beyond)");
  cmd->add_option("--max-time", opts->max_time,
                  "stop after this much virtual time (e.g. 10ms)");
  cmd->add_option("--watchdog", opts->watchdog,
                  "watchdog period in cycles (0 = off; default: the model's)");
  cmd->add_flag("-q,--quiet", opts->quiet, "no summary");
  cmd->add_option("program", opts->program,
                  "after --: a host program (and its arguments) to run once "
                  "per node, like mpirun");
  cmd->callback([opts, &status] { status.code = run(*opts); });
}

} // namespace nicemu::cli
