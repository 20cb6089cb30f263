// nicemu bench scale [--nodes LIST] [--ranks LIST] [--barriers B] [--quick]
// [--json]: NI-AM barriers on clusters of each size, in one process and
// spread over MPI ranks (mpirun, docs/distributed.md), each run a `nicemu
// run` of its own started from here, so that ranks and memory are those a
// user gets. The virtual figures must not change with the ranks; the wall
// times say what spreading costs or gains.
#include "bench/shipped_files.hpp"
#include "cli/bench_json.hpp"
#include "commands.hpp"
#include "nicemu/error.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

extern char **environ;

namespace nicemu::cli {

namespace {

namespace fs = std::filesystem;

struct ScaleOptions {
  std::vector<uint32_t> nodes = {64, 256};
  std::vector<uint32_t> ranks = {1, 2, 4};
  uint32_t barriers = 20;
  bool quick = false, json = false;
};

struct ScaleCase {
  uint32_t nodes = 0, ranks = 0, barriers = 0;
  std::string command;
  int status = -1;
  std::string error;      // why it gave no figures
  double virtual_us = 0;  // the run's virtual time
  double wall_s = 0;      // the whole command, start-up included
  double loop_wall_s = 0; // the run loop (the summary's wall time)
  uint64_t messages = 0;  // between the ranks, in all
  long peak_rss_kib = 0;  // the largest process (a rank)
  bool ok() const { return error.empty(); }
  double per_barrier_wall_ms() const { return loop_wall_s / barriers * 1e3; }
  double virtual_per_wall() const {
    return loop_wall_s > 0 ? virtual_us * 1e-6 / loop_wall_s : 0;
  }
  double messages_per_virtual_us() const {
    return virtual_us > 0 ? double(messages) / virtual_us : 0;
  }
};

std::string self_path() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    throw Error("bench scale: cannot find the nicemu executable");
  exe[n] = 0;
  return exe;
}

// `argv` with stdout to /dev/null and stderr to `err`; the exit status and
// the largest resident set among it and what it waited for.
int run_child(const std::vector<std::string> &argv, const std::string &err,
              long &peak_rss_kib) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  // mpirun as root wants to be told that is meant.
  std::vector<std::string> env_text = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                       "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  std::vector<char *> env;
  for (std::string &e : env_text)
    env.push_back(e.data());
  for (char **e = environ; *e; ++e)
    env.push_back(*e);
  env.push_back(nullptr);
  pid_t pid = 0;
  int rc =
      posix_spawnp(&pid, args[0], &files, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0)
    throw Error("bench scale: cannot start " + argv[0] + ": " +
                std::strerror(rc));
  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  peak_rss_kib = usage.ru_maxrss;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

ScaleCase run_case(uint32_t nodes, uint32_t ranks, uint32_t barriers,
                   const std::string &scratch) {
  ScaleCase c;
  c.nodes = nodes;
  c.ranks = ranks;
  c.barriers = barriers;
  std::vector<std::string> argv;
  if (ranks > 1)
    argv = {"mpirun", "--oversubscribe", "-n", std::to_string(ranks)};
  std::vector<std::string> run = {
      self_path(),
      "run",
      "-n",
      std::to_string(nodes),
      "--threads",
      "1",
      "--no-progress",
      "--firmware",
      shipped_image("niam.img"),
      "--",
      (fs::path(shipped_programs_dir()) / "niam_bench_barrier").string(),
      std::to_string(barriers)};
  argv.insert(argv.end(), run.begin(), run.end());
  c.command = (ranks > 1 ? "mpirun --oversubscribe -n " +
                               std::to_string(ranks) + " nicemu"
                         : std::string("nicemu")) +
              " run -n " + std::to_string(nodes) +
              " --threads 1 --firmware niam.img -- niam_bench_barrier " +
              std::to_string(barriers);
  auto start = std::chrono::steady_clock::now();
  c.status = run_child(argv, scratch, c.peak_rss_kib);
  c.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::ifstream in(scratch);
  std::stringstream text;
  text << in.rdbuf();
  const std::string err = text.str();
  // The summary's lines (no std::regex: g++ 12 warns falsely at -O1).
  bool timed = false;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    double virtual_us = 0, wall_ms = 0;
    unsigned ranks = 0;
    unsigned long long messages = 0;
    if (std::sscanf(line.c_str(), "virtual time %lf us, wall time %lf ms",
                    &virtual_us, &wall_ms) == 2) {
      c.virtual_us = virtual_us;
      c.loop_wall_s = wall_ms / 1e3;
      timed = true;
    } else if (std::sscanf(line.c_str(), "ranks: %u, %llu messages", &ranks,
                           &messages) == 2) {
      c.messages = messages;
    }
  }
  if (c.status != 0 || !timed) {
    std::string last = err.substr(err.size() > 400 ? err.size() - 400 : 0);
    c.error = "exit " + std::to_string(c.status) + ": " + last;
  }
  return c;
}

// Parallel efficiency: the one-process loop's time over R times the
// spread one's (1: R ranks R times as fast).
double efficiency(const ScaleCase &c, const std::vector<ScaleCase> &all) {
  for (const ScaleCase &one : all)
    if (one.nodes == c.nodes && one.ranks == 1 && one.ok() && c.ok())
      return one.loop_wall_s / (c.ranks * c.loop_wall_s);
  return 0;
}

void print_table(const std::vector<ScaleCase> &cases, const ScaleOptions &o) {
  std::printf("nicemu bench scale%s: NI-AM barriers (niam_bench_barrier %u), "
              "one process and spread over MPI ranks (mpirun --oversubscribe), "
              "one thread per rank; wall = the run loop's (the summary's), "
              "start-up apart; memory = the largest process's peak RSS\n\n",
              o.quick ? " --quick" : "", o.barriers);
  std::printf("%6s %5s %14s %12s %10s %10s %12s %10s %10s\n", "nodes", "ranks",
              "virtual us", "ms/barrier", "virt/wall", "command s",
              "msgs/virt us", "MiB/rank", "efficiency");
  for (const ScaleCase &c : cases) {
    if (!c.ok()) {
      std::printf("%6u %5u  failed: %s\n", c.nodes, c.ranks, c.error.c_str());
      continue;
    }
    std::printf("%6u %5u %14.3f %12.3f %10.5f %10.2f %12.1f %10.1f %10.2f\n",
                c.nodes, c.ranks, c.virtual_us, c.per_barrier_wall_ms(),
                c.virtual_per_wall(), c.wall_s, c.messages_per_virtual_us(),
                c.peak_rss_kib / 1024.0, efficiency(c, cases));
  }
  std::printf("\n");
  for (const ScaleCase &c : cases)
    std::printf("%6u %5u  %s\n", c.nodes, c.ranks, c.command.c_str());
}

nlohmann::json to_json(const std::vector<ScaleCase> &cases,
                       const ScaleOptions &o) {
  nlohmann::json list = nlohmann::json::array();
  for (const ScaleCase &c : cases) {
    nlohmann::json j = {{"nodes", c.nodes},
                        {"ranks", c.ranks},
                        {"barriers", c.barriers},
                        {"command", c.command},
                        {"ok", c.ok()}};
    if (!c.ok()) {
      j["error"] = c.error;
    } else {
      j["virtual_us"] = c.virtual_us;
      j["wall"] = {{"loop_s", c.loop_wall_s},
                   {"command_s", c.wall_s},
                   {"per_barrier_ms", c.per_barrier_wall_ms()},
                   {"virtual_per_wall", c.virtual_per_wall()},
                   {"efficiency", efficiency(c, cases)},
                   {"peak_rss_kib", c.peak_rss_kib}};
      j["messages"] = c.messages;
    }
    list.push_back(j);
  }
  return bench_json("scale", {{"quick", o.quick}, {"cases", list}});
}

} // namespace

void add_scale_bench(CLI::App &bench) {
  auto o = std::make_shared<ScaleOptions>();
  CLI::App *cmd = bench.add_subcommand(
      "scale", "NI-AM barriers on N nodes in one process and spread over MPI "
               "ranks (mpirun): wall time, memory, messages, efficiency");
  cmd->add_option("--nodes", o->nodes, "cluster sizes")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "rank counts (1: one process)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--barriers", o->barriers, "barriers per run")
      ->capture_default_str()
      ->check(CLI::Range(1u, 100000u));
  cmd->add_flag("--quick", o->quick,
                "8 and 64 nodes, 1 and 2 ranks, 5 barriers (for the tests)");
  cmd->add_flag("--json", o->json,
                "print the figures as JSON (docs/benchmarks.md)");
  cmd->callback([o] {
    if (o->quick) {
      o->nodes = {8, 64};
      o->ranks = {1, 2};
      o->barriers = 5;
    }
    for (uint32_t r : o->ranks)
      if (r == 0)
        throw Error("bench scale: --ranks takes counts of 1 or more");
    char scratch[] = "/tmp/nicemu-scale-XXXXXX";
    int fd = mkstemp(scratch);
    if (fd < 0)
      throw Error("bench scale: cannot make a scratch file in /tmp");
    close(fd);
    std::vector<ScaleCase> cases;
    for (uint32_t n : o->nodes)
      for (uint32_t r : o->ranks)
        if (r <= n)
          cases.push_back(run_case(n, r, o->barriers, scratch));
    unlink(scratch);
    if (o->json)
      std::cout << to_json(cases, *o).dump(2) << "\n";
    else
      print_table(cases, *o);
  });
}

} // namespace nicemu::cli
