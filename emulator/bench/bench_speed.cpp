#include "bench/bench_speed.hpp"

#include "bench/bench_hosts.hpp"
#include "bench/bench_niam.hpp"
#include "core/cpu.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "node/core_workers.hpp"
#include "node/simulation.hpp"

#include <chrono>
#include <filesystem>

namespace nicemu {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One case as the issue sets it: a firmware image, and a host program with
// its arguments on `nodes` nodes (none: the firmware alone on one node).
struct CaseSpec {
  std::string name;
  std::string image;
  std::string model; // given to `nicemu run` with --model ("": the default)
  std::vector<std::string> program;
  uint32_t nodes = 1;
  int rounds = 0; // barriers: the program is niam_bench_barrier ROUNDS
  std::string shrunk;
  std::string skipped;
  bool fast_forward = true; // false: --no-fast-forward
};

std::string command_of(const CaseSpec &s) {
  std::string c = "nicemu run";
  if (s.nodes > 1 || !s.program.empty())
    c += " -n " + std::to_string(s.nodes);
  if (!s.fast_forward)
    c += " --no-fast-forward";
  if (!s.model.empty())
    c += " --model " + s.model;
  c += " --firmware " + s.image;
  if (!s.program.empty()) {
    c += " --";
    for (const std::string &word : s.program)
      c += " " + word;
  }
  return c;
}

CaseSpec barrier_case(uint32_t nodes, int rounds) {
  return {"barrier_" + std::to_string(nodes),
          "niam.img",
          "",
          {"niam_bench_barrier", std::to_string(rounds)},
          nodes,
          rounds,
          {},
          {}};
}

// The cases in the order they run, with what --quick changes.
std::vector<CaseSpec> plan_cases(bool quick) {
  std::vector<CaseSpec> cases = {
      {"gam_pingpong", "niam.img", "", {"gam_pingpong"}, 2, 0, {}, {}},
      {"fm_pingpong", "via.img", "comet", {"fm_pingpong"}, 2, 0, {}, {}},
      barrier_case(kSpeedLoopNodes,
                   quick ? kSpeedLoopRoundsQuick : kSpeedLoopRounds),
      barrier_case(64, quick ? 20 : 100),
      // As the largest run of `bench niam`: a tenth of its 100 barriers.
      barrier_case(1024, 10),
      {"sleep_1s", "sleep_1s.img", "", {}, 1, 0, {}, {}},
      {"poll_1s", "poll_1s.img", "", {}, 1, 0, {}, {}},
      // The same with every iteration of its loop emulated: the baseline
      // of the fast-forward, measured in the same run.
      {"poll_1s_full", "poll_1s.img", "", {}, 1, 0, {}, {}, false},
  };
  if (quick) {
    cases[2].shrunk = "--quick: 100 barriers instead of 1000";
    cases[3].shrunk = "--quick: 20 barriers instead of 100";
    cases[4].skipped = "--quick: 1024 host processes take minutes";
  }
  return cases;
}

// Why the case cannot run here (a file missing), or "".
std::string missing_file(const SpeedBenchOptions &o, const CaseSpec &s) {
  if (!fs::exists(o.firmware_dir + "/" + s.image))
    return o.firmware_dir + "/" + s.image +
           " not found (build the firmware, or give --firmware-dir)";
  if (!s.program.empty() && !fs::exists(o.programs_dir + "/" + s.program[0]))
    return "no " + s.program[0] + " in " + o.programs_dir +
           " (build the examples, or give --programs-dir)";
  return {};
}

void run_with_hosts(const SpeedBenchOptions &o, const CaseSpec &s,
                    SpeedCase &out) {
  BenchContext c = bench_context(o.firmware_dir + "/" + s.image, o.programs_dir,
                                 s.program[0], o.hooks);
  c.threads = o.threads ? o.threads : default_threads(s.nodes);
  c.adaptive_threads = o.threads == 0; // as nicemu run's default
  out.model = c.model_name;
  Clock::time_point start = Clock::now();
  HostRun run = s.rounds ? run_barrier_loop(c, s.nodes, s.rounds)
                         : run_hosts(c, s.nodes, s.program);
  out.wall_seconds = seconds_since(start);
  out.loop_wall_seconds = run.run_wall;
  out.virtual_time = run.virtual_time;
  out.instructions = run.instructions;
  out.cycles = run.cycles;
  out.slept_cycles = run.slept_cycles;
  out.fast_forwarded_instructions = run.fast_forwarded_instructions;
  out.threads = int(run.threads);
}

// The firmware alone on one node, as `nicemu run --firmware IMAGE` runs it.
void run_alone(const SpeedBenchOptions &o, const CaseSpec &s, SpeedCase &out) {
  if (o.hooks.stop && o.hooks.stop->requested())
    throw Stopped(o.hooks.stop->signal());
  std::vector<uint8_t> flash = read_file_bytes(o.firmware_dir + "/" + s.image);
  out.model = decode_image(flash).model;
  Model model = load_model(out.model);
  flash.resize(model.flash_size, 0xFF);
  Clock::time_point start = Clock::now();
  Simulation sim;
  Node &node = sim.add_node(model, NodeConfig{});
  node.cpu().set_fast_forward(s.fast_forward);
  node.boot(flash);
  RunResult r = sim.run();
  out.wall_seconds = seconds_since(start);
  if (node.state() != NodeState::Halted || node.exit_code() != 0)
    throw Error("bench: " + s.image +
                " did not run to a clean exit: " + r.message);
  out.loop_wall_seconds = r.wall_seconds;
  out.virtual_time = r.end_time;
  out.instructions = node.cpu().instructions();
  out.cycles = node.cpu().cycles();
  out.slept_cycles = node.sleep_cycles();
  out.fast_forwarded_instructions = node.cpu().fast_forwarded().instructions;
}

} // namespace

const SpeedCase *SpeedBenchFigures::find(const std::string &name) const {
  for (const SpeedCase &c : cases)
    if (c.name == name)
      return &c;
  return nullptr;
}

double SpeedBenchFigures::polling_ratio() const {
  return wall_ratio("poll_1s", "sleep_1s");
}

double SpeedBenchFigures::wall_ratio(const std::string &name,
                                     const std::string &base) const {
  const SpeedCase *b = find(base), *c = find(name);
  if (!b || !c || !b->ran() || !c->ran() || b->wall_per_virtual_second() <= 0)
    return 0;
  return c->wall_per_virtual_second() / b->wall_per_virtual_second();
}

SpeedBenchFigures run_speed_bench(const SpeedBenchOptions &o) {
  SpeedBenchFigures f;
  f.quick = o.quick;
  std::vector<CaseSpec> specs = plan_cases(o.quick);
  int host_runs = 0;
  for (CaseSpec &s : specs) {
    if (s.skipped.empty())
      s.skipped = missing_file(o, s);
    host_runs += s.skipped.empty() && !s.program.empty();
  }
  if (o.hooks.progress)
    o.hooks.progress->plan(host_runs);
  for (const CaseSpec &s : specs) {
    SpeedCase out;
    out.name = s.name;
    out.command = command_of(s);
    out.nodes = s.nodes;
    out.rounds = s.rounds;
    out.shrunk = s.shrunk;
    out.skipped = s.skipped;
    if (out.ran()) {
      if (s.program.empty())
        run_alone(o, s, out);
      else
        run_with_hosts(o, s, out);
    }
    f.cases.push_back(out);
  }
  return f;
}

} // namespace nicemu
