// The test network of the step protocol (docs/distributed.md, "Events at
// the same time on different ranks"): 8 test cards on three switches that
// send to every other card, refuse heads for a while after each packet,
// and answer from inside the network's calls and from their own events.
// Shared by tests/unit/test_rank_steps.cpp (two copies in one thread) and
// tests/mpi/rank_steps_mpi.cpp (one copy per MPI rank).
#pragma once

#include "fabric/fabric.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace echo_network {

using namespace nicemu;

inline FabricParams params() {
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
  // What a card schedules before the run is numbered as the card, like
  // everything it schedules later: the network's numbers must move only
  // with the network's events, which every rank runs (scheduled as the
  // loop, a rank with fewer cards would number the network's events
  // otherwise).
  void start() {
    Scheduler::OriginScope card(sched_, EventOrigin::card(node_));
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

inline std::vector<std::string> one_process(FabricStats &stats) {
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

} // namespace echo_network
