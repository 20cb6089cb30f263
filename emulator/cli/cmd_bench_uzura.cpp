// nicemu bench uzura [--json] [--quick]: the UZURA card
// (bench/bench_uzura.hpp, docs/benchmarks.md).
#include "bench/bench_uzura.hpp"
#include "cli/bench_json.hpp"
#include "commands.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace nicemu::cli {

namespace {

void print_transpose(const UzuraTranspose &t) {
  const int elements = t.n * t.n;
  std::printf("\nA %d x %d float matrix (%d bytes) transposed on its way to "
              "the other node, until the target program has it in place "
              "(us):\n",
              t.n, t.n, elements * 4);
  std::printf("  %-62s %9.3f\n",
              "one typed RDMA write (the target card scatters every float)",
              t.typed_to_target_us);
  std::printf("    %-60s %9.3f\n",
              "of which the call to its completion (the target's ACK)",
              t.typed_completion_us);
  char what[96];
  std::snprintf(what, sizeof what,
                "pack, send, unpack (the host copies at %.2f ns a float)",
                t.copy_ns_per_element);
  std::printf("  %-62s %9.3f\n", what, t.packed_to_target_us);
  std::snprintf(what, sizeof what, "pack: %d plain copies", elements);
  std::printf("    %-60s %9.3f\n", what, t.pack_us);
  std::printf("    %-60s %9.3f\n",
              "send: one RDMA write, then a message that it landed", t.send_us);
  std::snprintf(what, sizeof what, "unpack: %d strided copies", elements);
  std::printf("    %-60s %9.3f\n", what, t.unpack_us);
  std::printf("  %-62s %9.2f\n", "typed / pack, send, unpack",
              t.typed_over_packed());
  std::printf("  checked at the target: %d (typed) and %d (unpacked) of %d "
              "elements right\n",
              t.typed_checked, t.packed_checked, elements);
}

void print_table(const UzuraBenchFigures &f) {
  std::printf("nicemu bench uzura (model %s, uzura firmware, 2 nodes on one "
              "10GbE switch; virtual time)\n",
              f.model.c_str());
  std::printf("\n64-byte messages: round trip %.3f us (mean of %d), one way "
              "%.3f us\n",
              f.rtt_us, f.rounds, f.one_way_us);
  std::printf("\nOne way, stage by stage (ns), the last message of the run:\n");
  for (const UzuraStage &s : f.stages)
    std::printf("  %-48s %9.1f\n", s.name.c_str(), s.ns);
  std::printf("  %-48s %9.1f\n", "doorbell to the arrival slot",
              f.doorbell_to_placed_ns);
  std::printf("  (the rest of the one-way time: the program's own calls and "
              "its poll, 0.18 us after the slot lands)\n");
  std::printf("\nRDMA write, one at a time, from the call to its completion "
              "(the target's ACK); 4 KB blocks pipelined over the source "
              "bus, the wire and the destination bus\n");
  std::printf("%10s %12s %10s %10s\n", "bytes", "us", "MB/s", "% bound");
  for (const UzuraWrite &w : f.writes)
    std::printf("%10u %12.3f %10.1f %10.1f\n", w.bytes, w.us, w.mb_per_s,
                100.0 * w.mb_per_s / f.bus_bound_mb_per_s);
  std::printf("bound: 4 KB over the source PCI-X bus, %.1f MB/s\n",
              f.bus_bound_mb_per_s);
  std::printf("\nNotification modes: 64-byte round trip, and node 0's PCI-X "
              "bus busy during the run\n");
  std::printf("%-12s %-10s %10s %12s\n", "in", "out", "rtt us", "bus busy %");
  for (const UzuraMode &m : f.modes)
    std::printf("%-12s %-10s %10.3f %12.1f\n", m.in.c_str(), m.out.c_str(),
                m.rtt_us, m.bus_busy_percent);
  print_transpose(f.transpose);
  std::printf("\nwall time of the runs: %.2f s\n", f.wall_seconds);
}

nlohmann::json to_json(const UzuraBenchFigures &f) {
  nlohmann::json stages = nlohmann::json::array(),
                 writes = nlohmann::json::array(),
                 modes = nlohmann::json::array();
  for (const UzuraStage &s : f.stages)
    stages.push_back({{"stage", s.name}, {"ns", s.ns}});
  for (const UzuraWrite &w : f.writes)
    writes.push_back(
        {{"bytes", w.bytes}, {"us", w.us}, {"mb_per_s", w.mb_per_s}});
  for (const UzuraMode &m : f.modes)
    modes.push_back({{"in", m.in},
                     {"out", m.out},
                     {"rounds", m.rounds},
                     {"rtt_us", m.rtt_us},
                     {"bus_busy_percent", m.bus_busy_percent}});
  const UzuraTranspose &t = f.transpose;
  nlohmann::json transpose = {
      {"n", t.n},
      {"bytes", t.n * t.n * 4},
      {"host_copy_ns_per_element", t.copy_ns_per_element},
      {"typed",
       {{"completion_us", t.typed_completion_us},
        {"to_target_us", t.typed_to_target_us},
        {"checked_elements", t.typed_checked}}},
      {"packed",
       {{"to_target_us", t.packed_to_target_us},
        {"pack_us", t.pack_us},
        {"send_us", t.send_us},
        {"unpack_us", t.unpack_us},
        {"copied_elements", 2 * t.n * t.n},
        {"checked_elements", t.packed_checked}}},
      {"typed_over_packed", t.typed_over_packed()}};
  return bench_json("uzura",
                    {{"model", f.model},
                     {"rounds", f.rounds},
                     {"rtt_us", f.rtt_us},
                     {"one_way_us", f.one_way_us},
                     {"stages", stages},
                     {"doorbell_to_placed_ns", f.doorbell_to_placed_ns},
                     {"rdma_write", writes},
                     {"bus_bound_mb_per_s", f.bus_bound_mb_per_s},
                     {"notification_modes", modes},
                     {"transpose", transpose},
                     {"wall_seconds", f.wall_seconds}});
}

} // namespace

void add_uzura_bench(CLI::App &bench) {
  auto opts = std::make_shared<UzuraBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App *cmd = bench.add_subcommand(
      "uzura", "UZURA (uzura firmware): 64-byte round trip and its stages, "
               "RDMA-write throughput against the size, the notification "
               "modes compared, a matrix transpose by one typed write "
               "against pack, send, unpack");
  cmd->add_flag("--json", *json,
                "print the figures as JSON (see docs/benchmarks.md)");
  cmd->add_flag("--quick", opts->quick, "fewer rounds, sizes up to 64 KiB");
  cmd->add_option("--firmware", opts->firmware,
                  "the uzura image (default: the one shipped)");
  cmd->add_option("--programs-dir", opts->programs_dir,
                  "directory with uzura_bench");
  cmd->callback([opts, json] {
    UzuraBenchFigures f = run_uzura_bench(*opts);
    if (*json)
      std::cout << to_json(f).dump(2) << "\n";
    else
      print_table(f);
  });
}

} // namespace nicemu::cli
