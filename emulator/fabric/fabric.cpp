// The fabric's timing (docs/fabric.md): heads move hop by hop as scheduled
// events; the tail trails each head by the packet's length in time, counted
// on the head's own clock ("moved": time spent moving, not waiting), so a
// head that waits holds back its tail. A link is released once the tail has
// entered it and the head has left it (and, on Ethernet, the interframe gap
// after the tail has passed). A store-and-forward switch holds the head until
// the whole packet is in; the cable it came by is then free.
#include "fabric/fabric.hpp"
#include "fabric/routing.hpp"
#include "fabric/wiring.hpp"

#include "nicemu/error.hpp"
#include "observe/run_events.hpp"

#include <zlib.h>

#include <algorithm>
#include <cassert>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <span>
#include <utility>

namespace nicemu {

uint32_t packet_crc(const uint8_t *data, size_t len) {
  return uint32_t(crc32(crc32(0, nullptr, 0), data, uInt(len)));
}

using namespace fabric_detail;

namespace fabric_detail {

struct Hop {
  uint32_t link; // links are named by the port they leave from
  Time entered;  // the head's moving clock when it entered the link
};

// A packet's crossing of one link, for observers: kept until its tail has
// left the link and every crossing whose head entered the link before it has
// been told, so each link's crossings are told in the order they began.
struct Crossing {
  uint32_t source = 0;
  uint64_t id = 0;
  Time head = 0, tail = 0;
  bool tail_known = false;
  bool told = false; // by flush_events, ahead of its turn
  uint32_t route_bytes = 0;
  uint32_t destination = LinkRef::kUnknownNode; // where the route leads
  std::vector<uint8_t> frame; // the remaining route bytes, then the payload
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
  bool lost = false;     // an injected fault: it ends with the cable it is on
  uint32_t copies = 0;   // injected duplicates, sent once it has arrived
  bool copy = false;     // one of them: never duplicated again
  Packet original;       // as sent (with --link-dup only): what a copy is
  bool finished = false; // delivered or dropped: its last event ran
  bool in_use = false;   // sent and not yet freed
  // Store-and-forward: the switch port the head last arrived at, and whether
  // the packet waits there for its output port, filling that input.
  uint32_t in_port = kNoPort;
  bool blocking = false;
  Flight *next = nullptr; // next in a port's queue
  uint32_t slot = 0;      // index in the fabric's flight table
  // With an observer: one crossing per held link, and how many of them
  // know their tail's time.
  std::vector<Crossing *> crossings;
  size_t tails_known = 0;
  // A broadcast: the nodes this copy still goes to, and how many switches
  // it has crossed (the index of the next route byte to each of them).
  std::vector<uint32_t> targets;
  uint32_t hops = 0;
};

// One direction of a cable: who holds it and the heads queued for it.
struct Link {
  Flight *holder = nullptr;
  Flight *first = nullptr, *last = nullptr;
};

// A store-and-forward switch's input port: it holds one packet that waits
// for its output port; a head that arrives behind it waits on its cable.
struct Input {
  Flight *occupant = nullptr; // in the switch, waiting for an output port
  Flight *parked = nullptr;   // head waiting at the end of the cable
};

} // namespace fabric_detail

struct Fabric::Impl {
  Impl(Scheduler &s, FabricParams p, Topology t)
      : sched(s), params(p), topology(std::move(t)), wiring(wire(topology)),
        router(wiring), links(wiring.peer.size()),
        inputs(p.store_and_forward ? wiring.peer.size() : 0),
        receivers(topology.nodes, nullptr), refused(topology.nodes, nullptr),
        gap(Time(p.interframe_gap_bytes) * p.link_ps_per_byte) {}
  ~Impl() {
    for (EventId id : posted)
      sched.cancel(id);
  }

  void post(Time when, const char *name, std::function<void()> fn);
  Flight *new_flight();
  void maybe_free(Flight *f);
  // The head.
  void request(Flight *f, uint32_t link);
  void take(Flight *f, uint32_t link);
  void arrive(Flight *f, uint32_t port);
  void cross_switch(Flight *f, uint32_t port);
  void unblock(Flight *f);
  void leave_switch(Flight *f, uint32_t sw);
  void fan_out(Flight *f, uint32_t sw);
  void at_node(Flight *f, uint32_t node);
  void offer(Flight *f);
  void wait(Flight *f);
  void stop_waiting(Flight *f);
  void drop(Flight *f, bool filtered = false);
  // A misrouted packet: dropped, and the first few kept with `why`.
  void misroute(Flight *f, const std::string &why);
  void strike(Flight *f, uint32_t link);
  // Sends `p` from its source at `head_leaves`: Fabric::send, and the
  // duplicates of --link-dup.
  Flight *launch(Packet p, Time head_leaves, std::function<void(Time)> on_sent);
  // The tail.
  void move(Flight *f, Time duration, bool all = false);
  void stream(Flight *f);
  void release(Flight *f, size_t hop);
  void finish(Flight *f);
  // Observers.
  void open_crossing(Flight *f, uint32_t link);
  uint32_t route_end(uint32_t link, std::span<const uint8_t> route) const;
  void note_tails(Flight *f, Time now, Time end);
  void tell_crossings(uint32_t link, bool all_known = false);

  Scheduler &sched;
  FabricParams params;
  Topology topology;
  Wiring wiring;
  Router router;
  std::vector<Link> links;   // by the port each leaves from
  std::vector<Input> inputs; // by switch port; store-and-forward only
  std::vector<PacketReceiver *> receivers;
  std::vector<Flight *> refused; // node -> head its receiver refused
  std::vector<std::unique_ptr<Flight>> flights;
  std::vector<uint32_t> free_slots;
  // Events this fabric scheduled, so the destructor can cancel the ones
  // still pending; those that ran are swept out now and then.
  std::vector<EventId> posted;
  size_t sweep_at = 64;
  FabricStats stats;
  uint64_t misrouted = 0;
  std::vector<Misroute> misroutes; // the first kKeptMisroutes
  OutsideSink outside;             // set_outside
  uint64_t outside_sequence = 0;   // ids of frames from outside
  Time gap; // the interframe gap: a link stays idle that long after a tail
  // Observers (set_events): crossings by link, in the order heads entered.
  RunEvents *events = nullptr;
  std::vector<std::deque<Crossing>> crossings;
  std::vector<uint32_t> cable_of;      // link -> cable index in the topology
  std::vector<std::string> port_names; // port -> "node3", "switch1.p4"
  // Injected faults: one generator per link (inject_faults).
  LinkFaults faults;
  std::vector<std::mt19937_64> fault_rng, dup_rng;
  // The cores' side (send, receiver_ready, route) may be called by the
  // slices of a round running on several threads at once.
  std::mutex cores;
};

void Fabric::Impl::post(Time when, const char *name, std::function<void()> fn) {
  if (posted.size() >= sweep_at) {
    std::erase_if(posted, [this](EventId id) { return !sched.is_pending(id); });
    sweep_at = std::max<size_t>(64, 2 * posted.size());
  }
  posted.push_back(sched.schedule(when, name, std::move(fn)));
}

Flight *Fabric::Impl::new_flight() {
  if (free_slots.empty()) {
    flights.push_back(std::make_unique<Flight>());
    flights.back()->slot = uint32_t(flights.size() - 1);
    flights.back()->in_use = true;
    return flights.back().get();
  }
  Flight *f = flights[free_slots.back()].get();
  free_slots.pop_back();
  f->in_use = true;
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
  if (faults.any())
    strike(f, link); // before the observers: they see what the far end gets
  if (events)
    open_crossing(f, link);
  move(f, params.link_latency);
  uint32_t to = wiring.peer[link];
  post(sched.now() + params.link_latency, "fabric: head at a port",
       [this, f, to] { arrive(f, to); });
  if (f->blocking)
    unblock(f);
}

// Store-and-forward: a head arriving behind a packet that still waits in
// this input for its output port waits on its cable (holding it, and so the
// path back to its sender) until that packet leaves.
void Fabric::Impl::arrive(Flight *f, uint32_t port) {
  if (f->lost) {
    ++stats.packets_lost;
    f->dropped = true;
    return stream(f); // what is left of it drains into the cable's end
  }
  if (wiring.is_node(port))
    return at_node(f, port);
  if (params.store_and_forward) {
    f->in_port = port;
    Input &in = inputs[port];
    if (in.occupant) {
      in.parked = f;
      return wait(f);
    }
  }
  cross_switch(f, port);
}

// The head spends the switch's latency; store-and-forward, first the
// packet's length, until all of it is in: the cable it came by is then
// free (released once the tail and the interframe gap have passed).
void Fabric::Impl::cross_switch(Flight *f, uint32_t port) {
  uint32_t sw = wiring.switch_of(port);
  Time hold = params.switch_latency;
  if (params.store_and_forward)
    hold += f->length;
  move(f, hold, params.store_and_forward);
  post(sched.now() + hold, "fabric: switch routes",
       [this, f, sw] { leave_switch(f, sw); });
}

// `f` has its output port: its input takes the packet behind, if any.
void Fabric::Impl::unblock(Flight *f) {
  f->blocking = false;
  Input &in = inputs[f->in_port];
  in.occupant = nullptr;
  if (Flight *next = std::exchange(in.parked, nullptr)) {
    stop_waiting(next);
    cross_switch(next, f->in_port);
  }
}

// A route byte naming no port, or a port with no cable, drops the packet;
// so does a loop back onto a link the packet holds (it would wait for
// itself forever). An Ethernet frame no port leads to is filtered.
void Fabric::Impl::leave_switch(Flight *f, uint32_t sw) {
  if (f->packet.filtered) {
    if (!f->packet.spoofed && outside && outside(f->packet, sched.now())) {
      ++stats.packets_to_outside;
      f->dropped = true; // gone from the network: it drains here
      return stream(f);
    }
    return drop(f, true);
  }
  if (f->packet.broadcast)
    return fan_out(f, sw);
  std::vector<uint8_t> &route = f->packet.route;
  auto at = [sw] { return "switch s" + std::to_string(sw); }; // on failure
  if (route.empty())
    return misroute(f, "no route byte left at " + at());
  if (route[0] >= wiring.ports)
    return misroute(f, "route byte " + std::to_string(route[0]) +
                           " names no port of " + at() + " (it has " +
                           std::to_string(wiring.ports) + ")");
  uint32_t out = wiring.switch_port(sw, route[0]);
  if (wiring.peer[out] == kNoPort)
    return misroute(f, "route byte " + std::to_string(route[0]) + ": port " +
                           wiring.name(out) + " has no cable");
  if (links[out].holder == f)
    return misroute(f, "route byte " + std::to_string(route[0]) + " at " +
                           at() + " loops back onto a link the packet holds");
  route.erase(route.begin());
  request(f, out);
  if (params.store_and_forward && f->waiting) {
    inputs[f->in_port].occupant = f;
    f->blocking = true;
  }
}

// A broadcast leaves on each port that the routes to its targets take from
// here: the flight on the first, a copy (a flight of its own from here on,
// with the same length and head clock) on each other.
void Fabric::Impl::fan_out(Flight *f, uint32_t sw) {
  std::map<uint8_t, std::vector<uint32_t>> by_port;
  for (uint32_t target : f->targets) {
    std::vector<uint8_t> r = router.route(f->packet.source, target);
    if (f->hops >= r.size()) // a target behind this switch's own node
      return misroute(f, "broadcast: no route from switch s" +
                             std::to_string(sw) + " to node " +
                             std::to_string(target));
    by_port[r[f->hops]].push_back(target);
  }
  if (by_port.empty())
    return misroute(f, "broadcast: no target left at switch s" +
                           std::to_string(sw));
  bool first = true;
  uint32_t hops = f->hops + 1;
  for (auto &[port, targets] : by_port) {
    uint32_t out = wiring.switch_port(sw, port);
    Flight *branch = f;
    if (!first) {
      branch = new_flight();
      branch->packet = f->packet;
      branch->length = f->length;
      branch->moved = f->moved;
      branch->in_port = f->in_port;
    }
    first = false;
    branch->targets = std::move(targets);
    branch->hops = hops;
    if (wiring.peer[out] == kNoPort || links[out].holder == branch) {
      misroute(branch, "broadcast: port " + wiring.name(out) +
                           " has no cable or loops back");
      continue;
    }
    request(branch, out);
  }
}

void Fabric::Impl::at_node(Flight *f, uint32_t node) {
  if (f->packet.filtered) // two nodes back to back: the NIC filters it
    return drop(f, true);
  auto here = [node] { return "node " + std::to_string(node); };
  if (!f->packet.route.empty())
    return misroute(f, "reached " + here() + " with " +
                           std::to_string(f->packet.route.size()) +
                           " route byte(s) left");
  if (!receivers[node])
    return misroute(f, "reached " + here() + ", which has no receiver");
  if (f->packet.broadcast &&
      std::find(f->targets.begin(), f->targets.end(), node) == f->targets.end())
    return misroute(f, "broadcast reached " + here() + ", not a target");
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

void Fabric::Impl::misroute(Flight *f, const std::string &why) {
  if (misroutes.size() < kKeptMisroutes)
    misroutes.push_back({sched.now(), f->packet.source, why});
  drop(f);
}

void Fabric::Impl::drop(Flight *f, bool filtered) {
  if (filtered) {
    ++stats.packets_filtered;
    stats.packets_spoofed += f->packet.spoofed;
  } else
    ++misrouted;
  f->dropped = true;
  stream(f); // the bytes drain where the head stopped, freeing the path
}

namespace {

// A uniform draw in [0, 1) from 53 bits: the same on every platform, which
// std::uniform_real_distribution does not promise.
double unit_draw(std::mt19937_64 &rng) {
  return double(rng() >> 11) * 0x1.0p-53;
}

} // namespace

// Two draws per crossing, whatever the rates, so that a cable's stream of
// draws depends only on the packets that crossed it.
void Fabric::Impl::strike(Flight *f, uint32_t link) {
  std::mt19937_64 &rng = fault_rng[link];
  bool lose = unit_draw(rng) < faults.lose;
  bool corrupt = unit_draw(rng) < faults.corrupt;
  uint64_t bit = rng();
  std::vector<uint8_t> &payload = f->packet.payload;
  if (corrupt && !payload.empty()) {
    bit %= payload.size() * 8;
    payload[bit / 8] ^= uint8_t(1u << (bit % 8));
    ++stats.packets_corrupted;
  }
  if (lose)
    f->lost = true;
  // Broadcasts (Ethernet) are not duplicated: a copy would go to every node
  // again, not repeat one cable's packet.
  if (faults.dup > 0 && unit_draw(dup_rng[link]) < faults.dup &&
      !f->packet.broadcast && !f->copy)
    ++f->copies;
}

// ---- The tail ----------------------------------------------------------

// The head starts moving for `duration`. A link is released once the tail
// has entered it (and the interframe gap passed) and the head has left it
// (so a head waiting at the end of a link keeps it: nothing can pile up
// behind); the head has left all held links but the last (`all`: and the
// last too). on_sent runs when the tail enters the first link.
void Fabric::Impl::move(Flight *f, Time duration, bool all) {
  Time now = sched.now(), end = f->moved + duration;
  auto at = [&](Time moved) { // real time when the head's clock is `moved`
    return now + (moved > f->moved ? moved - f->moved : 0);
  };
  if (f->on_sent && f->length <= end) {
    post(at(f->length), "fabric: tail leaves its node",
         [this, on_sent = std::move(f->on_sent)] { on_sent(sched.now()); });
    f->on_sent = nullptr;
  }
  size_t left = all ? f->held.size() : f->held.size() - 1;
  for (; f->scheduled < left; ++f->scheduled) {
    Time passes = f->held[f->scheduled].entered + f->length + gap;
    if (passes > end)
      break;
    size_t hop = f->scheduled;
    post(at(passes), "fabric: tail passes a link",
         [this, f, hop] { release(f, hop); });
  }
  if (events)
    note_tails(f, now, end);
  f->moved = end;
}

// The head has stopped for good (taken, or dropped): the rest of the packet
// streams in behind it, releasing the links it still holds (the last one
// once the interframe gap after the tail has passed too).
void Fabric::Impl::stream(Flight *f) {
  move(f, f->length + gap, true);
  post(sched.now() + f->length,
       f->dropped ? "fabric: dropped packet drained" : "fabric: tail at node",
       [this, f] { finish(f); });
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
  // Duplicates follow a packet that arrived (one that was lost or dropped
  // took its copies with it).
  for (uint32_t i = 0; !f->dropped && i < f->copies; ++i) {
    ++stats.packets_duplicated;
    launch(f->original, sched.now(), nullptr)->copy = true;
  }
  f->copies = 0;
  f->original = {};
  maybe_free(f);
}

// ---- Observers ---------------------------------------------------------

// The node that `route` leads to from the port `link` leaves by, walking
// the wiring; kUnknownNode if it leads off the network or stops short.
uint32_t Fabric::Impl::route_end(uint32_t link,
                                 std::span<const uint8_t> route) const {
  uint32_t port = wiring.peer[link];
  for (uint8_t out : route) {
    if (port == kNoPort || wiring.is_node(port) || out >= wiring.ports)
      return LinkRef::kUnknownNode;
    port = wiring.peer[wiring.switch_port(wiring.switch_of(port), out)];
  }
  return port != kNoPort && wiring.is_node(port) ? port : LinkRef::kUnknownNode;
}

void Fabric::Impl::open_crossing(Flight *f, uint32_t link) {
  Crossing c;
  c.source = f->packet.source;
  c.id = f->packet.id;
  c.head = sched.now();
  // The route as on this link: the byte of the switch it leaves is gone. An
  // Ethernet frame's route is the switches' decisions, not on the wire.
  std::span<const uint8_t> route;
  if (!params.ethernet && !params.table_routing)
    route = f->packet.route;
  const std::vector<uint8_t> &payload = f->packet.payload;
  c.route_bytes = uint32_t(route.size());
  c.destination = route_end(link, route);
  c.frame.reserve(route.size() + payload.size());
  c.frame.insert(c.frame.end(), route.begin(), route.end());
  c.frame.insert(c.frame.end(), payload.begin(), payload.end());
  crossings[link].push_back(std::move(c));
  f->crossings.push_back(&crossings[link].back());
}

// The tail leaves a link when the head's clock has run one link latency and
// the packet's length past the head's entry; the head's clock runs from
// f->moved (at `now`) to `end` in this move.
void Fabric::Impl::note_tails(Flight *f, Time now, Time end) {
  for (; f->tails_known < f->crossings.size(); ++f->tails_known) {
    const Hop &hop = f->held[f->tails_known];
    Time leaves = hop.entered + params.link_latency + f->length;
    if (leaves > end)
      break;
    Crossing *c = f->crossings[f->tails_known];
    c->tail = now + (leaves > f->moved ? leaves - f->moved : 0);
    c->tail_known = true;
    tell_crossings(hop.link);
  }
}

// Tells the crossings at the front of `link`'s queue whose tails have left;
// `all_known`: also those waiting behind one whose tail has not (end of
// run). Those stay queued, marked told, as their flights point at them.
void Fabric::Impl::tell_crossings(uint32_t link, bool all_known) {
  std::deque<Crossing> &queue = crossings[link];
  if (queue.empty()) // also every link of an unused switch port
    return;
  LinkRef ref{cable_of[link], port_names[link], port_names[wiring.peer[link]]};
  ref.ethernet = params.ethernet;
  ref.rhinet = params.table_routing;
  auto tell = [&](Crossing &c) {
    ref.route_bytes = c.route_bytes;
    ref.destination = c.destination;
    if (!c.told)
      events->link_packet(ref, c.source, c.id, c.head, c.tail, c.frame);
    c.told = true;
  };
  while (!queue.empty() && queue.front().tail_known) {
    tell(queue.front());
    queue.pop_front();
  }
  if (all_known)
    for (Crossing &c : queue)
      if (c.tail_known)
        tell(c);
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

PacketReceiver *Fabric::receiver(uint32_t node) const {
  return node < impl_->receivers.size() ? impl_->receivers[node] : nullptr;
}

void Fabric::send(Packet p, Time head_leaves,
                  std::function<void(Time)> on_sent) {
  Impl &m = *impl_;
  if (p.source >= m.topology.nodes)
    throw Error("fabric: node " + std::to_string(p.source) +
                " cannot send (the topology has " +
                std::to_string(m.topology.nodes) + " nodes)");
  std::lock_guard lock(m.cores);
  ++m.stats.packets_sent;
  m.launch(std::move(p), head_leaves, std::move(on_sent));
}

Flight *Fabric::Impl::launch(Packet p, Time head_leaves,
                             std::function<void(Time)> on_sent) {
  Flight *f = new_flight();
  Time rate = std::max(p.source_ps_per_byte, params.link_ps_per_byte);
  size_t bytes = std::max<size_t>(p.payload.size(), params.min_frame_bytes);
  f->length = Time(params.preamble_bytes + bytes) * rate;
  if (faults.dup > 0 && !p.broadcast)
    f->original = p; // the route is consumed on the way
  f->packet = std::move(p);
  f->on_sent = std::move(on_sent);
  uint32_t source = f->packet.source;
  if (f->packet.broadcast) {
    f->packet.route.clear();
    if (!params.table_routing)
      f->targets.clear(); // source routes name one node: dropped
    else
      for (uint32_t n = 0; n < topology.nodes; ++n)
        if (n != source)
          f->targets.push_back(n);
  }
  post(head_leaves, "fabric: head leaves its node",
       [this, f, source] { request(f, wiring.node_port(source)); });
  return f;
}

void Fabric::receiver_ready(uint32_t node, Time at) {
  Impl &m = *impl_;
  if (node >= m.topology.nodes)
    throw Error("fabric: no node " + std::to_string(node));
  std::lock_guard lock(m.cores);
  m.post(std::max(at, m.sched.now()), "fabric: receiver ready", [&m, node] {
    Flight *f = std::exchange(m.refused[node], nullptr);
    if (f)
      m.offer(f);
  });
}

void Fabric::set_outside(OutsideSink sink) {
  impl_->outside = std::move(sink);
}

void Fabric::deliver_from_outside(uint32_t node, std::vector<uint8_t> payload,
                                  Time at) {
  Impl &m = *impl_;
  if (node >= m.topology.nodes)
    throw Error("fabric: no node " + std::to_string(node));
  ++m.stats.packets_from_outside;
  Flight *f = m.new_flight();
  size_t bytes = std::max<size_t>(payload.size(), m.params.min_frame_bytes);
  f->length = Time(m.params.preamble_bytes + bytes) * m.params.link_ps_per_byte;
  f->packet.source = m.topology.nodes;
  f->packet.id = (uint64_t(f->packet.source) << 40) | m.outside_sequence++;
  f->packet.payload = std::move(payload);
  // The link from the node's switch (or its peer) to the node.
  uint32_t link = m.wiring.peer[m.wiring.node_port(node)];
  EventOrigin was = m.sched.set_origin(EventOrigin::outside());
  m.post(std::max(at, m.sched.now()), "fabric: frame from outside",
         [&m, f, link] { m.request(f, link); });
  m.sched.set_origin(was);
}

void Fabric::inject_faults(const LinkFaults &faults) {
  auto check = [](double p, const char *what) {
    if (!(p >= 0 && p <= 1)) // NaN too
      throw Error(std::string("fabric: ") + what +
                  " must be a probability between 0 and 1");
  };
  check(faults.corrupt, "the corruption rate");
  check(faults.lose, "the loss rate");
  check(faults.dup, "the duplication rate");
  impl_->faults = faults;
  impl_->fault_rng.clear();
  impl_->dup_rng.clear();
  for (size_t link = 0; link < impl_->links.size(); ++link) {
    uint64_t seed = faults.seed * 0x9E3779B97F4A7C15ull + link;
    impl_->fault_rng.emplace_back(seed);
    impl_->dup_rng.emplace_back(seed ^ 0xD1B54A32D192ED03ull);
  }
}

const LinkFaults &Fabric::faults() const {
  return impl_->faults;
}

void Fabric::set_events(RunEvents *events) {
  Impl &m = *impl_;
  // A flight's crossings must match the links it holds from its first hop.
  assert(m.stats.packets_sent == 0 && "set_events before the first send");
  m.events = events;
  if (!events || !m.crossings.empty())
    return;
  m.crossings.resize(m.links.size());
  m.cable_of.assign(m.links.size(), 0);
  for (uint32_t i = 0; i < m.topology.cables.size(); ++i) {
    const auto &[a, b] = m.topology.cables[i];
    m.cable_of[m.wiring.id(a)] = m.cable_of[m.wiring.id(b)] = i;
  }
  for (uint32_t port = 0; port < m.links.size(); ++port) {
    std::string name(m.wiring.is_node(port) ? "node" : "switch");
    if (m.wiring.is_node(port)) {
      name += std::to_string(port);
    } else {
      name += std::to_string(m.wiring.switch_of(port));
      name += ".p";
      name += std::to_string(m.wiring.port_of(port));
    }
    m.port_names.push_back(std::move(name));
  }
}

void Fabric::flush_events() {
  Impl &m = *impl_;
  if (!m.events)
    return;
  for (uint32_t link = 0; link < m.crossings.size(); ++link)
    m.tell_crossings(link, true);
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
  Time through = 2 * p.link_latency + p.switch_latency;
  if (p.store_and_forward) // the shortest packet's length, at the fastest
    through += Time(p.preamble_bytes + p.min_frame_bytes) * p.link_ps_per_byte;
  return through;
}
std::vector<uint8_t> Fabric::route(uint32_t from, uint32_t to) const {
  std::lock_guard lock(impl_->cores); // the router caches its searches
  return impl_->router.route(from, to);
}
const FabricStats &Fabric::stats() const {
  return impl_->stats;
}
const std::vector<Misroute> &Fabric::misroutes() const {
  return impl_->misroutes;
}

uint64_t Fabric::packets_in_network() const {
  uint64_t n = 0;
  for (const auto &f : impl_->flights)
    n += f->in_use && !f->finished;
  return n;
}

uint64_t Fabric::misrouted() const {
  return impl_->misrouted;
}

} // namespace nicemu
