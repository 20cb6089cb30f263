// The step protocol of docs/distributed.md over MPI: each rank keeps a copy
// of the test network (tests/support/echo_network.hpp) with its share of
// the cards, and the ranks take their events in turn by key, one event a
// step (one MPI_Allgather of each rank's next key). A card's calls go to
// every other rank with their keys; when the network calls into a card,
// its owner sends its answer and calls to every other rank. Every rank
// then checks that its cards saw what they see in one process, and that
// its copy of the network counted what the one network counts.
//
//   mpirun -n R rank_steps_mpi      (R from 1 to 8)
//
// Exit 0 and "rank steps: ... same as one process" on rank 0, else 1.
#include "dist/fabric_calls.hpp"
#include "echo_network.hpp"

#include <mpi.h>

#include <array>
#include <cstdio>
#include <memory>
#include <tuple>

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

std::vector<uint8_t> receive(int from, int tag) {
  MPI_Status status;
  MPI_Probe(from, tag, MPI_COMM_WORLD, &status);
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
  Rank() : fabric(sched, params(), make_topology(kNodes, 4)) {
    fabric.set_call_log([this](const FabricCall &c) { calls.push_back(c); });
  }
  std::vector<FabricCall> take() { return std::exchange(calls, {}); }
  // The owner, after the network called into its card: to every other.
  void reply(bool answer) {
    StateWriter out;
    write_reply(out, {answer, take()});
    send_to_others(out, kReply);
  }
  // Another rank's card was called: its owner's reply.
  bool replied(uint32_t node) {
    std::vector<uint8_t> bytes = receive(int(owner(node)), kReply);
    CardReply r = read_reply(bytes);
    apply(r.calls);
    return r.answer;
  }
  void send(Packet p, Time at, std::function<void(Time)> fn) override {
    fabric.send(std::move(p), at, [this, fn](Time t) {
      take();
      fn(t);
      reply(false);
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
    rank_.reply(answer);
    return answer;
  }
  void packet_arrived(Packet p, Time now) override {
    rank_.take();
    card_.packet_arrived(std::move(p), now);
    rank_.reply(false);
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

// A rank's next event, for the allgather: has, when, priority, origin,
// seq, and whether it is the network's.
using NextKey = std::array<uint64_t, 6>;

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
  uint64_t steps = 0;
  bool agreed = true;
  std::vector<NextKey> keys(static_cast<size_t>(ranks));
  for (;;) {
    SavedEvent e;
    NextKey mine{};
    if (rank.sched.peek(e))
      mine = {1,        e.when, uint64_t(int64_t(e.priority)),
              e.origin, e.seq,  e.tag.owner == kFabricEventOwner};
    MPI_Allgather(mine.data(), 6, MPI_UINT64_T, keys.data(), 6, MPI_UINT64_T,
                  MPI_COMM_WORLD);
    int first = -1;
    auto key = [](const NextKey &k) {
      return std::tie(k[1], k[2], k[3], k[4]);
    };
    for (int r = 0; r < ranks; ++r)
      if (keys[size_t(r)][0] &&
          (first < 0 || key(keys[size_t(r)]) < key(keys[size_t(first)])))
        first = r;
    if (first < 0)
      break;
    ++steps;
    if (keys[size_t(first)][5]) {
      // The network's: every rank has it, with the same key; the owner of
      // the card it calls into sends its reply, the others wait for it.
      for (const NextKey &k : keys)
        agreed = agreed && k == keys[size_t(first)];
      if (!agreed)
        break;
      rank.sched.run_next();
      continue;
    }
    // A card's: its owner runs it and sends its calls to the others.
    if (first == me) {
      rank.take();
      rank.sched.run_next();
      StateWriter out;
      write_calls(out, rank.take());
      send_to_others(out, kCalls);
    } else {
      std::vector<uint8_t> bytes = receive(first, kCalls);
      StateReader in(bytes, "calls");
      rank.apply(read_calls(in));
    }
  }
  // Each rank checks its own cards and its copy of the network.
  FabricStats one;
  std::vector<std::string> expected = one_process(one);
  int wrong = agreed ? 0 : 1;
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
  if (!agreed)
    std::fprintf(stderr, "rank %d: the ranks' next network events differ\n",
                 me);
  int any = 0;
  MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0 && !any)
    std::printf("rank steps: %d ranks, %llu steps, %llu packets (%llu "
                "blocked), every card and network the same as one "
                "process\n",
                ranks, (unsigned long long)steps,
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
