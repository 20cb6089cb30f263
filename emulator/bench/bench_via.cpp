#include "bench/bench_via.hpp"

#include "bench/bench_hosts.hpp"
#include "bench/shipped_files.hpp"
#include "fabric/ethernet.hpp"
#include "nicemu/error.hpp"
#include "nicemu/model.hpp"

// The wire layout of the via firmware: the VI header and fragment size, the
// FM header and largest message.
#include "nicemu/via_protocol.h"

#include "host/cluster_run.hpp"

#include <algorithm>
#include <functional>
#include <optional>

namespace nicemu {

namespace {

constexpr uint32_t kIpv4HeaderBytes = 20; // no options (via_protocol.h)
constexpr uint32_t kUdpHeaderBytes = 8;

// One frame whose Ethernet payload (after the 14-byte header) is `payload`
// bytes: preamble, the frame padded to the minimum, FCS, interframe gap.
uint64_t frame_wire_bytes(const ViaBenchFigures &f, uint64_t payload) {
  uint64_t frame = f.ethernet_header_bytes + payload + f.fcs_bytes;
  return f.preamble_bytes + std::max<uint64_t>(frame, f.min_frame_bytes) +
         f.interframe_gap_bytes;
}

// Fills in the framing figures of a message of `s.bytes` bytes sent as
// fragments of at most `fragment` bytes, each behind `headers` bytes of
// protocol headers (one frame even for an empty message).
void frame(const ViaBenchFigures &f, uint32_t headers, uint32_t fragment,
           ViaSizeFigure &s) {
  uint64_t left = s.bytes;
  s.frames = 0;
  s.wire_bytes = 0;
  do {
    uint64_t n = std::min<uint64_t>(left, fragment);
    s.wire_bytes += frame_wire_bytes(f, headers + n);
    ++s.frames;
    left -= n;
  } while (left > 0);
  s.wire_us = double(s.wire_bytes) / f.line_rate_mb_per_s; // MB/s = B/us
  s.bound_mb_per_s = f.line_rate_mb_per_s * double(s.bytes) / s.wire_bytes;
}

void read_framing(const Model &m, ViaBenchFigures &f) {
  std::optional<EthernetFraming> eth = ethernet_framing(m);
  if (!eth)
    throw Error("bench: model " + m.name +
                " has no [params.ethernet]: the via firmware runs on an "
                "Ethernet model (comet)");
  f.line_rate_mb_per_s = m.param("link.bandwidth_MBps");
  f.ethernet_header_bytes = kEthernetHeaderBytes;
  f.fcs_bytes = kEthernetFcsBytes;
  f.preamble_bytes = eth->preamble_bytes;
  f.interframe_gap_bytes = eth->interframe_gap_bytes;
  f.min_frame_bytes = eth->min_frame_bytes;
  f.max_payload_bytes = eth->max_payload_bytes;
  f.vi_header_bytes = VIAFW_HEADER_BYTES;
  f.vi_fragment_bytes = VIAFW_FRAG_BYTES;
  f.fm_headers_bytes =
      kIpv4HeaderBytes + kUdpHeaderBytes + VIAFW_FM_HEADER_BYTES;
  f.fm_max_message = VIAFW_FM_MAX_MESSAGE;
  if (f.vi_header_bytes + f.vi_fragment_bytes > f.max_payload_bytes ||
      f.fm_headers_bytes + f.fm_max_message > f.max_payload_bytes)
    throw Error("bench: model " + m.name +
                ": the via firmware's frames are longer than its Ethernet "
                "payload");
}

// Runs `program` on 2 nodes and reads its lines "KEY SIZE LATENCY
// BANDWIDTH", after "KEY_rounds N" and "KEY_stream N". `inspect` looks at
// the cluster after the run.
ViaSeries measure(const BenchContext &c, bool quick, const std::string &program,
                  const std::string &key,
                  const std::function<void(Cluster &)> &inspect = {}) {
  std::vector<std::string> args = {program, "--raw"};
  if (quick)
    args.push_back("--quick");
  HostRun run = run_hosts(c, 2, args, inspect);
  ViaSeries series;
  series.wall_seconds = run.total_wall;
  series.rounds = int(single_value(run, key + "_rounds"));
  series.stream = int(single_value(run, key + "_stream"));
  for (const auto &v : values_of(run.output, key))
    if (v.size() == 3)
      series.sizes.push_back({uint64_t(v[0]), v[1], v[2]});
  if (series.sizes.empty())
    throw Error("bench: no '" + key + "' figures from " + program + ":\n" +
                run.output);
  return series;
}

} // namespace

ViaBenchFigures run_via_bench(const ViaBenchOptions &o) {
  ViaBenchFigures f;
  std::string probe = o.vipl ? "vipl_pingpong" : "fm_pingpong";
  BenchContext c = bench_context(
      o.firmware.empty() ? shipped_image("via.img") : o.firmware,
      o.programs_dir.empty() ? shipped_programs_dir() : o.programs_dir, probe,
      o.hooks);
  f.model = c.model_name;
  bool lossy = o.vipl && o.loss > 0;
  if (!(o.loss >= 0 && o.loss < 1)) // NaN too
    throw Error("bench: --loss must be a probability in [0, 1)");
  plan_runs(c, int(o.vipl) + int(o.fm) + int(lossy));
  read_framing(c.model, f);
  if (o.vipl) {
    f.vipl = measure(c, o.quick, "vipl_pingpong", "vipl");
    for (ViaSizeFigure &s : f.vipl.sizes)
      frame(f, f.vi_header_bytes, f.vi_fragment_bytes, s);
  }
  if (lossy) {
    // The same program over cables that lose frames: the reliable VI sends
    // again what is lost (docs/via.md, "Reliability levels under loss").
    BenchContext lossy_context = c;
    lossy_context.link_faults.lose = o.loss;
    lossy_context.link_faults.seed = o.fault_seed;
    f.loss = o.loss;
    f.fault_seed = o.fault_seed;
    auto counters = [&f, &c](Cluster &cluster) {
      for (const auto &node : cluster.sim.nodes()) {
        uint32_t box[VIAFW_BOX_STAT_DUPLICATES + 1] = {};
        if (node->card_read(c.model.host_mailbox(), box, sizeof box)) {
          f.retransmitted += box[VIAFW_BOX_STAT_RETRANSMITS];
          f.duplicates += box[VIAFW_BOX_STAT_DUPLICATES];
        }
      }
    };
    f.vipl_lossy =
        measure(lossy_context, o.quick, "vipl_pingpong", "vipl", counters);
    for (ViaSizeFigure &s : f.vipl_lossy.sizes)
      frame(f, f.vi_header_bytes, f.vi_fragment_bytes, s);
  }
  if (o.fm) {
    f.fm = measure(c, o.quick, "fm_pingpong", "fm");
    for (ViaSizeFigure &s : f.fm.sizes)
      frame(f, f.fm_headers_bytes, f.fm_max_message, s);
  }
  return f;
}

} // namespace nicemu
