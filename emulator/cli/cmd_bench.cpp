// nicemu bench cpu [--json] [--firmware-dir DIR]
// nicemu bench niam [--json] [--quick] [--large | --huge]
// nicemu bench logp [--json] [--quick]
// nicemu bench via [--json] [--quick] [--only vipl|fm] [--loss P]
#include "bench/bench_cpu.hpp"
#include "bench/bench_niam.hpp"
#include "bench/bench_via.hpp"
#include "bench/shipped_files.hpp"
#include "cli/bench_json.hpp"
#include "cli/bench_run.hpp"
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
  nlohmann::json j = bench_json("cpu");
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

void print_table(const NiamBenchFigures &f) {
  std::printf("nicemu bench niam (model %s, NI Active Messages firmware; "
              "virtual time unless said)\n\n",
              f.model.c_str());
  std::printf("barrier (mean over the rounds)\n%6s %7s %12s %10s\n", "nodes",
              "rounds", "latency us", "wall s");
  for (const NiamBarrierFigure &b : f.barrier)
    std::printf("%6u %7d %12.3f %10.2f\n", b.nodes, b.rounds, b.latency_us,
                b.wall_seconds);
  std::printf("\nActive Messages with host handlers, 2 nodes\n"
              "  round trip %.3f us, send overhead %.3f us, gap %.3f us\n",
              f.am_rtt_us, f.am_overhead_us, f.am_gap_us);
  std::printf("\nbcopy, 2 nodes\n%8s %10s\n", "bytes", "MB/s");
  for (const NiamBcopyFigure &b : f.bcopy)
    std::printf("%8llu %10.2f\n", (unsigned long long)b.bytes, b.mb_per_s);
  std::printf("\nspeed: %u-node barrier loop (%d rounds): %.3f ms virtual "
              "in %.3f ms wall, virtual/wall = %.3f\n",
              f.speed_nodes, f.speed_rounds, f.speed_virtual_seconds * 1e3,
              f.speed_wall_seconds * 1e3,
              f.speed_virtual_seconds / f.speed_wall_seconds);
  // Why the ratio is what it is: every instruction the cores ran had to be
  // emulated, and virtual/wall = 1 needs them at the rate the cores ran them.
  std::printf("  its %u NIC cores ran %.2f M instructions and slept %.1f %% "
              "of their cycles: %.1f M instructions emulated per wall "
              "second, where virtual/wall = 1 needs %.1f M\n",
              f.speed_nodes, f.speed_instructions / 1e6,
              f.speed_cycles ? 100.0 * f.speed_slept_cycles / f.speed_cycles
                             : 0.0,
              f.speed_instructions / f.speed_wall_seconds / 1e6,
              f.speed_instructions / f.speed_virtual_seconds / 1e6);
  std::printf("largest run: %u nodes, %d barriers, %.2f s wall\n"
              "  memory of all its processes together (peak of the summed "
              "PSS, %d samples): %.1f MiB\n"
              "  peak resident sizes added up (shared pages counted once per "
              "process): %.1f MiB (emulator %.1f MiB + hosts %.1f MiB)\n",
              f.largest_nodes, f.largest_rounds, f.largest_wall_seconds,
              f.pss_samples, f.peak_pss_kib / 1024.0,
              (f.emulator_peak_kib + f.hosts_peak_kib) / 1024.0,
              f.emulator_peak_kib / 1024.0, f.hosts_peak_kib / 1024.0);
}

nlohmann::json to_json(const NiamBenchFigures &f) {
  nlohmann::json j = bench_json("niam");
  j["model"] = f.model;
  j["barrier_rounds"] = f.barrier_rounds;
  j["barrier"] = nlohmann::json::array();
  for (const NiamBarrierFigure &b : f.barrier)
    j["barrier"].push_back({{"nodes", b.nodes},
                            {"rounds", b.rounds},
                            {"latency_us", b.latency_us},
                            {"wall_seconds", b.wall_seconds}});
  j["am"] = {{"round_trip_us", f.am_rtt_us},
             {"send_overhead_us", f.am_overhead_us},
             {"gap_us", f.am_gap_us}};
  j["bcopy"] = nlohmann::json::array();
  for (const NiamBcopyFigure &b : f.bcopy)
    j["bcopy"].push_back({{"bytes", b.bytes}, {"mb_per_s", b.mb_per_s}});
  j["speed"] = {
      {"nodes", f.speed_nodes},
      {"rounds", f.speed_rounds},
      {"virtual_seconds", f.speed_virtual_seconds},
      {"wall_seconds", f.speed_wall_seconds},
      {"virtual_per_wall", f.speed_virtual_seconds / f.speed_wall_seconds},
      {"instructions", f.speed_instructions},
      {"cycles", f.speed_cycles},
      {"slept_cycles", f.speed_slept_cycles},
      {"instructions_per_wall_second",
       f.speed_instructions / f.speed_wall_seconds},
      {"instructions_per_virtual_second",
       f.speed_instructions / f.speed_virtual_seconds}};
  j["largest_run"] = {{"nodes", f.largest_nodes},
                      {"rounds", f.largest_rounds},
                      {"wall_seconds", f.largest_wall_seconds},
                      {"peak_pss_kib", f.peak_pss_kib},
                      {"pss_samples", f.pss_samples},
                      {"peak_rss_kib",
                       {{"emulator", f.emulator_peak_kib},
                        {"hosts", f.hosts_peak_kib},
                        {"total", f.emulator_peak_kib + f.hosts_peak_kib}}}};
  return j;
}

void print_table(const NiamLossFigures &f) {
  std::printf("nicemu bench niam --loss (model %s, 2 nodes, virtual time; "
              "losses per packet and cable crossed, seed %llu)\n\n",
              f.model.c_str(), (unsigned long long)f.fault_seed);
  std::printf("bcopy: %llu-byte transfers; AM: round trip of a host message, "
              "%d rounds; barrier: %d rounds. Ratios: to the reliable image "
              "without loss.\n\n",
              (unsigned long long)f.bcopy_bytes, f.am_rounds, f.barrier_rounds);
  std::printf("%-18s %6s %11s %6s %11s %6s %11s %6s %8s %7s %7s\n", "image",
              "loss", "bcopy MB/s", "ratio", "AM rtt us", "ratio", "barrier us",
              "ratio", "packets", "lost", "resent");
  const NiamLossRow *base = nullptr;
  for (const NiamLossRow &r : f.rows)
    if (!base && r.image != "niam.img" && r.loss == 0)
      base = &r;
  for (const NiamLossRow &r : f.rows) {
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    std::printf(
        "%-18s %5.1f%% %11.2f %6.2f %11.2f %6.2f %11.2f %6.2f %8llu "
        "%7llu %7llu\n",
        r.image.c_str(), 100 * r.loss, r.bcopy_mb_per_s,
        base ? ratio(r.bcopy_mb_per_s, base->bcopy_mb_per_s) : 0.0, r.am_rtt_us,
        base ? ratio(r.am_rtt_us, base->am_rtt_us) : 0.0, r.barrier_us,
        base ? ratio(r.barrier_us, base->barrier_us) : 0.0,
        (unsigned long long)r.packets_sent, (unsigned long long)r.packets_lost,
        (unsigned long long)r.resent);
  }
}

nlohmann::json to_json(const NiamLossFigures &f) {
  nlohmann::json rows = nlohmann::json::array();
  for (const NiamLossRow &r : f.rows)
    rows.push_back({{"image", r.image},
                    {"loss", r.loss},
                    {"bcopy_mb_per_s", r.bcopy_mb_per_s},
                    {"am_round_trip_us", r.am_rtt_us},
                    {"barrier_us", r.barrier_us},
                    {"packets_sent", r.packets_sent},
                    {"packets_lost", r.packets_lost},
                    {"resent", r.resent}});
  return bench_json("niam-loss", {{"model", f.model},
                                  {"bcopy_bytes", f.bcopy_bytes},
                                  {"am_rounds", f.am_rounds},
                                  {"barrier_rounds", f.barrier_rounds},
                                  {"fault_seed", f.fault_seed},
                                  {"rows", rows}});
}

void add_niam_bench(CLI::App &bench) {
  auto opts = std::make_shared<NiamBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App *niam = bench.add_subcommand(
      "niam", "NI Active Messages: AM round trip, overhead and gap, barrier "
              "latency vs nodes, bcopy bandwidth vs size, virtual/wall time, "
              "memory of a large run");
  niam->add_flag("--json", *json,
                 "print the figures as JSON (see docs/benchmarks.md)");
  niam->add_flag("--quick", opts->quick,
                 "2 and 4 nodes, sizes up to 4 KiB, fewer rounds");
  niam->add_option("--max-nodes", opts->max_nodes,
                   "barrier runs on 2, 4, .. 64, 256 and 1024 nodes up to "
                   "this many (1024 starts 1024 host processes and takes "
                   "minutes; 64 takes seconds)")
      ->capture_default_str();
  // Shorthands of earlier versions, kept for scripts.
  niam->add_flag_callback(
          "--large", [opts] { opts->max_nodes = 256; }, "--max-nodes 256")
      ->group("");
  niam->add_flag_callback(
          "--huge", [opts] { opts->max_nodes = 1024; }, "--max-nodes 1024")
      ->group("");
  niam->add_option("--firmware", opts->firmware,
                   "the niam image (default: the one shipped)");
  niam->add_option("--programs-dir", opts->programs_dir,
                   "directory with the niam_bench_* host programs");
  auto loss = std::make_shared<NiamLossOptions>();
  niam->add_option("--loss", loss->loss,
                   "instead of the usual figures: goodput and latency of the "
                   "reliable mode (niam_reliable.img) on 2 nodes at these "
                   "loss rates per packet and cable (e.g. --loss 0.001 0.01 "
                   "0.1), beside 0 and the lean image")
      ->check(CLI::Range(0.0, 0.99));
  niam->add_option("--fault-seed", loss->fault_seed,
                   "seed of the losses (with --loss)")
      ->capture_default_str();
  niam->add_option("--reliable-firmware", loss->firmware,
                   "the niam_reliable image (with --loss; default: the one "
                   "shipped)");
  auto progress = std::make_shared<ProgressMode>(ProgressMode::Auto);
  add_progress_options(*niam, *progress);
  niam->callback([opts, json, progress, loss] {
    if (!loss->loss.empty()) {
      loss->baseline = opts->firmware;
      loss->programs_dir = opts->programs_dir;
      loss->quick = opts->quick;
      NiamLossFigures f =
          run_bench(*loss, *progress, "bench niam", run_niam_loss_bench);
      if (*json)
        std::cout << to_json(f).dump(2) << "\n";
      else
        print_table(f);
      return;
    }
    NiamBenchFigures f =
        run_bench(*opts, *progress, "bench niam", run_niam_bench);
    if (*json)
      std::cout << to_json(f).dump(2) << "\n";
    else
      print_table(f);
  });
}

void print_table(const LogpFigures &f) {
  std::printf("nicemu bench logp (model %s, NI Active Messages with host "
              "handlers, 2 nodes, %d rounds; virtual time)\n\n",
              f.model.c_str(), f.rounds);
  std::printf("%-8s %12s   %s\n", "LogP", "measured", "from the model");
  std::printf("%-8s %9.3f us   one way, NIC firmware included; links %.3f "
              "us/cable, switch %.3f us\n",
              "L", f.L_us, f.link_latency_us, f.switch_latency_us);
  std::printf("%-8s %9.3f us   PIO write of one word %.3f us\n", "o_send",
              f.o_send_us, f.pio_write_us);
  std::printf("%-8s %9.3f us   poll of host memory %.3f us (an empty poll "
              "measured %.3f us)\n",
              "o_recv", f.o_recv_us, f.poll_us, f.poll_empty_us);
  std::printf("%-8s %9.3f us   set by the NIC firmware at %.1f MHz\n", "g",
              f.g_us, f.clock_mhz);
  std::printf("%-8s %9.3f ns/B host DMA %.3f/%.3f ns/B (to card/to host), "
              "Tx %.3f ns/B, link %.3f ns/B\n",
              "G", f.G_ns_per_byte, f.host_dma_to_card_ns_per_byte,
              f.host_dma_to_host_ns_per_byte, f.tx_ns_per_byte,
              f.link_ns_per_byte);
  std::printf("\nround trip %.3f us (= 2 (o_send + L + o_recv))\n", f.rtt_us);
  for (const auto &[bytes, gap] : f.bulk_gap_us)
    std::printf("back-to-back %llu-byte messages: one every %.3f us\n",
                (unsigned long long)bytes, gap);
}

nlohmann::json to_json(const LogpFigures &f) {
  nlohmann::json bulk = nlohmann::json::array();
  for (const auto &[bytes, gap] : f.bulk_gap_us)
    bulk.push_back({{"bytes", bytes}, {"interval_us", gap}});
  return bench_json(
      "logp",
      {{"model", f.model},
       {"rounds", f.rounds},
       {"measured",
        {{"L_us", f.L_us},
         {"o_send_us", f.o_send_us},
         {"o_recv_us", f.o_recv_us},
         {"g_us", f.g_us},
         {"G_ns_per_byte", f.G_ns_per_byte},
         {"round_trip_us", f.rtt_us},
         {"empty_poll_us", f.poll_empty_us},
         {"bulk", bulk}}},
       {"model_inputs",
        {{"clock_mhz", f.clock_mhz},
         {"pio_write_us", f.pio_write_us},
         {"pio_read_us", f.pio_read_us},
         {"poll_own_memory_us", f.poll_us},
         {"host_dma_to_card_ns_per_byte", f.host_dma_to_card_ns_per_byte},
         {"host_dma_to_host_ns_per_byte", f.host_dma_to_host_ns_per_byte},
         {"tx_ns_per_byte", f.tx_ns_per_byte},
         {"link_ns_per_byte", f.link_ns_per_byte},
         {"link_latency_us", f.link_latency_us},
         {"switch_latency_us", f.switch_latency_us}}}});
}

void add_logp_bench(CLI::App &bench) {
  auto opts = std::make_shared<NiamBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App *logp = bench.add_subcommand(
      "logp", "LogP/LogGP parameters (L, o_send, o_recv, g, G) of Active "
              "Messages on the niam firmware, beside the model's inputs");
  logp->add_flag("--json", *json, "print the figures as JSON");
  logp->add_flag("--quick", opts->quick, "fewer rounds");
  logp->add_option("--firmware", opts->firmware,
                   "the niam image (default: the one shipped; its model is "
                   "the one measured)");
  logp->add_option("--programs-dir", opts->programs_dir,
                   "directory with the niam_bench_* host programs");
  auto progress = std::make_shared<ProgressMode>(ProgressMode::Auto);
  add_progress_options(*logp, *progress);
  logp->callback([opts, json, progress] {
    LogpFigures f = run_bench(*opts, *progress, "bench logp", run_logp_bench);
    if (*json)
      std::cout << to_json(f).dump(2) << "\n";
    else
      print_table(f);
  });
}

void print_series(const ViaBenchFigures &f, const ViaSeries &s) {
  std::printf("%8s %11s %9s %9s %11s %7s %7s %7s\n", "bytes", "latency us",
              "wire us", "MB/s", "bound MB/s", "% bound", "% line", "frames");
  for (const ViaSizeFigure &z : s.sizes)
    std::printf("%8llu %11.2f %9.2f %9.3f %11.3f %7.1f %7.1f %7u\n",
                (unsigned long long)z.bytes, z.latency_us, z.wire_us,
                z.mb_per_s, z.bound_mb_per_s,
                100 * z.mb_per_s / z.bound_mb_per_s,
                100 * z.mb_per_s / f.line_rate_mb_per_s, z.frames);
}

void print_table(const ViaBenchFigures &f) {
  std::printf("nicemu bench via (model %s, VI provider firmware, 2 nodes; "
              "virtual time)\n\n",
              f.model.c_str());
  std::printf("line rate %.3f MB/s (%.0f Mb/s); a frame on the wire: "
              "preamble+SFD %u, header %u, FCS %u, padded to %u, gap %u "
              "bytes\n",
              f.line_rate_mb_per_s, f.line_rate_mb_per_s * 8, f.preamble_bytes,
              f.ethernet_header_bytes, f.fcs_bytes, f.min_frame_bytes,
              f.interframe_gap_bytes);
  std::printf("bound: the best goodput the framing allows at line rate, "
              "message bytes / wire bytes x line rate;\n"
              "wire us: the message's frames at line rate (latency is at "
              "least that)\n");
  if (!f.vipl.sizes.empty()) {
    std::printf("\nVIPL, reliable delivery: %u-byte VI header, fragments of "
                "%u bytes (one-way latency: mean of %d round trips; MB/s: "
                "streams of %d)\n",
                f.vi_header_bytes, f.vi_fragment_bytes, f.vipl.rounds,
                f.vipl.stream);
    print_series(f, f.vipl);
  }
  if (!f.vipl_lossy.sizes.empty()) {
    std::printf("\nVIPL, reliable delivery, %g%% of frames lost on each cable "
                "(nicemu run --link-loss %g --fault-seed %llu; 2 cables a "
                "frame); frames sent again: %llu, duplicates dropped: %llu\n",
                100 * f.loss, f.loss, (unsigned long long)f.fault_seed,
                (unsigned long long)f.retransmitted,
                (unsigned long long)f.duplicates);
    std::printf("%8s %11s %11s %7s %9s %11s %7s\n", "bytes", "latency us",
                "lossless", "x", "MB/s", "lossless", "x");
    for (size_t i = 0; i < f.vipl_lossy.sizes.size() && i < f.vipl.sizes.size();
         ++i) {
      const ViaSizeFigure &z = f.vipl_lossy.sizes[i], &n = f.vipl.sizes[i];
      std::printf("%8llu %11.2f %11.2f %7.2f %9.3f %11.3f %7.2f\n",
                  (unsigned long long)z.bytes, z.latency_us, n.latency_us,
                  z.latency_us / n.latency_us, z.mb_per_s, n.mb_per_s,
                  z.mb_per_s / n.mb_per_s);
    }
  }
  if (!f.fm.sizes.empty()) {
    std::printf("\nComet-FM over IP: IPv4 + UDP + FM headers %u bytes, one "
                "datagram per message (one-way latency: mean of %d round "
                "trips; MB/s: streams of %d)\n",
                f.fm_headers_bytes, f.fm.rounds, f.fm.stream);
    print_series(f, f.fm);
  }
  std::printf("\nwall time of the runs:");
  if (!f.vipl.sizes.empty())
    std::printf(" VIPL %.2f s%s", f.vipl.wall_seconds,
                f.fm.sizes.empty() && f.vipl_lossy.sizes.empty() ? "" : ",");
  if (!f.vipl_lossy.sizes.empty())
    std::printf(" VIPL with loss %.2f s%s", f.vipl_lossy.wall_seconds,
                f.fm.sizes.empty() ? "" : ",");
  if (!f.fm.sizes.empty())
    std::printf(" FM %.2f s", f.fm.wall_seconds);
  std::printf("\n");
}

nlohmann::json to_json(const ViaSeries &s) {
  nlohmann::json sizes = nlohmann::json::array();
  for (const ViaSizeFigure &z : s.sizes)
    sizes.push_back({{"bytes", z.bytes},
                     {"latency_us", z.latency_us},
                     {"mb_per_s", z.mb_per_s},
                     {"frames", z.frames},
                     {"wire_bytes", z.wire_bytes},
                     {"wire_us", z.wire_us},
                     {"bound_mb_per_s", z.bound_mb_per_s}});
  return {{"rounds", s.rounds},
          {"stream", s.stream},
          {"wall_seconds", s.wall_seconds},
          {"sizes", sizes}};
}

nlohmann::json to_json(const ViaBenchFigures &f) {
  nlohmann::json j =
      bench_json("via", {{"model", f.model},
                         {"line_rate_mb_per_s", f.line_rate_mb_per_s},
                         {"framing",
                          {{"ethernet_header_bytes", f.ethernet_header_bytes},
                           {"fcs_bytes", f.fcs_bytes},
                           {"preamble_bytes", f.preamble_bytes},
                           {"interframe_gap_bytes", f.interframe_gap_bytes},
                           {"min_frame_bytes", f.min_frame_bytes},
                           {"max_payload_bytes", f.max_payload_bytes},
                           {"vi_header_bytes", f.vi_header_bytes},
                           {"vi_fragment_bytes", f.vi_fragment_bytes},
                           {"fm_headers_bytes", f.fm_headers_bytes},
                           {"fm_max_message", f.fm_max_message}}}});
  if (!f.vipl.sizes.empty())
    j["vipl"] = to_json(f.vipl);
  if (!f.vipl_lossy.sizes.empty()) // only with --loss
    j["loss"] = {{"rate", f.loss},
                 {"fault_seed", f.fault_seed},
                 {"retransmitted", f.retransmitted},
                 {"duplicates", f.duplicates},
                 {"vipl", to_json(f.vipl_lossy)}};
  if (!f.fm.sizes.empty())
    j["fm"] = to_json(f.fm);
  return j;
}

void add_via_bench(CLI::App &bench) {
  auto opts = std::make_shared<ViaBenchOptions>();
  auto json = std::make_shared<bool>(false);
  auto only = std::make_shared<std::string>();
  CLI::App *via = bench.add_subcommand(
      "via", "VIPL and Comet-FM on the via firmware (comet): one-way latency "
             "and bandwidth vs message size, beside the line rate and the "
             "best goodput Ethernet framing allows");
  via->add_flag("--json", *json,
                "print the figures as JSON (see docs/benchmarks.md)");
  via->add_flag("--quick", opts->quick, "every fourth size, fewer rounds");
  via->add_option("--only", *only, "measure one protocol only")
      ->check(CLI::IsMember({"vipl", "fm"}));
  via->add_option("--loss", opts->loss,
                  "also run VIPL with this probability that a frame crossing "
                  "a cable is lost (as nicemu run --link-loss), beside the "
                  "lossless figures")
      ->check(CLI::Range(0.0, 0.999999));
  via->add_option("--fault-seed", opts->fault_seed,
                  "seed of the losses of --loss")
      ->capture_default_str();
  via->add_option("--firmware", opts->firmware,
                  "the via image (default: the one shipped)");
  via->add_option("--programs-dir", opts->programs_dir,
                  "directory with vipl_pingpong and fm_pingpong");
  auto progress = std::make_shared<ProgressMode>(ProgressMode::Auto);
  add_progress_options(*via, *progress);
  via->callback([opts, json, only, progress] {
    opts->vipl = *only != "fm";
    opts->fm = *only != "vipl";
    ViaBenchFigures f = run_bench(*opts, *progress, "bench via", run_via_bench);
    if (*json)
      std::cout << to_json(f).dump(2) << "\n";
    else
      print_table(f);
  });
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
      opts->firmware_dir = shipped_firmware_dir();
    CpuBenchFigures f = run_cpu_bench(*opts);
    if (*json)
      std::cout << to_json(f).dump(2) << "\n";
    else
      print_table(f);
  });
  add_niam_bench(*bench);
  add_logp_bench(*bench);
  add_via_bench(*bench);
  add_dimmnet_bench(*bench);
  add_uzura_bench(*bench);
  add_speed_bench(*bench);
  add_scale_bench(*bench);
  add_replay_bench(*bench);
}

} // namespace nicemu::cli
