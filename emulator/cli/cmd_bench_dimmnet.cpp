// nicemu bench dimmnet [--json] [--quick] [--setup A ...]: DIMMnet-1 in the
// reference set-ups (bench/bench_dimmnet.hpp, docs/benchmarks.md).
#include "bench/bench_dimmnet.hpp"
#include "cli/bench_json.hpp"
#include "cli/bench_run.hpp"
#include "commands.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace nicemu::cli {

namespace {

void print_collectives(const std::vector<DimmnetCollectives> &rows) {
  std::printf("%-5s %5s %10s %10s %10s %10s %10s\n", "setup", "nodes",
              "barrier", "unsigned", "ull", "float", "double");
  for (const DimmnetCollectives &k : rows)
    std::printf("%-5s %5u %10.3f %10.3f %10.3f %10.3f %10.3f\n",
                k.setup.c_str(), k.nodes, k.barrier_us, k.allreduce_us[0],
                k.allreduce_us[1], k.allreduce_us[2], k.allreduce_us[3]);
}

void print_protocols(const DimmnetBenchFigures &f) {
  if (!f.collectives.empty()) {
    std::printf("\nBarrier and global sum (us, mean of %d calls on rank 0; "
                "8-ary tree up by AOTF, multicast down)\n",
                f.collectives[0].rounds);
    print_collectives(f.collectives);
  }
  if (!f.collective_curve.empty()) {
    std::printf("\nAgainst the node count, set-up D (mean of %d calls)\n",
                f.collective_curve[0].rounds);
    print_collectives(f.collective_curve);
  }
  for (const DimmnetSendRecv &s : f.sendrecv) {
    std::printf("\nDIMM_Send/DIMM_Recv, set-up %s (%s)%s\n", s.setup.c_str(),
                s.description.c_str(),
                s.receive_status ? ": data carry the receive-status address"
                                 : ": ACK, then a separate notice");
    std::printf("ping-pong, half round trip (us):");
    for (const auto &[bytes, us] : s.pingpong_us)
      std::printf("  %u B %.3f", bytes, us);
    std::printf("\none message, from the later call to the data in the "
                "buffer: us (MB/s)\n");
    std::printf("%8s %22s %22s %22s\n", "bytes", "Recv first, BOTF",
                "Recv first, PUSH", "Send first, PULL");
    for (const DimmnetSendRecvPoint &p : s.points) {
      std::printf("%8u", p.bytes);
      for (double us :
           {p.recv_first_botf_us, p.recv_first_push_us, p.send_first_pull_us})
        std::printf(" %11.3f (%7.1f)", us, p.bytes / us);
      std::printf("\n");
    }
    if (s.push_beats_botf_from)
      std::printf("PUSH beats BOTF from %u bytes", s.push_beats_botf_from);
    else if (!s.points.empty())
      std::printf("PUSH does not beat BOTF up to %u bytes (it copies the "
                  "message into a bank first)",
                  s.points.back().bytes);
    std::printf("; DIMM_Send uses BOTF up to 464 bytes, PUSH above\n");
  }
}

void print_table(const DimmnetBenchFigures &f) {
  std::printf("nicemu bench dimmnet (model %s, dimmnet firmware, 2 nodes "
              "cabled directly; virtual time)\n",
              f.model.c_str());
  std::printf("\nAOTF 8-byte round trip (mean of the ping-pong), one way = "
              "half; host's own store and load; wall time per round trip\n");
  std::printf("%-5s %-68s %8s %8s %8s %8s %10s\n", "setup",
              "link, host, "
              "DIMM and SWIF clocks",
              "rtt us", "1-way us", "store ns", "load ns", "wall us/rt");
  for (const DimmnetSetup &s : f.setups)
    std::printf("%-5s %-68s %8.3f %8.3f %8.1f %8.1f %10.1f\n", s.name.c_str(),
                s.description.c_str(), s.rtt_us, s.one_way_us, s.store_ns,
                s.load_ns, s.wall_us_per_round_trip);
  std::printf("\nOne way, stage by stage (ns), the last AOTF word of the run; "
              "the rest of the one-way time is the receiver's polling\n");
  if (!f.setups.empty()) {
    std::printf("%-46s", "stage");
    for (const DimmnetSetup &s : f.setups)
      std::printf(" %7s", s.name.c_str());
    std::printf("\n");
    for (size_t i = 0; i < f.setups[0].stages.size(); ++i) {
      std::printf("%-46s", f.setups[0].stages[i].name.c_str());
      for (const DimmnetSetup &s : f.setups)
        std::printf(" %7.1f", s.stages[i].ns);
      std::printf("\n");
    }
    std::printf("%-46s", "store to LLCM");
    for (const DimmnetSetup &s : f.setups)
      std::printf(" %7.1f", s.store_to_llcm_ns);
    std::printf("\n%-46s", "polling (one way - store to LLCM)");
    for (const DimmnetSetup &s : f.setups)
      std::printf(" %7.1f", s.one_way_us * 1000 - s.store_to_llcm_ns);
    std::printf("\n");
  }
  std::printf("\nBandwidth (MB/s) of streams of messages, to the receiver's "
              "ack: BOTF (464-byte pieces, two windows in turn) / AOTF "
              "(8-byte stores) / PUSH (from SO-DIMM bank 0, each waited "
              "for)\n");
  if (!f.setups.empty()) {
    std::printf("%-6s", "bytes");
    for (const DimmnetSetup &s : f.setups)
      std::printf(" %20s", (s.name + " BOTF/AOTF/PUSH").c_str());
    std::printf("\n");
    for (size_t i = 0; i < f.setups[0].bandwidth.size(); ++i) {
      std::printf("%-6u", f.setups[0].bandwidth[i].bytes);
      for (const DimmnetSetup &s : f.setups)
        std::printf(" %6.1f/%6.1f/%6.1f", s.bandwidth[i].botf_mb_per_s,
                    s.bandwidth[i].aotf_mb_per_s, s.bandwidth[i].push_mb_per_s);
      std::printf("\n");
    }
    std::printf("%-6s", "BOTF>");
    for (const DimmnetSetup &s : f.setups)
      std::printf(" %20u", s.crossover_bytes);
    std::printf("   (first size where BOTF beats AOTF)\n%-6s", "PUSH>");
    for (const DimmnetSetup &s : f.setups)
      std::printf(" %20u", s.push_crossover_bytes);
    std::printf("   (first size where PUSH beats BOTF; 0: none)\n");
  }
  if (f.interrupt.rounds > 0) {
    const DimmnetInterruptFigures &i = f.interrupt;
    std::printf("\nAOTF against interrupt-AOTF (the receiving core writes "
                "the word into LLCM), set-up %s: %s; mean of %d round "
                "trips\n",
                i.setup.c_str(), i.description.c_str(), i.rounds);
    std::printf("  AOTF            round trip %8.3f us, one way %8.3f us\n",
                i.aotf_rtt_us, i.aotf_rtt_us / 2);
    std::printf("  interrupt-AOTF  round trip %8.3f us, one way %8.3f us "
                "(+%.3f us one way)\n",
                i.interrupt_rtt_us, i.interrupt_rtt_us / 2,
                (i.interrupt_rtt_us - i.aotf_rtt_us) / 2);
  }
  print_protocols(f);
  double wall = f.protocols_wall_seconds;
  for (const DimmnetSetup &s : f.setups)
    wall += s.wall_seconds;
  std::printf("\nwall time of the runs: %.2f s\n", wall);
}

nlohmann::json to_json(const DimmnetBenchFigures &f) {
  nlohmann::json setups = nlohmann::json::array();
  for (const DimmnetSetup &s : f.setups) {
    nlohmann::json stages = nlohmann::json::array();
    for (const DimmnetStage &st : s.stages)
      stages.push_back({{"stage", st.name}, {"ns", st.ns}});
    nlohmann::json bw = nlohmann::json::array();
    for (const DimmnetBandwidth &b : s.bandwidth)
      bw.push_back({{"bytes", b.bytes},
                    {"botf_mb_per_s", b.botf_mb_per_s},
                    {"aotf_mb_per_s", b.aotf_mb_per_s},
                    {"push_mb_per_s", b.push_mb_per_s}});
    setups.push_back({{"setup", s.name},
                      {"description", s.description},
                      {"rounds", s.rounds},
                      {"rtt_us", s.rtt_us},
                      {"one_way_us", s.one_way_us},
                      {"stages", stages},
                      {"store_to_llcm_ns", s.store_to_llcm_ns},
                      {"store_ns", s.store_ns},
                      {"load_ns", s.load_ns},
                      {"bandwidth", bw},
                      {"botf_beats_aotf_from_bytes", s.crossover_bytes},
                      {"push_beats_botf_from_bytes", s.push_crossover_bytes},
                      {"wall_seconds", s.wall_seconds},
                      {"wall_us_per_round_trip", s.wall_us_per_round_trip}});
  }
  nlohmann::json j =
      bench_json("dimmnet", {{"model", f.model}, {"setups", setups}});
  auto collectives = [](const std::vector<DimmnetCollectives> &rows) {
    nlohmann::json out = nlohmann::json::array();
    for (const DimmnetCollectives &k : rows)
      out.push_back({{"setup", k.setup},
                     {"nodes", k.nodes},
                     {"rounds", k.rounds},
                     {"barrier_us", k.barrier_us},
                     {"allreduce_us",
                      {{"unsigned", k.allreduce_us[0]},
                       {"unsigned_long_long", k.allreduce_us[1]},
                       {"float", k.allreduce_us[2]},
                       {"double", k.allreduce_us[3]}}}});
    return out;
  };
  if (!f.collectives.empty())
    j["collectives"] = collectives(f.collectives);
  if (!f.collective_curve.empty())
    j["collective_curve"] = collectives(f.collective_curve);
  if (!f.sendrecv.empty()) {
    nlohmann::json sr = nlohmann::json::array();
    for (const DimmnetSendRecv &s : f.sendrecv) {
      nlohmann::json pp = nlohmann::json::array(),
                     pts = nlohmann::json::array();
      for (const auto &[bytes, us] : s.pingpong_us)
        pp.push_back({{"bytes", bytes}, {"half_rtt_us", us}});
      for (const DimmnetSendRecvPoint &p : s.points)
        pts.push_back({{"bytes", p.bytes},
                       {"recv_first_botf_us", p.recv_first_botf_us},
                       {"recv_first_push_us", p.recv_first_push_us},
                       {"send_first_pull_us", p.send_first_pull_us}});
      sr.push_back({{"setup", s.setup},
                    {"description", s.description},
                    {"receive_status", s.receive_status},
                    {"pingpong", pp},
                    {"messages", pts},
                    {"push_beats_botf_from_bytes", s.push_beats_botf_from},
                    {"wall_seconds", s.wall_seconds}});
    }
    j["sendrecv"] = sr;
  }
  j["protocols_wall_seconds"] = f.protocols_wall_seconds;
  if (f.interrupt.rounds > 0)
    j["interrupt_aotf"] = {{"setup", f.interrupt.setup},
                           {"description", f.interrupt.description},
                           {"rounds", f.interrupt.rounds},
                           {"aotf_rtt_us", f.interrupt.aotf_rtt_us},
                           {"interrupt_rtt_us", f.interrupt.interrupt_rtt_us}};
  return j;
}

} // namespace

void add_dimmnet_bench(CLI::App &bench) {
  auto opts = std::make_shared<DimmnetBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App *cmd = bench.add_subcommand(
      "dimmnet", "DIMMnet-1 (martini, dimmnet firmware) in set-ups A-F: AOTF "
                 "round trip, one-way stages, host costs, BOTF, AOTF and "
                 "PUSH bandwidth; barrier and global sums on 2-64 nodes; "
                 "DIMM_Send/DIMM_Recv against the size");
  cmd->add_flag("--json", *json,
                "print the figures as JSON (see docs/benchmarks.md)");
  cmd->add_flag("--quick", opts->quick, "fewer rounds and messages");
  cmd->add_option("--setup", opts->setups, "set-ups to measure (default A-F)")
      ->check(CLI::IsMember({"A", "B", "C", "D", "E", "F"}));
  auto no_interrupt = std::make_shared<bool>(false);
  cmd->add_flag("--no-interrupt", *no_interrupt,
                "skip AOTF against interrupt-AOTF in set-up SR");
  auto no_collectives = std::make_shared<bool>(false);
  auto no_sendrecv = std::make_shared<bool>(false);
  cmd->add_flag("--no-collectives", *no_collectives,
                "skip barrier and global sums");
  cmd->add_flag("--no-sendrecv", *no_sendrecv, "skip DIMM_Send/DIMM_Recv");
  cmd->add_option("--firmware", opts->firmware,
                  "the dimmnet image (default: the one shipped)");
  cmd->add_option("--programs-dir", opts->programs_dir,
                  "directory with dimmnet_bench, aotf_pingpong, "
                  "dimm_collectives and dimm_sendrecv");
  auto progress = std::make_shared<ProgressMode>(ProgressMode::Auto);
  add_progress_options(*cmd, *progress);
  cmd->callback(
      [opts, json, no_interrupt, no_collectives, no_sendrecv, progress] {
        opts->interrupt = !*no_interrupt;
        opts->collectives = !*no_collectives;
        opts->sendrecv = !*no_sendrecv;
        DimmnetBenchFigures f =
            run_bench(*opts, *progress, "bench dimmnet", run_dimmnet_bench);
        if (*json)
          std::cout << to_json(f).dump(2) << "\n";
        else
          print_table(f);
      });
}

} // namespace nicemu::cli
