// What the fabric tells observers (Fabric::set_events): each packet's
// crossing of each cable, with the head's entry and the tail's exit, the
// frame as on that cable, told per cable in the order the heads entered.
// Figures as in test_fabric.cpp: 100 ps per byte, 1000 ps per cable, 500 ps
// per switch.
#include "fabric/fabric.hpp"
#include "observe/run_events.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

using namespace nicemu;

namespace {

struct Crossing {
  uint32_t cable;
  std::string from, to;
  uint32_t route_bytes, source;
  uint64_t id;
  Time head, tail;
  std::vector<uint8_t> frame;
  uint32_t destination;
};

class Recorder : public RunEvents {
public:
  void link_packet(const LinkRef &link, uint32_t source, uint64_t id, Time head,
                   Time tail, std::span<const uint8_t> frame) override {
    told.push_back({link.index, std::string(link.from), std::string(link.to),
                    link.route_bytes, source, id, head, tail,
                    std::vector<uint8_t>(frame.begin(), frame.end()),
                    link.destination});
  }
  std::vector<Crossing> told;
};

// Takes every head unless closed.
class Receiver : public PacketReceiver {
public:
  bool accept_head(const Packet &, Time) override { return !closed; }
  void packet_arrived(Packet, Time) override { ++arrived; }
  bool closed = false;
  int arrived = 0;
};

struct Net {
  Scheduler sched;
  Fabric fabric;
  Recorder events;
  std::vector<std::unique_ptr<Receiver>> rx;

  explicit Net(uint32_t nodes)
      : fabric(sched, params(), make_topology(nodes, 8)) {
    fabric.set_events(&events);
    for (uint32_t n = 0; n < nodes; ++n) {
      rx.push_back(std::make_unique<Receiver>());
      fabric.attach(n, rx.back().get());
    }
  }
  static FabricParams params() {
    FabricParams p;
    p.link_ps_per_byte = 100;
    p.link_latency = 1000;
    p.switch_latency = 500;
    return p;
  }
  void send(uint32_t from, uint32_t to, uint64_t id, size_t bytes, Time at) {
    Packet p;
    p.source = from;
    p.id = id;
    p.route = fabric.route(from, to);
    p.payload.assign(bytes, uint8_t(id));
    fabric.send(std::move(p), at, [](Time) {});
  }
};

} // namespace

TEST_CASE("one packet through one switch: both cables, exact times, frames") {
  Net net(3);
  net.send(0, 2, 5, 100, 0);
  net.sched.run_until(kTimeNever);
  REQUIRE(net.events.told.size() == 2);
  const Crossing &out = net.events.told[0], &in = net.events.told[1];
  // Cable n0-s0: the head enters at 0; the tail leaves one cable and the
  // packet's length (100 bytes x 100 ps) after it.
  CHECK(out.from == "node0");
  CHECK(out.to == "switch0.p0");
  CHECK(out.cable == 0);
  CHECK(out.head == 0);
  CHECK(out.tail == 11'000);
  CHECK(out.route_bytes == 1);
  CHECK(out.frame.size() == 101);
  CHECK(out.frame[0] == 2); // the route byte: switch port 2
  CHECK(out.source == 0);
  CHECK(out.id == 5);
  // Cable s0-n2: after the switch, the route byte stripped; the tail leaves
  // as it reaches node 2 (2500 + 10000).
  CHECK(in.from == "switch0.p2");
  CHECK(in.to == "node2");
  CHECK(in.cable == 2);
  CHECK(in.head == 1500);
  CHECK(in.tail == 12'500);
  CHECK(in.route_bytes == 0);
  CHECK(in.frame == std::vector<uint8_t>(100, 5));
  // Both crossings know where the route leads (the captures' destination).
  CHECK(out.destination == 2);
  CHECK(in.destination == 2);
}

TEST_CASE("every cable of a route through several switches knows its end") {
  Net net(20); // 8-port switches: more than one
  net.send(0, 19, 1, 64, 0);
  net.send(19, 3, 2, 64, 0);
  net.sched.run_until(kTimeNever);
  size_t between_switches = 0;
  for (const Crossing &c : net.events.told) {
    CAPTURE(c.from);
    CHECK(c.destination == (c.id == 1 ? 19u : 3u));
    between_switches +=
        c.from.starts_with("switch") && c.to.starts_with("switch");
  }
  CHECK(between_switches > 0);
}

TEST_CASE("a cable's crossings are told in the order the heads entered it") {
  // A short packet to a closed node stops with its tail still in its first
  // cable, which it has released; the next packet from the same node
  // crosses that cable and is delivered, but is told only after the first.
  Net net(3);
  net.rx[2]->closed = true;
  net.send(0, 2, 1, 20, 0);    // 2000 ps long: its tail is frozen in n0-s0
  net.send(0, 1, 2, 10, 5000); // takes n0-s0 after the release at 2000
  net.sched.run_until(100'000);
  CHECK(net.rx[1]->arrived == 1);
  for (const Crossing &c : net.events.told)
    CHECK(c.id == 2); // only packet 2's crossing of s0-n1 so far
  REQUIRE(net.events.told.size() == 1);
  CHECK(net.events.told[0].to == "node1");

  net.rx[2]->closed = false;
  net.fabric.receiver_ready(2, net.sched.now());
  net.sched.run_until(kTimeNever);
  std::vector<uint64_t> order;
  for (const Crossing &c : net.events.told)
    if (c.from == "node0")
      order.push_back(c.id);
  CHECK(order == std::vector<uint64_t>{1, 2});
  // Packet 1's tail left n0-s0 when the worm moved again at 100000:
  // 1000 ps of cable and 500 of switch were still ahead of the head's clock.
  for (const Crossing &c : net.events.told)
    if (c.id == 1 && c.from == "node0")
      CHECK(c.tail == 100'000 + 500);
}

TEST_CASE("at the end of a run, crossings waiting behind a stuck packet are "
          "told") {
  Net net(3);
  net.rx[2]->closed = true;
  net.send(0, 2, 1, 20, 0);
  net.send(0, 1, 2, 10, 5000);
  net.sched.run_until(100'000);
  REQUIRE(net.events.told.size() == 1);
  net.fabric.flush_events();
  REQUIRE(net.events.told.size() == 2);
  CHECK(net.events.told[1].id == 2);
  CHECK(net.events.told[1].from == "node0");
  net.fabric.flush_events(); // each crossing is told once
  CHECK(net.events.told.size() == 2);
}

TEST_CASE("misrouted packets are told on the cables they crossed") {
  Net net(3);
  Packet p;
  p.source = 0;
  p.id = 9;
  p.route = {6}; // a port with no cable
  p.payload.assign(8, 0);
  net.fabric.send(std::move(p), 0, [](Time) {});
  net.sched.run_until(kTimeNever);
  REQUIRE(net.events.told.size() == 1);
  CHECK(net.events.told[0].from == "node0");
  CHECK(net.events.told[0].route_bytes == 1);
  CHECK(net.events.told[0].destination == LinkRef::kUnknownNode);
  CHECK(net.fabric.misrouted() == 1);
}
