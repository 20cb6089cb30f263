// The protocol of docs/distributed.md ("Events at the same time on
// different ranks"), tried on the network alone: two copies of it, each with
// the cards of one rank, take their events in turn by key; a card's calls
// into the network go to the other copy with their keys, and the owner
// answers for its card. Every card then sees what it sees in one process,
// to the picosecond, and both copies count what the one network counts.
#include "fabric/fabric.hpp"

#include <doctest/doctest.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>

using namespace nicemu;

namespace {

FabricParams params() {
  FabricParams p;
  p.link_ps_per_byte = 100;
  p.link_latency = 1000;
  p.switch_latency = 500;
  p.switch_ports = 4; // 8 nodes: a tree of three switches
  return p;
}

// How a card reaches its network: directly in one process, through the
// rank's copy (which records the calls) when spread.
struct Port {
  virtual ~Port() = default;
  virtual void send(Packet p, Time at, std::function<void(Time)> on_sent) = 0;
  virtual void ready(uint32_t node, Time at) = 0;
};

// A card that sends to every other card, refuses heads for a while after
// each packet (then says it is ready), and answers what it gets, now (even
// nodes: from inside the network's call) or a little later (odd nodes: from
// an event of its own).
class EchoCard : public PacketReceiver {
public:
  EchoCard(uint32_t node, uint32_t nodes, Scheduler &s, Fabric &f, Port &port,
           std::string &log)
      : node_(node), nodes_(nodes), sched_(s), fabric_(f), port_(port),
        log_(log) {}
  void start() {
    at(Time(node_) * 700, [this] {
      for (uint32_t k = 0; k < nodes_; ++k)
        if (k != node_)
          send(k, 0, 40 + 8 * k);
    });
  }
  bool accept_head(const Packet &p, Time now) override {
    note("head", p, now);
    if (now < closed_until_) {
      refused_ = true;
      return false;
    }
    return true;
  }
  void packet_arrived(Packet p, Time now) override {
    note("tail", p, now);
    closed_until_ = now + 3000;
    at(closed_until_, [this] {
      if (std::exchange(refused_, false))
        port_.ready(node_, sched_.now());
    });
    uint8_t hops = p.payload[0];
    if (hops >= 2)
      return;
    if (node_ % 2 == 0)
      send(p.source, hops + 1, 24);
    else
      at(now + 500, [this, to = p.source, hops] { send(to, hops + 1, 24); });
  }

private:
  void at(Time t, std::function<void()> fn) {
    sched_.schedule(t, "card", std::move(fn), 0,
                    EventTag{device_event_owner(node_, 0)});
  }
  void send(uint32_t to, uint8_t hops, size_t bytes) {
    Packet p;
    p.source = node_;
    p.id = (uint64_t(node_) << 40) | sequence_++;
    p.route = fabric_.route(node_, to);
    p.payload.assign(bytes, hops);
    uint64_t id = p.id;
    port_.send(std::move(p), sched_.now() + 200, [this, id](Time t) {
      log_ += "sent " + std::to_string(id) + " " + std::to_string(t) + "\n";
    });
  }
  void note(const char *what, const Packet &p, Time now) {
    log_ += std::string(what) + " " + std::to_string(p.id) + " " +
            std::to_string(now) + "\n";
  }

  uint32_t node_, nodes_;
  Scheduler &sched_;
  Fabric &fabric_;
  Port &port_;
  std::string &log_;
  uint64_t sequence_ = 0;
  Time closed_until_ = 0;
  bool refused_ = false;
};

struct Direct : Port {
  Fabric &fabric;
  explicit Direct(Fabric &f) : fabric(f) {}
  void send(Packet p, Time at, std::function<void(Time)> fn) override {
    fabric.send(std::move(p), at, std::move(fn));
  }
  void ready(uint32_t node, Time at) override {
    fabric.receiver_ready(node, at);
  }
};

constexpr uint32_t kNodes = 8;

std::vector<std::string> one_process(FabricStats &stats) {
  Scheduler sched;
  Fabric fabric(sched, params(), make_topology(kNodes, 4));
  Direct port(fabric);
  std::vector<std::string> logs(kNodes);
  std::vector<std::unique_ptr<EchoCard>> cards;
  for (uint32_t n = 0; n < kNodes; ++n) {
    cards.push_back(
        std::make_unique<EchoCard>(n, kNodes, sched, fabric, port, logs[n]));
    fabric.attach(n, cards.back().get());
    cards.back()->start();
  }
  sched.run_until(kTimeNever);
  stats = fabric.stats();
  return logs;
}

// What the owner's card did when the network called into it, for the other
// copy to do alike: its answer, and the calls it made meanwhile.
struct Reply {
  bool answer = false;
  std::vector<FabricCall> calls;
};

struct Spread;

// One rank: its copy of the network, its cards, and stand-ins for the
// others' cards.
struct Rank : Port {
  Spread &all;
  uint32_t index;
  Scheduler sched;
  Fabric fabric;
  std::vector<FabricCall> calls; // logged since the last take
  std::vector<std::unique_ptr<PacketReceiver>> receivers;
  std::vector<std::unique_ptr<EchoCard>> cards;
  Rank(Spread &s, uint32_t i)
      : all(s), index(i), fabric(sched, params(), make_topology(kNodes, 4)) {
    fabric.set_call_log([this](const FabricCall &c) { calls.push_back(c); });
  }
  std::vector<FabricCall> take() { return std::exchange(calls, {}); }
  void send(Packet p, Time at, std::function<void(Time)> fn) override;
  void ready(uint32_t node, Time at) override {
    fabric.receiver_ready(node, at);
  }
  void apply(const std::vector<FabricCall> &calls);
};

struct Spread {
  std::vector<std::unique_ptr<Rank>> ranks;
  std::map<uint32_t, std::deque<Reply>> replies; // by card
  static uint32_t owner(uint32_t node) { return node < kNodes / 2 ? 0 : 1; }
  Reply next_reply(uint32_t card) {
    std::deque<Reply> &q = replies[card];
    REQUIRE(!q.empty()); // the owner ran the event first
    Reply r = std::move(q.front());
    q.pop_front();
    return r;
  }
};

// The owner's card, recorded.
class Owned : public PacketReceiver {
public:
  Owned(Rank &rank, uint32_t node, EchoCard &card)
      : rank_(rank), node_(node), card_(card) {}
  bool accept_head(const Packet &p, Time now) override {
    rank_.take();
    bool answer = card_.accept_head(p, now);
    rank_.all.replies[node_].push_back({answer, rank_.take()});
    return answer;
  }
  void packet_arrived(Packet p, Time now) override {
    rank_.take();
    card_.packet_arrived(std::move(p), now);
    rank_.all.replies[node_].push_back({false, rank_.take()});
  }

private:
  Rank &rank_;
  uint32_t node_;
  EchoCard &card_;
};

// Another rank's card: its owner's answers and calls.
class StandIn : public PacketReceiver {
public:
  StandIn(Rank &rank, uint32_t node) : rank_(rank), node_(node) {}
  bool accept_head(const Packet &, Time) override {
    Reply r = rank_.all.next_reply(node_);
    rank_.apply(r.calls);
    return r.answer;
  }
  void packet_arrived(Packet, Time) override {
    rank_.apply(rank_.all.next_reply(node_).calls);
  }

private:
  Rank &rank_;
  uint32_t node_;
};

void Rank::send(Packet p, Time at, std::function<void(Time)> fn) {
  uint32_t node = p.source;
  // The owner's on_sent, recorded like the cards' answers.
  fabric.send(std::move(p), at, [this, node, fn](Time t) {
    take();
    fn(t);
    all.replies[node].push_back({false, take()});
  });
}

void Rank::apply(const std::vector<FabricCall> &list) {
  for (const FabricCall &c : list) {
    uint32_t node = c.packet.source;
    fabric.apply_call(
        c, [this, node](Time) { apply(all.next_reply(node).calls); });
  }
}

auto key(const SavedEvent &e) {
  return std::tie(e.when, e.priority, e.origin, e.seq);
}

std::vector<std::string> spread(std::vector<FabricStats> &stats,
                                uint64_t &steps) {
  Spread s;
  for (uint32_t r = 0; r < 2; ++r)
    s.ranks.push_back(std::make_unique<Rank>(s, r));
  std::vector<std::string> logs(kNodes);
  for (auto &rank : s.ranks)
    for (uint32_t n = 0; n < kNodes; ++n) {
      if (Spread::owner(n) == rank->index) {
        rank->cards.push_back(std::make_unique<EchoCard>(
            n, kNodes, rank->sched, rank->fabric, *rank, logs[n]));
        rank->receivers.push_back(
            std::make_unique<Owned>(*rank, n, *rank->cards.back()));
      } else {
        rank->receivers.push_back(std::make_unique<StandIn>(*rank, n));
      }
      rank->fabric.attach(n, rank->receivers.back().get());
    }
  // The cards start: their first events, and the calls those make, go to
  // the other rank as they run.
  for (auto &rank : s.ranks)
    for (auto &card : rank->cards)
      card->start();
  for (;;) {
    SavedEvent e[2];
    bool has[2] = {s.ranks[0]->sched.peek(e[0]), s.ranks[1]->sched.peek(e[1])};
    if (!has[0] && !has[1])
      break;
    uint32_t first = !has[0] || (has[1] && key(e[1]) < key(e[0])) ? 1 : 0;
    ++steps;
    if (e[first].tag.owner == kFabricEventOwner) {
      // The network's: on both copies, with the same key; the owner of the
      // card it calls into first.
      REQUIRE(has[0]);
      REQUIRE(has[1]);
      REQUIRE(key(e[0]) == key(e[1]));
      auto card = s.ranks[0]->fabric.card_called_by(e[0].tag);
      uint32_t owner = card ? Spread::owner(*card) : 0;
      s.ranks[owner]->sched.run_next();
      s.ranks[1 - owner]->sched.run_next();
      continue;
    }
    // A card's: its owner's alone; what it called, to the other.
    Rank &mine = *s.ranks[first];
    mine.take();
    mine.sched.run_next();
    s.ranks[1 - first]->apply(mine.take());
  }
  for (auto &rank : s.ranks)
    stats.push_back(rank->fabric.stats());
  for (auto &[card, q] : s.replies)
    CHECK(q.empty()); // every answer used
  return logs;
}

} // namespace

TEST_CASE("two copies of the network taking their events in turn by key "
          "give every card what one process gives it") {
  FabricStats one;
  std::vector<std::string> expected = one_process(one);
  // A contended run: heads refused and made ready again, answers from
  // inside the network's calls and from the cards' own events.
  REQUIRE(one.packets_sent > kNodes * (kNodes - 1));
  REQUIRE(one.packets_blocked > 0);
  std::vector<FabricStats> stats;
  uint64_t steps = 0;
  std::vector<std::string> got = spread(stats, steps);
  for (uint32_t n = 0; n < kNodes; ++n) {
    CAPTURE(n);
    CHECK(got[n] == expected[n]);
  }
  CHECK(steps > one.packets_sent);
  for (const FabricStats &s : stats) {
    CHECK(s.packets_sent == one.packets_sent);
    CHECK(s.packets_delivered == one.packets_delivered);
    CHECK(s.packets_blocked == one.packets_blocked);
    CHECK(s.blocked_time == one.blocked_time);
  }
}
