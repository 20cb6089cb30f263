#include "bench/bench_uzura.hpp"

#include "bench/bench_hosts.hpp"
#include "bench/shipped_files.hpp"
#include "boards/uzura/engine.hpp"
#include "host/cluster_run.hpp"
#include "nicemu/error.hpp"

namespace nicemu {

namespace {

using uzura::Engine;

Engine &engine_of(Node &node) {
  auto *e = dynamic_cast<Engine *>(node.device_at(NICEMU_ENGINE_BASE));
  if (!e)
    throw Error("bench: the card has no UZURA engine (not a uzura model)");
  return *e;
}

double ns(Time from, Time to) {
  return double(to - from) / 1000.0;
}

// The last 64-byte message of the ping-pong (node 1's answer to node 0),
// stage by stage from the two cards' records.
void breakdown(Cluster &cluster, UzuraBenchFigures &f) {
  auto &nodes = cluster.sim.nodes();
  const Engine::SendTimes &tx = engine_of(*nodes[1]).last_sent();
  const Engine::ReceiveTimes &rx = engine_of(*nodes[0]).last_received();
  if (tx.packet == 0 || tx.packet != rx.packet)
    throw Error("bench: the last messages of the two cards differ");
  f.stages = {
      {"doorbell: the program's register write", ns(tx.host, tx.doorbell)},
      {"command fetch: 24 ns, then 64 bytes over PCI-X",
       ns(tx.doorbell, tx.command)},
      {"firmware: the command becomes a work request",
       ns(tx.command, tx.submit)},
      {"data: translation, 64 bytes over PCI-X", ns(tx.submit, tx.data)},
      {"sending FPGA (outside PL4, PL4)", ns(tx.data, tx.ready)},
      {"MAC, sending half", ns(tx.ready, tx.head)},
      {"wire: cable, switch, the frame's bytes", ns(tx.head, rx.tail)},
      {"MAC, receiving half, and the receiving FPGA", ns(rx.tail, rx.parsed)},
      {"placement: the arrival slot over PCI-X", ns(rx.parsed, rx.placed)},
  };
  f.doorbell_to_placed_ns = ns(tx.host, rx.placed);
}

// The values of the one line "KEY V1 ... Vcount"; throws otherwise.
std::vector<double> one_line(const HostRun &run, const std::string &key,
                             size_t count) {
  auto found = values_of(run.output, key);
  if (found.size() != 1 || found[0].size() != count)
    throw Error("bench: expected one '" + key + "' line of " +
                std::to_string(count) + " values from the hosts, got:\n" +
                run.output);
  return found[0];
}

UzuraTranspose transpose(const BenchContext &base, double &wall) {
  HostRun run = run_hosts(base, 2, {"uzura_bench", "--raw", "--transpose"});
  wall += run.total_wall;
  UzuraTranspose t;
  t.n = int(single_value(run, "transpose_n"));
  t.copy_ns_per_element =
      single_value(run, "transpose_copy_ps_per_element") / 1000.0;
  std::vector<double> typed = one_line(run, "transpose_typed_us", 2);
  t.typed_completion_us = typed[0];
  t.typed_to_target_us = typed[1];
  std::vector<double> packed = one_line(run, "transpose_packed_us", 4);
  t.packed_to_target_us = packed[0];
  t.pack_us = packed[1];
  t.send_us = packed[2];
  t.unpack_us = packed[3];
  std::vector<double> checked = one_line(run, "transpose_checked", 2);
  t.typed_checked = int(checked[0]);
  t.packed_checked = int(checked[1]);
  return t;
}

} // namespace

UzuraBenchFigures run_uzura_bench(const UzuraBenchOptions &o) {
  BenchContext base = bench_context(
      o.firmware.empty() ? shipped_image("uzura.img") : o.firmware,
      o.programs_dir.empty() ? shipped_programs_dir() : o.programs_dir,
      "uzura_bench");
  UzuraBenchFigures f;
  f.model = base.model_name;
  std::vector<std::string> program = {"uzura_bench", "--raw"};
  if (o.quick)
    program.push_back("--quick");
  HostRun run = run_hosts(base, 2, program,
                          [&](Cluster &cluster) { breakdown(cluster, f); });
  f.rounds = int(single_value(run, "rounds"));
  f.rtt_us = single_value(run, "rtt_us");
  f.one_way_us = f.rtt_us / 2;
  for (const auto &v : values_of(run.output, "bw"))
    if (v.size() == 3)
      f.writes.push_back({uint32_t(v[0]), v[1], v[2]});
  uzura::Figures figures = uzura::Figures::from(base.model);
  f.bus_bound_mb_per_s = 4096.0 / (double(figures.to_card(4096)) / 1e6);
  f.wall_seconds = run.total_wall;

  const char *modes[][2] = {{"doorbell", "memory"},
                            {"card-polls", "memory"},
                            {"doorbell", "interrupt"},
                            {"doorbell", "register"},
                            {"card-polls", "register"}};
  for (const auto &m : modes) {
    UzuraMode mode;
    mode.in = m[0];
    mode.out = m[1];
    std::vector<std::string> args = {
        "uzura_bench", "--raw", "--rtt-only", "--in", m[0], "--out", m[1]};
    if (o.quick)
      args.push_back("--quick");
    Time busy = 0;
    HostRun r = run_hosts(base, 2, args, [&](Cluster &cluster) {
      busy = engine_of(*cluster.sim.nodes()[0]).bus_busy();
    });
    mode.rounds = int(single_value(r, "rounds"));
    mode.rtt_us = single_value(r, "rtt_us");
    // A card that polls its command ring holds the bus whenever nothing
    // else does: all of the run.
    mode.bus_busy_percent = mode.in == "card-polls" || r.virtual_time == 0
                                ? 100.0
                                : 100.0 * double(busy) / double(r.virtual_time);
    f.modes.push_back(mode);
    f.wall_seconds += r.total_wall;
  }
  f.transpose = transpose(base, f.wall_seconds);
  return f;
}

} // namespace nicemu
