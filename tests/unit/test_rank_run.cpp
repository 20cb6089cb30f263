// A cluster spread over ranks (dist/rank_share, Simulation::set_ranks), the
// ranks being threads of this process (tests/support/local_ranks.hpp): each
// builds only its own nodes and the whole network, and every node must come
// out as in one process: its console, cycles, instructions, time and end,
// and every rank's copy of the network must count what the one network
// counts.
#include "dist/rank_share.hpp"
#include "host/cluster_run.hpp"
#include "local_ranks.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <doctest/doctest.h>

#include <mutex>
#include <thread>

using namespace nicemu;

namespace {

struct NodeResult {
  uint32_t node = 0;
  NodeState state = NodeState::Reset;
  uint32_t exit_code = 0;
  uint64_t cycles = 0, instructions = 0;
  Time time = 0;
  std::vector<std::string> console;
  bool operator==(const NodeResult &) const = default;
};

struct Outcome {
  RunOutcome outcome = RunOutcome::Halted;
  Time end_time = 0;
  std::vector<NodeResult> nodes; // the rank's own, by node
  uint64_t sent = 0, delivered = 0, blocked = 0;
  Time blocked_time = 0;
  uint64_t digest = 0, messages = 0;
};

std::shared_ptr<const std::vector<uint8_t>> flash_of(const Model &model,
                                                     const std::string &name) {
  std::vector<uint8_t> image =
      read_file_bytes(std::string(NICEMU_FIRMWARE_DIR) + "/" + name);
  auto flash = std::make_shared<std::vector<uint8_t>>(model.flash_size, 0xFF);
  std::copy(image.begin(), image.end(), flash->begin());
  return flash;
}

// One process (link null), or rank link->rank() of a run whose node n is on
// rank owner[n].
Outcome run(const std::string &firmware, uint32_t nodes,
            const std::vector<uint32_t> &owner = {}, RankLink *link = nullptr,
            unsigned threads = 1) {
  const Model &model = load_model("lanai4");
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.threads = threads;
  std::mutex m;
  std::map<uint32_t, std::vector<std::string>> console;
  spec.console = [&](uint32_t node, const std::string &line) {
    std::lock_guard lock(m);
    console[node].push_back(line);
  };
  if (link)
    for (uint32_t n = 0; n < nodes; ++n)
      spec.owned.push_back(owner[n] == link->rank());
  auto cluster = start_cluster(model, flash_of(model, firmware), spec);
  Simulation &sim = cluster->sim;
  std::unique_ptr<RankShare> share;
  if (link) {
    share = std::make_unique<RankShare>(*link, owner, sim.scheduler(),
                                        *sim.fabric());
    sim.set_ranks(share.get());
  }
  RunResult r = sim.run(Time(1'000'000'000'000)); // 1 s of virtual time
  Outcome o;
  o.outcome = r.outcome;
  o.end_time = r.end_time;
  for (const auto &n : sim.nodes())
    o.nodes.push_back({n->id(), n->state(), n->exit_code(), n->cpu().cycles(),
                       n->cpu().instructions(), n->time(), console[n->id()]});
  const FabricStats &s = sim.fabric()->stats();
  o.sent = s.packets_sent;
  o.delivered = s.packets_delivered;
  o.blocked = s.packets_blocked;
  o.blocked_time = s.blocked_time;
  if (share) {
    o.digest = share->digest();
    o.messages = share->messages();
  }
  return o;
}

// The same run on `ranks` threads, node n on rank owner[n].
std::vector<Outcome> run_spread(const std::string &firmware, uint32_t nodes,
                                const std::vector<uint32_t> &owner,
                                uint32_t ranks, unsigned threads = 1) {
  local_ranks::LocalRanks links(ranks);
  std::vector<Outcome> out(ranks);
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads_of;
  for (uint32_t r = 0; r < ranks; ++r)
    threads_of.emplace_back([&, r] {
      try {
        out[r] = run(firmware, nodes, owner, &links.link(r), threads);
      } catch (const std::exception &e) {
        errors[r] = e.what();
      }
    });
  for (auto &t : threads_of)
    t.join();
  for (uint32_t r = 0; r < ranks; ++r) {
    CAPTURE(r);
    REQUIRE(errors[r] == "");
  }
  return out;
}

void check_same_as_one_process(const std::string &firmware, uint32_t nodes,
                               const std::vector<uint32_t> &owner,
                               uint32_t ranks, unsigned threads = 1) {
  CAPTURE(firmware);
  CAPTURE(nodes);
  CAPTURE(ranks);
  Outcome one = run(firmware, nodes);
  std::vector<Outcome> spread =
      run_spread(firmware, nodes, owner, ranks, threads);
  std::vector<NodeResult> all(nodes);
  for (uint32_t r = 0; r < ranks; ++r) {
    CAPTURE(r);
    const Outcome &o = spread[r];
    CHECK(o.outcome == one.outcome);
    CHECK(o.end_time == one.end_time);
    CHECK(o.sent == one.sent);
    CHECK(o.delivered == one.delivered);
    CHECK(o.blocked == one.blocked);
    CHECK(o.blocked_time == one.blocked_time);
    CHECK(o.digest == spread[0].digest);
    CHECK(o.messages > 0);
    MESSAGE("rank " << r << ": " << o.messages << " messages");
    for (const NodeResult &n : o.nodes) {
      CHECK(owner[n.node] == r);
      all[n.node] = n;
    }
  }
  for (uint32_t n = 0; n < nodes; ++n) {
    CAPTURE(n);
    CHECK(all[n] == one.nodes[n]);
  }
}

} // namespace

TEST_CASE("ranks: net_pingpong spread over two ranks, one node each, runs "
          "as in one process") {
  check_same_as_one_process("net_pingpong.img", 2, {0, 1}, 2);
}

TEST_CASE("ranks: link_check and net_pingpong on 8 nodes, dealt out over 2 "
          "and 3 ranks, run as in one process") {
  std::vector<uint32_t> two, three;
  for (uint32_t n = 0; n < 8; ++n) {
    two.push_back(n % 2);
    three.push_back(n * 3 / 8);
  }
  check_same_as_one_process("link_check.img", 8, two, 2);
  check_same_as_one_process("net_pingpong.img", 8, three, 3);
}

TEST_CASE("ranks: two worker threads on each rank change nothing") {
  check_same_as_one_process("link_check.img", 8, {0, 0, 1, 1, 0, 0, 1, 1}, 2,
                            2);
}

TEST_CASE("ranks: a run that faults ends on every rank as in one process, "
          "at the lowest faulted node's time") {
  Outcome one = run("fault_illegal.img", 4);
  REQUIRE(one.outcome == RunOutcome::Faulted);
  check_same_as_one_process("fault_illegal.img", 4, {1, 0, 1, 0}, 2);
}
