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
#include "sim/state_archive.hpp"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <span>
#include <sstream>
#include <unordered_map>
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
  EventTag sent_tag;     // what on_sent does, for checkpoints (send)
  Time length = 0;       // payload bytes x the bottleneck rate
  Time moved = 0;        // the head's clock: time spent moving
  Time arrives_from = 0; // no node receives it sooner (earliest_arrival)
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

// A sender's on_sent once the tail's leaving is scheduled: kept here, not in
// the event, so that a checkpoint can save its tag and make it again.
struct Sent {
  std::function<void(Time)> fn;
  EventTag tag; // the sender's (Fabric::send)
  bool in_use = false;
  uint32_t node = 0; // the sender: fn runs as its card
};

// The fabric's events, by EventTag::kind. Each is made again from (kind,
// a, b) alone: flights by their slot, links and ports by number.
enum EventKind : uint32_t {
  kHeadLeavesNode = 1, // a: flight, b: its source node
  kHeadAtPort,         // a: flight, b: the port the head reaches
  kSwitchRoutes,       // a: flight, b: the switch
  kTailLeavesNode,     // a: the on_sent (Fabric::Impl::sents)
  kTailPassesLink,     // a: flight, b: the hop it releases
  kTailAtNode,         // a: flight
  kDroppedDrained,     // a: flight
  kReceiverReady,      // a: the node
  kFrameFromOutside,   // a: flight, b: the link to its node
  kEventKinds
};

// The events' names, as the debugger shows them (kept, never copied).
const char *event_name(uint32_t kind) {
  switch (kind) {
  case kHeadLeavesNode:
    return "fabric: head leaves its node";
  case kHeadAtPort:
    return "fabric: head at a port";
  case kSwitchRoutes:
    return "fabric: switch routes";
  case kTailLeavesNode:
    return "fabric: tail leaves its node";
  case kTailPassesLink:
    return "fabric: tail passes a link";
  case kTailAtNode:
    return "fabric: tail at node";
  case kDroppedDrained:
    return "fabric: dropped packet drained";
  case kReceiverReady:
    return "fabric: receiver ready";
  case kFrameFromOutside:
    return "fabric: frame from outside";
  }
  return nullptr;
}

} // namespace fabric_detail

struct Fabric::Impl : EventOwner {
  Impl(Scheduler &s, FabricParams p, Topology t)
      : sched(s), params(p), topology(std::move(t)), wiring(wire(topology)),
        router(wiring), links(wiring.peer.size()),
        inputs(p.store_and_forward ? wiring.peer.size() : 0),
        receivers(topology.nodes, nullptr), refused(topology.nodes, nullptr),
        gap(Time(p.interframe_gap_bytes) * p.link_ps_per_byte) {
    sched.add_owner(kFabricEventOwner, this);
  }
  ~Impl() override {
    sched.remove_owner(kFabricEventOwner);
    for (EventId id : posted)
      sched.cancel(id);
  }

  Time min_path = 0; // Fabric::min_path_latency(), once

  // Schedules the event `kind` (EventKind) with its operands.
  void post(Time when, uint32_t kind, uint64_t a = 0, uint64_t b = 0);
  void track(EventId id);
  Scheduler::Callback callback(uint32_t kind, uint64_t a, uint64_t b);
  void restore_event(Scheduler &scheduler, const SavedEvent &e) override;
  // Whether (kind, a, b) names what this fabric has now.
  bool valid_event(uint32_t kind, uint64_t a, uint64_t b) const;
  uint32_t new_sent(std::function<void(Time)> fn, const EventTag &tag,
                    uint32_t node);
  std::function<void(Time)> remake_sent(StateReader &in, const EventTag &tag);
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
  bool accept_head(PacketReceiver &r, Flight *f);
  void wait(Flight *f);
  void stop_waiting(Flight *f);
  void drop(Flight *f, bool filtered = false);
  // A misrouted packet: dropped, and the first few kept with `why`.
  void misroute(Flight *f, const std::string &why);
  void strike(Flight *f, uint32_t link);
  // Sends `p` from its source at `head_leaves`: Fabric::send, and the
  // duplicates of --link-dup.
  Flight *launch(Packet p, Time head_leaves, std::function<void(Time)> on_sent,
                 const EventTag &sent_tag = {});
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
  // On_sents whose event is pending (kTailLeavesNode), in reused slots.
  std::vector<Sent> sents;
  std::vector<uint32_t> free_sents;
  std::unordered_map<uint64_t, SentMaker> sent_makers; // by owner key
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
  // Fabric::set_call_log, apply_call: the last event posted, and the key
  // the next post takes instead of the scheduler's.
  std::function<void(const FabricCall &)> call_log;
  EventId last_post = 0;
  const SavedEvent *forced_key = nullptr;
  void log_call(FabricCall call);
  CardCalls *card_calls = nullptr; // set_card_calls
  bool call_card(uint32_t node, const std::function<bool()> &body) {
    return card_calls ? card_calls->call(node, body) : body();
  }
};

void Fabric::Impl::log_call(FabricCall call) {
  if (!call_log)
    return;
  if (!sched.key_of(last_post, call.posted))
    throw Error("fabric: a call's event is not pending");
  call_log(call);
}

void Fabric::Impl::post(Time when, uint32_t kind, uint64_t a, uint64_t b) {
  EventTag tag{kFabricEventOwner, kind, a, b};
  if (const SavedEvent *key = std::exchange(forced_key, nullptr)) {
    SavedEvent e = *key; // apply_call: another copy's place in the order
    e.tag = tag;
    track(last_post = sched.restore(e, event_name(kind), callback(kind, a, b)));
    return;
  }
  track(last_post = sched.schedule(when, event_name(kind), callback(kind, a, b),
                                   0, tag));
}

void Fabric::Impl::track(EventId id) {
  if (posted.size() >= sweep_at) {
    std::erase_if(posted, [this](EventId id) { return !sched.is_pending(id); });
    sweep_at = std::max<size_t>(64, 2 * posted.size());
  }
  posted.push_back(id);
}

// What each event does; the operands were checked (valid_event) if they
// came from a checkpoint.
Scheduler::Callback Fabric::Impl::callback(uint32_t kind, uint64_t a,
                                           uint64_t b) {
  Flight *f = kind == kTailLeavesNode || kind == kReceiverReady
                  ? nullptr
                  : flights[a].get();
  auto n = uint32_t(b);
  switch (kind) {
  case kHeadLeavesNode:
    return [this, f, n] { request(f, wiring.node_port(n)); };
  case kHeadAtPort:
    return [this, f, n] { arrive(f, n); };
  case kSwitchRoutes:
    return [this, f, n] { leave_switch(f, n); };
  case kTailLeavesNode:
    return [this, i = uint32_t(a)] {
      std::function<void(Time)> fn = std::move(sents[i].fn);
      Scheduler::OriginScope card(sched, EventOrigin::card(sents[i].node));
      uint32_t node = sents[i].node;
      sents[i] = Sent{};
      free_sents.push_back(i);
      call_card(node, [&] {
        fn(sched.now());
        return false;
      });
    };
  case kTailPassesLink:
    return [this, f, hop = size_t(b)] { release(f, hop); };
  case kTailAtNode:
  case kDroppedDrained:
    return [this, f] { finish(f); };
  case kReceiverReady:
    return [this, node = uint32_t(a)] {
      if (Flight *f = std::exchange(refused[node], nullptr))
        offer(f);
    };
  case kFrameFromOutside:
    return [this, f, n] { request(f, n); };
  }
  assert(false && "an unknown fabric event");
  return nullptr;
}

uint32_t Fabric::Impl::new_sent(std::function<void(Time)> fn,
                                const EventTag &tag, uint32_t node) {
  uint32_t i;
  if (free_sents.empty()) {
    i = uint32_t(sents.size());
    sents.emplace_back();
  } else {
    i = free_sents.back();
    free_sents.pop_back();
  }
  sents[i] = Sent{std::move(fn), tag, true, node};
  return i;
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
  post(sched.now() + params.link_latency, kHeadAtPort, f->slot,
       wiring.peer[link]);
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
  post(sched.now() + hold, kSwitchRoutes, f->slot, sw);
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

// What the card does when the network calls into it (it takes a head, a
// packet arrives, a sender's on_sent) is scheduled as that card's: numbered
// alike in one process and in a run spread over several (EventOrigin).
bool Fabric::Impl::accept_head(PacketReceiver &r, Flight *f) {
  Scheduler::OriginScope card(sched, EventOrigin::card(f->node));
  return call_card(f->node,
                   [&] { return r.accept_head(f->packet, sched.now()); });
}

void Fabric::Impl::offer(Flight *f) {
  PacketReceiver *r = receivers[f->node]; // detached meanwhile: wait
  if (!r || !accept_head(*r, f)) {
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

// The generators of `link` (inject_faults): faults, then duplicates.
uint64_t fault_seed(const LinkFaults &faults, size_t link) {
  return faults.seed * 0x9E3779B97F4A7C15ull + link;
}
uint64_t dup_seed(const LinkFaults &faults, size_t link) {
  return fault_seed(faults, link) ^ 0xD1B54A32D192ED03ull;
}

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
    post(at(f->length), kTailLeavesNode,
         new_sent(std::move(f->on_sent), f->sent_tag, f->packet.source));
    f->on_sent = nullptr;
    f->sent_tag = {};
  }
  size_t left = all ? f->held.size() : f->held.size() - 1;
  for (; f->scheduled < left; ++f->scheduled) {
    Time passes = f->held[f->scheduled].entered + f->length + gap;
    if (passes > end)
      break;
    post(at(passes), kTailPassesLink, f->slot, f->scheduled);
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
  post(sched.now() + f->length, f->dropped ? kDroppedDrained : kTailAtNode,
       f->slot);
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
    Scheduler::OriginScope card(sched, EventOrigin::card(f->node));
    call_card(f->node, [&] {
      receivers[f->node]->packet_arrived(std::move(f->packet), sched.now());
      return false;
    });
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
  impl_->min_path = min_path_latency();
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
  send(std::move(p), head_leaves, std::move(on_sent), EventTag{});
}

void Fabric::send(Packet p, Time head_leaves, std::function<void(Time)> on_sent,
                  const EventTag &sent) {
  Impl &m = *impl_;
  if (p.source >= m.topology.nodes)
    throw Error("fabric: node " + std::to_string(p.source) +
                " cannot send (the topology has " +
                std::to_string(m.topology.nodes) + " nodes)");
  std::lock_guard lock(m.cores);
  ++m.stats.packets_sent;
  FabricCall call;
  if (m.call_log) {
    call.packet = p;
    call.on_sent = on_sent != nullptr;
    call.at = head_leaves;
  }
  m.launch(std::move(p), head_leaves, std::move(on_sent), sent);
  m.log_call(std::move(call));
}

void Fabric::set_call_log(std::function<void(const FabricCall &)> log) {
  impl_->call_log = std::move(log);
}

void Fabric::apply_call(const FabricCall &call,
                        std::function<void(Time)> on_sent) {
  Impl &m = *impl_;
  std::lock_guard lock(m.cores);
  m.forced_key = &call.posted;
  if (call.kind == FabricCall::Send) {
    ++m.stats.packets_sent;
    if (call.on_sent && !on_sent)
      on_sent = [](Time) {};
    m.launch(call.packet, call.at, call.on_sent ? std::move(on_sent) : nullptr);
  } else {
    m.post(std::max(call.at, m.sched.now()), kReceiverReady, call.node);
  }
  m.forced_key = nullptr;
}

std::optional<uint32_t> Fabric::card_called_by(const EventTag &tag) const {
  const Impl &m = *impl_;
  if (tag.owner != kFabricEventOwner)
    return std::nullopt;
  switch (tag.kind) {
  case kHeadAtPort:
    if (m.wiring.is_node(uint32_t(tag.b)))
      return uint32_t(tag.b);
    break;
  case kReceiverReady:
    return uint32_t(tag.a);
  case kTailAtNode:
    if (tag.a < m.flights.size())
      return m.flights[tag.a]->node;
    break;
  case kTailLeavesNode:
    if (tag.a < m.sents.size())
      return m.sents[tag.a].node;
    break;
  }
  return std::nullopt;
}

void Fabric::set_card_calls(CardCalls *calls) {
  impl_->card_calls = calls;
}

void Fabric::set_sent_maker(uint64_t owner, SentMaker maker) {
  if (maker)
    impl_->sent_makers[owner] = std::move(maker);
  else
    impl_->sent_makers.erase(owner);
}

Flight *Fabric::Impl::launch(Packet p, Time head_leaves,
                             std::function<void(Time)> on_sent,
                             const EventTag &sent_tag) {
  Flight *f = new_flight();
  Time rate = std::max(p.source_ps_per_byte, params.link_ps_per_byte);
  size_t bytes = std::max<size_t>(p.payload.size(), params.min_frame_bytes);
  f->length = Time(params.preamble_bytes + bytes) * rate;
  if (faults.dup > 0 && !p.broadcast)
    f->original = p; // the route is consumed on the way
  f->packet = std::move(p);
  f->on_sent = std::move(on_sent);
  if (f->on_sent)
    f->sent_tag = sent_tag;
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
  f->arrives_from = head_leaves + min_path;
  post(head_leaves, kHeadLeavesNode, f->slot, source);
  return f;
}

void Fabric::receiver_ready(uint32_t node, Time at) {
  Impl &m = *impl_;
  if (node >= m.topology.nodes)
    throw Error("fabric: no node " + std::to_string(node));
  std::lock_guard lock(m.cores);
  m.post(std::max(at, m.sched.now()), kReceiverReady, node);
  FabricCall call;
  call.kind = FabricCall::ReceiverReady;
  call.node = node;
  call.at = at;
  m.log_call(std::move(call));
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
  f->arrives_from = std::max(at, m.sched.now());
  EventOrigin was = m.sched.set_origin(EventOrigin::outside());
  m.post(f->arrives_from, kFrameFromOutside, f->slot, link);
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
    impl_->fault_rng.emplace_back(fault_seed(faults, link));
    impl_->dup_rng.emplace_back(dup_seed(faults, link));
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

Time Fabric::earliest_arrival(Time now) const {
  std::lock_guard lock(impl_->cores);
  if (impl_->outside) // --tap, or its replay: frames come at any time
    return now;
  Time t = kTimeNever;
  for (const auto &f : impl_->flights)
    if (f->in_use && !f->finished)
      t = std::min(t, std::max(now, f->arrives_from));
  return t;
}

uint64_t Fabric::misrouted() const {
  return impl_->misrouted;
}

// ---- Checkpoints -------------------------------------------------------

namespace {

// Flights by slot in the file; kNoFlight for none.
constexpr uint32_t kNoFlight = ~0u;

uint32_t slot_of(const Flight *f) {
  return f ? f->slot : kNoFlight;
}

// Field by field, so that the same state makes the same bytes (a struct's
// padding would not).
void write_tag(StateWriter &out, const EventTag &t) {
  out.u64(t.owner);
  out.u32(t.kind);
  out.u64(t.a);
  out.u64(t.b);
}
EventTag read_tag(StateReader &in) {
  EventTag t;
  t.owner = in.u64();
  t.kind = in.u32();
  t.a = in.u64();
  t.b = in.u64();
  return t;
}

// Route bytes are one per switch; payloads are bounded by the bytes left.
constexpr uint64_t kMaxRoute = 1 << 20, kMaxBytes = uint64_t(1) << 32;

void write_crossing(StateWriter &out, const Crossing &c) {
  out.u32(c.source);
  out.u64(c.id);
  out.u64(c.head);
  out.u64(c.tail);
  out.flag(c.tail_known);
  out.flag(c.told);
  out.u32(c.route_bytes);
  out.u32(c.destination);
  out.bytes(c.frame);
}
Crossing read_crossing(StateReader &in) {
  Crossing c;
  c.source = in.u32();
  c.id = in.u64();
  c.head = in.u64();
  c.tail = in.u64();
  c.tail_known = in.flag();
  c.told = in.flag();
  c.route_bytes = in.u32();
  c.destination = in.u32();
  c.frame = in.bytes(kMaxBytes);
  return c;
}

// A generator's state as the words its text holds (operator<<): a third
// of the text's size, and read back through operator>>.
std::vector<uint64_t> rng_words(const std::mt19937_64 &rng) {
  std::stringstream s;
  s << rng;
  std::vector<uint64_t> words;
  for (uint64_t w; s >> w;)
    words.push_back(w);
  return words;
}
bool read_rng(const std::vector<uint64_t> &words, std::mt19937_64 &rng) {
  std::stringstream s;
  for (uint64_t w : words)
    s << w << ' ';
  s >> rng;
  return !s.fail();
}

} // namespace

void save_packet(StateWriter &out, const Packet &p) {
  out.u32(p.source);
  out.u64(p.id);
  out.bytes(p.route);
  out.bytes(p.payload);
  out.u64(p.source_ps_per_byte);
  out.flag(p.filtered);
  out.flag(p.spoofed);
  out.flag(p.broadcast);
}
Packet load_packet(StateReader &in) {
  Packet p;
  p.source = in.u32();
  p.id = in.u64();
  p.route = in.bytes(kMaxRoute);
  p.payload = in.bytes(kMaxBytes);
  p.source_ps_per_byte = in.u64();
  p.filtered = in.flag();
  p.spoofed = in.flag();
  p.broadcast = in.flag();
  return p;
}

bool Fabric::Impl::valid_event(uint32_t kind, uint64_t a, uint64_t b) const {
  bool flight = a < flights.size() && flights[a]->in_use;
  switch (kind) {
  case kHeadLeavesNode:
    return flight && b < topology.nodes;
  case kHeadAtPort:
  case kFrameFromOutside:
    return flight && b < links.size();
  case kSwitchRoutes:
    return flight && b < topology.switches;
  case kTailLeavesNode:
    return a < sents.size() && sents[a].in_use;
  case kTailPassesLink:
    return flight && b < flights[a]->held.size();
  case kTailAtNode:
  case kDroppedDrained:
    return flight;
  case kReceiverReady:
    return a < topology.nodes;
  }
  return false;
}

void Fabric::Impl::restore_event(Scheduler &scheduler, const SavedEvent &e) {
  const EventTag &t = e.tag;
  const char *name = event_name(t.kind);
  if (!name || e.name != name || !valid_event(t.kind, t.a, t.b))
    throw Error("checkpoint: the fabric's event \"" + e.name + "\" (kind " +
                std::to_string(t.kind) + ", " + std::to_string(t.a) + ", " +
                std::to_string(t.b) + ") names nothing the fabric's state has");
  track(scheduler.restore(e, name, callback(t.kind, t.a, t.b)));
}

std::function<void(Time)> Fabric::Impl::remake_sent(StateReader &in,
                                                    const EventTag &tag) {
  auto maker = sent_makers.find(tag.owner);
  if (maker == sent_makers.end())
    in.fail("a packet's sender (owner " + std::to_string(tag.owner) +
            ") cannot make its on_sent again (Fabric::set_sent_maker)");
  std::function<void(Time)> fn = maker->second(tag);
  if (!fn)
    in.fail("a packet's sender (owner " + std::to_string(tag.owner) +
            ") made no on_sent for kind " + std::to_string(tag.kind));
  return fn;
}

// Layout: the cables' observer queues (flights point into them), the
// flights by slot and the free slots, then links, inputs and refused heads
// as flight slots, the pending on_sents, counters, fault generators.
void Fabric::save_state(StateWriter &out) const {
  const Impl &m = *impl_;
  out.section("fabric");

  out.flag(m.events != nullptr);
  // A crossing by its place in its link's queue.
  std::unordered_map<const Crossing *, uint64_t> place;
  if (m.events) {
    out.u64(m.crossings.size());
    for (const std::deque<Crossing> &queue : m.crossings) {
      out.u64(queue.size());
      for (size_t i = 0; i < queue.size(); ++i) {
        write_crossing(out, queue[i]);
        place[&queue[i]] = i;
      }
    }
  }

  out.u64(m.flights.size());
  for (const auto &slot : m.flights) {
    const Flight &f = *slot;
    out.flag(f.in_use);
    if (!f.in_use)
      continue;
    save_packet(out, f.packet);
    out.flag(bool(f.on_sent));
    if (f.on_sent) {
      if (!f.sent_tag.owner)
        throw Error("checkpoint: packet " + std::to_string(f.packet.id) +
                    " of node " + std::to_string(f.packet.source) +
                    " is in the network with an on_sent that cannot be "
                    "saved (sent without a tag)");
      write_tag(out, f.sent_tag);
    }
    out.u64(f.length);
    out.u64(f.moved);
    out.u64(f.arrives_from);
    out.u64(f.held.size());
    for (const Hop &h : f.held) {
      out.u32(h.link);
      out.u64(h.entered);
    }
    out.u64(f.scheduled);
    out.u64(f.released);
    out.u32(f.node);
    out.flag(f.waiting);
    out.flag(f.waited);
    out.u64(f.wait_since);
    out.flag(f.dropped);
    out.flag(f.lost);
    out.u32(f.copies);
    out.flag(f.copy);
    save_packet(out, f.original);
    out.flag(f.finished);
    out.u32(f.in_port);
    out.flag(f.blocking);
    out.u32(slot_of(f.next));
    // Crossings before tails_known have been told and may be gone.
    size_t known = m.events ? f.tails_known : 0;
    size_t crossings = m.events ? f.crossings.size() : 0;
    out.u64(known);
    out.u64(crossings);
    for (size_t i = known; i < crossings; ++i)
      out.u64(place.at(f.crossings[i]));
    out.u64(f.targets.size());
    for (uint32_t t : f.targets)
      out.u32(t);
    out.u32(f.hops);
  }
  out.pods(m.free_slots);

  out.u64(m.links.size());
  for (const Link &l : m.links) {
    out.u32(slot_of(l.holder));
    out.u32(slot_of(l.first));
    out.u32(slot_of(l.last));
  }
  out.u64(m.inputs.size());
  for (const Input &in : m.inputs) {
    out.u32(slot_of(in.occupant));
    out.u32(slot_of(in.parked));
  }
  out.u64(m.refused.size());
  for (const Flight *f : m.refused)
    out.u32(slot_of(f));

  out.u64(m.sents.size());
  for (const Sent &sent : m.sents) {
    out.flag(sent.in_use);
    if (!sent.in_use)
      continue;
    if (!sent.tag.owner)
      throw Error("checkpoint: a packet's tail is about to leave its node "
                  "with an on_sent that cannot be saved (sent without a "
                  "tag)");
    write_tag(out, sent.tag);
  }
  out.pods(m.free_sents);

  static_assert(std::has_unique_object_representations_v<FabricStats>);
  out.pod(m.stats);
  out.u64(m.misrouted);
  out.u64(m.misroutes.size());
  for (const Misroute &r : m.misroutes) {
    out.u64(r.at);
    out.u32(r.source);
    out.str(r.why);
  }
  out.u64(m.outside_sequence);

  // The faults are configuration, written to check the loader's; only the
  // generators that have drawn are (a few KiB each).
  out.u64(m.fault_rng.size());
  if (!m.fault_rng.empty()) {
    out.u64(std::bit_cast<uint64_t>(m.faults.corrupt));
    out.u64(std::bit_cast<uint64_t>(m.faults.lose));
    out.u64(std::bit_cast<uint64_t>(m.faults.dup));
    out.u64(m.faults.seed);
  }
  for (size_t link = 0; link < m.fault_rng.size(); ++link) {
    bool drawn =
        m.fault_rng[link] != std::mt19937_64(fault_seed(m.faults, link));
    out.flag(drawn);
    if (drawn)
      out.pods(rng_words(m.fault_rng[link]));
    drawn = m.dup_rng[link] != std::mt19937_64(dup_seed(m.faults, link));
    out.flag(drawn);
    if (drawn)
      out.pods(rng_words(m.dup_rng[link]));
  }
}

void Fabric::load_state(StateReader &in) {
  Impl &m = *impl_;
  in.section("fabric");
  // Scheduler::load drops them too; the fabric makes its own again from
  // the saved ones (restore_event).
  for (EventId id : m.posted)
    m.sched.cancel(id);
  m.posted.clear();
  m.sweep_at = 64;

  const size_t links = m.links.size(), nodes = m.topology.nodes;
  auto want = [&](uint64_t got, uint64_t have, const char *what) {
    if (got != have)
      in.fail(std::string("the fabric's state has ") + std::to_string(got) +
              " " + what + ", this cluster " + std::to_string(have));
  };

  bool observed = in.flag();
  if (observed != (m.events != nullptr))
    in.fail(observed ? "the fabric's state was saved with an observer of "
                       "the cables, this run has none"
                     : "this run observes the cables, the fabric's state "
                       "was saved without");
  std::vector<std::deque<Crossing>> crossings(m.crossings.size());
  if (observed) {
    want(in.u64(), crossings.size(), "links with crossings");
    for (std::deque<Crossing> &queue : crossings)
      for (uint64_t n = in.count(1 << 24); n--;)
        queue.push_back(read_crossing(in));
  }

  // Made as they are read: a damaged count costs no more than the bytes.
  std::vector<std::unique_ptr<Flight>> flights;
  std::vector<uint32_t> nexts; // read as slots, checked once all are in
  for (uint64_t count = in.count(1 << 24), slot = 0; slot < count; ++slot) {
    flights.push_back(std::make_unique<Flight>());
    Flight &f = *flights.back();
    f.slot = uint32_t(slot);
    nexts.push_back(kNoFlight);
    f.in_use = in.flag();
    if (!f.in_use)
      continue;
    f.packet = load_packet(in);
    if (in.flag()) {
      f.sent_tag = read_tag(in);
      f.on_sent = m.remake_sent(in, f.sent_tag);
    }
    f.length = in.u64();
    f.moved = in.u64();
    f.arrives_from = in.u64();
    for (uint64_t n = in.count(kMaxRoute); n--;) {
      Hop h;
      h.link = in.u32();
      h.entered = in.u64();
      if (h.link >= links)
        in.fail("a flight holds link " + std::to_string(h.link) + " of " +
                std::to_string(links));
      f.held.push_back(h);
    }
    f.scheduled = in.u64();
    f.released = in.u64();
    f.node = in.u32();
    f.waiting = in.flag();
    f.waited = in.flag();
    f.wait_since = in.u64();
    f.dropped = in.flag();
    f.lost = in.flag();
    f.copies = in.u32();
    f.copy = in.flag();
    f.original = load_packet(in);
    f.finished = in.flag();
    f.in_port = in.u32();
    f.blocking = in.flag();
    nexts.back() = in.u32();
    if (f.scheduled > f.held.size() || f.released > f.held.size() ||
        f.node >= nodes || (f.in_port != kNoPort && f.in_port >= links) ||
        (f.blocking && f.in_port >= m.inputs.size()) || f.packet.source > nodes)
      in.fail("flight " + std::to_string(slot) + " is out of range");
    f.tails_known = in.u64();
    uint64_t opened = in.u64();
    if (opened != (observed ? f.held.size() : 0) || f.tails_known > opened)
      in.fail("flight " + std::to_string(slot) + " has " +
              std::to_string(opened) + " crossings for " +
              std::to_string(f.held.size()) + " links");
    f.crossings.assign(opened, nullptr); // before tails_known: told
    for (size_t i = f.tails_known; i < opened; ++i) {
      std::deque<Crossing> &queue = crossings[f.held[i].link];
      uint64_t at = in.u64();
      if (at >= queue.size())
        in.fail("flight " + std::to_string(slot) + " has crossing " +
                std::to_string(at) + " of " + std::to_string(queue.size()));
      f.crossings[i] = &queue[at];
    }
    for (uint64_t n = in.count(nodes); n--;) {
      f.targets.push_back(in.u32());
      if (f.targets.back() >= nodes)
        in.fail("a broadcast goes to node " + std::to_string(f.targets.back()));
    }
    f.hops = in.u32();
  }
  std::vector<uint32_t> free_slots = in.pods<uint32_t>(flights.size());
  {
    std::vector<bool> free(flights.size());
    for (uint32_t slot : free_slots) {
      if (slot >= flights.size() || flights[slot]->in_use || free[slot])
        in.fail("free flight slot " + std::to_string(slot) + " is not free");
      free[slot] = true;
    }
    for (uint32_t slot = 0; slot < flights.size(); ++slot)
      if (!flights[slot]->in_use && !free[slot])
        in.fail("flight slot " + std::to_string(slot) + " is lost");
  }
  auto live = [&](uint32_t slot) -> Flight * {
    if (slot == kNoFlight)
      return nullptr;
    if (slot >= flights.size() || !flights[slot]->in_use)
      in.fail("flight slot " + std::to_string(slot) + " of " +
              std::to_string(flights.size()) + " holds no flight");
    return flights[slot].get();
  };
  for (uint32_t slot = 0; slot < flights.size(); ++slot)
    flights[slot]->next = live(nexts[slot]);

  std::vector<Link> link_state(links);
  want(in.u64(), links, "links");
  for (Link &l : link_state) {
    l.holder = live(in.u32());
    l.first = live(in.u32());
    l.last = live(in.u32());
  }
  // Each queue runs from first to last, and a flight waits in one at most:
  // a damaged file must not make a loop that a release would follow.
  {
    std::vector<bool> queued(flights.size());
    for (const Link &l : link_state) {
      const Flight *f = l.first, *end = nullptr;
      for (; f; end = f, f = f->next) {
        if (queued[f->slot])
          in.fail("flight " + std::to_string(f->slot) + " waits twice");
        queued[f->slot] = true;
      }
      if (end != l.last)
        in.fail("a link's queue does not end where it says");
    }
    for (uint32_t slot = 0; slot < flights.size(); ++slot)
      if (flights[slot]->next && !queued[slot])
        in.fail("flight " + std::to_string(slot) + " waits in no queue");
  }
  std::vector<Input> inputs(m.inputs.size());
  want(in.u64(), inputs.size(), "switch inputs");
  for (Input &input : inputs) {
    input.occupant = live(in.u32());
    input.parked = live(in.u32());
  }
  std::vector<Flight *> refused(nodes);
  want(in.u64(), nodes, "nodes");
  for (Flight *&f : refused)
    f = live(in.u32());

  std::vector<Sent> sents;
  for (uint64_t n = in.count(1 << 24); n--;) {
    Sent &sent = sents.emplace_back();
    sent.in_use = in.flag();
    if (!sent.in_use)
      continue;
    sent.tag = read_tag(in);
    sent.fn = m.remake_sent(in, sent.tag);
    // The sender is its tag's owner, a device of its card.
    uint64_t card = sent.tag.owner >> 32;
    if (card == 0 || card > nodes)
      in.fail("an on_sent belongs to no node's device");
    sent.node = uint32_t(card - 1);
  }
  std::vector<uint32_t> free_sents = in.pods<uint32_t>(sents.size());
  {
    std::vector<bool> free(sents.size());
    for (uint32_t i : free_sents) {
      if (i >= sents.size() || sents[i].in_use || free[i])
        in.fail("free on_sent slot " + std::to_string(i) + " is not free");
      free[i] = true;
    }
    if (free_sents.size() +
            std::count_if(sents.begin(), sents.end(),
                          [](const Sent &s) { return s.in_use; }) !=
        sents.size())
      in.fail("an on_sent slot is lost");
  }

  FabricStats stats = in.pod<FabricStats>();
  uint64_t misrouted = in.u64();
  std::vector<Misroute> misroutes(in.count(kKeptMisroutes));
  for (Misroute &r : misroutes) {
    r.at = in.u64();
    r.source = in.u32();
    r.why = in.str(1 << 16);
  }
  uint64_t outside_sequence = in.u64();

  std::vector<std::mt19937_64> fault_rng, dup_rng;
  want(in.u64(), m.fault_rng.size(), "links with injected faults");
  if (!m.fault_rng.empty()) {
    LinkFaults saved;
    saved.corrupt = std::bit_cast<double>(in.u64());
    saved.lose = std::bit_cast<double>(in.u64());
    saved.dup = std::bit_cast<double>(in.u64());
    saved.seed = in.u64();
    if (saved.corrupt != m.faults.corrupt || saved.lose != m.faults.lose ||
        saved.dup != m.faults.dup || saved.seed != m.faults.seed)
      in.fail("the fabric's state was saved with other injected faults");
  }
  auto generator = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    if (in.flag() && !read_rng(in.pods<uint64_t>(1024), rng))
      in.fail("a fault generator's state is damaged");
    return rng;
  };
  for (size_t link = 0; link < m.fault_rng.size(); ++link) {
    fault_rng.push_back(generator(fault_seed(m.faults, link)));
    dup_rng.push_back(generator(dup_seed(m.faults, link)));
  }

  // All read and checked: take it.
  m.crossings = std::move(crossings);
  m.flights = std::move(flights);
  m.free_slots = std::move(free_slots);
  m.links = std::move(link_state);
  m.inputs = std::move(inputs);
  m.refused = std::move(refused);
  m.sents = std::move(sents);
  m.free_sents = std::move(free_sents);
  m.stats = stats;
  m.misrouted = misrouted;
  m.misroutes = std::move(misroutes);
  m.outside_sequence = outside_sequence;
  m.fault_rng = std::move(fault_rng);
  m.dup_rng = std::move(dup_rng);
}

} // namespace nicemu
