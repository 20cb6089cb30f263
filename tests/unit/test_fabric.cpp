// The fabric's timing, by hand-computed figures: 100 ps per byte, 1000 ps
// per cable, 500 ps per switch, on one crossbar unless said otherwise.
#include "fabric/fabric.hpp"

#include "nicemu/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

using namespace nicemu;

namespace {

struct Arrival {
  uint32_t node;
  uint64_t id;
  Time head, tail;
  size_t route_left, bytes;
  bool operator==(const Arrival &) const = default;
};

// Records each head and tail; refuses heads while `closed`.
class Recorder : public PacketReceiver {
public:
  Recorder(uint32_t node, std::vector<Arrival> &log) : node_(node), log_(log) {}
  bool accept_head(const Packet &, Time now) override {
    offers.push_back(now);
    if (closed)
      return false;
    CHECK(!busy_); // the fabric never overlaps two packets at one node
    busy_ = true;
    head_ = now;
    return true;
  }
  void packet_arrived(Packet p, Time now) override {
    busy_ = false;
    log_.push_back({node_, p.id, head_, now, p.route.size(), p.payload.size()});
    payloads.push_back(std::move(p.payload));
  }
  bool closed = false;
  std::vector<Time> offers;
  std::vector<std::vector<uint8_t>> payloads; // as they arrived

private:
  uint32_t node_;
  std::vector<Arrival> &log_;
  bool busy_ = false;
  Time head_ = 0;
};

FabricParams test_params() {
  FabricParams p;
  p.link_ps_per_byte = 100;
  p.link_latency = 1000;
  p.switch_latency = 500;
  return p;
}

struct Net {
  Scheduler sched;
  Fabric fabric;
  std::vector<Arrival> log;
  std::vector<std::unique_ptr<Recorder>> rx;
  std::map<uint64_t, Time> sent; // packet id -> on_sent time
  std::vector<uint64_t> next_seq;

  explicit Net(Topology t, FabricParams p = test_params())
      : fabric(sched, p, std::move(t)) {
    uint32_t nodes = fabric.topology().nodes;
    next_seq.resize(nodes);
    for (uint32_t n = 0; n < nodes; ++n) {
      rx.push_back(std::make_unique<Recorder>(n, log));
      fabric.attach(n, rx.back().get());
    }
  }

  uint64_t send(uint32_t from, std::vector<uint8_t> route, size_t bytes,
                Time at, Time source_rate = 0) {
    Packet p;
    p.source = from;
    p.id = (uint64_t(from) << 40) | next_seq[from]++;
    p.route = std::move(route);
    p.payload.assign(bytes, uint8_t(p.id));
    p.source_ps_per_byte = source_rate;
    uint64_t id = p.id;
    fabric.send(std::move(p), at, [this, id](Time t) {
      CHECK(sent.count(id) == 0);
      sent[id] = t;
    });
    return id;
  }
  uint64_t send_to(uint32_t from, uint32_t to, size_t bytes, Time at) {
    return send(from, fabric.route(from, to), bytes, at);
  }
  const Arrival *arrival(uint64_t id) const {
    for (const Arrival &a : log)
      if (a.id == id)
        return &a;
    return nullptr;
  }
  void at(Time t, std::function<void()> fn) {
    sched.schedule(t, "test", std::move(fn));
  }
};

} // namespace

TEST_CASE("one packet through one switch: exact head and tail times") {
  Net net(make_topology(4, 8));
  uint64_t id = net.send(0, {2}, 100, 1000);
  net.sched.run_until(kTimeNever);
  // Head: 1000 + cable 1000 + switch 500 + cable 1000 = 3500; the tail is
  // 100 bytes x 100 ps behind; it left node 0 at 1000 + 10000.
  const Arrival *a = net.arrival(id);
  REQUIRE(a);
  CHECK(*a == Arrival{2, id, 3500, 13500, 0, 100});
  CHECK(net.sent[id] == 11000);
  CHECK(net.fabric.stats().packets_sent == 1);
  CHECK(net.fabric.stats().packets_delivered == 1);
  CHECK(net.fabric.stats().packets_blocked == 0);
  CHECK(net.fabric.misrouted() == 0);
  CHECK(net.sched.empty());
}

TEST_CASE("earliest arrival: no packet before its head left plus the "
          "shortest path, none once delivered") {
  Net net(make_topology(4, 8));
  // Two cables and a switch: 2500 ps.
  REQUIRE(net.fabric.min_path_latency() == 2500);
  CHECK(net.fabric.earliest_arrival(0) == kTimeNever);
  net.send(0, {2}, 100, 1000);
  net.send(1, {3}, 100, 4000);
  CHECK(net.fabric.earliest_arrival(0) == 3500);
  // Asked later: no sooner than then.
  CHECK(net.fabric.earliest_arrival(3600) == 3600);
  net.sched.run_until(14000); // the first has arrived (tail at 13500)
  CHECK(net.fabric.earliest_arrival(14000) == 14000);
  net.sched.run_until(kTimeNever);
  CHECK(net.fabric.earliest_arrival(20000) == kTimeNever);
}

TEST_CASE("a source slower than the link paces the whole packet") {
  Net net(make_topology(4, 8));
  uint64_t id = net.send(0, {2}, 100, 1000, 250);
  net.sched.run_until(kTimeNever);
  CHECK(*net.arrival(id) == Arrival{2, id, 3500, 28500, 0, 100});
  CHECK(net.sent[id] == 26000);
}

TEST_CASE("two packets for one output port serialize") {
  Net net(make_topology(4, 8));
  uint64_t a = net.send(0, {2}, 100, 0);
  uint64_t b = net.send(1, {2}, 100, 0);
  net.sched.run_until(kTimeNever);
  CHECK(*net.arrival(a) == Arrival{2, a, 2500, 12500, 0, 100});
  // b's head waits at s0:2 from 1500 until a's tail enters the cable to
  // node 2 (12500 - 1000), so it arrives just as a's tail does.
  CHECK(*net.arrival(b) == Arrival{2, b, 12500, 22500, 0, 100});
  CHECK(net.sent[a] == 10000);
  CHECK(net.sent[b] == 20000);
  CHECK(net.fabric.stats().packets_blocked == 1);
  CHECK(net.fabric.stats().blocked_time == 10000);
}

TEST_CASE("a refusing receiver holds the whole path until it is ready") {
  Net net(make_topology(4, 8));
  net.rx[2]->closed = true;
  uint64_t a = net.send(0, {2}, 100, 0);    // refused at 2500
  uint64_t c = net.send(1, {2}, 100, 0);    // needs s0:2, held by a
  uint64_t d = net.send(0, {3}, 100, 5000); // needs node 0's cable
  net.at(50000, [&] {
    net.rx[2]->closed = false;
    net.fabric.receiver_ready(2, net.sched.now());
  });
  net.sched.run_until(kTimeNever);
  CHECK(net.rx[2]->offers == std::vector<Time>{2500, 50000, 60000});
  // a streams from 50000; its tail leaves node 0 at 50000 + 10000 - 2500.
  CHECK(*net.arrival(a) == Arrival{2, a, 50000, 60000, 0, 100});
  CHECK(net.sent[a] == 57500);
  CHECK(*net.arrival(c) == Arrival{2, c, 60000, 70000, 0, 100});
  CHECK(net.sent[c] == 67500);
  // d's head waited for node 0's cable until a's tail entered it.
  CHECK(*net.arrival(d) == Arrival{3, d, 60000, 70000, 0, 100});
  CHECK(net.sent[d] == 67500);
  CHECK(net.fabric.stats().packets_blocked == 3);
  CHECK(net.fabric.stats().blocked_time == 47500 + 57500 + 52500);
}

TEST_CASE("a short packet frees the links its head has left") {
  Net net(make_topology(4, 8));
  net.rx[2]->closed = true;
  uint64_t a = net.send(0, {2}, 5, 0);   // 500 ps long, refused at 2500
  uint64_t b = net.send(1, {2}, 5, 0);   // waits for s0:2
  uint64_t c = net.send(0, {3}, 5, 600); // node 0's cable: free at 1500
  net.at(10000, [&] {
    net.rx[2]->closed = false;
    net.fabric.receiver_ready(2, net.sched.now());
  });
  net.sched.run_until(kTimeNever);
  CHECK(net.sent[a] == 500); // its tail left before the head even arrived
  CHECK(*net.arrival(a) == Arrival{2, a, 10000, 10500, 0, 5});
  // s0:2 stays held while a's head waits at node 2, then frees at once.
  CHECK(*net.arrival(b) == Arrival{2, b, 11000, 11500, 0, 5});
  // node 0's cable frees when a's head leaves s0 (1500).
  CHECK(*net.arrival(c) == Arrival{3, c, 4000, 4500, 0, 5});
  CHECK(net.sent[c] == 2000);
}

TEST_CASE("a sender queues behind its own earlier packet") {
  Net net(make_topology(4, 8));
  uint64_t a = net.send(0, {1}, 100, 0);
  uint64_t b = net.send(0, {2}, 100, 0);
  net.sched.run_until(kTimeNever);
  CHECK(*net.arrival(a) == Arrival{1, a, 2500, 12500, 0, 100});
  CHECK(*net.arrival(b) == Arrival{2, b, 12500, 22500, 0, 100});
  CHECK(net.sent[b] == 20000);
}

TEST_CASE("misrouted packets are dropped, counted, and free their path") {
  Net net(make_topology(4, 8));
  // Each is kept, with why, for the run's report (issue 23, also).
  std::string why;
  SUBCASE("a port that does not exist") {
    uint64_t bad = net.send(0, {9}, 100, 0);
    uint64_t good = net.send(0, {1}, 100, 0);
    net.sched.run_until(kTimeNever);
    CHECK(net.arrival(bad) == nullptr);
    CHECK(net.sent[bad] == 10000); // drained at s0 from 1500
    CHECK(*net.arrival(good) == Arrival{1, good, 12500, 22500, 0, 100});
    why = "route byte 9 names no port of switch s0 (it has 8)";
  }
  SUBCASE("a port with no cable") {
    uint64_t bad = net.send(0, {6}, 100, 0);
    net.sched.run_until(kTimeNever);
    CHECK(net.arrival(bad) == nullptr);
    CHECK(net.sent[bad] == 10000);
    why = "route byte 6: port s0:6 has no cable";
  }
  SUBCASE("no route byte left at a switch") {
    uint64_t bad = net.send(0, {}, 100, 0);
    net.sched.run_until(kTimeNever);
    CHECK(net.arrival(bad) == nullptr);
    CHECK(net.sent[bad] == 10000);
    why = "no route byte left at switch s0";
  }
  SUBCASE("route bytes left at a node") {
    uint64_t bad = net.send(0, {1, 3}, 100, 0);
    uint64_t next = net.send(2, {1}, 100, 0); // waits for s0:1
    net.sched.run_until(kTimeNever);
    CHECK(net.arrival(bad) == nullptr);
    CHECK(net.rx[1]->offers == std::vector<Time>{12500}); // only `next`
    CHECK(net.sent[bad] == 10000);
    // bad drained into node 1 from 2500: s0:1 free at 2500 + 10000 - 1000.
    CHECK(*net.arrival(next) == Arrival{1, next, 12500, 22500, 0, 100});
    why = "reached node 1 with 1 route byte(s) left";
  }
  CHECK(net.fabric.misrouted() == 1);
  REQUIRE(net.fabric.misroutes().size() == 1);
  CHECK(net.fabric.misroutes()[0].source == 0);
  CHECK(net.fabric.misroutes()[0].why == why);
  CHECK(net.fabric.packets_in_network() == 0);
  CHECK(net.fabric.stats().packets_sent == net.sent.size());
  CHECK(net.fabric.stats().packets_delivered == net.log.size());
  CHECK(net.sched.empty());
}

namespace {

// Every node but 0 sends `each` packets to node 0, each after the last has
// left; returns the arrivals in order.
std::vector<Arrival> all_to_one(uint32_t nodes, int each) {
  Net net(make_topology(nodes, 8));
  std::function<void(uint32_t, int)> next = [&](uint32_t from, int left) {
    if (left == 0)
      return;
    std::vector<uint8_t> route = net.fabric.route(from, 0);
    Packet p;
    p.source = from;
    p.id = (uint64_t(from) << 40) | uint64_t(left);
    p.route = route;
    p.payload.assign(16 + 8 * (from % 5), 0);
    net.fabric.send(std::move(p), net.sched.now() + 100 * from,
                    [&, from, left](Time) { next(from, left - 1); });
  };
  for (uint32_t n = 1; n < nodes; ++n)
    next(n, each);
  net.sched.run_until(kTimeNever);
  CHECK(net.fabric.stats().packets_delivered == uint64_t(nodes - 1) * each);
  CHECK(net.fabric.misrouted() == 0);
  CHECK(net.sched.empty());
  return net.log;
}

} // namespace

TEST_CASE("heavy all-to-one traffic: nothing lost, same order every run") {
  std::vector<Arrival> first = all_to_one(60, 20);
  REQUIRE(first.size() == 59 * 20);
  std::map<uint64_t, int> seen;
  for (size_t i = 0; i < first.size(); ++i) {
    CHECK(first[i].node == 0);
    CHECK(first[i].route_left == 0);
    CHECK(++seen[first[i].id] == 1);
    if (i > 0) // one at a time into node 0
      CHECK(first[i].head >= first[i - 1].tail);
  }
  CHECK(all_to_one(60, 20) == first);
}

namespace {

// Sends from every listed pair at time 0 and checks each arrives once, at
// the right node, with its route used up.
void deliver_pairs(const Topology &t,
                   const std::vector<std::pair<uint32_t, uint32_t>> &pairs) {
  Net net(t);
  std::map<uint64_t, uint32_t> dest;
  for (auto [from, to] : pairs)
    dest[net.send_to(from, to, 64, 0)] = to;
  net.sched.run_until(kTimeNever);
  REQUIRE(net.log.size() == pairs.size());
  for (const Arrival &a : net.log) {
    CHECK(a.node == dest.at(a.id));
    CHECK(a.route_left == 0);
    dest.erase(a.id);
  }
  CHECK(dest.empty());
  CHECK(net.fabric.misrouted() == 0);
}

} // namespace

TEST_CASE("every pair delivers on generated networks of 16 and 64 nodes") {
  for (uint32_t nodes : {16u, 64u}) {
    CAPTURE(nodes);
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (uint32_t a = 0; a < nodes; ++a)
      for (uint32_t b = 0; b < nodes; ++b)
        if (a != b)
          pairs.push_back({a, b});
    deliver_pairs(make_topology(nodes, 8), pairs);
  }
}

TEST_CASE("1024 nodes: thousands of packets in flight all deliver") {
  Topology t = make_topology(1024, 8);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t a = 0; a < 1024; ++a)
    for (uint32_t k : {1u, 7u, 49u, 343u, 1023u - 2 * (a % 512)})
      if ((a + k) % 1024 != a)
        pairs.push_back({a, (a + k) % 1024});
  deliver_pairs(t, pairs);
}

TEST_CASE("the longest route on 1024 nodes, uncontended") {
  Net net(make_topology(1024, 8));
  std::vector<uint8_t> route = net.fabric.topology().route(0, 1023);
  REQUIRE(route.size() == 7);
  uint64_t id = net.send(0, route, 100, 0);
  net.sched.run_until(kTimeNever);
  // 8 cables and 7 switches: 8 x 1000 + 7 x 500.
  CHECK(*net.arrival(id) == Arrival{1023, id, 11500, 21500, 0, 100});
  CHECK(net.sent[id] == 10000);
}

TEST_CASE("the fabric checks what it is given") {
  Scheduler sched;
  Topology t = make_topology(4, 8);
  FabricParams p = test_params();
  p.switch_ports = 16;
  CHECK_THROWS_WITH_AS(Fabric(sched, p, t),
                       "fabric: the topology has 8-port switches, the "
                       "model's have 16",
                       Error);
  t.cables.pop_back();
  CHECK_THROWS_WITH_AS(Fabric(sched, test_params(), t),
                       "topology: node 3 is not cabled", Error);
  Fabric f(sched, test_params(), make_topology(4, 8));
  CHECK_THROWS_AS(f.attach(4, nullptr), Error);
  Packet bad;
  bad.source = 7;
  CHECK_THROWS_AS(f.send(bad, 0, nullptr), Error);
}

TEST_CASE("a fabric destroyed with packets in flight leaves no events") {
  Scheduler sched;
  {
    Fabric f(sched, test_params(), make_topology(4, 8));
    Packet p;
    p.route = {1};
    p.payload.assign(10, 0);
    f.send(p, 100, nullptr);
    sched.run_until(1200);
    CHECK(!sched.empty());
  }
  CHECK(sched.empty());
}

TEST_CASE("two nodes cabled back to back: no switch, no route bytes") {
  Net net(parse_topology("switches 0\nnodes 2\ncable n0 n1\n", "b2b", 8));
  uint64_t id = net.send(1, {}, 100, 0);
  net.sched.run_until(kTimeNever);
  CHECK(*net.arrival(id) == Arrival{0, id, 1000, 11000, 0, 100});
  CHECK(net.sent[id] == 10000);
}

TEST_CASE("the fabric's routes match the topology's") {
  Scheduler sched;
  Fabric f(sched, test_params(), make_topology(100, 8));
  const Topology &t = f.topology();
  for (uint32_t a = 0; a < 100; a += 7) {
    std::vector<std::vector<uint8_t>> routes = t.routes_from(a);
    for (uint32_t b = 0; b < 100; ++b)
      if (a != b && f.route(a, b) != routes[b])
        FAIL_CHECK("route " << a << " -> " << b);
  }
  CHECK_THROWS_AS(f.route(5, 5), Error);
  CHECK_THROWS_AS(f.route(5, 100), Error);
}

TEST_CASE("a route that loops back onto its own path is dropped") {
  // n0 on s0:0, n1 on s1:0, s0:7 - s1:7. Route 7, 7, 7 would take s0:7
  // again while the packet still holds it.
  Net net(parse_topology("switches 2\nnodes 2\nnode 0 s0:0\nnode 1 s1:0\n"
                         "cable s0:7 s1:7\n",
                         "loop", 8));
  uint64_t bad = net.send(0, {7, 7, 7, 0}, 100, 0);
  uint64_t good = net.send(0, {7, 0}, 100, 0);
  net.sched.run_until(kTimeNever);
  CHECK(net.fabric.misrouted() == 1);
  CHECK(net.arrival(bad) == nullptr);
  // bad's head is dropped at s0 at 4500 (three cables, three switches);
  // node 0's cable frees when its tail has entered it: 4500 + 10000 - 4500.
  CHECK(net.sent[bad] == 10000);
  CHECK(*net.arrival(good) == Arrival{1, good, 14000, 24000, 0, 100});
  CHECK(net.sched.empty());
}

// ---- Ethernet: store-and-forward, framing overhead, filtering ------------
// The same round figures, plus an 8-byte preamble, a 12-byte interframe gap
// (1200 ps) and a 64-byte minimum frame.

namespace {

FabricParams ethernet_params() {
  FabricParams p = test_params();
  p.ethernet = true;
  p.store_and_forward = true;
  p.preamble_bytes = 8;
  p.interframe_gap_bytes = 12;
  p.min_frame_bytes = 64;
  return p;
}

} // namespace

TEST_CASE("store-and-forward: the head waits at the switch for the whole "
          "packet, the gap spaces packets on a cable") {
  Net net(make_topology(4, 8), ethernet_params());
  // 92 bytes + the preamble: 10000 ps long. Head at s0 at 1000, out at
  // 1000 + 500 + 10000 = 11500, at node 2 at 12500; tail 10000 later.
  uint64_t a = net.send(0, {2}, 92, 0);
  // Sent as a's tail leaves node 0: the cable is free once the gap after
  // a's tail has passed (11200), so b's head waits 1200 ps.
  uint64_t b = net.send(0, {3}, 92, 10000);
  // A 10-byte packet takes a 64-byte frame's time: (8 + 64) x 100.
  uint64_t c = net.send(1, {3}, 10, 0);
  net.sched.run_until(kTimeNever);
  CHECK(*net.arrival(a) == Arrival{2, a, 12500, 22500, 0, 92});
  CHECK(net.sent[a] == 10000);
  CHECK(*net.arrival(b) == Arrival{3, b, 11200 + 12500, 11200 + 22500, 0, 92});
  CHECK(net.sent[b] == 21200);
  CHECK(*net.arrival(c) == Arrival{3, c, 1000 + 500 + 7200 + 1000,
                                   1000 + 500 + 7200 + 1000 + 7200, 0, 10});
  CHECK(net.sent[c] == 7200);
  CHECK(net.fabric.stats().packets_blocked == 1);
  CHECK(net.fabric.stats().blocked_time == 1200);
  // Lookahead: two cables, the switch, and the shortest frame's time.
  CHECK(net.fabric.min_path_latency() == 2 * 1000 + 500 + (8 + 64) * 100);
}

TEST_CASE("store-and-forward: a packet waiting for its output port holds "
          "its input, the next one on that input waits on its cable") {
  Net net(make_topology(4, 8), ethernet_params());
  uint64_t a = net.send(0, {2}, 92, 0);
  uint64_t b = net.send(1, {2}, 92, 0);     // waits for s0:2 from 11500
  uint64_t c = net.send(1, {3}, 92, 10000); // behind b, for a free port
  net.sched.run_until(kTimeNever);
  CHECK(*net.arrival(a) == Arrival{2, a, 12500, 22500, 0, 92});
  // s0:2 frees when a's tail has left it (21500) and the gap has passed.
  CHECK(*net.arrival(b) == Arrival{2, b, 23700, 33700, 0, 92});
  // b's tail is in the switch: its sender is not held back.
  CHECK(net.sent[b] == 10000);
  // c takes node 1's cable after the gap (11200) and reaches s0 at 12200,
  // where b still fills the input: c waits on the cable until b leaves
  // (22700), then the switch receives it (10500). Its own tail was held
  // back meanwhile: it leaves node 1 at 22700 + 10000 - 1000.
  CHECK(*net.arrival(c) == Arrival{3, c, 22700 + 10500 + 1000,
                                   22700 + 10500 + 1000 + 10000, 0, 92});
  CHECK(net.sent[c] == 31700);
  CHECK(net.fabric.stats().packets_blocked == 2);
  CHECK(net.fabric.stats().blocked_time == 11200 + 1200 + 10500);
}

TEST_CASE("store-and-forward through a tree of 16-port switches") {
  // 17 nodes: leaves s0 (nodes 0-14) and s1 (15-16) under the root s2.
  Net net(make_topology(17, 16), [] {
    FabricParams p = ethernet_params();
    p.switch_ports = 16;
    return p;
  }());
  REQUIRE(net.fabric.route(0, 16) == std::vector<uint8_t>{15, 1, 1});
  uint64_t a = net.send_to(0, 16, 92, 0);
  net.sched.run_until(kTimeNever);
  // Four cables, three switches each holding the head 500 + 10000.
  Time head = 4 * 1000 + 3 * (500 + 10000);
  CHECK(*net.arrival(a) == Arrival{16, a, head, head + 10000, 0, 92});
}

TEST_CASE("filtered frames are dropped by the first switch and counted") {
  Net net(make_topology(4, 8), ethernet_params());
  Packet p;
  p.source = 0;
  p.id = 99;
  p.payload.assign(92, 0xFF);
  p.filtered = true;
  Time done = 0;
  net.fabric.send(std::move(p), 0, [&](Time t) { done = t; });
  uint64_t after = net.send(0, {1}, 92, 10000);
  net.sched.run_until(kTimeNever);
  CHECK(done == 10000); // the sender is not stuck
  CHECK(net.log.size() == 1);
  CHECK(net.arrival(after) != nullptr);
  CHECK(net.fabric.stats().packets_filtered == 1);
  CHECK(net.fabric.misrouted() == 0);
  CHECK(net.fabric.stats().packets_delivered == 1);
}

// ---- Injected faults ---------------------------------------------------

namespace {

// Bits that differ between two equally long byte strings.
int differing_bits(const std::vector<uint8_t> &a,
                   const std::vector<uint8_t> &b) {
  REQUIRE(a.size() == b.size());
  int bits = 0;
  for (size_t i = 0; i < a.size(); ++i)
    bits += __builtin_popcount(unsigned(a[i] ^ b[i]));
  return bits;
}

// Node 0 sends `count` 64-byte packets to node 1 through the crossbar (two
// cables), 10 ns apart; returns node 1's payloads.
std::vector<std::vector<uint8_t>> run_with(const LinkFaults &faults, int count,
                                           FabricStats *stats = nullptr) {
  Net net(make_topology(2, 8));
  net.fabric.inject_faults(faults);
  for (int i = 0; i < count; ++i)
    net.send_to(0, 1, 64, Time(i) * 10'000);
  net.sched.run_until(kTimeNever);
  CHECK(net.sent.size() == size_t(count)); // every sender is told, lost or not
  if (stats)
    *stats = net.fabric.stats();
  return net.rx[1]->payloads;
}

} // namespace

TEST_CASE("injected corruption flips one bit per cable crossed") {
  LinkFaults f;
  f.corrupt = 1;
  FabricStats stats;
  auto got = run_with(f, 3, &stats);
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < got.size(); ++i) {
    std::vector<uint8_t> sent(64, uint8_t(i)); // Net::send fills with the id
    int bits = differing_bits(got[i], sent);
    // Two cables, one flip on each: two bits, or none if both hit one bit.
    CHECK((bits == 2 || bits == 0));
  }
  CHECK(stats.packets_corrupted == 6);
  CHECK(stats.packets_delivered == 3);
  CHECK(stats.packets_lost == 0);
}

TEST_CASE("injected faults are the same for the same seed, not for another") {
  LinkFaults f;
  f.corrupt = 0.5;
  auto a = run_with(f, 40), b = run_with(f, 40);
  CHECK(a == b);
  f.seed = 2;
  CHECK(run_with(f, 40) != a);
}

TEST_CASE("a lost packet never arrives, frees its path, and its sender goes "
          "on") {
  LinkFaults f;
  f.lose = 1;
  FabricStats stats;
  CHECK(run_with(f, 2, &stats).empty());
  // Lost on the first cable: it drains at the switch and goes no further.
  CHECK(stats.packets_lost == 2);
  CHECK(stats.packets_delivered == 0);

  // Half the packets lost: the rest arrive whole, through the same links.
  f.lose = 0.5;
  auto got = run_with(f, 20, &stats);
  CHECK(stats.packets_lost > 0);
  CHECK(got.size() == 20 - stats.packets_lost);
  for (const auto &p : got)
    CHECK(p.size() == 64);
}

namespace {

// Checks the arrivals of packets 0..count-1 sent in order, some of them
// duplicated: each arrives whole at least once; the first arrivals keep the
// sending order (one path per pair); copies come after their original.
// Returns how many arrivals were copies.
size_t check_copies(const std::vector<std::vector<uint8_t>> &got, int count) {
  std::vector<int> seen(size_t(count), 0);
  int next_first = 0;
  size_t copies = 0;
  for (const auto &p : got) {
    REQUIRE(p.size() == 64);
    CHECK(p == std::vector<uint8_t>(64, p[0]));
    REQUIRE(p[0] < count);
    if (seen[p[0]]++ == 0)
      CHECK(int(p[0]) == next_first++); // an original, in order
    else
      ++copies;
  }
  CHECK(next_first == count); // every packet arrived
  return copies;
}

} // namespace

TEST_CASE("a duplicated packet arrives once more, after the original, "
          "whole") {
  LinkFaults f;
  f.dup = 1;
  FabricStats stats;
  // Two cables crossed, a copy decided on each (copies are not copied
  // again): three arrivals per packet.
  auto got = run_with(f, 3, &stats);
  REQUIRE(got.size() == 9);
  CHECK(check_copies(got, 3) == 6);
  CHECK(stats.packets_duplicated == 6);
  CHECK(stats.packets_delivered == 9);
  CHECK(stats.packets_sent == 3);

  // Some duplicated; same seed, same copies.
  f.dup = 0.2;
  auto some = run_with(f, 40, &stats);
  CHECK(stats.packets_duplicated > 0);
  CHECK(stats.packets_duplicated < 40);
  REQUIRE(some.size() == 40 + stats.packets_duplicated);
  CHECK(check_copies(some, 40) == stats.packets_duplicated);
  CHECK(run_with(f, 40) == some);

  f.dup = 1.5;
  Net net(make_topology(2, 8));
  CHECK_THROWS_AS(net.fabric.inject_faults(f), Error);
}

TEST_CASE("fault rates outside [0, 1] are refused") {
  Net net(make_topology(2, 8));
  LinkFaults f;
  f.corrupt = 1.5;
  CHECK_THROWS_AS(net.fabric.inject_faults(f), Error);
  f.corrupt = 0;
  f.lose = -0.1;
  CHECK_THROWS_AS(net.fabric.inject_faults(f), Error);
}

namespace {

uint64_t send_broadcast(Net &net, uint32_t from, size_t bytes, Time at) {
  Packet p;
  p.source = from;
  p.id = (uint64_t(from) << 40) | net.next_seq[from]++;
  p.broadcast = true;
  p.payload.assign(bytes, 0xB5);
  uint64_t id = p.id;
  net.fabric.send(std::move(p), at, [&net, id](Time t) { net.sent[id] = t; });
  return id;
}

FabricParams table_params() {
  FabricParams p = test_params();
  p.table_routing = true;
  return p;
}

} // namespace

TEST_CASE("a broadcast reaches every other node once, copied at the switch") {
  Net net(make_topology(8, 8), table_params());
  uint64_t id = send_broadcast(net, 3, 100, 1000);
  net.sched.run_until(kTimeNever);
  std::vector<uint32_t> reached;
  for (const Arrival &a : net.log) {
    CHECK(a.id == id);
    // One switch: every copy's head arrives as a unicast's would.
    CHECK(a.head == 3500);
    CHECK(a.tail == 13500);
    reached.push_back(a.node);
  }
  std::sort(reached.begin(), reached.end());
  CHECK(reached == std::vector<uint32_t>{0, 1, 2, 4, 5, 6, 7});
  CHECK(net.sent[id] == 11000);
  CHECK(net.fabric.stats().packets_sent == 1);
  CHECK(net.fabric.stats().packets_delivered == 7);
  CHECK(net.fabric.misrouted() == 0);
  CHECK(net.sched.empty());
}

TEST_CASE(
    "a broadcast reaches each of 63 nodes behind a tree of switches once") {
  Net net(make_topology(64, 8), table_params());
  uint64_t id = send_broadcast(net, 0, 64, 0);
  net.sched.run_until(kTimeNever);
  std::map<uint32_t, int> reached;
  for (const Arrival &a : net.log) {
    CHECK(a.id == id);
    ++reached[a.node];
  }
  CHECK(reached.size() == 63);
  for (const auto &[node, times] : reached) {
    CHECK(node != 0);
    CHECK(times == 1);
  }
  CHECK(net.fabric.stats().packets_delivered == 63);
  CHECK(net.fabric.misrouted() == 0);
  CHECK(net.sched.empty());
}

TEST_CASE("a blocked broadcast copy does not hold back the others") {
  Net net(make_topology(4, 8), table_params());
  net.rx[2]->closed = true;
  uint64_t id = send_broadcast(net, 0, 100, 0);
  net.at(50'000, [&] {
    net.rx[2]->closed = false;
    net.fabric.receiver_ready(2, 50'000);
  });
  net.sched.run_until(kTimeNever);
  std::map<uint32_t, Time> head;
  for (const Arrival &a : net.log)
    head[a.node] = a.head;
  CHECK(head.size() == 3);
  CHECK(head[1] == 2500);
  CHECK(head[3] == 2500);
  CHECK(head[2] == 50'000);
  CHECK(net.sent[id] == 10'000);
}

TEST_CASE("two cabled nodes: a broadcast reaches the other, and source routes "
          "drop it") {
  Net b2b(parse_topology("switches 0\nnodes 2\ncable n0 n1\n", "b2b", 8),
          table_params());
  send_broadcast(b2b, 1, 100, 0);
  b2b.sched.run_until(kTimeNever);
  REQUIRE(b2b.log.size() == 1);
  CHECK(b2b.log[0].node == 0);

  Net myrinet(make_topology(4, 8)); // source routed: no broadcast
  send_broadcast(myrinet, 0, 100, 0);
  myrinet.sched.run_until(kTimeNever);
  CHECK(myrinet.log.empty());
  CHECK(myrinet.fabric.misrouted() == 1);
  CHECK(myrinet.sched.empty());
}

TEST_CASE("regression: a stalled wormhole ring leaves its packets counted in "
          "the network (issue 23, also)") {
  // Three switches in a ring, a node on each; each node sends two switches
  // round, all at once: each head holds its first ring link and waits for
  // the next, which the next packet holds. Nothing moves again.
  Topology ring = parse_topology("switches 3\nnodes 3\n"
                                 "node 0 s0:0\nnode 1 s1:0\nnode 2 s2:0\n"
                                 "cable s0:1 s1:2\ncable s1:1 s2:2\n"
                                 "cable s2:1 s0:2\n",
                                 "ring.topo", 8);
  Net net(ring);
  for (uint32_t n = 0; n < 3; ++n)
    net.send(n, {1, 1, 0}, 1000, 0);
  net.sched.run_until(kTimeNever);
  CHECK(net.log.empty());
  CHECK(net.sched.empty());
  CHECK(net.fabric.stats().packets_delivered == 0);
  CHECK(net.fabric.misrouted() == 0);
  CHECK(net.fabric.packets_in_network() == 3);
  // The same traffic one way round the other nodes' way is fine.
  Net fine(ring);
  fine.send(0, {1, 1, 0}, 1000, 0);
  fine.sched.run_until(kTimeNever);
  CHECK(fine.log.size() == 1);
  CHECK(fine.fabric.packets_in_network() == 0);
}

TEST_CASE("what a card does when the network calls into it is numbered as "
          "that card's, not as the network's") {
  // Node 2 takes a head and a tail, node 0's on_sent runs, and a device
  // event of node 1 runs later; each schedules one event at 50000. There
  // they run by card (0, 1, 2), as one process and a run spread over
  // several both number them (docs/distributed.md).
  struct Card : PacketReceiver {
    Scheduler &sched;
    std::string &order;
    Card(Scheduler &s, std::string &o) : sched(s), order(o) {}
    void later(char c) {
      sched.schedule(50000, "later", [this, c] { order += c; });
    }
    bool accept_head(const Packet &, Time) override {
      later('h');
      return true;
    }
    void packet_arrived(Packet, Time) override { later('t'); }
  };
  Scheduler sched;
  std::string order;
  Fabric fabric(sched, test_params(), make_topology(4, 8));
  Card card(sched, order);
  fabric.attach(2, &card);
  Packet p;
  p.source = 0;
  p.route = {2};
  p.payload.assign(100, 0);
  fabric.send(std::move(p), 1000, [&](Time) { card.later('s'); });
  sched.schedule(
      20000, "node 1's device", [&] { card.later('d'); }, 0,
      EventTag{device_event_owner(1, 0)});
  sched.run_until(kTimeNever);
  CHECK(order == "sdht");
}
