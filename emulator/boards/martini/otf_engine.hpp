// Martini's on-the-fly hardware (docs/dimmnet.md): the send path from a
// host store to the link, the HTLB and its header seeds, the BOTF windows,
// and the OTF receiver that writes arrivals into LLCM. Each block counts
// its stages in cycles of its own clock (the DIMM clock on the host side,
// the SWIF clock on the link side), so a hand-over between the two waits
// for an edge of the slower one.
//
// The send path is in order: a store reaches the pins, takes a transaction
// credit, is taken in and queued, is looked up in the HTLB (a miss stalls
// the queue and interrupts the core, whose firmware installs the seed or
// rejects the store), is size-checked and handed to the SWIF, which sends
// one packet at a time; the credit comes back when the packet's tail has
// left. A store finding no credit is held on the bus until one comes back.
#pragma once

#include "boards/martini/martini_figures.hpp"
#include "boards/martini/sodimm.hpp"
#include "devices/device.hpp"
#include "devices/device_clock.hpp"
#include "devices/host_port.hpp"
#include "fabric/fabric.hpp"
#include "nicemu/martini.h"

#include <array>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>

namespace nicemu::martini {

class OtfEngine final : public Device, public PacketReceiver {
public:
  // `llcm`: the LLCM's card address and size.
  OtfEngine(DeviceHost &card, const Figures &figures, uint32_t llcm_base,
            uint32_t llcm_size);
  static const RegisterLayout &layout();

  // ---- Process groups (several host processes may share the card) ----
  // A process's group and its number in it, as the driver's JOIN word set
  // them; the card checks the process's accesses against them.
  struct Member {
    uint32_t pgid = 0, pid = 0;
  };
  void join(uint32_t process, uint32_t pgid, uint32_t pid);
  const Member *member(uint32_t process) const;
  // Whether `process` may load or store [offset, offset + len) of LLCM:
  // inside an open region of its group.
  bool llcm_allowed(uint32_t process, uint64_t offset, uint64_t len) const;
  // Whether `process` may reach bank `bank` from the host (it belongs to
  // the group that first did; the first access claims it).
  bool bank_allowed(uint32_t process, uint32_t bank);

  // ---- The host's side (the card's host windows call these at `at`) ----
  void aotf_store(uint32_t process, uint32_t page, uint32_t offset,
                  unsigned size, uint64_t value, Time at,
                  HostBusCompletion done);
  // Bytes written into BOTF window `window` at `offset` (one burst) by
  // `process`, which the window then belongs to.
  void botf_write(uint32_t process, uint32_t window, uint32_t offset,
                  std::span<const uint8_t> bytes);
  void botf_kick(uint32_t process, uint32_t window, Time at,
                 HostBusCompletion done);
  uint32_t botf_status(uint32_t window) const;
  // The STATUS page's word at `offset` (NICEMU_MARTINI_STATUS_*), or
  // nullopt for an offset that holds none.
  std::optional<uint64_t> status_word(uint32_t offset) const;
  uint32_t llcm_base() const { return llcm_base_; }
  uint32_t llcm_size() const { return llcm_size_; }
  const Figures &figures() const { return figures_; }

  // When the last AOTF packet this card sent passed each stage, and when
  // the last one it received did (for `nicemu bench dimmnet`'s breakdown);
  // `packet` is the fabric's packet id (0 before any).
  struct SendTimes {
    uint64_t packet = 0;
    Time store = 0;  // the host's store
    Time pins = 0;   // at the DIMM pins, credit taken
    Time lookup = 0; // the HTLB lookup starts (after host write, queue)
    Time ready = 0;  // looked up, size-checked, handed to the SWIF
    Time head = 0;   // the head leaves the SWIF for the link
  };
  struct ReceiveTimes {
    uint64_t packet = 0;
    Time tail = 0;    // the tail (and its CRC) is in
    Time swif = 0;    // through the receive-side SWIF
    Time written = 0; // in LLCM
  };
  const SendTimes &last_aotf_sent() const { return last_sent_; }
  const ReceiveTimes &last_aotf_received() const { return last_received_; }

  // The earliest time at which this card's LLCM may change unless its own
  // host acts, as seen at `now`: a write already on its way, a packet on
  // the link or still in any card's send path, the core (awake, or a
  // packet for it), or another host's store and the least time it takes
  // to reach this LLCM. `peers` (null: no hosts) says when the other hosts
  // may act. Lets a host's polling loads be answered without a round trip
  // to the emulator until then (HostBusResult::stable_until).
  Time llcm_quiet_until(Time now, const HostPeers *peers,
                        uint32_t process) const;

  // ---- SO-DIMM banks and the RDMA engine (otf_rdma.cpp) ----
  SodimmBank &bank(uint32_t i) { return banks_.at(i); }
  // The RDMA page's word at `offset` (NICEMU_MARTINI_RDMA_*), or nullopt.
  std::optional<uint64_t> rdma_word(uint32_t offset) const;
  // A store to the RDMA page at `at`; the reason when it is refused (no
  // such word; a kick while busy, of a bad length or to no such node).
  std::string rdma_store(uint32_t process, uint32_t offset, uint64_t value,
                         Time at);

  // ---- The link ----
  bool accept_head(const Packet &p, Time now) override;
  void packet_arrived(Packet p, Time now) override;

  // Checkpoints (docs/replay.md): the send path, HTLB, windows, receive
  // side, banks, RDMA engine and the packets its events carry. A host's
  // store held for a credit is the host's: such a moment is not saved.
  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;
  void restore_event(Scheduler &scheduler, const SavedEvent &e) override;

private:
  // The engine's events, by the kind in their tags; the packet an event
  // carries waits in parked_ under the number in the tag's `a`.
  enum EventKind : uint32_t {
    kSent,       // the fabric: the SWIF's packet has left (on_sent)
    kLookup,     // the head of the queue reaches the HTLB
    kNoSuchNode, // the SWIF's packet had nowhere to go
    kLoopback,   // the SWIF's packet turns around to this node
    kCommand,    // a packet for the core is through the SWIF
    kLlcmWrite,  // an OTF packet's write
    kRdmaWrite,  // a PUSH or PULL_DATA packet's write
    kRdmaAck,    // an ACK ends the RDMA engine's transfer (`a`: its code)
    kPullServed, // a PULL is served
  };
  // The engine's plain fields, as a checkpoint holds them (saving and
  // loading alike; the queues and maps go one by one).
  template <class Self, class Archive>
  static void plain_fields(Self &s, Archive &a) {
    a.fields(s.credits_, s.lookup_scheduled_, s.stalled_, s.lookup_free_,
             s.swif_busy_, s.sequence_, s.victim_, s.staged_seed_, s.miss_page_,
             s.region_select_, s.regions_, s.commands_coming_,
             s.command_refused_, s.last_sent_, s.last_received_, s.rdma_local_,
             s.rdma_remote_, s.rdma_length_, s.rdma_target_, s.rdma_owner_,
             s.rdma_status_, s.rdma_notify_, s.rdma_read_free_, s.write_free_,
             s.status_, s.sent_, s.received_, s.dropped_, s.rejected_,
             s.misses_, s.commands_taken_, s.next_parked_);
  }
  static const char *event_name(uint32_t kind);
  // What an event of `kind` does; `when`: its time.
  std::function<void()> event_action(uint32_t kind, uint64_t a, Time when);
  void schedule_event(Time at, uint32_t kind, uint64_t a = 0);
  // An event's packet, kept until it runs.
  uint64_t park(Packet p);
  Packet unpark(uint64_t id);

  struct Transaction {
    bool botf = false;
    uint32_t page = 0, offset = 0, size = 0; // AOTF
    uint64_t value = 0;                      // AOTF data
    uint32_t window = 0;                     // BOTF
    uint32_t process = 0;                    // the host process's rank
    Time store = 0;                          // the host's store
    Time pins = 0;                           // when it reached the DIMM pins
    Time lookup = 0;                         // its first HTLB lookup
  };
  struct HeldStore { // waiting for a credit
    Transaction txn;
    Time at;
    HostBusCompletion done;
  };
  struct HtlbEntry {
    bool valid = false;
    uint8_t tag = 0;
    std::array<uint8_t, NICEMU_MARTINI_SEED_BYTES> seed{};
  };
  struct Window {
    std::array<uint8_t, NICEMU_MARTINI_BOTF_STRIDE> bytes{};
    bool busy = false, error = false;
    uint32_t owner = 0; // the process that wrote it last
  };
  struct Region {
    uint32_t base = 0, size = 0, owner = 0;
  };
  struct Outgoing {
    Packet packet;
    Time ready;                     // handed to the SWIF
    std::optional<uint32_t> window; // a BOTF window to free once sent
    bool credit = false;            // a host's send: gives back a credit
    bool aotf = false;
    SendTimes times; // AOTF
  };

  void take_in(Transaction txn, Time at, HostBusCompletion done, Time cost);
  void schedule_lookup();
  // The head of the queue is refused: counted, its credit given back.
  void reject_head();
  void lookup();
  void resolve(uint64_t how);
  void finish_lookup(const Transaction &txn,
                     const std::array<uint8_t, 32> *seed);
  void give_back_credit();
  void to_swif(Outgoing out);
  void send_next();
  void broadcast(Packet p, Time head);
  // The SWIF's packet's tail has left (`went_out`), or it had nowhere to
  // go: the credit comes back and the window is free.
  void sent(bool went_out);
  void set_status(uint32_t bits, bool on);
  HtlbEntry *find(uint32_t page);
  const HtlbEntry *find(uint32_t page) const;
  void write_arrival(const Packet &p);
  // A packet's length agrees with its header's (its CRC aside).
  bool well_formed(const std::vector<uint8_t> &bytes) const;
  // A BOTF packet for a region in a bank (written at the bank's speed).
  bool into_bank(const uint8_t *header) const;
  // Some open LLCM region of (pgid, pid) holds [offset, offset + len).
  bool llcm_open_to(uint32_t pgid, uint32_t pid, uint64_t offset,
                    uint64_t len) const;
  // Whether region `region` is open to (pgid, pid) and holds [address,
  // address + len) (card addresses: nicemu/martini.h, "space").
  bool region_holds(uint32_t region, uint32_t pgid, uint32_t pid,
                    uint64_t address, uint64_t len) const;

  // RDMA (otf_rdma.cpp).
  bool space_reachable(uint32_t address, uint64_t len) const;
  bool space_read(uint32_t address, void *out, uint32_t len) const;
  bool space_write(uint32_t address, const void *in, uint32_t len);
  Time space_ps_per_byte(uint32_t address) const;
  // `notify`: 0, or NICEMU_MARTINI_NOTIFY_ON | a receive-status address.
  Packet rdma_packet(uint32_t dest, uint8_t command, uint8_t flags,
                     uint32_t owner, uint32_t region, uint32_t address,
                     const uint8_t *data, uint32_t len, uint32_t notify = 0);
  // Sends `len` bytes read from `from` here as data packets to `dest`
  // (each read at the source's bandwidth from `start` on).
  void stream(uint32_t dest, uint8_t command, uint32_t owner, uint32_t region,
              uint32_t to, uint32_t from, uint32_t len, Time start,
              uint32_t notify = 0);
  // The receiver writes arrivals one after another: when `len` bytes
  // through the SWIF at `ready` for card address `address` are written
  // (`otf`: an AOTF or BOTF packet, else RDMA data).
  Time receive_write(Time ready, uint32_t len, uint32_t address, bool otf);
  void queue_packet(Packet p, Time ready);
  void rdma_arrived(Packet p, Time through_swif);
  // A PUSH or PULL_DATA packet written at `written`; a PULL served.
  void rdma_write(const Packet &p, Time written);
  void serve_pull(const Packet &p);
  void rdma_finish(uint32_t error);
  void command_arrived(Packet p);
  uint32_t header_bytes(const uint8_t *header) const;
  // Some send of this card that has not reached the link yet may go to
  // `node` (a store whose page misses the HTLB may go anywhere).
  bool may_send_to(uint32_t node) const;
  std::optional<uint32_t> destination(const Transaction &txn) const;
  // The least time from a packet's tail arriving to its LLCM write, and
  // from a host's store on another card to a write into this LLCM.
  Time receive_floor() const;
  Time store_to_remote_llcm_floor() const;
  // The cards of the run (this one alone without a network).
  std::vector<const OtfEngine *> cards() const;

  DeviceHost &card_;
  Figures figures_;
  DeviceClock dimm_, swif_;
  uint32_t llcm_base_, llcm_size_;

  // Send path.
  uint32_t credits_;
  std::deque<Transaction> queue_; // past the pins, before the HTLB
  std::deque<HeldStore> held_;    // no credit yet
  bool lookup_scheduled_ = false;
  bool stalled_ = false; // the head missed; the core decides
  Time lookup_free_ = 0; // the HTLB stage takes one per cycle
  std::deque<Outgoing> swif_queue_;
  bool swif_busy_ = false;
  // The packet the SWIF sends (one at a time), its bytes gone on: what
  // sent() needs.
  std::optional<Outgoing> sending_;
  std::map<uint64_t, Packet> parked_; // events' packets, by number
  uint64_t next_parked_ = 0;
  std::set<uint64_t> restored_; // parked packets given to restored events
  uint64_t sequence_ = 0;

  // HTLB: 256 sets of 4 ways; the seed the core stages for RESOLVE.
  std::array<std::array<HtlbEntry, 4>, 256> htlb_{};
  std::array<uint8_t, 256> victim_{};
  std::array<uint64_t, 4> staged_seed_{};
  uint32_t miss_page_ = 0;

  std::vector<Window> windows_;

  // Receive side.
  std::array<Region, NICEMU_OTF_REGIONS> regions_{};
  uint32_t region_select_ = 0;
  std::deque<Packet> commands_;  // for the core, oldest first
  uint32_t commands_coming_ = 0; // accepted, still in the receive stages
  bool command_refused_ = false;

  SendTimes last_sent_;
  ReceiveTimes last_received_;

  // For llcm_quiet_until: LLCM writes scheduled, and the earliest write of
  // each packet on its way here (by packet id), registered by its sender.
  std::multiset<Time> llcm_writes_;
  std::map<uint64_t, Time> inbound_;

  std::array<SodimmBank, 2> banks_;
  std::array<std::optional<uint32_t>, 2> bank_group_; // claimed by a group
  std::map<uint32_t, Member> members_;                // by process
  // The RDMA engine: its descriptor, status, and when its read side (the
  // source memory, read at that memory's bandwidth) is free.
  uint32_t rdma_local_ = 0, rdma_remote_ = 0, rdma_length_ = 0,
           rdma_target_ = 0, rdma_owner_ = 0, rdma_status_ = 0,
           rdma_notify_ = 0;
  Time rdma_read_free_ = 0;
  std::map<uint32_t, bool> push_failed_;    // by source node, until its LAST
  std::map<uint32_t, uint32_t> push_bytes_; // ... and the bytes written
  Time write_free_ = 0; // the receiver's write stage is free from then

  uint32_t status_ = 0;
  uint32_t sent_ = 0, received_ = 0, dropped_ = 0, rejected_ = 0, misses_ = 0,
           commands_taken_ = 0;
};

} // namespace nicemu::martini
