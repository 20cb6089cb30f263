// nicemu bench speed [--json] [--quick]: virtual against wall time, case by
// case, in one process (bench/bench_speed.hpp, docs/benchmarks.md, "Speed").
#include "bench/bench_speed.hpp"
#include "bench/shipped_files.hpp"
#include "cli/bench_json.hpp"
#include "cli/bench_run.hpp"
#include "commands.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace nicemu::cli {

namespace {

void print_case(const SpeedCase &c) {
  if (!c.ran()) {
    std::printf("%-13s %5u  skipped: %s\n", c.name.c_str(), c.nodes,
                c.skipped.c_str());
    return;
  }
  std::printf("%-13s %5u %-7s %14.9f %9.3f %9.4f %13llu %8.1f %7d\n",
              c.name.c_str(), c.nodes, c.model.c_str(), c.virtual_seconds(),
              c.wall_seconds, c.virtual_per_wall(),
              (unsigned long long)c.instructions, c.mips(), c.threads);
}

void print_notes(const SpeedBenchFigures &f) {
  std::printf("\n");
  for (const SpeedCase &c : f.cases) {
    std::printf("%-13s %s\n", c.name.c_str(), c.command.c_str());
    if (!c.shrunk.empty())
      std::printf("%-13s   shrunk by %s\n", "", c.shrunk.c_str());
    if (c.ran() && c.rounds)
      std::printf("%-13s   %d barriers: %.3f ms of wall time and %.3f us of "
                  "virtual time per barrier (start-up included)\n",
                  "", c.rounds, c.wall_seconds / c.rounds * 1e3,
                  c.virtual_seconds() / c.rounds * 1e6);
  }
  const SpeedCase *sleep = f.find("sleep_1s"), *poll = f.find("poll_1s"),
                  *full = f.find("poll_1s_full");
  if (f.polling_ratio() > 0)
    std::printf("\npolling: a virtual second costs %.3f ms of wall time when "
                "the firmware sleeps (sleep_1s, %llu instructions) and "
                "%.3f ms when it busy-polls (poll_1s, %llu instructions, "
                "%llu of them fast-forwarded): %.2f times as much\n",
                sleep->wall_per_virtual_second() * 1e3,
                (unsigned long long)sleep->instructions,
                poll->wall_per_virtual_second() * 1e3,
                (unsigned long long)poll->instructions,
                (unsigned long long)poll->fast_forwarded_instructions,
                f.polling_ratio());
  if (double r = f.wall_ratio("poll_1s_full", "sleep_1s"); r > 0)
    std::printf("         with every iteration emulated (poll_1s_full, "
                "--no-fast-forward): %.1f ms, %.0f times as much\n",
                full->wall_per_virtual_second() * 1e3, r);
}

void print_table(const SpeedBenchFigures &f) {
  std::printf("nicemu bench speed%s (one process; wall time from steady_clock "
              "around each case, host processes started and reaped included; "
              "MIPS = million emulated instructions per wall second; virtual "
              "figures do not change between runs)\n\n",
              f.quick ? " --quick" : "");
  std::printf("%-13s %5s %-7s %14s %9s %9s %13s %8s %7s\n", "case", "nodes",
              "model", "virtual s", "wall s", "virt/wall", "instructions",
              "MIPS", "threads");
  for (const SpeedCase &c : f.cases)
    print_case(c);
  print_notes(f);
}

nlohmann::json to_json(const SpeedCase &c) {
  nlohmann::json j = {{"name", c.name},
                      {"command", c.command},
                      {"nodes", c.nodes},
                      {"ran", c.ran()}};
  if (!c.ran())
    j["skipped"] = c.skipped;
  if (!c.shrunk.empty())
    j["shrunk"] = c.shrunk;
  if (c.rounds)
    j["rounds"] = c.rounds;
  if (!c.ran())
    return j;
  j["model"] = c.model;
  j["threads"] = c.threads;
  j["virtual"] = {{"picoseconds", c.virtual_time},
                  {"seconds", c.virtual_seconds()},
                  {"instructions", c.instructions},
                  {"cycles", c.cycles},
                  {"slept_cycles", c.slept_cycles}};
  j["wall"] = {{"seconds", c.wall_seconds},
               {"loop_seconds", c.loop_wall_seconds},
               {"fast_forwarded_instructions", c.fast_forwarded_instructions},
               {"virtual_per_wall", c.virtual_per_wall()},
               {"mips", c.mips()},
               {"per_virtual_second", c.wall_per_virtual_second()}};
  if (c.rounds)
    j["wall"]["per_round_seconds"] = c.wall_seconds / c.rounds;
  return j;
}

nlohmann::json to_json(const SpeedBenchFigures &f) {
  nlohmann::json j = bench_json("speed");
  j["quick"] = f.quick;
  j["cases"] = nlohmann::json::array();
  for (const SpeedCase &c : f.cases)
    j["cases"].push_back(to_json(c));
  if (f.polling_ratio() > 0)
    j["polling"] = {{"sleeping_case", "sleep_1s"},
                    {"polling_case", "poll_1s"},
                    {"wall_ratio", f.polling_ratio()}};
  if (double r = f.wall_ratio("poll_1s_full", "sleep_1s"); r > 0) {
    j["polling"]["full_case"] = "poll_1s_full";
    j["polling"]["full_wall_ratio"] = r;
  }
  return j;
}

} // namespace

void add_speed_bench(CLI::App &bench) {
  auto opts = std::make_shared<SpeedBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App *speed = bench.add_subcommand(
      "speed", "Virtual time against wall time, emulated MIPS and threads, "
               "case by case in one process: GAM and FM ping-pongs, barrier "
               "loops on 8, 64 and 1024 nodes, a sleeping and a polling "
               "firmware");
  speed->add_flag("--json", *json,
                  "print the figures as JSON (see docs/benchmarks.md)");
  speed->add_flag("--quick", opts->quick,
                  "skip the 1024-node case, fewer barriers on 8 and 64 nodes");
  speed->add_option("--firmware-dir", opts->firmware_dir,
                    "directory with niam.img, via.img, sleep_1s.img and "
                    "poll_1s.img");
  speed->add_option("--programs-dir", opts->programs_dir,
                    "directory with gam_pingpong, fm_pingpong and "
                    "niam_bench_barrier");
  speed
      ->add_option("--threads", opts->threads,
                   "threads for the NIC cores' slices in the host-program "
                   "cases (0 = as nicemu run: the cores available, at most "
                   "one per 4 nodes)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 256u));
  auto progress = std::make_shared<ProgressMode>(ProgressMode::Auto);
  add_progress_options(*speed, *progress);
  speed->callback([opts, json, progress] {
    if (opts->firmware_dir.empty())
      opts->firmware_dir = shipped_firmware_dir();
    if (opts->programs_dir.empty())
      opts->programs_dir = shipped_programs_dir();
    SpeedBenchFigures f =
        run_bench(*opts, *progress, "bench speed", run_speed_bench);
    if (*json)
      std::cout << to_json(f).dump(2) << "\n";
    else
      print_table(f);
  });
}

} // namespace nicemu::cli
