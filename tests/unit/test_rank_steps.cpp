// The protocol of docs/distributed.md ("Events at the same time on
// different ranks"), tried on the network alone: two copies of it, each with
// the cards of one rank, take their events in turn by key; a card's calls
// into the network go to the other copy with their keys, and the owner
// answers for its card. Every card then sees what it sees in one process,
// to the picosecond, and both copies count what the one network counts.
#include "dist/fabric_calls.hpp"
#include "dist/step_order.hpp"
#include "echo_network.hpp"

#include "nicemu/error.hpp"

#include <doctest/doctest.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>

using namespace nicemu;
using namespace echo_network;

namespace {

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
  StepOrder order{2};
  Rank(Spread &s, uint32_t i)
      : all(s), index(i), fabric(sched, params(), make_topology(kNodes, 4)) {
    fabric.set_call_log([this](const FabricCall &c) { calls.push_back(c); });
  }
  std::vector<FabricCall> take() { return std::exchange(calls, {}); }
  // The owner's message after its card was called or ran an event: its
  // answer, its card's calls and its next card event.
  CardReply tell(bool answer) {
    CardReply r{answer, take(), StepOrder::own_next(sched)};
    order.told(index, r.next);
    return r;
  }
  // The other rank's message: its calls applied, its next card event noted.
  CardReply heard(CardReply r, uint32_t from) {
    apply(r.calls);
    order.told(from, r.next);
    return r;
  }
  void send(Packet p, Time at, std::function<void(Time)> fn) override;
  void ready(uint32_t node, Time at) override {
    fabric.receiver_ready(node, at);
  }
  void apply(const std::vector<FabricCall> &calls);
};

struct Spread {
  std::vector<std::unique_ptr<Rank>> ranks;
  std::map<uint32_t, std::deque<CardReply>> replies; // by card
  static uint32_t owner(uint32_t node) { return node < kNodes / 2 ? 0 : 1; }
  CardReply next_reply(uint32_t card) {
    std::deque<CardReply> &q = replies[card];
    REQUIRE(!q.empty()); // the owner ran the event first
    CardReply r = std::move(q.front());
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
    rank_.all.replies[node_].push_back(rank_.tell(answer));
    return answer;
  }
  void packet_arrived(Packet p, Time now) override {
    rank_.take();
    card_.packet_arrived(std::move(p), now);
    rank_.all.replies[node_].push_back(rank_.tell(false));
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
    return rank_.heard(rank_.all.next_reply(node_), Spread::owner(node_))
        .answer;
  }
  void packet_arrived(Packet, Time) override {
    rank_.heard(rank_.all.next_reply(node_), Spread::owner(node_));
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
    all.replies[node].push_back(tell(false));
  });
}

void Rank::apply(const std::vector<FabricCall> &list) {
  for (const FabricCall &c : list) {
    uint32_t node = c.packet.source;
    fabric.apply_call(c, [this, node](Time) {
      heard(all.next_reply(node), Spread::owner(node));
    });
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
  // What each rank knows of the other's first card event (over MPI: one
  // allgather), then each decides alone; both must decide alike.
  for (auto &from : s.ranks)
    for (auto &to : s.ranks)
      to->order.told(from->index, StepOrder::own_next(from->sched));
  for (;;) {
    StepOrder::Step step[2] = {s.ranks[0]->order.next(s.ranks[0]->sched),
                               s.ranks[1]->order.next(s.ranks[1]->sched)};
    REQUIRE(step[0].kind == step[1].kind);
    if (step[0].kind == StepOrder::Step::Done)
      break;
    ++steps;
    if (step[0].kind == StepOrder::Step::Network) {
      // The network's: on both copies, with the same key; the owner of the
      // card it calls into first (its reply is then there for the other).
      REQUIRE(key(step[0].network) == key(step[1].network));
      auto card = s.ranks[0]->fabric.card_called_by(step[0].network.tag);
      uint32_t owner = card ? Spread::owner(*card) : 0;
      for (uint32_t r : {owner, 1 - owner}) {
        s.ranks[r]->order.ran(step[r].network);
        s.ranks[r]->sched.run_next();
      }
      continue;
    }
    // A card's: its owner's alone; what it called, to the other.
    REQUIRE(step[0].rank == step[1].rank);
    Rank &mine = *s.ranks[step[0].rank];
    mine.take();
    mine.sched.run_next();
    s.ranks[1 - mine.index]->heard(mine.tell(false), mine.index);
  }
  CHECK(s.ranks[0]->order.digest() == s.ranks[1]->order.digest());
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

// A rank's next card event, the network's left aside (the ranks' steps
// need no collective: docs/distributed.md).
TEST_CASE("the earliest pending event of the kind asked for, whatever sorts "
          "before it") {
  Scheduler s;
  auto from = [&s](EventOrigin o, Time t, uint64_t owner) {
    EventOrigin was = s.set_origin(o);
    EventId id = s.schedule(
        t, "e", [] {}, 0, EventTag{owner, 0, 0, 0});
    s.set_origin(was);
    return id;
  };
  auto is_card = [](const EventTag &t) { return t.owner != kFabricEventOwner; };
  SavedEvent e;
  CHECK_FALSE(s.peek_first(is_card, e));
  from(EventOrigin::events(), 5, kFabricEventOwner);
  CHECK_FALSE(s.peek_first(is_card, e));
  from(EventOrigin::card(2), 9, 77);
  EventId early = from(EventOrigin::core(1), 7, 78);
  from(EventOrigin::card(0), 7, 79); // the same time, an earlier origin
  REQUIRE(s.peek_first(is_card, e));
  CHECK(e.when == 7);
  CHECK(e.origin == EventOrigin::card(0).id);
  CHECK(e.tag.owner == 79);
  REQUIRE(s.peek(e)); // the network's, first of all
  CHECK(e.tag.owner == kFabricEventOwner);
  s.run_next(); // it ran: gone; a cancelled one is gone too
  CHECK(s.cancel(early));
  REQUIRE(s.peek_first(
      [](const EventTag &t) { return t.owner == 78 || t.owner == 77; }, e));
  CHECK(e.when == 9);
}

TEST_CASE("a card's reply and calls survive their bytes, and damaged bytes "
          "are refused") {
  FabricCall send;
  send.kind = FabricCall::Send;
  send.packet.source = 3;
  send.packet.id = (uint64_t(3) << 40) | 9;
  send.packet.route = {2, 1};
  send.packet.payload = {1, 2, 3, 4, 5};
  send.on_sent = true;
  send.at = 123456;
  send.posted.when = 123456;
  send.posted.priority = -2;
  send.posted.origin = EventOrigin::card(3).id;
  send.posted.seq = 17;
  send.posted.tag = {kFabricEventOwner, 1, 4, 3};
  FabricCall ready;
  ready.kind = FabricCall::ReceiverReady;
  ready.node = 5;
  ready.at = 99;
  ready.posted.when = 100;
  ready.posted.origin = EventOrigin::core(5).id;
  StateWriter out;
  const EventKey next{777, -1, EventOrigin::card(3).id, 9};
  write_reply(out, {true, {send, ready}, next});
  CardReply back = read_reply(out.data());
  CHECK(back.answer);
  CHECK(back.next == next);
  REQUIRE(back.calls.size() == 2);
  const FabricCall &s = back.calls[0], &r = back.calls[1];
  CHECK(s.kind == FabricCall::Send);
  CHECK(s.packet.source == 3);
  CHECK(s.packet.id == send.packet.id);
  CHECK(s.packet.route == send.packet.route);
  CHECK(s.packet.payload == send.packet.payload);
  CHECK(s.on_sent);
  CHECK(s.at == 123456);
  CHECK(std::tie(s.posted.when, s.posted.priority, s.posted.origin,
                 s.posted.seq) == std::make_tuple(Time(123456), -2,
                                                  EventOrigin::card(3).id,
                                                  uint64_t(17)));
  CHECK(s.posted.tag.a == 4);
  CHECK(r.kind == FabricCall::ReceiverReady);
  CHECK(r.node == 5);
  CHECK(r.posted.origin == EventOrigin::core(5).id);
  // No next card event: none comes back.
  StateWriter none;
  write_reply(none, {false, {}, std::nullopt});
  CHECK_FALSE(read_reply(none.data()).next);
  // Cut short, a kind that is none, or bytes after it: an error, never a
  // guess.
  std::vector<uint8_t> longer = none.data();
  longer.push_back(0);
  CHECK_THROWS_AS(read_reply(longer), Error);
  std::vector<uint8_t> bytes = out.data();
  bytes.resize(bytes.size() - 3);
  CHECK_THROWS_AS(read_reply(bytes), Error);
  bytes = out.data();
  bytes[4 + 8] = 7; // the first call's kind
  CHECK_THROWS_AS(read_reply(bytes), Error);
}
