// The step protocol of docs/distributed.md over MPI: each rank keeps a copy
// of the test network (tests/support/echo_network.hpp) with its share of
// the cards, and the ranks take their events in the order of one process
// with no collective per step: every rank knows every rank's next card
// event, because only its owner schedules it and tells the others each
// time that changes. The network's events run on every rank; those that
// call into no card need no message at all. When the network calls into a
// card, its owner sends its answer, the calls it made and its next card
// event to every other rank; a card's own event likewise. Every rank then
// checks that its cards saw what they see in one process, that its copy of
// the network counted what the one network counts, and that every rank ran
// the same network events.
//
//   mpirun -n R rank_steps_mpi      (R from 1 to 8)
//
// Exit 0 and "rank steps: ... same as one process" on rank 0, else 1.
#include "dist/fabric_calls.hpp"
#include "dist/step_order.hpp"
#include "echo_network.hpp"

#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

using namespace nicemu;
using namespace echo_network;

namespace {

int me = 0, ranks = 1;

uint32_t owner(uint32_t node) {
  return uint32_t(uint64_t(node) * uint32_t(ranks) / kNodes);
}

// Tags of the messages: a card's reply (to a call from the network), and
// the calls an event of a card made.
constexpr int kReply = 1, kCalls = 2;

void send_to_others(const StateWriter &out, int tag) {
  const std::vector<uint8_t> &bytes = out.data();
  for (int r = 0; r < ranks; ++r)
    if (r != me)
      MPI_Send(bytes.data(), int(bytes.size()), MPI_BYTE, r, tag,
               MPI_COMM_WORLD);
}

// Waits for rank `from`'s message. Ranks that went different ways would
// wait for each other for ever: after 60 s of wall time with nothing, the
// run stops, saying who waited for whom (MPI_Abort ends every rank).
std::vector<uint8_t> receive(int from, int tag) {
  MPI_Status status;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int arrived = 0;;) {
    MPI_Iprobe(from, tag, MPI_COMM_WORLD, &arrived, &status);
    if (arrived)
      break;
    if (std::chrono::steady_clock::now() > give_up) {
      std::fprintf(stderr,
                   "rank %d: no word from rank %d for 60 s: the ranks went "
                   "different ways\n",
                   me, from);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::this_thread::yield();
  }
  int size = 0;
  MPI_Get_count(&status, MPI_BYTE, &size);
  std::vector<uint8_t> bytes(size_t(size) + 1); // never a null data()
  MPI_Recv(bytes.data(), size, MPI_BYTE, from, tag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  bytes.resize(size_t(size));
  return bytes;
}

struct Rank : Port {
  Scheduler sched;
  Fabric fabric;
  std::vector<FabricCall> calls; // logged since the last take
  std::vector<std::unique_ptr<PacketReceiver>> receivers;
  std::vector<std::unique_ptr<EchoCard>> cards;
  StepOrder order;
  uint64_t messages = 0; // this rank's, each to every other rank
  Rank()
      : fabric(sched, params(), make_topology(kNodes, 4)),
        order(uint32_t(ranks)) {
    fabric.set_call_log([this](const FabricCall &c) { calls.push_back(c); });
  }
  std::vector<FabricCall> take() { return std::exchange(calls, {}); }
  // The owner, after the network called into its card or after one of
  // its card's events: to every other rank.
  void tell(bool answer, int tag) {
    CardReply r{answer, take(), StepOrder::own_next(sched)};
    order.told(uint32_t(me), r.next);
    StateWriter out;
    write_reply(out, r);
    send_to_others(out, tag);
    ++messages;
  }
  // What rank `from` told.
  CardReply told(int from, int tag) {
    std::vector<uint8_t> bytes = receive(from, tag);
    CardReply r = read_reply(bytes);
    apply(r.calls);
    order.told(uint32_t(from), r.next);
    return r;
  }
  // Another rank's card was called: its owner's reply.
  bool replied(uint32_t node) { return told(int(owner(node)), kReply).answer; }
  void send(Packet p, Time at, std::function<void(Time)> fn) override {
    fabric.send(std::move(p), at, [this, fn](Time t) {
      take();
      fn(t);
      tell(false, kReply);
    });
  }
  void ready(uint32_t node, Time at) override {
    fabric.receiver_ready(node, at);
  }
  void apply(const std::vector<FabricCall> &list) {
    for (const FabricCall &c : list) {
      uint32_t node = c.packet.source;
      fabric.apply_call(c, [this, node](Time) { replied(node); });
    }
  }
};

class Owned : public PacketReceiver {
public:
  Owned(Rank &rank, EchoCard &card) : rank_(rank), card_(card) {}
  bool accept_head(const Packet &p, Time now) override {
    rank_.take();
    bool answer = card_.accept_head(p, now);
    rank_.tell(answer, kReply);
    return answer;
  }
  void packet_arrived(Packet p, Time now) override {
    rank_.take();
    card_.packet_arrived(std::move(p), now);
    rank_.tell(false, kReply);
  }

private:
  Rank &rank_;
  EchoCard &card_;
};

class StandIn : public PacketReceiver {
public:
  StandIn(Rank &rank, uint32_t node) : rank_(rank), node_(node) {}
  bool accept_head(const Packet &, Time) override {
    return rank_.replied(node_);
  }
  void packet_arrived(Packet, Time) override { rank_.replied(node_); }

private:
  Rank &rank_;
  uint32_t node_;
};

// An event's key as words, for the one allgather at the start.
using KeyWords = std::array<uint64_t, 5>;

KeyWords words(const std::optional<EventKey> &k) {
  if (!k)
    return {};
  return {1, k->when, uint64_t(int64_t(k->priority)), k->origin, k->seq};
}

std::optional<EventKey> key(const KeyWords &w) {
  if (!w[0])
    return std::nullopt;
  return EventKey{w[1], int(int64_t(w[2])), w[3], w[4]};
}

int run() {
  Rank rank;
  std::vector<std::string> logs(kNodes);
  for (uint32_t n = 0; n < kNodes; ++n) {
    if (owner(n) == uint32_t(me)) {
      rank.cards.push_back(std::make_unique<EchoCard>(
          n, kNodes, rank.sched, rank.fabric, rank, logs[n]));
      rank.receivers.push_back(
          std::make_unique<Owned>(rank, *rank.cards.back()));
    } else {
      rank.receivers.push_back(std::make_unique<StandIn>(rank, n));
    }
    rank.fabric.attach(n, rank.receivers.back().get());
  }
  for (auto &card : rank.cards)
    card->start();
  // The one collective before the end: every rank's first card event.
  std::vector<KeyWords> firsts(static_cast<size_t>(ranks));
  KeyWords mine = words(StepOrder::own_next(rank.sched));
  MPI_Allgather(mine.data(), 5, MPI_UINT64_T, firsts.data(), 5, MPI_UINT64_T,
                MPI_COMM_WORLD);
  for (int r = 0; r < ranks; ++r)
    rank.order.told(uint32_t(r), key(firsts[size_t(r)]));
  uint64_t network_events = 0, card_events = 0;
  bool in_order = true;
  for (;;) {
    StepOrder::Step step = rank.order.next(rank.sched);
    if (step.kind == StepOrder::Step::Done)
      break;
    SavedEvent top;
    bool has_top = rank.sched.peek(top);
    if (step.kind == StepOrder::Step::Network) {
      // Every rank runs it, with no message unless it calls into a card
      // (then Owned and StandIn exchange the owner's reply).
      in_order = in_order && has_top &&
                 EventKey::of(top) == EventKey::of(step.network);
      rank.order.ran(step.network);
      rank.sched.run_next();
      ++network_events;
      continue;
    }
    ++card_events;
    if (step.rank == uint32_t(me)) { // its owner runs it and tells
      in_order = in_order && has_top &&
                 EventKey::of(top) == *rank.order.next_card(uint32_t(me));
      rank.take();
      rank.sched.run_next();
      rank.tell(false, kCalls);
    } else {
      rank.told(int(step.rank), kCalls);
    }
  }
  // Each rank checks its own cards and its copy of the network.
  FabricStats one;
  std::vector<std::string> expected = one_process(one);
  int wrong = in_order ? 0 : 1;
  for (uint32_t n = 0; n < kNodes; ++n)
    if (owner(n) == uint32_t(me) && logs[n] != expected[n]) {
      std::fprintf(stderr, "rank %d: card %u saw other events\n", me, n);
      wrong = 1;
    }
  const FabricStats &s = rank.fabric.stats();
  if (s.packets_sent != one.packets_sent ||
      s.packets_delivered != one.packets_delivered ||
      s.packets_blocked != one.packets_blocked ||
      s.blocked_time != one.blocked_time) {
    std::fprintf(stderr, "rank %d: its network counted other packets\n", me);
    wrong = 1;
  }
  if (!in_order)
    std::fprintf(stderr, "rank %d: an event ran out of its order\n", me);
  // Every rank ran the same network events, in the same order.
  uint64_t digest = rank.order.digest(), lowest = 0, highest = 0;
  MPI_Allreduce(&digest, &lowest, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&digest, &highest, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lowest != highest) {
    std::fprintf(stderr, "rank %d: the ranks ran other network events\n", me);
    wrong = 1;
  }
  uint64_t messages = 0;
  MPI_Reduce(&rank.messages, &messages, 1, MPI_UINT64_T, MPI_SUM, 0,
             MPI_COMM_WORLD);
  int any = 0;
  MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0 && !any)
    std::printf("rank steps: %d ranks, %llu network events and %llu card "
                "events, %llu messages (each to every other rank), %llu "
                "packets (%llu blocked), every card and network the same as "
                "one process\n",
                ranks, (unsigned long long)network_events,
                (unsigned long long)card_events,
                (unsigned long long)(ranks > 1 ? messages : 0),
                (unsigned long long)one.packets_sent,
                (unsigned long long)one.packets_blocked);
  return any;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int status = 1;
  if (ranks > int(kNodes)) {
    if (me == 0)
      std::fprintf(stderr, "rank_steps_mpi: at most %u ranks\n", kNodes);
  } else {
    try {
      status = run();
    } catch (const std::exception &e) {
      std::fprintf(stderr, "rank %d: %s\n", me, e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Finalize();
  return status;
}
