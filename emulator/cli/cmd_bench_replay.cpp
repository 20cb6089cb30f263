// nicemu bench replay [--json] [--quick] [--repeats N]: what recording
// costs a run and what replaying it costs, as a user runs them: `nicemu
// run`, `nicemu run --record` and `nicemu replay`, each a process of its
// own, the three in turn for each repetition (docs/benchmarks.md,
// "Replay").
#include "bench/shipped_files.hpp"
#include "cli/bench_json.hpp"
#include "commands.hpp"
#include "nicemu/error.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

extern char **environ; // POSIX: the process environment

namespace nicemu::cli {

namespace {

namespace fs = std::filesystem;

struct ReplayBenchOptions {
  std::string firmware_dir, programs_dir;
  bool quick = false;
  int repeats = 3;
};

struct ReplayCase {
  std::string name;
  std::vector<std::string> run;     // nicemu run's options
  std::vector<std::string> program; // after --
  // Wall seconds of each repetition.
  std::vector<double> plain, record, replay;
  uint64_t recording_bytes = 0;
  bool identical = true; // every replay's summary equals its recording's
  std::string command() const {
    std::string c = "nicemu run";
    for (const std::string &a : run)
      c += " " + fs::path(a).filename().string();
    c += " --";
    for (const std::string &a : program)
      c += " " + fs::path(a).filename().string();
    return c;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A scratch directory, gone with it.
struct Scratch {
  std::string path;
  Scratch() {
    std::string pattern =
        (fs::temp_directory_path() / "nicemu-bench-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw Error("bench replay: cannot create a temporary directory");
    path = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::string read_all(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs this nicemu with `args`, its output into `out` and `err`; returns
// the wall seconds it took. Throws unless it exits 0.
double timed_nicemu(const std::vector<std::string> &args,
                    const std::string &out, const std::string &err) {
  std::vector<std::string> all = {"/proc/self/exe"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (auto &a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  int e = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0)
    throw Error("bench replay: cannot start nicemu");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("bench replay: nicemu " + args[0] + " failed:\n" +
                read_all(err));
  return seconds;
}

// The summary less its wall time: what a replay must give again.
std::string summary(const std::string &err) {
  size_t at = err.find("--- nicemu:");
  if (at == std::string::npos)
    return "";
  std::istringstream in(err.substr(at));
  std::string kept;
  for (std::string line; std::getline(in, line);)
    kept += line.substr(0, line.find(", wall time")) + "\n";
  return kept;
}

std::vector<ReplayCase> plan(const ReplayBenchOptions &o) {
  const std::string fw = o.firmware_dir + "/", bin = o.programs_dir + "/";
  auto make = [](std::string name, std::vector<std::string> run,
                 std::vector<std::string> program) {
    ReplayCase c;
    c.name = std::move(name);
    c.run = std::move(run);
    c.program = std::move(program);
    return c;
  };
  std::vector<ReplayCase> cases = {
      make("gam_pingpong", {"-n", "2", "--firmware", fw + "niam.img"},
           {bin + "gam_pingpong"}),
      make("fm_pingpong",
           {"-n", "2", "--model", "comet", "--firmware", fw + "via.img"},
           {bin + "fm_pingpong"}),
      make("barrier_64", {"-n", "64", "--firmware", fw + "niam.img"},
           {bin + "niam_bench_barrier", o.quick ? "20" : "100"})};
  if (o.quick)
    cases[1].program.push_back("--quick");
  for (const ReplayCase &c : cases) {
    for (const std::string &a : c.run)
      if (a.find('/') != std::string::npos && !fs::exists(a))
        throw Error("bench replay: " + a +
                    " not found (build the firmware, or give --firmware-dir)");
    if (!fs::exists(c.program[0]))
      throw Error("bench replay: " + c.program[0] +
                  " not found (build the examples, or give --programs-dir)");
  }
  return cases;
}

void run_case(ReplayCase &c, int repeats) {
  Scratch dir;
  const std::string out = dir.path + "/out", err = dir.path + "/err",
                    rec = dir.path + "/run.nrec";
  auto with = [&c](std::vector<std::string> extra) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), c.run.begin(), c.run.end());
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.insert(args.end(), c.program.begin(), c.program.end());
    return args;
  };
  for (int i = 0; i < repeats; ++i) {
    c.plain.push_back(timed_nicemu(with({}), out, err));
    c.record.push_back(timed_nicemu(with({"--record", rec}), out, err));
    const std::string recorded = summary(read_all(err));
    c.recording_bytes = fs::file_size(rec);
    c.replay.push_back(timed_nicemu({"replay", rec}, out, err));
    c.identical =
        c.identical && !recorded.empty() && summary(read_all(err)) == recorded;
  }
}

void print_table(const std::vector<ReplayCase> &cases, bool quick,
                 int repeats) {
  std::printf("nicemu bench replay%s (each run a nicemu process, as a user "
              "starts it; wall seconds: median [min-max] of %d)\n\n",
              quick ? " --quick" : "", repeats);
  std::printf("%-13s %-22s %-22s %9s %-22s %8s %10s %9s\n", "case", "run s",
              "run --record s", "overhead", "replay s", "replay/", "recording",
              "identical");
  std::printf("%-13s %-22s %-22s %9s %-22s %8s %10s %9s\n", "", "", "", "", "",
              "record", "KiB", "");
  auto cell = [](const std::vector<double> &v) {
    char text[64];
    std::snprintf(text, sizeof text, "%.3f [%.3f-%.3f]", median(v),
                  *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()));
    return std::string(text);
  };
  for (const ReplayCase &c : cases)
    std::printf("%-13s %-22s %-22s %8.1f%% %-22s %8.2f %10.1f %9s\n",
                c.name.c_str(), cell(c.plain).c_str(), cell(c.record).c_str(),
                100 * (median(c.record) / median(c.plain) - 1),
                cell(c.replay).c_str(), median(c.replay) / median(c.record),
                double(c.recording_bytes) / 1024, c.identical ? "yes" : "NO");
  std::printf("\n");
  for (const ReplayCase &c : cases)
    std::printf("%-13s %s\n", c.name.c_str(), c.command().c_str());
}

nlohmann::json to_json(const std::vector<ReplayCase> &cases, bool quick,
                       int repeats) {
  nlohmann::json j = bench_json("replay");
  j["quick"] = quick;
  j["repeats"] = repeats;
  j["cases"] = nlohmann::json::array();
  for (const ReplayCase &c : cases)
    j["cases"].push_back(
        {{"name", c.name},
         {"command", c.command()},
         {"wall",
          {{"run_seconds", c.plain},
           {"record_seconds", c.record},
           {"replay_seconds", c.replay},
           {"record_overhead", median(c.record) / median(c.plain) - 1},
           {"replay_over_record", median(c.replay) / median(c.record)}}},
         {"recording_bytes", c.recording_bytes},
         {"identical", c.identical}});
  return j;
}

} // namespace

void add_replay_bench(CLI::App &bench) {
  auto opts = std::make_shared<ReplayBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App *cmd = bench.add_subcommand(
      "replay", "What --record costs a run and what nicemu replay costs, "
                "against the plain run: GAM and FM ping-pongs, a 64-node "
                "barrier loop; the recordings' sizes");
  cmd->add_flag("--json", *json,
                "print the figures as JSON (see docs/benchmarks.md)");
  cmd->add_flag("--quick", opts->quick,
                "FM ping-pong --quick, 20 barriers instead of 100");
  cmd->add_option("--repeats", opts->repeats,
                  "repetitions of each case (run, record, replay in turn)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--firmware-dir", opts->firmware_dir,
                  "directory with niam.img and via.img");
  cmd->add_option("--programs-dir", opts->programs_dir,
                  "directory with gam_pingpong, fm_pingpong and "
                  "niam_bench_barrier");
  cmd->callback([opts, json] {
    if (opts->firmware_dir.empty())
      opts->firmware_dir = shipped_firmware_dir();
    if (opts->programs_dir.empty())
      opts->programs_dir = shipped_programs_dir();
    std::vector<ReplayCase> cases = plan(*opts);
    for (ReplayCase &c : cases)
      run_case(c, opts->repeats);
    if (*json)
      std::cout << to_json(cases, opts->quick, opts->repeats).dump(2) << "\n";
    else
      print_table(cases, opts->quick, opts->repeats);
    bool identical =
        std::all_of(cases.begin(), cases.end(),
                    [](const ReplayCase &c) { return c.identical; });
    if (!identical)
      throw Error("bench replay: a replay's summary differs from its "
                  "recorded run's");
  });
}

} // namespace nicemu::cli
