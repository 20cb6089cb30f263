// Runs described by a recording or a checkpoint file (docs/replay.md):
// their options and inputs, read back.
#include "cli/recorded_run.hpp"

#include "fabric/fabric.hpp"
#include "nicemu/error.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>

namespace nicemu::cli {

// "3291.498 us".
std::string format_time_us(Time t) {
  char text[48];
  std::snprintf(text, sizeof text, "%.3f us", double(t) / 1e6);
  return text;
}

// A replay of a run with --tap: the frames Linux sent enter the network at
// the recorded times (put in at the start: their events run as in the
// recorded run, EventOrigin::outside), and every frame the cluster offers
// to Linux is compared with the recorded one.
void play_outside(HostTape &tape, Fabric &fabric) {
  const uint32_t nodes = fabric.topology().nodes;
  fabric.set_outside([&tape, nodes](const Packet &p, Time now) {
    return TapBridge::for_outside(p, nodes) &&
           tape.frame_out(now, p.payload, true);
  });
  for (const HostTape::Frame &f : tape.frames_in()) {
    if (f.node >= nodes)
      throw Error("replay: a damaged recording (a frame from Linux for node " +
                  std::to_string(f.node) + " of " + std::to_string(nodes) +
                  ")");
    fabric.deliver_from_outside(f.node, f.bytes, f.at);
  }
}

RunInputs recorded_inputs(const std::string &path, const HostTape::Contents &c,
                          ClusterOptions &o, RecordedEnd &recorded) {
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(c.manifest);
    o.nodes = m.at("nodes").get<uint32_t>();
    o.procs_per_node = m.at("procs_per_node").get<uint32_t>();
    o.topology = m.at("topology").get<std::string>();
    o.max_time = m.at("max_time").get<std::string>();
    o.watchdog = m.at("watchdog").get<int64_t>();
    o.no_leases = m.at("no_leases").get<bool>();
    o.no_fast_forward = m.at("no_fast_forward").get<bool>();
    o.no_core_queue = m.at("no_core_queue").get<bool>();
    o.link_faults.corrupt = m.at("link_corrupt").get<double>();
    o.link_faults.lose = m.at("link_loss").get<double>();
    o.link_faults.dup = m.at("link_dup").get<double>();
    o.link_faults.seed = m.at("fault_seed").get<uint64_t>();
    o.firmware = m.at("firmware").get<std::string>(); // for --elf's default
    o.program = m.at("program").get<std::vector<std::string>>();
    nlohmann::json end = nlohmann::json::parse(c.trailer);
    recorded.stopped_by = end.at("stopped_by").get<std::string>();
    recorded.end = end.at("end_time_ps").get<Time>();
    recorded.tap = m.value("tap", "");
    if (end.contains("tap")) {
      const nlohmann::json &t = end.at("tap");
      recorded.tap_stats = {
          t.at("out").get<uint64_t>(), t.at("in").get<uint64_t>(),
          t.at("ignored").get<uint64_t>(), t.at("lost").get<uint64_t>()};
    }
  } catch (const nlohmann::json::exception &e) {
    throw Error(path + ": a damaged recording (its manifest: " +
                std::string(e.what()) + ")");
  }
  // What nicemu run's own checks would have refused.
  auto probability = [](double p) { return p >= 0 && p <= 1; };
  if (o.watchdog < -1 || o.watchdog > (int64_t(1) << 62) ||
      !probability(o.link_faults.corrupt) || !probability(o.link_faults.lose) ||
      !probability(o.link_faults.dup))
    throw Error(path + ": a damaged recording (its manifest has a watchdog "
                       "or a fault probability out of range)");
  auto blob = [&c](const std::string &name) -> const std::vector<uint8_t> * {
    auto it = c.blobs.find(name);
    return it == c.blobs.end() ? nullptr : it->second.get();
  };
  auto text = [](const std::vector<uint8_t> &b) {
    return std::string(b.begin(), b.end());
  };
  RunInputs in;
  const std::string model_file = m.value("model_file", "");
  if (const auto *model = blob("model"))
    in.model_text = text(*model);
  const std::string variant = m.value("variant", "");
  if (in.model_text) {
    in.model = parse_model(*in.model_text, model_file);
    if (!variant.empty())
      in.model = with_variant(in.model, variant);
  } else {
    in.model = load_model(m.value("model", ""));
  }
  // The flash as the nodes booted it: its erased end is not recorded.
  const uint64_t flash_bytes = m.value("flash_bytes", uint64_t(0));
  auto booted = [&](const std::vector<uint8_t> &written) {
    if (written.size() > flash_bytes || flash_bytes > in.model.flash_size)
      throw Error(path + ": a damaged recording (a flash larger than the "
                         "model's)");
    std::vector<uint8_t> f(flash_bytes, 0xFF);
    std::copy(written.begin(), written.end(), f.begin());
    return f;
  };
  const auto *flash = blob("flash");
  if (!flash)
    throw Error(path + ": a damaged recording (no flash)");
  in.flash = booted(*flash);
  const std::string own = "node-flash/";
  for (const auto &[name, bytes] : c.blobs) {
    if (name.rfind(own, 0) != 0)
      continue;
    uint32_t node = 0;
    const char *first = name.data() + own.size(),
               *last = name.data() + name.size();
    auto [end, ec] = std::from_chars(first, last, node);
    if (ec != std::errc() || end != last || first == last)
      throw Error(path + ": a damaged recording (a flash named '" + name +
                  "')");
    in.node_flash[node] =
        std::make_shared<const std::vector<uint8_t>>(booted(*bytes));
  }
  if (const auto *topology = blob("topology"))
    in.topology_text = text(*topology);
  return in;
}

RunInputs replay_inputs(const std::string &path, ClusterOptions &o,
                        RecordedEnd &recorded, HostTape &tape) {
  HostTape::Contents c;
  tape = HostTape::load(path, c);
  RunInputs in = recorded_inputs(path, c, o, recorded);
  const uint32_t ranks = o.program.empty() ? 0 : o.nodes * o.procs_per_node;
  if (tape.ranks() != ranks)
    throw Error(path + ": a damaged recording (" +
                std::to_string(tape.ranks()) + " host ranks for " +
                std::to_string(ranks) + ")");
  return in;
}

} // namespace nicemu::cli
