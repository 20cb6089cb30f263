// Checkpoints of the fabric (Fabric::save_state, load_state): a run saved
// at some time and loaded into a freshly built cluster goes on exactly as
// the run that was never interrupted, and a damaged state is refused with
// nicemu::Error, never a crash.
#include "fabric/fabric.hpp"

#include "nicemu/error.hpp"
#include "observe/run_events.hpp"
#include "sim/state_archive.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

using namespace nicemu;

namespace {

// The senders' owner key for the tags of their on_sents.
const uint64_t kSender = device_event_owner(0, 7);

// Everything a run shows from outside the fabric, in the order it happened.
struct Seen {
  std::string what; // "offer", "refused", "arrived", "sent", "crossing"
  uint32_t node = 0;
  uint64_t id = 0;
  Time at = 0, until = 0;
  std::vector<uint8_t> bytes;
  bool operator==(const Seen &) const = default;
};

// Tells every cable crossing.
class Observer : public RunEvents {
public:
  explicit Observer(std::vector<Seen> &log) : log_(log) {}
  void link_packet(const LinkRef &link, uint32_t source, uint64_t id, Time head,
                   Time tail, std::span<const uint8_t> frame) override {
    log_.push_back({"crossing", link.index * 1000 + source, id, head, tail,
                    std::vector<uint8_t>(frame.begin(), frame.end())});
  }

private:
  std::vector<Seen> &log_;
};

// Refuses heads before `open_at`, then asks the fabric to offer again.
class Receiver : public PacketReceiver {
public:
  Receiver(Fabric &fabric, uint32_t node, Time open_at, std::vector<Seen> &log)
      : fabric_(fabric), node_(node), open_at_(open_at), log_(log) {}
  bool accept_head(const Packet &p, Time now) override {
    if (now < open_at_) {
      log_.push_back({"refused", node_, p.id, now, 0, {}});
      fabric_.receiver_ready(node_, open_at_);
      return false;
    }
    log_.push_back({"offer", node_, p.id, now, 0, {}});
    return true;
  }
  void packet_arrived(Packet p, Time now) override {
    log_.push_back({"arrived", node_, p.id, now, 0, std::move(p.payload)});
  }

private:
  Fabric &fabric_;
  uint32_t node_;
  Time open_at_;
  std::vector<Seen> &log_;
};

struct Setup {
  FabricParams params;
  Topology topology;
  bool observe = false;
  LinkFaults faults;
  bool broadcasts = false;
  bool outside = false; // frames to and from outside the cluster
};

Setup setup(FabricParams params, Topology topology) {
  Setup s;
  s.params = params;
  s.topology = std::move(topology);
  return s;
}

// A cluster as a loader builds it: the same configuration, nothing sent.
struct Net {
  Scheduler sched;
  Fabric fabric;
  std::vector<Seen> log;
  Observer observer{log};
  std::vector<std::unique_ptr<Receiver>> rx;

  explicit Net(const Setup &s) : fabric(sched, s.params, s.topology) {
    if (s.observe)
      fabric.set_events(&observer);
    if (s.faults.any())
      fabric.inject_faults(s.faults);
    uint32_t nodes = fabric.topology().nodes;
    for (uint32_t n = 0; n < nodes; ++n) {
      // The last node is closed for a while: heads wait for it.
      Time open_at = n == nodes - 1 ? 60'000 : 0;
      rx.push_back(std::make_unique<Receiver>(fabric, n, open_at, log));
      fabric.attach(n, rx.back().get());
    }
    fabric.set_sent_maker(kSender,
                          [this](const EventTag &t) { return on_sent(t.a); });
    if (s.outside)
      fabric.set_outside([this](const Packet &p, Time now) {
        log.push_back({"outside", p.source, p.id, now, 0, p.payload});
        return p.id % 2 == 0; // the others are filtered
      });
  }

  std::function<void(Time)> on_sent(uint64_t id) {
    return [this, id](Time t) { log.push_back({"sent", 0, id, t, 0, {}}); };
  }

  void send(uint32_t from, std::vector<uint8_t> route, uint64_t id,
            size_t bytes, Time at, bool broadcast = false) {
    Packet p;
    p.source = from;
    p.id = id;
    p.route = std::move(route);
    p.broadcast = broadcast;
    for (size_t i = 0; i < bytes; ++i)
      p.payload.push_back(uint8_t(id * 7 + i));
    fabric.send(std::move(p), at, on_sent(id), EventTag{kSender, 1, id, 0});
  }

  // The run's traffic: many to one (heads wait for its link), some to the
  // closed node (refused), one misrouted, broadcasts where switches copy.
  void start(const Setup &s) {
    uint32_t nodes = fabric.topology().nodes;
    uint64_t id = 1;
    for (uint32_t from = 0; from < nodes; ++from)
      if (from != 1)
        send(from, fabric.route(from, 1), id++, 100 + 10 * from, 500 * from);
    for (uint32_t i = 0; i < 3 * nodes; ++i) {
      uint32_t from = i % nodes, to = (i * 3 + 1) % nodes;
      if (from == to)
        to = (to + 1) % nodes;
      send(from, fabric.route(from, to), id++, 40 + (i * 37) % 200,
           2000 + 3000 * i);
    }
    send(0, {99}, id++, 64, 4000); // names no port: misrouted
    if (s.broadcasts)
      for (uint32_t from = 0; from < 3; ++from)
        send(from, {}, id++, 80, 7000 + 9000 * from, true);
    if (s.outside) {
      for (uint32_t i = 0; i < 2; ++i) {
        Packet p;
        p.source = i;
        p.id = id++;
        p.filtered = true;
        p.payload.assign(70, uint8_t(p.id));
        fabric.send(std::move(p), 6000 + 4000 * i, nullptr);
      }
      fabric.deliver_from_outside(2, std::vector<uint8_t>(90, 0xEE), 9000);
      fabric.deliver_from_outside(nodes - 1, std::vector<uint8_t>(66, 0xDD),
                                  20'000);
    }
  }
};

std::vector<uint8_t> save(Net &net) {
  StateWriter out;
  net.fabric.save_state(out);
  net.sched.save(out);
  return out.take();
}

void load(Net &net, const std::vector<uint8_t> &bytes) {
  StateReader in(bytes, "test checkpoint");
  net.fabric.load_state(in);
  net.sched.load(in);
  CHECK(in.done());
}

void check_same_end(const Net &a, const Net &b) {
  const FabricStats &x = a.fabric.stats(), &y = b.fabric.stats();
  CHECK(x.packets_sent == y.packets_sent);
  CHECK(x.packets_delivered == y.packets_delivered);
  CHECK(x.packets_blocked == y.packets_blocked);
  CHECK(x.blocked_time == y.blocked_time);
  CHECK(x.packets_filtered == y.packets_filtered);
  CHECK(x.packets_to_outside == y.packets_to_outside);
  CHECK(x.packets_from_outside == y.packets_from_outside);
  CHECK(x.packets_corrupted == y.packets_corrupted);
  CHECK(x.packets_lost == y.packets_lost);
  CHECK(x.packets_duplicated == y.packets_duplicated);
  CHECK(a.fabric.misrouted() == b.fabric.misrouted());
  REQUIRE(a.fabric.misroutes().size() == b.fabric.misroutes().size());
  for (size_t i = 0; i < a.fabric.misroutes().size(); ++i) {
    CHECK(a.fabric.misroutes()[i].at == b.fabric.misroutes()[i].at);
    CHECK(a.fabric.misroutes()[i].why == b.fabric.misroutes()[i].why);
  }
  CHECK(a.fabric.packets_in_network() == b.fabric.packets_in_network());
  CHECK(a.sched.now() == b.sched.now());
}

// Saves the run at each of `times`, loads it into a new cluster, and runs
// both to the end: the same things happen after the checkpoint, at the
// same times, and saving the loaded run again makes the same bytes.
void check_resumes(const Setup &s, std::initializer_list<Time> times) {
  Net whole(s);
  whole.start(s);
  whole.sched.run_until(kTimeNever);
  whole.fabric.flush_events();
  CHECK(whole.fabric.stats().packets_delivered > 0);
  CHECK(whole.fabric.stats().packets_blocked > 0);
  CHECK(whole.fabric.misrouted() == 1);

  for (Time t : times) {
    CAPTURE(t);
    Net a(s);
    a.start(s);
    a.sched.run_until(t);
    CHECK(a.fabric.packets_in_network() > 0);
    std::vector<uint8_t> bytes = save(a);
    size_t before = a.log.size();
    a.sched.run_until(kTimeNever);
    a.fabric.flush_events();
    CHECK(a.log == whole.log); // saving changes nothing

    Net b(s);
    load(b, bytes);
    CHECK(save(b) == bytes);
    b.sched.run_until(kTimeNever);
    b.fabric.flush_events();
    std::vector<Seen> after(a.log.begin() + long(before), a.log.end());
    CHECK(after.size() == b.log.size());
    CHECK(after == b.log);
    check_same_end(a, b);
  }
}

FabricParams myrinet() {
  FabricParams p;
  p.link_ps_per_byte = 100;
  p.link_latency = 1000;
  p.switch_latency = 500;
  return p;
}

// Store-and-forward Ethernet: inputs hold packets, links idle a gap.
FabricParams ethernet() {
  FabricParams p = myrinet();
  p.ethernet = true;
  p.store_and_forward = true;
  p.preamble_bytes = 8;
  p.interframe_gap_bytes = 12;
  p.min_frame_bytes = 64;
  return p;
}

} // namespace

TEST_CASE("fabric checkpoint: one crossbar, heads waiting and refused") {
  Setup s = setup(myrinet(), make_topology(4, 8));
  check_resumes(s, {1, 1500, 3000, 12'000, 30'000, 55'000, 61'000});
}

TEST_CASE("fabric checkpoint: several switches, observed cables") {
  Setup s = setup(myrinet(), make_topology(12, 8));
  s.observe = true;
  check_resumes(s, {2500, 10'000, 40'000, 60'500});
}

TEST_CASE("fabric checkpoint: store-and-forward with injected faults") {
  Setup s = setup(ethernet(), make_topology(12, 8));
  s.observe = true;
  s.faults = {0.2, 0.1, 0.3, 7};
  s.outside = true;
  check_resumes(s, {3000, 9000, 20'000, 45'000, 60'100});
}

TEST_CASE("fabric checkpoint: table-routed broadcasts") {
  FabricParams p = myrinet();
  p.table_routing = true;
  Setup s = setup(p, make_topology(12, 8));
  s.broadcasts = true;
  check_resumes(s, {8000, 17'000, 30'000});
}

TEST_CASE("fabric checkpoint: a damaged state is refused, never a crash") {
  Setup s = setup(ethernet(), make_topology(12, 8));
  s.observe = true;
  s.faults = {0.2, 0.1, 0.3, 7};
  Net a(s);
  a.start(s);
  a.sched.run_until(20'000);
  StateWriter out;
  a.fabric.save_state(out);
  std::vector<uint8_t> state = out.take();

  // Every byte of the head of the state and of its tail, 100 places
  // between (each load parses the fault generators' states: a few ms).
  std::vector<size_t> places;
  for (size_t n = 0; n < state.size() && n < 64; ++n)
    places.push_back(n);
  for (size_t i = 1; i < 100; ++i)
    places.push_back(state.size() * i / 100);
  for (size_t n = state.size() > 32 ? state.size() - 32 : 0; n < state.size();
       ++n)
    places.push_back(n);

  Net b(s);
  for (size_t n : places) {
    std::span<const uint8_t> cut = std::span(state).first(n);
    StateReader in(cut, "cut");
    CHECK_THROWS_AS(b.fabric.load_state(in), Error);
  }
  // A byte changed: refused, or read as another state, never a crash.
  for (size_t n : places) {
    std::vector<uint8_t> bad = state;
    bad[n] ^= 0xA5;
    StateReader in(bad, "damaged");
    try {
      b.fabric.load_state(in);
    } catch (const Error &) {
    }
  }
  StateReader in(state, "whole");
  b.fabric.load_state(in);
  CHECK(in.done());
}

TEST_CASE("fabric checkpoint: another cluster's state is refused") {
  Setup s = setup(myrinet(), make_topology(4, 8));
  Net a(s);
  a.start(s);
  a.sched.run_until(3000);
  StateWriter out;
  a.fabric.save_state(out);
  std::vector<uint8_t> state = out.take();

  Setup other = setup(myrinet(), make_topology(6, 8));
  Net b(other);
  StateReader in(state, "other");
  CHECK_THROWS_AS(b.fabric.load_state(in), Error);

  Setup observed = s;
  observed.observe = true;
  Net c(observed);
  StateReader again(state, "observed");
  CHECK_THROWS_AS(c.fabric.load_state(again), Error);
}

TEST_CASE("fabric checkpoint: an event naming no flight is refused") {
  Setup s = setup(myrinet(), make_topology(4, 8));
  Net a(s);
  StateWriter out;
  a.fabric.save_state(out); // nothing in the network
  // Kind 2 is "fabric: head at a port"; slot 999 holds no flight.
  for (EventTag tag : {EventTag{kFabricEventOwner, 2, 999, 0},
                       EventTag{kFabricEventOwner, 999, 0, 0}}) {
    Scheduler other;
    other.schedule(
        10, "fabric: head at a port", [] {}, 0, tag);
    other.save(out);
    std::vector<uint8_t> bytes = out.data();
    Net b(s);
    StateReader in(bytes, "bad event");
    b.fabric.load_state(in);
    CHECK_THROWS_AS(b.sched.load(in), Error);
    out = StateWriter();
    a.fabric.save_state(out);
  }
}

TEST_CASE("fabric checkpoint: an untagged on_sent cannot be saved") {
  Setup s = setup(myrinet(), make_topology(4, 8));
  Net a(s);
  Packet p;
  p.source = 0;
  p.route = a.fabric.route(0, 2);
  p.payload.assign(100, 1);
  a.fabric.send(p, 0, [](Time) {});
  a.sched.run_until(500); // the head is out, the tail still in the node
  StateWriter out;
  CHECK_THROWS_AS(a.fabric.save_state(out), Error);

  // Without an on_sent there is nothing to make again.
  Net b(s);
  b.fabric.send(p, 0, nullptr);
  b.sched.run_until(500);
  StateWriter ok;
  b.fabric.save_state(ok);
  b.sched.save(ok);
  Net c(s);
  load(c, ok.data());
  c.sched.run_until(kTimeNever);
  CHECK(c.fabric.stats().packets_delivered == 1);
}
