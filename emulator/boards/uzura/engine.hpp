// UZURA's fixed data path (docs/uzura.md), what the FPGA does in hardware:
// fetching the host's commands when it rings, DMA over PCI-X, address
// translation, building and parsing frames, the 10GbE MAC, placing
// arrivals in host memory, completions and arrivals written for the host.
// The firmware on the core decides what the engine does: it reads the
// commands the engine fetched and hands the engine work requests (WRs);
// the engine tells it what happened through an event ring in card memory.
//
// Each block charges the model's figures (uzura_figures.hpp): a DMA holds
// the PCI-X bus for its time, so polls that occupy the bus delay transfers;
// consecutive frames of a message overlap, one on the bus while the one
// before crosses the FPGA, the MAC and the wire.
#pragma once

#include "boards/uzura/uzura_figures.hpp"
#include "devices/device.hpp"
#include "devices/host_port.hpp"
#include "fabric/fabric.hpp"
#include "nicemu/uzura_card.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nicemu::uzura {

class Engine final : public Device, public PacketReceiver {
public:
  // Frames arriving from the network are placed in host memory by the
  // hardware, with no core involved: no promise (no host leases on UZURA).
  Time earliest_host_write(Time now, Time) const override { return now; }
  Engine(DeviceHost &card, const Figures &figures, uint32_t sram_base,
         uint32_t sram_size);
  static const RegisterLayout &layout();

  // ---- The host's registers (the card's host window calls these) ----
  // The doorbell write landed at `at`; the program started it at `started`.
  void host_doorbell(uint32_t word, Time at, Time started);
  void host_endpoint(uint32_t bus_address) { endpoint_ = bus_address; }
  void host_rx_freed(uint32_t freed) { rx_freed_ = freed; }
  // UZ_NOTIFY_NIC_POLLS: the host stored command `seq` at `at`; the card's
  // next poll finds it.
  void host_command_written(uint32_t seq, Time at);
  uint32_t cq_count() const { return cq_count_; }
  uint32_t rx_count() const { return rx_count_; }
  uint32_t host_status() const { return host_status_; }
  // Commands whose 64 bytes the card has read: their ring slots are free.
  uint32_t cmd_fetched() const { return cmd_landed_; }
  // The host polls a card register at `at`: it waits for the bus, holds it
  // for `duration`, and has its answer when the poll ends (returned).
  Time bus_poll(Time at, Time duration) {
    return bus_.occupy(at, duration) + duration;
  }
  // Runs `fn` at `t` (a host access whose answer is read then).
  void at_time(Time t, std::function<void()> fn) {
    card_.scheduler().schedule(t, "uzura: host poll", std::move(fn));
  }
  const Figures &figures() const { return figures_; }

  // When the last eager message this card sent passed each stage, and when
  // the last one it received did (for `nicemu bench uzura`'s breakdown);
  // `packet` is the fabric's packet id (0 before any).
  struct SendTimes {
    uint64_t packet = 0;
    Time host = 0;     // the program starts its doorbell write
    Time doorbell = 0; // the doorbell has landed
    Time command = 0;  // the command is in the card (its DMA ended)
    Time submit = 0;   // the firmware handed the engine the WR
    Time data = 0;     // the data's DMA ended
    Time ready = 0;    // through the sending FPGA
    Time head = 0;     // through the MAC: the frame leaves
  };
  struct ReceiveTimes {
    uint64_t packet = 0;
    Time tail = 0;   // the frame is in
    Time parsed = 0; // through the MAC and the receiving FPGA
    Time placed = 0; // in the program's arrival ring
  };
  const SendTimes &last_sent() const { return last_sent_; }
  const ReceiveTimes &last_received() const { return last_received_; }
  Time bus_busy() const { return bus_.busy_total(); }

  // ---- The link ----
  bool accept_head(const Packet &p, Time now) override;
  void packet_arrived(Packet p, Time now) override;

  // Checkpoints (docs/replay.md): registers, rings, the host side's
  // counts, messages going out and coming in, the bus, and the work its
  // pending events will do. A host's poll of a card register waiting for
  // the bus is the host's: such a moment is not saved.
  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;
  void restore_event(Scheduler &scheduler, const SavedEvent &e) override;

private:
  // The rings the firmware gave the engine (ENGINE_RINGS).
  enum Ring : uint32_t {
    kCmd,
    kCmdEntries,
    kCq,
    kCqEntries,
    kRx,
    kRxEntries,
    kOverflow,
    kOverflowEntries,
    kRingWords
  };
  // A translated piece of a virtual range: [bus, bus + len).
  struct Piece {
    uint64_t bus = 0;
    uint32_t len = 0;
  };
  struct Translation {
    std::vector<Piece> pieces;
    Time cost = 0;       // the lookups' time
    uint32_t status = 0; // UZ_S_OK, or why not
  };
  // A message the engine sends, frame by frame.
  struct Outgoing {
    uint16_t op = 0;   // UZ_WR_SEND, _WRITE, or 0 for a GET's answer
    uint32_t node = 0; // destination
    uint32_t msg = 0;  // the WR's msg (the GET's, for an answer)
    uint32_t len = 0;  // bytes of the message
    uint32_t tag = 0, imm = 0;
    uint64_t remote = 0;       // the destination's virtual address (PUT)
    std::vector<Piece> source; // the data, translated (host bus)
    bool typed = false;        // the destination has a layout:
    uz_datatype remote_type{}; // this one
    uint32_t sent = 0;         // bytes handed to frames so far
  };
  // A multi-frame message arriving (PUT), by (source, msg).
  struct Incoming {
    uint32_t status = UZ_S_OK;
  };

  void submit(uint32_t card_addr);
  void run_wr(const uz_wr &wr, Time at);
  void finish_wr(uint32_t msg, uint32_t status, Time at);
  void post_event(uint32_t kind, uint32_t msg, uint32_t status, uint32_t detail,
                  Time at);
  void write_event(const uint32_t (&words)[4]);
  void complete_for_host(uint64_t cookie, uint32_t status, Time at);
  // `polled`: the card's poll of host memory has read them already (a poll
  // reads a command slot, 64 bytes), so they land at `at` with no DMA.
  void fetch_commands(uint32_t upto, Time at, bool polled = false);

  // What the engine does when a DMA (or a loopback, or a command its poll
  // found) ends: a kind and its operands, kept under a number that the
  // event's tag carries until then, so that a checkpoint can save it.
  enum WorkKind : uint32_t {
    kCqEntry,      // a completion lands in the host's CQ
    kCommandLands, // a command is in the card's command area
    kWrCopy,       // a FETCH or STORE work request's data has moved
    kFrame,        // a frame's data is read: it goes out
    kEagerPlaced,  // an eager message is in the host's receive ring
    kPutPlaced,    // an RDMA write's data is in host memory
    kLoopback,     // a frame to this card is through its receiving FPGA
    kWorkKinds
  };
  struct Work {
    uint32_t kind = kCqEntry;
    std::array<uint32_t, 4> u{}; // small operands (meaning: run_work)
    uint64_t w = 0;              // a bus address, or a time
    uint64_t cookie = 0;
    std::vector<Piece> pieces;
    std::vector<uint8_t> bytes;
    uz_wire_header header{};
    ReceiveTimes times;
  };
  // The events, by the kind in their tags.
  enum EventKind : uint32_t {
    kEngineEvent,  // post_event: `a` kind | msg << 32, `b` status | detail
    kDmaEnd,       // a DMA ends: work `a`
    kPolledLanded, // a command the card's poll read: work `a`
    kLoopbackIn,   // a frame to itself: work `a`
    kFrameSent,    // the fabric: a frame's tail has left (nothing to do)
  };
  // What a checkpoint holds of the engine's plain fields and of a message
  // going out (saving and loading alike).
  template <class Self, class Archive>
  static void plain_fields(Self &s, Archive &a) {
    a.fields(s.events_, s.event_entries_, s.event_count_, s.event_freed_,
             s.doorbell_, s.endpoint_, s.host_status_, s.rings_, s.notify_,
             s.cmd_area_, s.datatypes_, s.cmd_done_, s.frames_out_,
             s.frames_in_, s.dropped_, s.sram_hits_, s.overflow_hits_,
             s.misses_, s.last_page_, s.last_entry_, s.last_page_valid_,
             s.events_lost_, s.cq_written_, s.cq_count_, s.rx_placed_,
             s.rx_count_, s.rx_freed_, s.fetched_, s.cmd_landed_, s.rung_,
             s.next_outgoing_, s.packet_sequence_, s.last_sent_, s.pending_,
             s.last_received_, s.receiving_, s.doorbell_host_, s.doorbell_at_,
             s.next_work_);
  }
  template <class Out, class Archive>
  static void outgoing_fields(Out &o, Archive &a) {
    a.fields(o.op, o.node, o.msg, o.len, o.tag, o.imm, o.remote, o.typed,
             o.remote_type.count, o.remote_type.block, o.remote_type.stride,
             o.remote_type.extent, o.sent);
  }
  static const char *event_name(uint32_t kind);
  std::function<void()> event_action(uint32_t kind, uint64_t a, uint64_t b,
                                     Time when);
  // Runs work `id` (and forgets it) at `end`.
  void run_work(uint64_t id, Time end);
  void frame_read(const Work &w, Time end);
  uint64_t keep(Work w);

  // A DMA of `bytes` over the bus, earliest at `at`; `then` runs when it
  // has ended.
  void dma(bool to_host, uint32_t bytes, Time at, Work then,
           uint32_t pieces = 1);

  Translation translate(uint64_t va, uint32_t len, uint32_t need) const;
  // Datatype `id` from the firmware's table (nullopt: none, or not sane).
  std::optional<uz_datatype> datatype(uint16_t id) const;
  // The bytes [from, from + n) of `items` items of `type` laid out from
  // `base`, as virtual ranges in order (pieces of at most one block).
  static void layout(const uz_datatype &type, uint64_t base, uint64_t from,
                     uint32_t n,
                     std::vector<std::pair<uint64_t, uint32_t>> &out);
  // A layout in a frame's header (PUT, GET), and back.
  static void set_layout(uz_wire_header &h, const uz_datatype &type);
  static std::optional<uz_datatype> carried_layout(const uz_wire_header &h);
  // The pieces of bytes [offset, offset + n) of data laid out in `all`.
  static std::vector<Piece> pieces_at(const std::vector<Piece> &all,
                                      uint32_t offset, uint32_t n);
  Translation
  translate_ranges(const std::vector<std::pair<uint64_t, uint32_t>> &ranges,
                   uint32_t need) const;
  std::optional<uint64_t> look_up(uint64_t page, Time &cost) const;
  std::optional<uint64_t> look_up_tables(uint64_t page, Time &cost) const;
  Translation gather_list(const uz_wr &wr) const;

  void start_outgoing(Outgoing out, Time at);
  void next_frame(uint32_t id, Time at);
  // Returns the frame's packet id (0: not sent).
  uint64_t send_frame_to(uint32_t node, const uz_wire_header &h,
                         std::vector<uint8_t> data, Time ready);
  void send_small(uint32_t node, uint8_t type, uint32_t msg, uint32_t status,
                  Time ready);
  // A frame to this card itself: from the sending FPGA straight into the
  // receiving one (no MAC, no wire, not captured).
  void loop_back(const uz_wire_header &h, std::vector<uint8_t> data,
                 Time ready);

  void on_frame(const uz_wire_header &h, std::vector<uint8_t> data, Time at);
  void place_eager(const uz_wire_header &h, std::vector<uint8_t> data, Time at);
  void place_put(const uz_wire_header &h, std::vector<uint8_t> data, Time at);
  void serve_get(const uz_wire_header &h, Time at);

  uint32_t ring(Ring r) const { return rings_[r]; }

  DeviceHost &card_;
  Figures figures_;
  uint32_t sram_base_, sram_size_;
  PcixBus bus_;

  // Registers
  uint32_t events_ = 0, event_entries_ = 0, event_count_ = 0;
  uint32_t event_freed_ = 0;
  uint32_t doorbell_ = 0, endpoint_ = 0, host_status_ = 0;
  std::array<uint32_t, kRingWords> rings_{};
  uint32_t notify_ = 0, cmd_area_ = 0, datatypes_ = 0, cmd_done_ = 0;
  uint32_t frames_out_ = 0, frames_in_ = 0, dropped_ = 0;
  mutable uint32_t sram_hits_ = 0, overflow_hits_ = 0, misses_ = 0;
  mutable uint64_t last_page_ = 0, last_entry_ = 0;
  mutable bool last_page_valid_ = false;
  uint32_t events_lost_ = 0;

  // The host side
  uint32_t cq_written_ = 0; // completions started (their CQ slots)
  uint32_t cq_count_ = 0;   // completions landed in the host's CQ
  uint32_t rx_placed_ = 0;  // arrivals started (their ring slots)
  uint32_t rx_count_ = 0;   // arrivals landed in its receive ring
  uint32_t rx_freed_ = 0;   // slots the host has consumed
  uint32_t fetched_ = 0;    // commands whose fetch has started
  uint32_t cmd_landed_ = 0; // commands read from the ring into the card
  uint32_t rung_ = 0;       // the last command number the host rang

  std::map<uint32_t, Outgoing> outgoing_; // by a local id
  uint32_t next_outgoing_ = 1;
  std::map<std::pair<uint32_t, uint32_t>, Incoming> incoming_;
  // This node's READs in flight, by msg: where their data goes.
  std::map<uint32_t, std::vector<Piece>> reads_;
  uint64_t packet_sequence_ = 0;
  SendTimes last_sent_, pending_; // pending_: the message in progress
  ReceiveTimes last_received_, receiving_;
  Time doorbell_host_ = 0, doorbell_at_ = 0;
  std::map<uint32_t, Time> command_landed_; // recent commands, by number
  std::map<uint64_t, Work> work_;           // pending events' work
  uint64_t next_work_ = 0;
  std::set<uint64_t> restored_; // work given to restored events
};

} // namespace nicemu::uzura
