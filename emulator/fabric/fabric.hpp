// The network between NICs: full-duplex links and Myrinet-style crossbar
// switches (8 ports, cut-through, source routed, backpressure, no loss), or
// Ethernet switches (store-and-forward, frames forwarded by destination MAC;
// fabric/ethernet.hpp).
//
// Packet model (docs/fabric.md): a packet is the route (one byte per switch,
// each naming the output port, consumed as the head passes) followed by the
// payload. The head travels hop by hop; at a switch it takes its output port
// if free, else waits in that port's queue (first come, first served; ties
// in scheduling order). While a packet moves, it holds every link from its
// source to its head, so a blocked head stalls its whole path (wormhole
// backpressure). When the destination NIC accepts the head, the rest of the
// packet streams at the bottleneck rate (the source's pacing or the links'),
// and each link is released as the tail passes it.
//
// Ethernet (FabricParams::ethernet): the sender's NIC looks the destination
// MAC up in the switches' forwarding table (static: every node's MAC is
// known) and gives the packet the route to it; the route bytes are then the
// switches' forwarding decisions and take no place on the wire. With
// store_and_forward, a switch forwards a frame only once all of it has
// arrived. Contention is still modelled by the path being held (as if each
// switch input buffered one frame and paused the link behind it): no frame
// is ever dropped for congestion.
#pragma once

#include "sim/scheduler.hpp"
#include "sim/time.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nicemu {

class RunEvents;
class StateReader;
class StateWriter;

struct Packet {
  uint32_t source = 0;          // sending node
  uint64_t id = 0;              // unique per run: (source << 40) | sequence
  std::vector<uint8_t> route;   // remaining route bytes (output ports)
  std::vector<uint8_t> payload; // everything after the route (incl. CRC)
  Time source_ps_per_byte = 0;  // how fast the source can feed the link
  // Ethernet: no switch port leads to the frame's destination MAC (unknown,
  // the sender's own, or a group address). The first switch drops it and
  // counts it (FabricStats::packets_filtered); `route` is empty.
  bool filtered = false;
  // Ethernet: the frame's source MAC is another cluster node's. The first
  // switch drops it (port security: a cluster's switch knows the node on
  // each port) and counts it (FabricStats::packets_spoofed); it is never
  // bridged to the outside. `filtered` is set too.
  bool spoofed = false;
  // Table-routed networks (RHiNET): the packet goes to every other node.
  // Each switch sends it on every port that leads to one of them; `route`
  // is empty. A copy that waits for its port does not hold back the others
  // (the switch keeps the packet for it). Elsewhere it is misrouted.
  bool broadcast = false;
};

// A packet in a checkpoint (docs/replay.md): held by the fabric, or by a
// card that has it queued. load_packet bounds what it reads and throws
// nicemu::Error on damaged bytes.
void save_packet(StateWriter &out, const Packet &p);
Packet load_packet(StateReader &in);

// CRC-32 of a packet's payload, as the Tx engine appends it (zlib's CRC-32,
// stored little-endian after the payload).
uint32_t packet_crc(const uint8_t *data, size_t len);

// The receiving side of a NIC, implemented by its Rx engine.
class PacketReceiver {
public:
  virtual ~PacketReceiver() = default;
  // The head of `p` has arrived at `now`. Return true to take it; false to
  // refuse for now (the packet waits, holding its path) until the NIC calls
  // Fabric::receiver_ready.
  virtual bool accept_head(const Packet &p, Time now) = 0;
  // The tail of the accepted packet arrived: the packet is complete.
  virtual void packet_arrived(Packet p, Time now) = 0;
};

struct FabricParams {
  Time link_ps_per_byte = 6250; // 160 MB/s
  Time link_latency = 0;        // propagation along one cable
  Time switch_latency = 0;      // head in -> head out, cut-through; with
                                // store_and_forward, after the whole packet
                                // has arrived
  uint32_t switch_ports = 8;
  // Ethernet networks (docs/fabric.md, "Ethernet (comet)"). The defaults
  // are Myrinet's: no framing overhead, cut-through.
  bool ethernet = false;             // packets are Ethernet frames: observers
                                     // see no route bytes
  bool table_routing = false;        // switches route by table (RHiNET): the
                                     // route bytes are their decisions and
                                     // take no place on the wire
  bool store_and_forward = false;    // a switch takes all of a packet in
                                     // before its head goes on
  uint32_t preamble_bytes = 0;       // wire time ahead of each packet
                                     // (preamble + SFD), part of its length
  uint32_t interframe_gap_bytes = 0; // idle wire time after each packet: a
                                     // link is free that long after a tail
  uint32_t min_frame_bytes = 0;      // a shorter payload takes this long on
                                     // the wire (Ethernet pads to 64 bytes)
};

// Where things are plugged in. Built by make_topology or read from a file.
struct Topology {
  struct Endpoint {
    bool is_switch = false;
    uint32_t index = 0; // node number or switch number
    uint32_t port = 0;  // switch port (0 for a node)
  };
  uint32_t nodes = 0;
  uint32_t switches = 0;
  uint32_t ports_per_switch = 8;
  std::vector<std::pair<Endpoint, Endpoint>> cables; // full duplex

  // Route bytes from node `from` to node `to` (shortest path; ties broken
  // by the lowest port number, so routes are deterministic). Throws
  // nicemu::Error if from == to (a node needs no route to itself), a node
  // does not exist, or the topology is invalid. Costs one search of the
  // network: for a whole table, use routes_from.
  std::vector<uint8_t> route(uint32_t from, uint32_t to) const;
  // route(from, to) for every node `to` in one search; entry `from` is empty.
  std::vector<std::vector<uint8_t>> routes_from(uint32_t from) const;
  // Checks that every node is cabled once, ports are in range and used
  // once, and every node reaches every other. Throws nicemu::Error.
  void validate() const;
  // A route of more than `max_bytes` bytes, if there is one: the first by
  // source node, then by destination. One search per switch with nodes,
  // ended by the first such route.
  struct LongRoute {
    uint32_t from = 0, to = 0;
    size_t bytes = 0;
  };
  std::optional<LongRoute> route_longer_than(size_t max_bytes) const;
};

// One crossbar for up to `ports` nodes; beyond, a generated multi-switch
// network (docs/fabric.md says which).
Topology make_topology(uint32_t nodes, uint32_t ports_per_switch);
// Reads a topology file (format in docs/fabric.md). Throws nicemu::Error
// naming the file and line.
Topology read_topology(const std::string &path, uint32_t ports_per_switch);
// The file's text (at most 64 MiB), as read_topology reads it.
std::string read_topology_text(const std::string &path);
Topology parse_topology(const std::string &text, const std::string &origin,
                        uint32_t ports_per_switch);

// Counters for reports and tests.
struct FabricStats {
  uint64_t packets_sent = 0;
  uint64_t packets_delivered = 0;
  uint64_t packets_blocked = 0; // heads that had to wait at least once
  Time blocked_time = 0;        // total time heads spent waiting
  // Ethernet frames a switch dropped because none of its ports leads to
  // their destination MAC (Packet::filtered). Not counted as misrouted.
  uint64_t packets_filtered = 0;
  // Of those, frames whose source MAC named another cluster node
  // (Packet::spoofed).
  uint64_t packets_spoofed = 0;
  // Bridged to the world outside the cluster (nicemu run --tap): frames a
  // switch handed to the outside instead of filtering them, and frames that
  // came in from there (deliver_from_outside).
  uint64_t packets_to_outside = 0;
  uint64_t packets_from_outside = 0;
  // Injected faults (LinkFaults): cable crossings that flipped a bit of a
  // packet, and packets lost on a cable (they drain where it ends).
  uint64_t packets_corrupted = 0;
  uint64_t packets_lost = 0;
  // Copies made by --link-dup: each arrives once more after the original.
  uint64_t packets_duplicated = 0;
};

// A packet the fabric dropped because of its route bytes (Fabric::send):
// when, whose, and what was wrong, as a person reads it.
struct Misroute {
  Time at = 0;
  uint32_t source = 0;
  std::string why; // "route byte 9 names no port of switch s1 (it has 8)"
};
// The fabric keeps the first misroutes it sees, and counts them all.
inline constexpr size_t kKeptMisroutes = 8;

// Faults injected on every cable (nicemu run --link-corrupt, --link-loss,
// --link-dup): the spec's links lose nothing "unless a fault is injected".
// Each cable direction draws from its own generators, seeded from `seed`
// and the link, so the same run with the same seed strikes the same
// packets. Duplication draws from a generator of its own, so turning it on
// changes nothing about which packets are lost or corrupted.
//
// A duplicate is a copy of the packet as its source sent it, sent again by
// the source once the original has arrived (a spurious link-level
// retransmission; a copy is not duplicated again, and broadcasts are not
// duplicated). It takes the same path, so it arrives after the original,
// and after the packets the source had sent behind it. Source routes and
// address tables give every pair of nodes one path, so the fabric never
// reorders the packets of one pair otherwise (docs/fabric.md, "Injected
// faults").
struct LinkFaults {
  double corrupt = 0; // per packet and cable crossed: one payload bit flips
  double lose = 0;    // per packet and cable crossed: it never arrives
  double dup = 0;     // per packet and cable crossed: it arrives once more
  uint64_t seed = 1;
  bool any() const { return corrupt > 0 || lose > 0 || dup > 0; }
};

// Takes a filtered Ethernet frame (its payload ends with the FCS) as it
// leaves the first switch, at `now`: true if it went outside the cluster,
// false to let the switch drop it (counted as filtered).
using OutsideSink = std::function<bool(const Packet &p, Time now)>;

// A card's call into the network, with the place in the order that the
// event it posted took: what one process of a run spread over several
// tells the others, which apply it to their copies of the network
// (docs/distributed.md).
struct FabricCall {
  enum Kind : uint8_t { Send, ReceiverReady };
  Kind kind = Send;
  Packet packet;        // Send
  bool on_sent = false; // Send: the sender is told when the tail has left
  uint32_t node = 0;    // ReceiverReady: the card
  Time at = 0;          // Send: when the head leaves; ReceiverReady: when
  SavedEvent posted;    // the event it posted: its key
};

// Where the network calls into a card (a head offered, a packet arrived, a
// sender's on_sent), in a run spread over ranks: the owner of the card runs
// `body` (the call) and tells the other ranks its answer; they do not run
// it and use the owner's answer (dist/rank_share). Returns accept_head's
// answer; false for the other calls.
class CardCalls {
public:
  virtual ~CardCalls() = default;
  virtual bool call(uint32_t node, const std::function<bool()> &body) = 0;
};

class Fabric {
public:
  Fabric(Scheduler &scheduler, FabricParams params, Topology topology);
  ~Fabric();
  Fabric(const Fabric &) = delete;
  Fabric &operator=(const Fabric &) = delete;

  void attach(uint32_t node, PacketReceiver *receiver);
  // What attach() gave for `node` (null: nothing, or no such node).
  PacketReceiver *receiver(uint32_t node) const;

  // Node `p.source` starts sending `p` at `head_leaves` (the head enters the
  // cable then). `on_sent(t)` runs when the tail has left the source NIC.
  // A broadcast (Packet::broadcast) is counted sent once and delivered
  // once per node it reaches; on_sent runs once.
  // A packet whose route is wrong (a byte naming no port, too few or too
  // many bytes, a loop onto a link it holds) is dropped and counted as
  // misrouted, never delivered elsewhere; `on_sent` still runs so the
  // sender is not stuck.
  void send(Packet p, Time head_leaves, std::function<void(Time)> on_sent);
  // The same, with what `on_sent` does as a tag in the sender's own
  // numbering, under the owner key it gave set_sent_maker: a checkpoint
  // taken before the tail has left can then make on_sent again. A
  // checkpoint with an untagged on_sent pending is refused (save_state).
  void send(Packet p, Time head_leaves, std::function<void(Time)> on_sent,
            const EventTag &sent);
  // Makes a sender's on_sent again from the tag it gave send(), when a
  // checkpoint is loaded (load_state). Null: forgets `owner`'s.
  using SentMaker =
      std::function<std::function<void(Time)>(const EventTag &sent)>;
  void set_sent_maker(uint64_t owner, SentMaker maker);
  // A receiver that refused a head can take it from `at` (its node's time:
  // the core runs ahead of the scheduler's now; never before that now).
  void receiver_ready(uint32_t node, Time at);
  // Every call the cards make (send, receiver_ready) is passed to `log`
  // as it is made, with the key of the event it posted (null: none).
  void set_call_log(std::function<void(const FabricCall &)> log);
  // A call another copy of this network logged: posted with the same key,
  // so this copy runs it where that one does. `on_sent` stands in for the
  // sender's (its card is elsewhere) if the call asked for one; none given,
  // it runs nothing.
  void apply_call(const FabricCall &call,
                  std::function<void(Time)> on_sent = nullptr);
  // The card that the pending network event with `tag` calls into, if
  // any: a head reaching it, a tail arriving, a sender's on_sent, a
  // receiver made ready. One card at most.
  std::optional<uint32_t> card_called_by(const EventTag &tag) const;
  // Every call the network makes into a card goes through `calls` (null:
  // straight to the card).
  void set_card_calls(CardCalls *calls);

  // Ethernet frames no switch port leads to (Packet::filtered) are offered
  // to `sink` where the first switch would drop them (nicemu run --tap).
  void set_outside(OutsideSink sink);
  // A frame from outside the cluster (`payload` ends with its FCS) leaves
  // the switch for `node` at `at` (>= now), as if the switch forwarded it:
  // it waits for that link and for the receiver like any other head. Its
  // source is the node number topology().nodes ("the outside").
  void deliver_from_outside(uint32_t node, std::vector<uint8_t> payload,
                            Time at);

  // Strikes packets on every cable from now on. Throws nicemu::Error if a
  // probability is outside [0, 1].
  void inject_faults(const LinkFaults &faults);
  const LinkFaults &faults() const;

  // Tells `events` (null: nobody) each packet's crossing of each cable, per
  // cable direction in the order the heads entered it, once the tail has
  // left it. Call before the first send.
  void set_events(RunEvents *events);
  // At the end of a run: tells the crossings whose tails have left but that
  // wait behind one still in the cable (a packet stuck in the network).
  void flush_events();

  const Topology &topology() const;
  const FabricParams &params() const;
  // The least time from a head entering the network to its arrival at
  // another node: one cable if two nodes are cabled directly, else two
  // cables and a switch (store-and-forward: and the shortest frame's time,
  // preamble included, which the switch waits for).
  Time min_path_latency() const;
  // topology().route(from, to), but each switch's search is kept: use this
  // when many routes are asked for (every node's table).
  std::vector<uint8_t> route(uint32_t from, uint32_t to) const;
  const FabricStats &stats() const;
  uint64_t misrouted() const;
  // The first kKeptMisroutes misrouted packets, in the order they dropped.
  const std::vector<Misroute> &misroutes() const;
  // Packets sent and neither delivered nor dropped: their heads wait for a
  // link another packet holds or for a receiver (after a run: stuck).
  uint64_t packets_in_network() const;
  // The earliest time, from `now` on, at which a packet now in the network
  // could reach a node (kTimeNever: none): each no sooner than its head
  // left its node plus min_path_latency(). A packet a core sends from `now`
  // on comes no sooner than a lookahead after it, whether or not the core
  // has sent it yet: so what this says before then is the same in every
  // run, however the cores' slices fell (host leases, Simulation::
  // quiet_until). `now` while frames may come from outside (set_outside:
  // --tap, and its replay alike).
  Time earliest_arrival(Time now) const;

  // Checkpoints (docs/replay.md, "Checkpoint files"): the packets in the
  // network, who holds and waits for each link, the counters, the fault
  // generators and the cables' observer queues. Not the configuration
  // (parameters, topology, receivers, sinks, observer, sent makers): the
  // loader builds the same cluster first. save_state throws nicemu::Error
  // if a pending on_sent was given without a tag.
  void save_state(StateWriter &out) const;
  // Before Scheduler::load, which then has the fabric make its pending
  // events again (they name flights by their slot, so the slots must be
  // there first). Throws nicemu::Error on a damaged or foreign state.
  void load_state(StateReader &in);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace nicemu
