// nicemu bench cpu [--json] [--firmware-dir DIR]
#include "bench/bench_cpu.hpp"
#include "cli/commands.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace nicemu::cli {

namespace {

void print_table(const CpuBenchFigures &f) {
  std::printf("nicemu bench cpu (model %s; best of the runs; MIPS = million "
              "emulated instructions per wall second)\n\n",
              f.model.c_str());
  std::printf("%-9s %12s %12s %11s %11s %11s %9s %9s %6s\n", "kernel",
              "instructions", "cycles", "MIPS acct", "MIPS noacct", "MIPS raw",
              "acct/raw", "noacct/raw", "same");
  for (const CpuKernelFigures &k : f.kernels)
    std::printf("%-9s %12llu %12llu %11.1f %11.1f %11.1f %9.2f %9.2f %6s\n",
                k.name.c_str(), (unsigned long long)k.instructions,
                (unsigned long long)k.cycles, k.mips(k.wall_accounting),
                k.mips(k.wall_no_accounting), k.mips(k.wall_raw),
                k.wall_raw / k.wall_accounting,
                k.wall_raw / k.wall_no_accounting,
                k.results_agree ? "yes" : "NO");
  std::printf("\nsleeping firmware: %.3f s of virtual time in %.3f ms of wall "
              "time (%llu instructions executed)\n",
              double(f.sleep_virtual) / 1e12, f.sleep_wall * 1e3,
              (unsigned long long)f.sleep_instructions);
  std::printf("resident memory per node: %.0f KiB (%d sleeping nodes sharing "
              "one flash image)\n",
              f.node_resident_kib, f.memory_nodes);
}

nlohmann::json to_json(const CpuBenchFigures &f) {
  nlohmann::json j;
  j["bench"] = "cpu";
  j["model"] = f.model;
  for (const CpuKernelFigures &k : f.kernels)
    j["kernels"].push_back({
        {"name", k.name},
        {"instructions", k.instructions},
        {"cycles", k.cycles},
        {"result", k.exit_code},
        {"results_agree", k.results_agree},
        {"wall_seconds",
         {{"accounting", k.wall_accounting},
          {"no_accounting", k.wall_no_accounting},
          {"raw_unicorn", k.wall_raw}}},
        {"mips",
         {{"accounting", k.mips(k.wall_accounting)},
          {"no_accounting", k.mips(k.wall_no_accounting)},
          {"raw_unicorn", k.mips(k.wall_raw)}}},
        {"ratio_to_raw",
         {{"accounting", k.wall_raw / k.wall_accounting},
          {"no_accounting", k.wall_raw / k.wall_no_accounting}}},
    });
  j["sleep"] = {{"virtual_seconds", double(f.sleep_virtual) / 1e12},
                {"wall_seconds", f.sleep_wall},
                {"instructions", f.sleep_instructions}};
  j["memory"] = {{"nodes", f.memory_nodes},
                 {"resident_kib_per_node", f.node_resident_kib}};
  return j;
}

} // namespace

void add_bench_command(CLI::App &app, ExitStatus &) {
  CLI::App *bench =
      app.add_subcommand("bench", "Benchmarks that print figures");
  bench->require_subcommand(1);
  auto opts = std::make_shared<CpuBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App *cpu = bench->add_subcommand(
      "cpu", "Emulated MIPS with and without cycle accounting vs raw Unicorn; "
             "cost of sleeping");
  cpu->add_flag("--json", *json,
                "print the figures as JSON (see docs/benchmarks.md)");
  cpu->add_option("--firmware-dir", opts->firmware_dir,
                  "directory with bench_cpu.img and sleep_1s.img");
  cpu->add_option("--repeats", opts->repeats, "runs per figure (best is kept)")
      ->capture_default_str();
  cpu->callback([opts, json] {
    if (opts->firmware_dir.empty())
      opts->firmware_dir = default_firmware_dir();
    CpuBenchFigures f = run_cpu_bench(*opts);
    if (*json)
      std::cout << to_json(f).dump(2) << "\n";
    else
      print_table(f);
  });
}

} // namespace nicemu::cli
