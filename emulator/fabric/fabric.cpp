// The fabric's timing (docs/fabric.md): heads move hop by hop as scheduled
// events; the tail trails each head by the packet's length in time, counted
// on the head's own clock ("moved": time spent moving, not waiting), so a
// head that waits holds back its tail. A link is released once the tail has
// entered it and the head has left it.
#include "fabric/fabric.hpp"
#include "fabric/routing.hpp"
#include "fabric/wiring.hpp"

#include "nicemu/error.hpp"

#include <algorithm>
#include <cassert>
#include <map>
#include <utility>

namespace nicemu {

using namespace fabric_detail;

namespace fabric_detail {

struct Hop {
  uint32_t link; // links are named by the port they leave from
  Time entered;  // the head's moving clock when it entered the link
};

// A packet in the network.
struct Flight {
  Packet packet;
  std::function<void(Time)> on_sent;
  Time length = 0;       // payload bytes x the bottleneck rate
  Time moved = 0;        // the head's clock: time spent moving
  std::vector<Hop> held; // links entered, source first
  size_t scheduled = 0;  // held[0..scheduled) have a release scheduled
  size_t released = 0;   // how many have been released
  uint32_t node = 0;     // where the head is waiting for its receiver
  bool waiting = false;  // the head is waiting (port, receiver)
  bool waited = false;   // ... or ever was
  Time wait_since = 0;
  bool dropped = false;
  bool finished = false;  // delivered or dropped: its last event ran
  Flight *next = nullptr; // next in a port's queue
  uint32_t slot = 0;      // index in the fabric's flight table
};

// One direction of a cable: who holds it and the heads queued for it.
struct Link {
  Flight *holder = nullptr;
  Flight *first = nullptr, *last = nullptr;
};

} // namespace fabric_detail

struct Fabric::Impl {
  Impl(Scheduler &s, FabricParams p, Topology t)
      : sched(s), params(p), topology(std::move(t)), wiring(wire(topology)),
        router(wiring), links(wiring.peer.size()),
        receivers(topology.nodes, nullptr), refused(topology.nodes, nullptr) {}
  ~Impl() {
    for (const auto &[key, id] : pending)
      sched.cancel(id);
  }

  void post(Time when, std::string name, std::function<void()> fn);
  Flight *new_flight();
  void maybe_free(Flight *f);
  // The head.
  void request(Flight *f, uint32_t link);
  void take(Flight *f, uint32_t link);
  void arrive(Flight *f, uint32_t port);
  void leave_switch(Flight *f, uint32_t sw);
  void at_node(Flight *f, uint32_t node);
  void offer(Flight *f);
  void wait(Flight *f);
  void stop_waiting(Flight *f);
  void drop(Flight *f);
  // The tail.
  void move(Flight *f, Time duration, bool all = false);
  void stream(Flight *f);
  void release(Flight *f, size_t hop);
  void finish(Flight *f);

  Scheduler &sched;
  FabricParams params;
  Topology topology;
  Wiring wiring;
  Router router;
  std::vector<Link> links; // by the port each leaves from
  std::vector<PacketReceiver *> receivers;
  std::vector<Flight *> refused; // node -> head its receiver refused
  std::vector<std::unique_ptr<Flight>> flights;
  std::vector<uint32_t> free_slots;
  std::map<uint64_t, EventId> pending; // so the destructor can cancel them
  uint64_t next_key = 0;
  FabricStats stats;
  uint64_t misrouted = 0;
};

void Fabric::Impl::post(Time when, std::string name, std::function<void()> fn) {
  uint64_t key = next_key++;
  EventId id =
      sched.schedule(when, std::move(name), [this, key, fn = std::move(fn)] {
        pending.erase(key);
        fn();
      });
  pending.emplace_hint(pending.end(), key, id);
}

Flight *Fabric::Impl::new_flight() {
  if (free_slots.empty()) {
    flights.push_back(std::make_unique<Flight>());
    flights.back()->slot = uint32_t(flights.size() - 1);
    return flights.back().get();
  }
  Flight *f = flights[free_slots.back()].get();
  free_slots.pop_back();
  return f;
}

void Fabric::Impl::maybe_free(Flight *f) {
  if (!f->finished || f->released < f->held.size())
    return;
  uint32_t slot = f->slot;
  *f = Flight{};
  f->slot = slot;
  free_slots.push_back(slot);
}

// ---- The head ----------------------------------------------------------

void Fabric::Impl::request(Flight *f, uint32_t link) {
  Link &l = links[link];
  if (!l.holder)
    return take(f, link);
  (l.last ? l.last->next : l.first) = f;
  l.last = f;
  wait(f);
}

void Fabric::Impl::take(Flight *f, uint32_t link) {
  links[link].holder = f;
  stop_waiting(f);
  f->held.push_back({link, f->moved});
  move(f, params.link_latency);
  uint32_t to = wiring.peer[link];
  post(sched.now() + params.link_latency, "fabric: head at " + wiring.name(to),
       [this, f, to] { arrive(f, to); });
}

void Fabric::Impl::arrive(Flight *f, uint32_t port) {
  if (wiring.is_node(port))
    return at_node(f, port);
  uint32_t sw = wiring.switch_of(port);
  move(f, params.switch_latency);
  post(sched.now() + params.switch_latency,
       "fabric: s" + std::to_string(sw) + " routes",
       [this, f, sw] { leave_switch(f, sw); });
}

// A route byte naming no port, or a port with no cable, drops the packet;
// so does a loop back onto a link the packet holds (it would wait for
// itself forever).
void Fabric::Impl::leave_switch(Flight *f, uint32_t sw) {
  std::vector<uint8_t> &route = f->packet.route;
  if (route.empty() || route[0] >= wiring.ports)
    return drop(f);
  uint32_t out = wiring.switch_port(sw, route[0]);
  if (wiring.peer[out] == kNoPort || links[out].holder == f)
    return drop(f);
  route.erase(route.begin());
  request(f, out);
}

void Fabric::Impl::at_node(Flight *f, uint32_t node) {
  if (!f->packet.route.empty() || !receivers[node])
    return drop(f);
  f->node = node;
  offer(f);
}

void Fabric::Impl::offer(Flight *f) {
  PacketReceiver *r = receivers[f->node]; // detached meanwhile: wait
  if (!r || !r->accept_head(f->packet, sched.now())) {
    refused[f->node] = f;
    return wait(f);
  }
  stop_waiting(f);
  stream(f);
}

void Fabric::Impl::wait(Flight *f) {
  if (f->waiting)
    return; // refused again: still the same wait
  f->waiting = true;
  f->wait_since = sched.now();
  if (!f->waited)
    ++stats.packets_blocked;
  f->waited = true;
}

void Fabric::Impl::stop_waiting(Flight *f) {
  if (!f->waiting)
    return;
  f->waiting = false;
  stats.blocked_time += sched.now() - f->wait_since;
}

void Fabric::Impl::drop(Flight *f) {
  ++misrouted;
  f->dropped = true;
  stream(f); // the bytes drain where the head stopped, freeing the path
}

// ---- The tail ----------------------------------------------------------

// The head starts moving for `duration`. A link is released once the tail
// has entered it and the head has left it (so a head waiting at the end of
// a link keeps it: nothing can pile up behind); the head has left all held
// links but the last (`all`: and the last too). on_sent runs when the tail
// enters the first link.
void Fabric::Impl::move(Flight *f, Time duration, bool all) {
  Time now = sched.now(), end = f->moved + duration;
  auto at = [&](Time moved) { // real time when the head's clock is `moved`
    return now + (moved > f->moved ? moved - f->moved : 0);
  };
  if (f->on_sent && f->length <= end) {
    post(at(f->length),
         "fabric: tail leaves n" + std::to_string(f->packet.source),
         [this, on_sent = std::move(f->on_sent)] { on_sent(sched.now()); });
    f->on_sent = nullptr;
  }
  size_t left = all ? f->held.size() : f->held.size() - 1;
  for (; f->scheduled < left; ++f->scheduled) {
    Time passes = f->held[f->scheduled].entered + f->length;
    if (passes > end)
      break;
    size_t hop = f->scheduled;
    post(at(passes), "fabric: tail passes " + wiring.name(f->held[hop].link),
         [this, f, hop] { release(f, hop); });
  }
  f->moved = end;
}

// The head has stopped for good (taken, or dropped): the rest of the packet
// streams in behind it, releasing the links it still holds.
void Fabric::Impl::stream(Flight *f) {
  move(f, f->length, true);
  std::string name = f->dropped ? "fabric: dropped packet drained"
                                : "fabric: tail at " + wiring.name(f->node);
  post(sched.now() + f->length, std::move(name), [this, f] { finish(f); });
}

void Fabric::Impl::release(Flight *f, size_t hop) {
  uint32_t id = f->held[hop].link;
  Link &link = links[id];
  assert(link.holder == f);
  link.holder = nullptr;
  ++f->released;
  if (Flight *next = link.first) {
    link.first = next->next;
    if (!link.first)
      link.last = nullptr;
    next->next = nullptr;
    take(next, id);
  }
  maybe_free(f);
}

void Fabric::Impl::finish(Flight *f) {
  f->finished = true;
  if (!f->dropped && receivers[f->node]) {
    ++stats.packets_delivered;
    receivers[f->node]->packet_arrived(std::move(f->packet), sched.now());
  }
  maybe_free(f);
}

// ---- Fabric ------------------------------------------------------------

Fabric::Fabric(Scheduler &scheduler, FabricParams params, Topology topology) {
  topology.validate();
  if (topology.ports_per_switch != params.switch_ports)
    throw Error("fabric: the topology has " +
                std::to_string(topology.ports_per_switch) +
                "-port switches, the model's have " +
                std::to_string(params.switch_ports));
  impl_ = std::make_unique<Impl>(scheduler, params, std::move(topology));
}

Fabric::~Fabric() = default;

void Fabric::attach(uint32_t node, PacketReceiver *receiver) {
  if (node >= impl_->topology.nodes)
    throw Error("fabric: cannot attach node " + std::to_string(node) +
                " (the topology has " + std::to_string(impl_->topology.nodes) +
                " nodes)");
  impl_->receivers[node] = receiver;
}

void Fabric::send(Packet p, Time head_leaves,
                  std::function<void(Time)> on_sent) {
  Impl &m = *impl_;
  if (p.source >= m.topology.nodes)
    throw Error("fabric: node " + std::to_string(p.source) +
                " cannot send (the topology has " +
                std::to_string(m.topology.nodes) + " nodes)");
  ++m.stats.packets_sent;
  Flight *f = m.new_flight();
  Time rate = std::max(p.source_ps_per_byte, m.params.link_ps_per_byte);
  f->length = Time(p.payload.size()) * rate;
  f->packet = std::move(p);
  f->on_sent = std::move(on_sent);
  uint32_t source = f->packet.source;
  m.post(head_leaves, "fabric: head leaves n" + std::to_string(source),
         [&m, f, source] { m.request(f, m.wiring.node_port(source)); });
}

void Fabric::receiver_ready(uint32_t node) {
  Impl &m = *impl_;
  if (node >= m.topology.nodes)
    throw Error("fabric: no node " + std::to_string(node));
  m.post(m.sched.now(), "fabric: n" + std::to_string(node) + " ready",
         [&m, node] {
           Flight *f = std::exchange(m.refused[node], nullptr);
           if (f)
             m.offer(f);
         });
}

const Topology &Fabric::topology() const {
  return impl_->topology;
}
const FabricParams &Fabric::params() const {
  return impl_->params;
}
Time Fabric::min_path_latency() const {
  const FabricParams &p = impl_->params;
  for (const auto &[a, b] : impl_->topology.cables)
    if (!a.is_switch && !b.is_switch)
      return p.link_latency;
  return 2 * p.link_latency + p.switch_latency;
}
std::vector<uint8_t> Fabric::route(uint32_t from, uint32_t to) const {
  return impl_->router.route(from, to);
}
const FabricStats &Fabric::stats() const {
  return impl_->stats;
}
uint64_t Fabric::misrouted() const {
  return impl_->misrouted;
}

} // namespace nicemu
