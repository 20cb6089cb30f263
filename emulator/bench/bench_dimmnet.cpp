#include "bench/bench_dimmnet.hpp"

#include "bench/bench_hosts.hpp"
#include "bench/shipped_files.hpp"
#include "boards/martini/otf_engine.hpp"
#include "host/cluster_run.hpp"
#include "nicemu/error.hpp"
#include "nicemu/martini.h"

#include <map>

namespace nicemu {

namespace {

using martini::OtfEngine;

OtfEngine &otf_of(Node &node) {
  auto *otf = dynamic_cast<OtfEngine *>(node.device_at(NICEMU_OTF_BASE));
  if (!otf)
    throw Error("bench: the card has no OTF hardware (not a martini model)");
  return *otf;
}

double ns(Time from, Time to) {
  return double(to - from) / 1000.0;
}

// The last AOTF word of the run (the last pong: node 1 to node 0), stage by
// stage from the sender's and the receiver's records.
void breakdown(Cluster &cluster, DimmnetSetup &s) {
  auto &nodes = cluster.sim.nodes();
  const OtfEngine::SendTimes &tx = otf_of(*nodes[1]).last_aotf_sent();
  const OtfEngine::ReceiveTimes &rx = otf_of(*nodes[0]).last_aotf_received();
  if (tx.packet == 0 || tx.packet != rx.packet)
    throw Error("bench: the last AOTF packets of the two cards differ");
  s.stages = {
      {"store to the DIMM pins", ns(tx.store, tx.pins)},
      {"host write + transaction queue", ns(tx.pins, tx.lookup)},
      {"HTLB lookup + size check + handshake", ns(tx.lookup, tx.ready)},
      {"clock crossing + send-side SWIF", ns(tx.ready, tx.head)},
      {"link: cable, serializers, the packet's bytes", ns(tx.head, rx.tail)},
      {"receive-side SWIF", ns(rx.tail, rx.swif)},
      {"LLCM write", ns(rx.swif, rx.written)},
  };
  s.store_to_llcm_ns = ns(tx.store, rx.written);
}

BenchContext in_setup(const BenchContext &base, const std::string &name,
                      std::string *description) {
  BenchContext c = base;
  c.model = with_variant(base.model, name);
  for (const ModelVariant &v : base.model.variants)
    if (v.name == name && description)
      *description = v.description;
  return c;
}

DimmnetCollectives collectives(const BenchContext &base,
                               const std::string &setup, uint32_t nodes,
                               int rounds, double &wall) {
  DimmnetCollectives k;
  k.setup = setup;
  k.nodes = nodes;
  HostRun run =
      run_hosts(in_setup(base, setup, nullptr), nodes,
                {"dimm_collectives", std::to_string(rounds), "--raw"});
  k.rounds = int(single_value(run, "rounds"));
  k.barrier_us = single_value(run, "barrier_us");
  for (const auto &v : values_of(run.output, "allreduce_us"))
    if (v.size() == 2 && v[0] >= 0 && v[0] < 4)
      k.allreduce_us[int(v[0])] = v[1];
  wall += run.total_wall;
  return k;
}

DimmnetSendRecv send_recv(const BenchContext &base, const std::string &setup,
                          bool status, bool quick) {
  DimmnetSendRecv s;
  s.setup = setup;
  s.receive_status = status;
  std::vector<std::string> program = {"dimm_sendrecv", "--raw"};
  if (quick)
    program.push_back("--quick");
  if (status)
    program.push_back("--status");
  HostRun run = run_hosts(in_setup(base, setup, &s.description), 2, program);
  for (const auto &v : values_of(run.output, "pingpong"))
    if (v.size() == 2)
      s.pingpong_us.push_back({uint32_t(v[0]), v[1]});
  std::map<uint32_t, DimmnetSendRecvPoint> by_size;
  for (const auto &v : values_of(run.output, "sr")) {
    if (v.size() != 3)
      continue;
    DimmnetSendRecvPoint &p = by_size[uint32_t(v[1])];
    p.bytes = uint32_t(v[1]);
    double *path[] = {&p.recv_first_botf_us, &p.recv_first_push_us,
                      &p.send_first_pull_us};
    if (v[0] >= 0 && v[0] < 3)
      *path[int(v[0])] = v[2];
  }
  for (const auto &[bytes, p] : by_size)
    s.points.push_back(p);
  for (const DimmnetSendRecvPoint &p : s.points)
    if (p.recv_first_push_us < p.recv_first_botf_us) {
      s.push_beats_botf_from = p.bytes;
      break;
    }
  s.wall_seconds = run.total_wall;
  return s;
}

} // namespace

DimmnetBenchFigures run_dimmnet_bench(const DimmnetBenchOptions &o) {
  BenchContext base = bench_context(
      o.firmware.empty() ? shipped_image("dimmnet.img") : o.firmware,
      o.programs_dir.empty() ? shipped_programs_dir() : o.programs_dir,
      "dimmnet_bench", o.hooks);
  DimmnetBenchFigures f;
  f.model = base.model_name;
  std::vector<std::string> names = o.setups;
  if (names.empty())
    names = {"A", "B", "C", "D", "E", "F"};
  std::vector<uint32_t> curve = {2, 4, 8, 16, 32, 64};
  if (o.quick)
    curve = {2, 8, 64};
  plan_runs(base,
            int(2 * names.size()) + (o.interrupt ? 2 : 0) +
                (o.collectives ? int(2 * names.size() + curve.size()) : 0) +
                (o.sendrecv ? 2 : 0));
  for (const std::string &name : names) {
    DimmnetSetup s;
    s.name = name;
    BenchContext c = in_setup(base, name, &s.description);
    std::vector<std::string> program = {"dimmnet_bench", "--raw"};
    if (o.quick)
      program.push_back("--quick");
    HostRun run = run_hosts(c, 2, program,
                            [&](Cluster &cluster) { breakdown(cluster, s); });
    s.rounds = int(single_value(run, "rounds"));
    s.rtt_us = single_value(run, "rtt_us");
    s.one_way_us = s.rtt_us / 2;
    s.store_ns = single_value(run, "store_ns");
    s.load_ns = single_value(run, "load_ns");
    for (const auto &v : values_of(run.output, "bw"))
      if (v.size() == 4)
        s.bandwidth.push_back({uint32_t(v[0]), v[1], v[2], v[3]});
    for (const DimmnetBandwidth &b : s.bandwidth)
      if (b.botf_mb_per_s > b.aotf_mb_per_s) {
        s.crossover_bytes = b.bytes;
        break;
      }
    for (const DimmnetBandwidth &b : s.bandwidth)
      if (b.push_mb_per_s > b.botf_mb_per_s) {
        s.push_crossover_bytes = b.bytes;
        break;
      }
    s.wall_seconds = run.total_wall;
    // The wall time of a ping-pong alone (the example), per round trip:
    // both hosts poll LLCM all along.
    const int rounds = o.quick ? 500 : 2000;
    HostRun pp = run_hosts(c, 2, {"aotf_pingpong", std::to_string(rounds)});
    s.wall_us_per_round_trip = pp.run_wall * 1e6 / rounds;
    s.wall_seconds += pp.total_wall;
    f.setups.push_back(std::move(s));
  }
  if (o.interrupt) {
    DimmnetInterruptFigures &i = f.interrupt;
    i.setup = "SR";
    BenchContext c = in_setup(base, i.setup, &i.description);
    for (bool interrupt : {false, true}) {
      std::vector<std::string> program = {"dimmnet_bench", "--raw",
                                          "--rtt-only"};
      if (o.quick)
        program.push_back("--quick");
      if (interrupt)
        program.push_back("--interrupt");
      HostRun run = run_hosts(c, 2, program);
      i.rounds = int(single_value(run, "rounds"));
      (interrupt ? i.interrupt_rtt_us : i.aotf_rtt_us) =
          single_value(run, "rtt_us");
    }
  }
  if (o.collectives) {
    int rounds = o.quick ? 20 : 100;
    for (const std::string &name : names)
      for (uint32_t nodes : {2u, 8u})
        f.collectives.push_back(
            collectives(base, name, nodes, rounds, f.protocols_wall_seconds));
    for (uint32_t nodes : curve)
      f.collective_curve.push_back(collectives(
          base, "D", nodes, o.quick ? 5 : 20, f.protocols_wall_seconds));
  }
  if (o.sendrecv)
    for (bool status : {false, true}) {
      f.sendrecv.push_back(
          send_recv(base, status ? "SR-status" : "SR", status, o.quick));
      f.protocols_wall_seconds += f.sendrecv.back().wall_seconds;
    }
  return f;
}

} // namespace nicemu
