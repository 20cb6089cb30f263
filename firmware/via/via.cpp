// via: the VI provider firmware for the comet card (Comet-VIA). One provider
// offers two kinds of VI (docs/via.md):
//   - the standard connected VI: VIA semantics over Ethernet frames of type
//     VIAFW_ETHERTYPE, at all three reliability levels, with immediate data,
//     RDMA write and RDMA read;
//   - the FM-over-IP VI: an FM packet built by the host goes out as UDP in
//     IPv4 in Ethernet to the node the packet names, through the node table
//     set at boot; frames that arrive are checked, decapsulated and placed
//     in the VI's posted receive descriptors.
// The host rings doorbells with the bus address of a descriptor (a VI's
// send or receive FIFO) or of a command block (the command FIFO). The card
// reads descriptors by host DMA, checks every segment against its memory
// registration table (handle, Ptag, bounds, RDMA enables), moves the data
// by DMA between registered host memory and the wire, and writes the
// completion status back into the descriptor (and a completion queue).
// A descriptor that fails any check completes with the VIA error status and
// moves nothing.
//
// via_protocol.h is the contract with the host library.
#include "nicemu/fw.hpp"
#include "nicemu/via_protocol.h"

namespace fw = nicemu::fw;

// The code of the reliable levels under loss stays out of line, so the
// paths of a network that loses nothing run as they did before it.
#define SLOW [[gnu::noinline]]

namespace {

// ---- Bytes ------------------------------------------------------------------

uint32_t get32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
uint16_t get16(const uint8_t *p) {
  return uint16_t(p[0] | p[1] << 8);
}
void put32(uint8_t *p, uint32_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
  p[2] = uint8_t(v >> 16);
  p[3] = uint8_t(v >> 24);
}
void put16(uint8_t *p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
// Network byte order (big-endian) for Ethernet, IP and UDP headers.
uint16_t get_be16(const uint8_t *p) {
  return uint16_t(p[0] << 8 | p[1]);
}
void put_be16(uint8_t *p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void put_be32(uint8_t *p, uint32_t v) {
  put_be16(p, uint16_t(v >> 16));
  put_be16(p + 2, uint16_t(v));
}
uint32_t get_be32(const uint8_t *p) {
  return uint32_t(get_be16(p)) << 16 | get_be16(p + 2);
}

// ---- Card counters in the mailbox ------------------------------------------

volatile uint32_t *box;
void count(uint32_t word) {
  box[word] = box[word] + 1;
}
SLOW void count_retransmits(uint32_t frames) {
  box[VIAFW_BOX_STAT_RETRANSMITS] = box[VIAFW_BOX_STAT_RETRANSMITS] + frames;
}

// ---- Host DMA ---------------------------------------------------------------
// The engine moves whole aligned words and the core waits for it (sleeping
// on the HDMA line alone). Host memory at any byte alignment goes through a
// bounce buffer: reads take the covering words, writes merge the edge words
// first so bytes outside the target are written back unchanged.

constexpr uint32_t kChunk = 1536;
uint32_t bounce[kChunk / 4 + 2];
// The lines that wake the main loop; a host DMA masks them while it waits.
// The timer is one of them but stays pending until its handler runs.
constexpr uint32_t kWakeLines =
    NICEMU_IRQ_DOORBELL | NICEMU_IRQ_RX | NICEMU_IRQ_TX | NICEMU_IRQ_TIMER;

bool dma(uint32_t bus, void *card, uint32_t bytes, bool to_host) {
  fw::irq_clear(NICEMU_IRQ_HDMA);
  if (!fw::hdma_start(bus, card, bytes, to_host, true))
    return false;
  fw::irq_disable(kWakeLines);
  uint32_t s;
  while (!((s = fw::hdma_status()) & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    fw::sleep();
  fw::irq_clear(NICEMU_IRQ_HDMA);
  fw::irq_enable(kWakeLines);
  return !(s & NICEMU_DMA_ERROR);
}

bool aligned(uint32_t bus, const void *card, uint32_t n) {
  return ((bus | n | uint32_t(reinterpret_cast<uintptr_t>(card))) & 3) == 0;
}

bool host_read(uint32_t bus, void *to, uint32_t n) {
  auto *dst = static_cast<uint8_t *>(to);
  if (aligned(bus, dst, n))
    return n == 0 || dma(bus, dst, n, false);
  while (n) {
    uint32_t part = n < kChunk ? n : kChunk;
    uint32_t first = bus & ~3u, end = (bus + part + 3) & ~3u;
    if (!dma(first, bounce, end - first, false))
      return false;
    memcpy(dst, reinterpret_cast<uint8_t *>(bounce) + (bus - first), part);
    bus += part, dst += part, n -= part;
  }
  return true;
}

bool host_write(uint32_t bus, const void *from, uint32_t n) {
  auto *src = static_cast<const uint8_t *>(from);
  if (aligned(bus, src, n))
    return n == 0 || dma(bus, const_cast<uint8_t *>(src), n, true);
  while (n) {
    uint32_t part = n < kChunk ? n : kChunk;
    uint32_t first = bus & ~3u, end = (bus + part + 3) & ~3u;
    uint32_t words = (end - first) / 4;
    if (bus != first && !dma(first, bounce, 4, false))
      return false;
    if ((bus + part) & 3 && (words > 1 || bus == first) &&
        !dma(end - 4, bounce + words - 1, 4, false))
      return false;
    memcpy(reinterpret_cast<uint8_t *>(bounce) + (bus - first), src, part);
    if (!dma(first, bounce, end - first, true))
      return false;
    bus += part, src += part, n -= part;
  }
  return true;
}

// ---- Retransmission timeouts ----------------------------------------------
// One timer serves every VI and control message waiting for an answer
// (docs/via.md, "Reliability levels under loss"). It runs only while
// something waits (`waiting` of them), so an idle card sleeps, and is set
// for the earliest deadline; each waiting thing keeps its own.

struct Retry {
  uint64_t deadline;
  bool armed;    // waiting for an answer
  uint8_t tries; // timeouts in a row with no progress
};
uint32_t rto_cycles, rto_max_cycles; // VIAFW_RTO_US, VIAFW_RTO_MAX_US (boot)
uint32_t waiting;                    // Retry objects armed
uint64_t timer_at;                   // the timer's deadline (0: stopped)

SLOW void timer_at_most(uint64_t deadline) {
  if (timer_at && timer_at <= deadline)
    return;
  timer_at = deadline;
  fw::irq_clear(NICEMU_IRQ_TIMER); // a fire for the deadline it had
  fw::timer_start(deadline);
}

// Waits until `cycles` from now.
SLOW void retry_arm_in(Retry &r, uint32_t cycles) {
  if (!r.armed) {
    r.armed = true;
    ++waiting;
  }
  r.deadline = fw::cycles() + cycles;
  timer_at_most(r.deadline);
}

// Waits (again) for an answer: the timeout doubles with each try.
SLOW void retry_arm(Retry &r) {
  if (!r.armed) {
    r.armed = true;
    ++waiting;
  }
  uint32_t rto = r.tries > 8 ? rto_max_cycles : rto_cycles << r.tries;
  if (rto > rto_max_cycles)
    rto = rto_max_cycles;
  r.deadline = fw::cycles() + rto;
  timer_at_most(r.deadline);
}

// Nothing waits any more: the timer stops.
SLOW void timer_idle() {
  fw::timer_stop();
  fw::irq_clear(NICEMU_IRQ_TIMER);
  timer_at = 0;
}

// The answer came: nothing waits on `r` any more.
[[gnu::always_inline]] inline void retry_done(Retry &r) {
  r.tries = 0;
  if (!r.armed)
    return;
  r.armed = false;
  if (--waiting == 0)
    timer_idle();
}

// ---- Memory registration table ----------------------------------------------

// A region's and a VI's `ptag` is the process's Ptag number with the
// process in its top 8 bits (owned_ptag): one compare keeps both the
// host's Ptags and the processes sharing the card apart.
struct Region {
  bool used;
  uint8_t owner; // the process that registered it
  uint32_t ptag, attrs, length, bus;
  uint64_t va;
};
Region regions[VIAFW_MAX_REGIONS];

uint32_t owned_ptag(uint32_t process, uint32_t ptag) {
  return process << 24 | ptag;
}

// Whether [bus, bus + bytes) lies in the memory of the node's process
// `process` (its bus window: the pages its driver pinned).
bool in_window(uint32_t process, uint32_t bus, uint32_t bytes) {
  uint32_t base = VIAFW_WINDOW(process);
  return bus >= base && bytes <= VIAFW_WINDOW_BYTES &&
         bus - base <= VIAFW_WINDOW_BYTES - bytes;
}

// A contiguous piece of host memory a message's bytes go to or come from.
struct Piece {
  uint32_t bus, length;
};
constexpr uint32_t kMaxPieces = VIAFW_MAX_SEGMENTS;

// Translates [va, va + length) of region `handle` for a VI with `ptag`;
// `need` are VIAFW_MEM_* enables the region must have. 0 or the error.
uint32_t translate(uint32_t handle, uint32_t ptag, uint64_t va, uint32_t length,
                   uint32_t need, uint32_t error, Piece &out) {
  if (handle == 0 || handle >= VIAFW_MAX_REGIONS)
    return error;
  const Region &r = regions[handle];
  if (!r.used || r.ptag != ptag || (r.attrs & need) != need)
    return error;
  if (va < r.va || va - r.va > r.length || length > r.length - (va - r.va))
    return error;
  out.bus = r.bus + uint32_t(va - r.va);
  out.length = length;
  return 0;
}

// ---- Descriptors
// --------------------------------------------------------------

struct Desc {
  uint32_t bus; // where it is in host memory
  uint8_t raw[VIAFW_CS_BYTES + VIAFW_MAX_SEGMENTS * VIAFW_SEG_BYTES];
  uint16_t segcount() const { return get16(raw + VIAFW_CS_SEGCOUNT); }
  uint16_t control() const { return get16(raw + VIAFW_CS_CONTROL); }
  uint32_t immediate() const { return get32(raw + VIAFW_CS_IMMEDIATE); }
  const uint8_t *seg(uint32_t i) const {
    return raw + VIAFW_CS_BYTES + i * VIAFW_SEG_BYTES;
  }
  uint64_t seg_va(uint32_t i) const {
    return uint64_t(get32(seg(i))) | uint64_t(get32(seg(i) + 4)) << 32;
  }
  uint32_t seg_handle(uint32_t i) const { return get32(seg(i) + 8); }
  uint32_t seg_length(uint32_t i) const { return get32(seg(i) + 12); }
};

// The most a descriptor's reads and completion can touch.
constexpr uint32_t kDescMax =
    VIAFW_CS_BYTES + VIAFW_MAX_SEGMENTS * VIAFW_SEG_BYTES;

// Reads a descriptor; false if its memory cannot be read (the host library
// checks it is registered, so this is a host that deregistered it).
bool fetch(uint32_t bus, Desc &d) {
  d.bus = bus;
  if (!host_read(bus, d.raw, VIAFW_CS_BYTES))
    return false;
  uint32_t n = d.segcount();
  if (n > VIAFW_MAX_SEGMENTS)
    n = VIAFW_MAX_SEGMENTS; // a format error; the rest is not read
  return host_read(bus + VIAFW_CS_BYTES, d.raw + VIAFW_CS_BYTES,
                   n * VIAFW_SEG_BYTES);
}

// The local data segments [first, segcount) as pieces; their total in
// `total`. 0 or the error status.
uint32_t local_pieces(const Desc &d, uint32_t first, uint32_t ptag,
                      Piece *pieces, uint32_t &npieces, uint32_t &total) {
  npieces = 0;
  total = 0;
  for (uint32_t i = first; i < d.segcount(); ++i) {
    uint32_t len = d.seg_length(i);
    if (len == 0)
      continue;
    if (uint64_t(total) + len > VIAFW_MAX_TRANSFER)
      return VIAFW_STATUS_LENGTH_ERROR;
    if (uint32_t e = translate(d.seg_handle(i), ptag, d.seg_va(i), len, 0,
                               VIAFW_STATUS_PROTECTION_ERROR, pieces[npieces]))
      return e;
    ++npieces;
    total += len;
  }
  return 0;
}

// Copies message bytes [offset, offset + n) between card memory and the
// pieces, in the pieces' order.
bool move_pieces(const Piece *pieces, uint32_t npieces, uint32_t offset,
                 uint8_t *card, uint32_t n, bool to_host) {
  for (uint32_t i = 0; i < npieces && n; ++i) {
    if (offset >= pieces[i].length) {
      offset -= pieces[i].length;
      continue;
    }
    uint32_t part = pieces[i].length - offset;
    if (part > n)
      part = n;
    uint32_t bus = pieces[i].bus + offset;
    if (!(to_host ? host_write(bus, card, part) : host_read(bus, card, part)))
      return false;
    card += part, n -= part, offset = 0;
  }
  return n == 0;
}

// ---- Completion queues and the event ring
// --------------------------------------

struct Ring {
  bool used;
  uint8_t owner; // the process whose memory it is in
  uint32_t bus, entries, produced;
};
Ring cqs[VIAFW_MAX_CQS];
Ring events[VIAFW_MAX_PROCESSES]; // each process's (HELLO)

void cq_push(uint32_t cq, uint32_t word) {
  if (cq >= VIAFW_MAX_CQS || !cqs[cq].used)
    return;
  Ring &r = cqs[cq];
  uint32_t entry[2] = {r.produced + 1, word};
  if (host_write(r.bus + (r.produced & (r.entries - 1)) * VIAFW_CQ_ENTRY_BYTES,
                 entry, sizeof entry))
    ++r.produced;
}

// An event for process `process`, in its ring.
SLOW void event_push_to(uint32_t process, uint32_t type, uint32_t node,
                        uint32_t vi, const uint32_t *data, uint32_t words) {
  Ring &events = ::events[process];
  if (!events.used)
    return;
  if (events.produced - box[VIAFW_BOX_EVENTS_FREED_BY(process)] >=
      events.entries)
    return count(VIAFW_BOX_STAT_EVENTS_LOST);
  uint32_t entry[VIAFW_EVENT_BYTES / 4] = {events.produced + 1, type, node, vi};
  for (uint32_t i = 0; i < words && i < 8; ++i)
    entry[4 + i] = data[i];
  if (host_write(events.bus + (events.produced & (events.entries - 1)) *
                                  VIAFW_EVENT_BYTES,
                 entry, sizeof entry))
    ++events.produced;
}

// ---- VIs
// ---------------------------------------------------------------------

enum class State : uint8_t { Free, Idle, Connected, Error };

struct Queue {
  uint32_t desc[VIAFW_QUEUE_DEPTH];
  uint32_t head, tail; // head: oldest; tail: next free (counts, not indices)
  bool empty() const { return head == tail; }
  bool full() const { return tail - head == VIAFW_QUEUE_DEPTH; }
  void push(uint32_t d) { desc[tail++ % VIAFW_QUEUE_DEPTH] = d; }
  uint32_t front() const { return desc[head % VIAFW_QUEUE_DEPTH]; }
  uint32_t pop() { return desc[head++ % VIAFW_QUEUE_DEPTH]; }
  void unpop(uint32_t d) { desc[--head % VIAFW_QUEUE_DEPTH] = d; }
};

// A message arriving on a VI: where its bytes go. Its bytes are taken in
// order only (`received`: how many have been placed). Once it is over
// (active false), `seq` stays the number of the last message started, so a
// frame of an older one is known for a duplicate.
struct Inbound {
  bool active, discard;
  uint8_t type;
  uint32_t seq, length, desc; // desc: the receive descriptor (0: none)
  uint32_t received;          // bytes placed, in order
  Piece pieces[kMaxPieces];
  uint32_t npieces;
};

// The completion status of a message's receive descriptor.
uint32_t op_of(const Inbound &in) {
  return in.type == VIAFW_PKT_SEND ? VIAFW_STATUS_OP_RECEIVE
                                   : VIAFW_STATUS_OP_REMOTE_RDMA_WRITE;
}

// What a VI has for the transmitter before its next message (`urgent`).
constexpr uint8_t kServeRead = 1; // a response to the peer's RDMA read
constexpr uint8_t kResend = 2;    // its message again, from resend_offset

struct Vi {
  State state;
  uint8_t kind, reliability;
  uint8_t index; // in `vis` (and `losses`), in what was padding
  uint32_t ptag, attrs, send_cq, recv_cq, max_transfer;
  uint32_t peer_node, peer_vi;
  Queue sends, recvs;
  uint32_t send_seq;   // messages started on this connection
  uint32_t unacked;    // send descriptor waiting for ACK (0: none)
  uint32_t unacked_op; // its VIAFW_STATUS_OP_*
  uint32_t unacked_length;
  Inbound in;
  // RDMA read: the local pieces the response fills, and the descriptor.
  bool reading;
  uint32_t read_desc, read_seq, read_length;
  Piece read_pieces[kMaxPieces];
  uint32_t read_npieces;
  uint8_t urgent; // kServeRead, kResend: before the next message
  // A read request from the peer, waiting for the transmitter.
  uint32_t serve_seq, serve_length;
  Piece serve_piece;
};
// What the reliable levels keep per VI to survive loss (docs/via.md,
// "Reliability levels under loss"), beside `vis` rather than in Vi: the
// size of Vi sets the cost of indexing `vis` on every path of the card.
struct Loss {
  Retry retry;            // the message or read waiting for its answer
  uint64_t read_va;       // the RDMA read's remote address and handle, to ask
  uint32_t read_handle;   // for the rest of its response again
  uint32_t read_received; // bytes of that response placed, in order
  uint32_t serve_offset;  // the peer's read: the response from here
  uint32_t resend_offset; // kResend: the message again from here
  uint32_t heard_seq, heard_offset;     // the last RESUME heard
  uint32_t resumed_seq, resumed_offset; // the last RESUME (or read) sent
  uint32_t error_status;                // why the VI entered the error state
};
Vi vis[VIAFW_MAX_VIS];
Loss losses[VIAFW_MAX_VIS];
// The process that created each VI (beside `vis`, which keeps its size).
uint8_t vi_owner[VIAFW_MAX_VIS];
static_assert(sizeof(Loss) == 64, "indexed by a shift");
uint32_t vi_count; // the VIs this card's doorbell FIFOs allow (set at boot)

static_assert(offsetof(Vi, ptag) == 4, "Vi::index must stay in padding");

[[gnu::always_inline]] inline Loss &loss_of(const Vi &vi) {
  return losses[vi.index];
}

// An event about VI `vi`, for the process that owns it.
SLOW void event_push(uint32_t type, uint32_t node, uint32_t vi,
                     const uint32_t *data, uint32_t words) {
  event_push_to(vi_owner[vi], type, node, vi, data, words);
}

// The message going out, fragment by fragment (one at a time on the card).
struct Outbound {
  bool active;
  uint32_t vi;
  uint8_t type; // VIAFW_PKT_SEND, _RDMA_WRITE or _READ_RESPONSE
  bool imm_flag;
  uint32_t imm, seq, length, offset, desc, op;
  uint64_t remote_va;
  uint32_t remote_handle;
  Piece pieces[kMaxPieces];
  uint32_t npieces;
};
Outbound out;
uint32_t next_vi; // round robin over VIs with sends

// Writes a descriptor's completion: the status (DONE and any error bits)
// and, for a receive, the length and the immediate data it brought. One
// DMA, the status word last in memory.
void complete(const Vi &vi, uint32_t desc, uint32_t status, uint32_t length,
              bool recv, uint32_t imm = 0) {
  if (status & VIAFW_STATUS_ERROR_MASK)
    count(VIAFW_BOX_STAT_DESC_ERRORS);
  uint32_t words[3] = {imm, length, status | VIAFW_STATUS_DONE};
  if (!recv) // a send's length and immediate data are the host's own
    host_write(desc + VIAFW_CS_STATUS, words + 2, 4);
  else if (status & VIAFW_STATUS_IMMEDIATE)
    host_write(desc + VIAFW_CS_IMMEDIATE, words, 12);
  else
    host_write(desc + VIAFW_CS_LENGTH, words + 1, 8);
  uint32_t cq = recv ? vi.recv_cq : vi.send_cq;
  uint32_t index = uint32_t(&vi - vis);
  cq_push(cq, index | (recv ? VIAFW_CQ_RECV : 0u));
}

void flush_queues(Vi &vi) {
  while (!vi.sends.empty())
    complete(vi, vi.sends.pop(), VIAFW_STATUS_DESC_FLUSHED_ERROR, 0, false);
  while (!vi.recvs.empty())
    complete(vi, vi.recvs.pop(),
             VIAFW_STATUS_DESC_FLUSHED_ERROR | VIAFW_STATUS_OP_RECEIVE, 0,
             true);
}

// Connection-level failure on a reliable VI: the VI enters the error state,
// everything still posted or in flight completes as flushed, and the host
// hears of it through the event ring.
// Drops the message `out` is sending for `vi`, if any: its send
// descriptor completes with `status` (a read response has none).
SLOW void drop_outbound(Vi &vi, uint32_t status) {
  if (!out.active || vis + out.vi != &vi)
    return;
  out.active = false;
  if (out.type != VIAFW_PKT_READ_RESPONSE)
    complete(vi, out.desc, status | out.op, 0, false);
}

void vi_error(Vi &vi, uint32_t status) {
  if (vi.state == State::Error)
    return;
  vi.state = State::Error;
  loss_of(vi).error_status = status;
  retry_done(loss_of(vi).retry);
  drop_outbound(vi, status);
  if (vi.unacked)
    complete(vi, vi.unacked, status | vi.unacked_op, 0, false);
  vi.unacked = 0;
  if (vi.reading)
    complete(vi, vi.read_desc, status | VIAFW_STATUS_OP_RDMA_READ, 0, false);
  vi.reading = false;
  if (vi.in.desc)
    complete(vi, vi.in.desc, VIAFW_STATUS_DESC_FLUSHED_ERROR, 0, true);
  vi.in = Inbound{};
  vi.urgent = 0;
  flush_queues(vi);
  event_push(VIAFW_EV_VI_ERROR, fw::node_id(), uint32_t(&vi - vis), &status, 1);
}

// ---- Node table: FM node -> MAC and IPv4 (set at boot)
// -----------------------

constexpr uint32_t kNodeTable = 64;
struct NodeAddr {
  uint8_t mac[6];
  uint32_t ip;
};
NodeAddr node_table[kNodeTable];
uint32_t me, nodes, table_nodes;

// Entries 0..nodes-1 are the cluster's nodes; entry `nodes` is the world
// outside the cluster, reached only when `nicemu run --tap` bridges the
// Ethernet to a Linux TAP device (elsewhere the switch drops its frames).
void build_node_table() {
  me = fw::node_id();
  nodes = fw::node_count();
  table_nodes = nodes + 1 < kNodeTable ? nodes + 1 : kNodeTable;
  for (uint32_t n = 0; n < table_nodes; ++n) {
    fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_DEST) = n;
    uint32_t lo = fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_MAC_LO);
    uint32_t hi = fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_MAC_HI);
    put32(node_table[n].mac, lo);
    put16(node_table[n].mac + 4, uint16_t(hi));
    node_table[n].ip = fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_IPV4);
  }
}

// The node a MAC belongs to, or ~0u.
uint32_t node_of_mac(const uint8_t *mac) {
  for (uint32_t n = 0; n < table_nodes; ++n)
    if (memcmp(node_table[n].mac, mac, 6) == 0)
      return n;
  return ~0u;
}

// ---- Frames
// ------------------------------------------------------------------- A frame
// starts 2 bytes into its buffer, so that what follows the 14-byte Ethernet
// header and our 32-byte header (or IP, UDP and FM headers) is word-aligned and
// moves by DMA without the bounce buffer.

constexpr uint32_t kEth = 14, kIp = 20, kUdp = 8;
constexpr uint32_t kFrameMax = 1514;
struct alignas(4) FrameBuf {
  uint8_t pad[2];
  uint8_t frame[kFrameMax + 2];
};
// Two transmit buffers: the core prepares the next frame in one while the
// Tx engine sends the other.
FrameBuf tx_bufs[2];
int tx_sending = -1;  // buffer the engine is sending
int tx_prepared = -1; // buffer holding a frame ready to go
uint32_t tx_prepared_bytes;

void eth_header(uint8_t *f, uint32_t dest, uint16_t type) {
  memcpy(f, node_table[dest].mac, 6);
  memcpy(f + 6, node_table[me].mac, 6);
  put_be16(f + 12, type);
}

// The buffer to build the next frame in (only while none is prepared).
uint8_t *tx_frame() {
  return tx_bufs[tx_sending == 0 ? 1 : 0].frame;
}

// Starts the prepared frame if the engine is free.
bool tx_start_prepared() {
  if (tx_sending >= 0 &&
      (fw::tx_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    tx_sending = -1;
  if (tx_sending >= 0 || tx_prepared < 0)
    return false;
  fw::irq_clear(NICEMU_IRQ_TX);
  fw::tx_start(tx_bufs[tx_prepared].frame, tx_prepared_bytes, 0, true);
  tx_sending = tx_prepared;
  tx_prepared = -1;
  count(VIAFW_BOX_STAT_FRAMES_OUT);
  return true;
}

// The frame built in tx_frame() is ready: `bytes` long, from the Ethernet
// header on.
void tx_send(uint32_t bytes) {
  tx_prepared = tx_sending == 0 ? 1 : 0;
  tx_prepared_bytes = bytes;
  tx_start_prepared();
}

// Small frames (acks, control messages) wait here for the transmitter and
// go before data.
struct Small {
  uint32_t dest;
  uint8_t bytes[VIAFW_HEADER_BYTES + 32];
  uint32_t length; // after the Ethernet header
};
constexpr uint32_t kSmall = 16;
Small smalls[kSmall];
uint32_t small_head, small_tail;

// Queues a header-only frame (and `extra` bytes after the header). Inline
// everywhere: it is on the path of every ACK.
[[gnu::always_inline]] inline void queue_small(uint32_t dest, uint8_t type,
                                               uint8_t src_vi, uint8_t dst_vi,
                                               uint32_t seq, uint32_t imm,
                                               const void *extra = nullptr,
                                               uint32_t extra_bytes = 0) {
  if (small_tail - small_head == kSmall)
    return count(VIAFW_BOX_STAT_DROPPED); // never with the card's own pacing
  Small &s = smalls[small_tail++ % kSmall];
  memset(s.bytes, 0, sizeof s.bytes);
  s.dest = dest;
  s.bytes[0] = type;
  s.bytes[2] = src_vi;
  s.bytes[3] = dst_vi;
  put32(s.bytes + 4, seq);
  put32(s.bytes + 16, imm);
  if (extra_bytes)
    memcpy(s.bytes + VIAFW_HEADER_BYTES, extra, extra_bytes);
  s.length = VIAFW_HEADER_BYTES + extra_bytes;
}

// A header-only frame of `type` for VI `vi`'s peer (and the rest of the
// header), for the answers and requests of the reliable levels.
SLOW void queue_header(const Vi &vi, uint8_t type, uint8_t flags, uint32_t seq,
                       uint32_t length, uint32_t offset, uint32_t imm = 0,
                       uint64_t va = 0, uint32_t handle = 0) {
  if (small_tail - small_head == kSmall)
    return count(VIAFW_BOX_STAT_DROPPED); // the timer sends it again
  Small &s = smalls[small_tail++ % kSmall];
  memset(s.bytes, 0, sizeof s.bytes);
  s.dest = vi.peer_node;
  s.bytes[0] = type;
  s.bytes[1] = flags;
  s.bytes[2] = uint8_t(&vi - vis);
  s.bytes[3] = uint8_t(vi.peer_vi);
  put32(s.bytes + 4, seq);
  put32(s.bytes + 8, length);
  put32(s.bytes + 12, offset);
  put32(s.bytes + 16, imm);
  put32(s.bytes + 20, uint32_t(va));
  put32(s.bytes + 24, uint32_t(va >> 32));
  put32(s.bytes + 28, handle);
  s.length = VIAFW_HEADER_BYTES;
}

bool send_small() {
  if (small_head == small_tail)
    return false;
  Small &s = smalls[small_head++ % kSmall];
  uint8_t *f = tx_frame();
  eth_header(f, s.dest, VIAFW_ETHERTYPE);
  memcpy(f + kEth, s.bytes, s.length);
  tx_send(kEth + s.length);
  return true;
}

// ---- Control messages, delivered reliably -----------------------------------
// Connection management (VIAFW_CMD_CONTROL, the card's own DISCONNECT) must
// get through a lossy network, or a connection would be half made. Each
// message to a node carries the next number of that pair of nodes and is
// sent again on the timer until the node acknowledges it; one at a time per
// destination (the next waits its turn), so they arrive in order. The
// receiver acknowledges every copy and delivers a number once: one that
// differs from the last it delivered from that node (only one is ever in
// flight, and a message given up for lost still used its number).

constexpr uint32_t kControlSlots = 16;
struct ControlSlot {
  bool used, sent;
  uint8_t to_vi; // the VI whose process takes it there (VIAFW_ANY_VI)
  uint32_t dest, seq, order;
  Retry retry;
  uint32_t msg[8];
};
ControlSlot controls[kControlSlots];
uint32_t control_order;
uint32_t control_out[kNodeTable]; // last number used towards each node
uint32_t control_in[kNodeTable];  // last number delivered from each node
// Acknowledgements go a little later (kControlAckUs after the card next
// goes idle), as TCP delays its ACKs: when a connection message arrives,
// the card does no more than before it was acknowledged, for the host
// answering it races its peer's first data (tests/e2e/programs/
// vipl_pair.cpp, "timeout": the receive is posted about 2 us before the
// data arrives).
constexpr uint32_t kControlAckUs = 100; // far below VIAFW_RTO_US
uint32_t control_ack_due[kNodeTable];   // number to acknowledge (0: none)
Retry control_ack_timer;
uint32_t control_ack_cycles; // kControlAckUs (set at boot)
bool control_ack_deferred;   // armed, its deadline to be set when idle

// A control frame (the 8 words of `msg` after the header, if any) for
// `dest`, for the process of VI `to_vi` there (header byte 3); its
// acknowledgement has VIAFW_F_ACK and no words.
SLOW void queue_control(uint32_t dest, uint32_t seq, const uint32_t *msg,
                        uint32_t to_vi = VIAFW_ANY_VI) {
  if (small_tail - small_head == kSmall)
    return count(VIAFW_BOX_STAT_DROPPED); // sent again, or asked again
  Small &s = smalls[small_tail++ % kSmall];
  memset(s.bytes, 0, sizeof s.bytes);
  s.dest = dest;
  s.bytes[0] = VIAFW_PKT_CONTROL;
  s.bytes[1] = msg ? 0 : VIAFW_F_ACK;
  s.bytes[3] = uint8_t(to_vi);
  put32(s.bytes + 4, seq);
  if (msg)
    memcpy(s.bytes + VIAFW_HEADER_BYTES, msg, 32);
  s.length = VIAFW_HEADER_BYTES + (msg ? 32 : 0);
}

SLOW void control_transmit(ControlSlot &c) {
  c.sent = true;
  queue_control(c.dest, c.seq, c.msg, c.to_vi);
  retry_arm(c.retry);
}

// Sends the oldest message waiting for `dest`, unless one is in flight.
SLOW void control_next(uint32_t dest) {
  ControlSlot *next = nullptr;
  for (ControlSlot &c : controls) {
    if (!c.used || c.dest != dest)
      continue;
    if (c.sent)
      return;
    if (!next || int32_t(c.order - next->order) < 0)
      next = &c;
  }
  if (next)
    control_transmit(*next);
}

// Queues the 8 words of `msg` for `dest` (for the process of its VI
// `to_vi`); false if every slot is taken.
SLOW bool control_send(uint32_t dest, const uint32_t *msg,
                       uint32_t to_vi = VIAFW_ANY_VI) {
  for (ControlSlot &c : controls) {
    if (c.used)
      continue;
    c = ControlSlot{};
    c.used = true;
    c.dest = dest;
    c.to_vi = uint8_t(to_vi);
    c.seq = ++control_out[dest];
    c.order = control_order++;
    memcpy(c.msg, msg, sizeof c.msg);
    control_next(dest);
    return true;
  }
  return false;
}

SLOW void control_free(ControlSlot &c) {
  retry_done(c.retry);
  c.used = false;
  control_next(c.dest);
}

// Acknowledges control message `seq` of `src`, a little later.
// Acknowledges control message `seq` of `src`, later: it is only counted
// as waiting here (a few stores); idle() sets its deadline.
[[gnu::always_inline]] inline void control_ack(uint32_t src, uint32_t seq) {
  control_ack_due[src] = seq;
  if (!control_ack_timer.armed) {
    control_ack_timer.armed = true;
    control_ack_timer.deadline = 0;
    ++waiting;
    control_ack_deferred = true;
  }
}

// The acknowledgements are due.
SLOW void control_acks() {
  retry_done(control_ack_timer);
  control_ack_deferred = false;
  for (uint32_t n = 0; n < kNodeTable; ++n)
    if (uint32_t seq = control_ack_due[n]) {
      control_ack_due[n] = 0;
      queue_control(n, seq, nullptr);
    }
}

SLOW void control_timeout(ControlSlot &c) {
  if (++c.retry.tries >= VIAFW_RETRIES) { // the node is not there
    count(VIAFW_BOX_STAT_DROPPED);
    return control_free(c);
  }
  count(VIAFW_BOX_STAT_RETRANSMITS);
  control_transmit(c);
}

// ---- Outbound messages: one at a time, fragment by fragment
// -------------------

// Sends the next fragment of `out`.
void send_fragment() {
  Vi &vi = vis[out.vi];
  uint8_t *f = tx_frame();
  uint32_t n = out.length - out.offset;
  if (n > VIAFW_FRAG_BYTES)
    n = VIAFW_FRAG_BYTES;
  eth_header(f, vi.peer_node, VIAFW_ETHERTYPE);
  uint8_t *h = f + kEth;
  memset(h, 0, VIAFW_HEADER_BYTES);
  h[0] = out.type;
  h[1] = uint8_t((out.offset == 0 ? VIAFW_F_FIRST : 0) |
                 (out.offset + n == out.length ? VIAFW_F_LAST : 0) |
                 (out.imm_flag ? VIAFW_F_IMMEDIATE : 0));
  h[2] = uint8_t(out.vi);
  h[3] = uint8_t(vi.peer_vi);
  put32(h + 4, out.seq);
  put32(h + 8, out.length);
  put32(h + 12, out.offset);
  put32(h + 16, out.imm);
  put32(h + 20, uint32_t(out.remote_va));
  put32(h + 24, uint32_t(out.remote_va >> 32));
  put32(h + 28, out.remote_handle);
  if (!move_pieces(out.pieces, out.npieces, out.offset, h + VIAFW_HEADER_BYTES,
                   n, false)) {
    // The host deregistered memory under a posted descriptor.
    out.active = false;
    if (out.type != VIAFW_PKT_READ_RESPONSE) {
      complete(vi, out.desc, VIAFW_STATUS_PROTECTION_ERROR | out.op, 0, false);
    }
    return;
  }
  tx_send(kEth + VIAFW_HEADER_BYTES + n);
  out.offset += n;
  if (out.offset < out.length)
    return;
  out.active = false;
  if (out.type == VIAFW_PKT_READ_RESPONSE)
    return;
  if (vi.reliability == VIAFW_UNRELIABLE) {
    complete(vi, out.desc, out.op, out.length, false);
  } else {
    vi.unacked = out.desc;
    vi.unacked_op = out.op;
    vi.unacked_length = out.length;
    retry_arm(losses[out.vi].retry); // until the ACK
  }
}

// ---- FM over IP: sending
// --------------------------------------------------------

uint16_t ip_id;

// Ones' complement sum of big-endian 16-bit words (RFC 1071), added to
// `sum`. The sum does not depend on byte order except for a final swap, so
// aligned data is summed a word at a time in the core's own (little-endian)
// order: a third of the instructions of a byte-pair loop.
uint32_t sum16(const uint8_t *p, uint32_t n, uint32_t sum = 0) {
  uint32_t native = 0;
  if ((reinterpret_cast<uintptr_t>(p) & 3) == 0) {
    const auto *w = reinterpret_cast<const uint32_t *>(p);
    for (; n >= 4; n -= 4, p += 4) {
      uint32_t v = *w++;
      native += (v & 0xFFFF) + (v >> 16);
    }
    while (native >> 16)
      native = (native & 0xFFFF) + (native >> 16);
    sum += ((native & 0xFF) << 8) | (native >> 8);
  }
  for (; n > 1; p += 2, n -= 2)
    sum += uint32_t(p[0] << 8 | p[1]);
  if (n)
    sum += uint32_t(p[0] << 8);
  return sum;
}
uint16_t fold(uint32_t sum) {
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

uint16_t udp_checksum(const uint8_t *ip, const uint8_t *udp, uint32_t len) {
  uint32_t sum = sum16(ip + 12, 8); // source and destination addresses
  sum += 17 + len;                  // protocol, UDP length
  return fold(sum16(udp, len, sum));
}

// Sends the FM packet of descriptor `d` on FM VI `v`; returns the status.
uint32_t fm_send(uint32_t v, const Desc &d, uint32_t &total) {
  Vi &vi = vis[v];
  Piece pieces[kMaxPieces];
  uint32_t npieces;
  if (uint32_t e = local_pieces(d, 0, vi.ptag, pieces, npieces, total))
    return e;
  if (total < VIAFW_FM_HEADER_BYTES ||
      total > VIAFW_FM_HEADER_BYTES + VIAFW_FM_MAX_MESSAGE)
    return VIAFW_STATUS_LENGTH_ERROR;
  uint8_t *f = tx_frame();
  uint8_t *ip = f + kEth, *udp = ip + kIp, *fm = udp + kUdp;
  if (!move_pieces(pieces, npieces, 0, fm, total, false))
    return VIAFW_STATUS_PROTECTION_ERROR;
  uint32_t dest = get16(fm);
  if (dest >= table_nodes || get32(fm + 8) != total - VIAFW_FM_HEADER_BYTES)
    return VIAFW_STATUS_FORMAT_ERROR;
  put16(fm + 2, uint16_t(me));
  eth_header(f, dest, 0x0800);
  uint32_t udp_len = kUdp + total, ip_len = kIp + udp_len;
  ip[0] = 0x45; // IPv4, 5-word header
  ip[1] = 0;
  put_be16(ip + 2, uint16_t(ip_len));
  put_be16(ip + 4, ip_id++);
  put_be16(ip + 6, 0x4000); // don't fragment
  ip[8] = 64;               // TTL
  ip[9] = 17;               // UDP
  put_be16(ip + 10, 0);
  put_be32(ip + 12, node_table[me].ip);
  put_be32(ip + 16, node_table[dest].ip);
  put_be16(ip + 10, fold(sum16(ip, kIp)));
  put_be16(udp, VIAFW_FM_UDP_PORT);
  put_be16(udp + 2, VIAFW_FM_UDP_PORT);
  put_be16(udp + 4, uint16_t(udp_len));
  put_be16(udp + 6, 0);
  uint16_t c = udp_checksum(ip, udp, udp_len);
  put_be16(udp + 6, c ? c : 0xFFFF); // 0 means "no checksum" in UDP
  tx_send(kEth + ip_len);
  return 0;
}

// ---- Starting the next message
// -------------------------------------------------

// How many fragments carry bytes [offset, length) (one if none: an empty
// message is one frame).
SLOW uint32_t frames_from(uint32_t offset, uint32_t length) {
  return offset >= length
             ? 1
             : (length - offset + VIAFW_FRAG_BYTES - 1) / VIAFW_FRAG_BYTES;
}

// Sends VI `v`'s unacknowledged message again from its resend_offset (the
// peer said it has the bytes before it). The descriptor is the provider's
// until it completes, so it is read again rather than kept on the card.
SLOW bool resend(uint32_t v) {
  Vi &vi = vis[v];
  vi.urgent &= uint8_t(~kResend);
  uint32_t bus = vi.unacked;
  if (!bus || vi.state != State::Connected)
    return false;
  Desc d;
  if (!fetch(bus, d)) {
    vi_error(vi, VIAFW_STATUS_PROTECTION_ERROR);
    return false;
  }
  uint32_t control = d.control();
  out = Outbound{};
  out.vi = v;
  out.desc = bus;
  out.op = vi.unacked_op;
  out.seq = vi.send_seq;
  out.imm_flag = (control & VIAFW_CONTROL_IMMEDIATE) != 0;
  out.imm = d.immediate();
  uint32_t first = 0;
  if (vi.unacked_op == VIAFW_STATUS_OP_SEND) {
    out.type = VIAFW_PKT_SEND;
  } else {
    out.type = VIAFW_PKT_RDMA_WRITE;
    out.remote_va = d.seg_va(0);
    out.remote_handle = d.seg_handle(0);
    first = 1;
  }
  if (local_pieces(d, first, vi.ptag, out.pieces, out.npieces, out.length) ||
      out.length != vi.unacked_length) { // the host changed it under the card
    vi_error(vi, VIAFW_STATUS_PROTECTION_ERROR);
    return false;
  }
  uint32_t from = losses[v].resend_offset;
  out.offset = from < out.length ? from : 0;
  out.active = true;
  vi.unacked = 0; // `out` has it until its last fragment has gone again
  count_retransmits(frames_from(out.offset, out.length));
  send_fragment();
  return true;
}

// Starts what VI `v` has to send; true if it used the transmitter.
bool start_send(uint32_t v) {
  Vi &vi = vis[v];
  if (vi.state == State::Error)
    return flush_queues(vi), false;
  if (vi.state != State::Connected)
    return false;
  if (vi.urgent) { // a response to the peer's RDMA read goes first
    if (!(vi.urgent & kServeRead))
      return resend(v);
    vi.urgent &= uint8_t(~kServeRead);
    out = Outbound{};
    out.active = true;
    out.vi = v;
    out.type = VIAFW_PKT_READ_RESPONSE;
    out.seq = vi.serve_seq;
    out.length = vi.serve_length;
    out.offset = losses[v].serve_offset;
    out.pieces[0] = vi.serve_piece;
    out.npieces = vi.serve_length ? 1 : 0;
    send_fragment();
    return true;
  }
  if (vi.sends.empty() || vi.unacked || vi.reading)
    return false;
  Desc d;
  uint32_t bus = vi.sends.pop();
  if (!fetch(bus, d)) {
    complete(vi, bus, VIAFW_STATUS_PROTECTION_ERROR, 0, false);
    return false;
  }
  uint32_t control = d.control();
  uint32_t op = control & VIAFW_CONTROL_OP_MASK;
  if (vi.kind == VIAFW_KIND_FM_IP) {
    uint32_t total = 0;
    uint32_t e =
        (op != VIAFW_CONTROL_OP_SENDRECV || d.segcount() > VIAFW_MAX_SEGMENTS)
            ? VIAFW_STATUS_FORMAT_ERROR
            : fm_send(v, d, total);
    if (e) {
      complete(vi, bus, e, 0, false);
      return false;
    }
    // FM_send completes when the frame is on its way.
    complete(vi, bus, VIAFW_STATUS_OP_SEND, total, false);
    return true;
  }
  out = Outbound{};
  out.vi = v;
  out.desc = bus;
  out.imm_flag = (control & VIAFW_CONTROL_IMMEDIATE) != 0;
  out.imm = d.immediate();
  uint32_t status = 0, first = 0;
  if (d.segcount() > VIAFW_MAX_SEGMENTS || (control & VIAFW_CONTROL_RESERVED) ||
      op == 3)
    status = VIAFW_STATUS_FORMAT_ERROR;
  if (op == VIAFW_CONTROL_OP_SENDRECV) {
    out.type = VIAFW_PKT_SEND;
    out.op = VIAFW_STATUS_OP_SEND;
  } else {
    // RDMA: the address segment first, the local data after it.
    out.type = op == VIAFW_CONTROL_OP_RDMAWRITE ? VIAFW_PKT_RDMA_WRITE
                                                : VIAFW_PKT_READ_REQUEST;
    out.op = op == VIAFW_CONTROL_OP_RDMAWRITE ? VIAFW_STATUS_OP_RDMA_WRITE
                                              : VIAFW_STATUS_OP_RDMA_READ;
    // The enables are the target's (the remote VI and region); RDMA read
    // needs a reliable VI.
    if (!status && (d.segcount() == 0 || (op == VIAFW_CONTROL_OP_RDMAREAD &&
                                          vi.reliability == VIAFW_UNRELIABLE)))
      status = VIAFW_STATUS_FORMAT_ERROR;
    first = 1;
    if (!status) {
      out.remote_va = d.seg_va(0);
      out.remote_handle = d.seg_handle(0);
    }
  }
  if (!status)
    status =
        local_pieces(d, first, vi.ptag, out.pieces, out.npieces, out.length);
  if (!status && out.length > vi.max_transfer)
    status = VIAFW_STATUS_LENGTH_ERROR;
  if (status) {
    complete(vi, bus, status | out.op, 0, false);
    return false;
  }
  out.seq = ++vi.send_seq;
  if (out.type == VIAFW_PKT_READ_REQUEST) {
    // The request carries no data; the response fills the local pieces.
    vi.reading = true;
    vi.read_desc = bus;
    vi.read_seq = out.seq;
    vi.read_length = out.length;
    vi.read_npieces = out.npieces;
    for (uint32_t i = 0; i < out.npieces; ++i)
      vi.read_pieces[i] = out.pieces[i];
    uint32_t addr[3] = {uint32_t(out.remote_va), uint32_t(out.remote_va >> 32),
                        out.remote_handle};
    uint8_t *f = tx_frame();
    eth_header(f, vi.peer_node, VIAFW_ETHERTYPE);
    uint8_t *h = f + kEth;
    memset(h, 0, VIAFW_HEADER_BYTES);
    h[0] = VIAFW_PKT_READ_REQUEST;
    h[1] = VIAFW_F_FIRST | VIAFW_F_LAST;
    h[2] = uint8_t(v);
    h[3] = uint8_t(vi.peer_vi);
    put32(h + 4, out.seq);
    put32(h + 8, out.length);
    put32(h + 20, addr[0]);
    put32(h + 24, addr[1]);
    put32(h + 28, addr[2]);
    tx_send(kEth + VIAFW_HEADER_BYTES);
    Loss &l = losses[v];
    l.read_received = 0;
    l.read_va = out.remote_va;
    l.read_handle = out.remote_handle;
    retry_arm(l.retry); // until the whole response is in
    return true;
  }
  out.active = true;
  send_fragment();
  return true;
}

// Keeps the transmitter busy: starts the prepared frame, and prepares the
// next one: small frames first, then the message in progress, then the next
// VI's message (round robin).
NICEMU_HANDLER bool pump_tx() {
  bool started = tx_start_prepared();
  if (tx_prepared >= 0)
    return started;
  if (send_small())
    return true;
  if (out.active) {
    send_fragment();
    return true;
  }
  // No modulo: the VI count is known only at boot, and a divide is slow.
  uint32_t v = next_vi;
  for (uint32_t i = 0; i < vi_count; ++i) {
    if (vis[v].state != State::Free && start_send(v)) {
      next_vi = v + 1 == vi_count ? 0 : v + 1;
      return true;
    }
    v = v + 1 == vi_count ? 0 : v + 1;
  }
  return false;
}

// ---- Receiving: the connected VI
// -----------------------------------------------

void nack(const Vi &vi, uint32_t seq, uint32_t status) {
  queue_small(vi.peer_node, VIAFW_PKT_NACK, uint8_t(&vi - vis),
              uint8_t(vi.peer_vi), seq, status);
}

// The first fragment of a message: find where it goes.
void inbound_start(Vi &vi, const uint8_t *h) {
  Inbound &in = vi.in;
  in = Inbound{};
  in.active = true;
  in.type = h[0];
  in.seq = get32(h + 4);
  in.length = get32(h + 8);
  bool wants_desc = in.type == VIAFW_PKT_SEND || (h[1] & VIAFW_F_IMMEDIATE);
  uint32_t fail = 0; // status the sender's descriptor completes with
  if (in.type == VIAFW_PKT_RDMA_WRITE) {
    uint64_t va = uint64_t(get32(h + 20)) | uint64_t(get32(h + 24)) << 32;
    if (!(vi.attrs & VIAFW_MEM_RDMA_WRITE) ||
        translate(get32(h + 28), vi.ptag, va, in.length, VIAFW_MEM_RDMA_WRITE,
                  1, in.pieces[0]))
      fail = VIAFW_STATUS_RDMA_PROT_ERROR;
    in.npieces = in.length ? 1 : 0;
  }
  if (!fail && wants_desc) {
    if (vi.recvs.empty()) {
      fail = VIAFW_STATUS_REMOTE_DESC_ERROR;
    } else {
      in.desc = vi.recvs.pop();
      Desc d;
      uint32_t total = 0, e = 0;
      if (!fetch(in.desc, d))
        e = VIAFW_STATUS_PROTECTION_ERROR;
      else if (d.segcount() > VIAFW_MAX_SEGMENTS)
        e = VIAFW_STATUS_FORMAT_ERROR;
      else if (in.type == VIAFW_PKT_SEND)
        e = local_pieces(d, 0, vi.ptag, in.pieces, in.npieces, total);
      if (!e && in.type == VIAFW_PKT_SEND && total < in.length)
        e = VIAFW_STATUS_LENGTH_ERROR;
      if (e) {
        complete(vi, in.desc, e | op_of(in), 0, true);
        in.desc = 0;
        fail = VIAFW_STATUS_REMOTE_DESC_ERROR;
      }
    }
  }
  if (!fail)
    return;
  in.discard = true;
  count(VIAFW_BOX_STAT_DROPPED);
  if (vi.reliability != VIAFW_UNRELIABLE) {
    nack(vi, in.seq, fail);
    vi_error(vi, fail);
  }
}

// The message in progress lost a fragment and will not be completed
// (unreliable VIs: nothing is sent again). Its receive descriptor goes back
// to the head of the queue, for the next message: the host never sees a
// message with a hole. The rest of its fragments are dropped.
SLOW void abandon(Vi &vi) {
  Inbound &in = vi.in;
  if (in.desc) {
    if (!vi.recvs.full())
      vi.recvs.unpop(in.desc);
    else // no room to put it back (1024 posted): it fails
      complete(vi, in.desc, VIAFW_STATUS_TRANSPORT_ERROR | op_of(in), 0, true);
  }
  in.desc = 0;
  in.discard = true;
}

// Tells the sender of message `seq` that its bytes from `offset` on are
// missing here (once for each place a gap is found, and whenever asked).
SLOW void resume(Vi &vi, uint32_t seq, uint32_t offset, bool asked) {
  Loss &l = loss_of(vi);
  if (!asked && l.resumed_seq == seq && l.resumed_offset == offset)
    return;
  // An answer to a probe is not remembered: the sender goes back once it
  // has it, with nothing of its own still in flight, so the next gap found
  // is a new loss and is said at once.
  l.resumed_seq = asked ? 0 : seq;
  l.resumed_offset = offset;
  queue_header(vi, VIAFW_PKT_RESUME, 0, seq, 0, offset);
}

// A fragment that is not the next one of the message in progress: one that
// came before (a copy sent again, or whose ACK was lost), or one past a
// gap (a fragment before it was lost).
SLOW void out_of_order(Vi &vi, const uint8_t *h) {
  Inbound &in = vi.in;
  uint32_t seq = get32(h + 4), offset = get32(h + 12);
  uint32_t received = in.received;
  bool reliable = vi.reliability != VIAFW_UNRELIABLE;
  bool current = in.active && seq == in.seq;
  int32_t age = int32_t(seq - in.seq);
  if (age < 0 || (age == 0 && (!in.active || offset < received))) {
    count(VIAFW_BOX_STAT_DUPLICATES);
    // A message placed already: its ACK may have been lost.
    if (reliable && !current && (h[1] & VIAFW_F_LAST))
      queue_header(vi, VIAFW_PKT_ACK, 0, seq, 0, 0);
    return;
  }
  count(VIAFW_BOX_STAT_DROPPED);
  if (!reliable) {
    if (current)
      abandon(vi);
    return;
  }
  resume(vi, seq, current ? received : 0, false);
}

// A word of the header of a received frame, which starts word-aligned in
// its buffer (FrameBuf): one load rather than four.
uint32_t header_word(const uint8_t *h, uint32_t at) {
  using Word = uint32_t __attribute__((may_alias));
  return *reinterpret_cast<const Word *>(__builtin_assume_aligned(h + at, 4));
}

void inbound_fragment(Vi &vi, const uint8_t *h, uint32_t n) {
  Inbound &in = vi.in;
  uint32_t seq = header_word(h, 4);
  if (h[1] & VIAFW_F_FIRST) {
    if (int32_t(seq - in.seq) > 0) { // a new message
      if (in.active) // the one before never ended (a fragment was lost)
        abandon(vi);
      inbound_start(vi, h);
    }
  }
  uint32_t offset = header_word(h, 12);
  if (!in.active || seq != in.seq || offset != in.received)
    return out_of_order(vi, h);
  if (!in.discard &&
      (offset + n > in.length ||
       !move_pieces(in.pieces, in.npieces, offset,
                    const_cast<uint8_t *>(h) + VIAFW_HEADER_BYTES, n, true))) {
    in.discard = true;
    if (in.desc)
      complete(vi, in.desc, VIAFW_STATUS_PROTECTION_ERROR | op_of(in), 0, true);
    in.desc = 0;
    if (vi.reliability != VIAFW_UNRELIABLE) {
      nack(vi, in.seq, VIAFW_STATUS_REMOTE_DESC_ERROR);
      vi_error(vi, VIAFW_STATUS_TRANSPORT_ERROR);
    }
    return;
  }
  in.received = offset + n;
  if (!(h[1] & VIAFW_F_LAST))
    return;
  in.active = false;
  if (in.discard)
    return;
  bool imm = (h[1] & VIAFW_F_IMMEDIATE) != 0;
  if (in.desc)
    complete(vi, in.desc, op_of(in) | (imm ? VIAFW_STATUS_IMMEDIATE : 0u),
             in.length, true, imm ? get32(h + 16) : 0u);
  in.desc = 0;
  if (vi.reliability != VIAFW_UNRELIABLE)
    queue_small(vi.peer_node, VIAFW_PKT_ACK, uint8_t(&vi - vis),
                uint8_t(vi.peer_vi), in.seq, 0);
}

// A read request: a new one (the message after the last one started here),
// or the same one again from `offset` (its requester lost part of the
// response, or the request went unanswered). Reading twice is harmless.
void on_read_request(Vi &vi, const uint8_t *h) {
  uint32_t seq = get32(h + 4), length = get32(h + 8), offset = get32(h + 12);
  uint64_t va = uint64_t(get32(h + 20)) | uint64_t(get32(h + 24)) << 32;
  int32_t age = int32_t(seq - vi.in.seq);
  if (age < 0 || (age == 0 && vi.in.active) || offset > length)
    return count(VIAFW_BOX_STAT_DROPPED);
  Piece piece{0, 0};
  if (vi.reliability == VIAFW_UNRELIABLE || !(vi.attrs & VIAFW_MEM_RDMA_READ) ||
      (length && translate(get32(h + 28), vi.ptag, va, length,
                           VIAFW_MEM_RDMA_READ, 1, piece))) {
    nack(vi, seq, VIAFW_STATUS_RDMA_PROT_ERROR);
    return vi_error(vi, VIAFW_STATUS_RDMA_PROT_ERROR);
  }
  if (age == 0) { // asked again
    count(VIAFW_BOX_STAT_DUPLICATES);
    if (out.active && vis + out.vi == &vi &&
        out.type == VIAFW_PKT_READ_RESPONSE && out.seq == seq) {
      if (offset < out.offset) { // being sent: go back
        count_retransmits(frames_from(offset, out.offset));
        out.offset = offset;
      }
      return;
    }
    if ((vi.urgent & kServeRead) && vi.serve_seq == seq) { // not begun
      if (offset < loss_of(vi).serve_offset)
        loss_of(vi).serve_offset = offset;
      return;
    }
    count_retransmits(frames_from(offset, length));
  }
  vi.in.seq = seq; // the read is the message `seq` of this connection
  vi.urgent |= kServeRead;
  vi.serve_seq = seq;
  vi.serve_length = length;
  loss_of(vi).serve_offset = offset;
  vi.serve_piece = piece;
}

// Asks the peer again for the rest of the RDMA read's response (on a gap,
// remembered so that each gap is asked for once; on a timeout, not: see
// resume()).
SLOW void read_again(Vi &vi, bool timeout) {
  Loss &l = loss_of(vi);
  l.resumed_seq = timeout ? 0 : vi.read_seq;
  l.resumed_offset = l.read_received;
  count(VIAFW_BOX_STAT_RETRANSMITS);
  queue_header(vi, VIAFW_PKT_READ_REQUEST, VIAFW_F_FIRST | VIAFW_F_LAST,
               vi.read_seq, vi.read_length, l.read_received, 0, l.read_va,
               l.read_handle);
}

void on_read_response(Vi &vi, const uint8_t *h, uint32_t n) {
  Loss &l = loss_of(vi);
  uint32_t seq = get32(h + 4), offset = get32(h + 12);
  if (!vi.reading || seq != vi.read_seq || offset + n > vi.read_length)
    return count(VIAFW_BOX_STAT_DROPPED);
  if (offset != l.read_received) {
    if (offset < l.read_received)
      return count(VIAFW_BOX_STAT_DUPLICATES);
    count(VIAFW_BOX_STAT_DROPPED); // a fragment before it was lost
    if (l.resumed_seq != seq || l.resumed_offset != l.read_received)
      read_again(vi, false);
    return;
  }
  if (!move_pieces(vi.read_pieces, vi.read_npieces, offset,
                   const_cast<uint8_t *>(h) + VIAFW_HEADER_BYTES, n, true)) {
    vi.reading = false;
    retry_done(l.retry);
    complete(vi, vi.read_desc,
             VIAFW_STATUS_PROTECTION_ERROR | VIAFW_STATUS_OP_RDMA_READ, 0,
             false);
    return;
  }
  l.read_received = offset + n;
  if (!(h[1] & VIAFW_F_LAST)) {
    l.retry.tries = 0; // the peer is there: wait a whole timeout again
    return retry_arm(l.retry);
  }
  vi.reading = false;
  retry_done(l.retry);
  complete(vi, vi.read_desc, VIAFW_STATUS_OP_RDMA_READ, vi.read_length, false);
}

// An ACK or NACK that is not for the message waiting for it: for the one
// going out again (`out` has it: that is over), or stale.
SLOW void ack_elsewhere(Vi &vi, const uint8_t *h, bool ok) {
  if (get32(h + 4) == vi.send_seq && out.active && vis + out.vi == &vi &&
      out.type != VIAFW_PKT_READ_RESPONSE) {
    if (!ok)
      return vi_error(vi, get32(h + 16));
    out.active = false;
    retry_done(loss_of(vi).retry);
    return complete(vi, out.desc, out.op, out.length, false);
  }
  count(VIAFW_BOX_STAT_DROPPED);
}

void on_ack(Vi &vi, const uint8_t *h, bool ok) {
  uint32_t seq = get32(h + 4);
  if (vi.reading && seq == vi.read_seq && !ok) // the read was refused
    return vi_error(vi, get32(h + 16));
  if (!vi.unacked || seq != vi.send_seq)
    return ack_elsewhere(vi, h, ok);
  if (!ok)
    return vi_error(vi, get32(h + 16));
  complete(vi, vi.unacked, vi.unacked_op, vi.unacked_length, false);
  vi.unacked = 0;
  retry_done(loss_of(vi).retry);
}

// The peer has message `seq` up to `offset`: send the rest again.
SLOW void on_resume(Vi &vi, const uint8_t *h) {
  Loss &l = loss_of(vi);
  uint32_t seq = get32(h + 4), offset = get32(h + 12);
  bool going =
      out.active && vis + out.vi == &vi && out.type != VIAFW_PKT_READ_RESPONSE;
  if (seq != vi.send_seq || (!vi.unacked && !going))
    return count(VIAFW_BOX_STAT_DROPPED);
  if (seq == l.heard_seq && offset < l.heard_offset)
    return count(VIAFW_BOX_STAT_DROPPED); // older than what it said since
  l.retry.tries = 0; // the peer is there: a whole series of timeouts again
  l.heard_seq = seq;
  l.heard_offset = offset;
  if (going) { // the fragments sent since are lost or dropped: go back
    if (offset < out.offset) {
      count_retransmits(frames_from(offset, out.offset));
      out.offset = offset;
    }
    return;
  }
  l.resend_offset = offset;
  vi.urgent |= kResend;
}

// The sender of message `seq` heard nothing for a timeout: say how far it
// got (ACK when all of it is here).
SLOW void on_probe(Vi &vi, const uint8_t *h) {
  uint32_t seq = get32(h + 4);
  Inbound &in = vi.in;
  int32_t age = int32_t(seq - in.seq);
  if (age < 0 || (age == 0 && !in.active))
    return queue_header(vi, VIAFW_PKT_ACK, 0, seq, 0, 0);
  resume(vi, seq, age == 0 ? in.received : 0, true);
}

// A retransmission timeout of VI `v`.
SLOW void vi_timeout(uint32_t v) {
  Vi &vi = vis[v];
  Retry &r = losses[v].retry;
  if ((out.active && out.vi == v) || (vi.urgent & kResend))
    return retry_arm(r); // still sending: nothing is late yet
  if (!vi.unacked && !vi.reading)
    return retry_done(r);
  if (++r.tries >= VIAFW_RETRIES) { // the peer is unreachable
    count(VIAFW_BOX_STAT_BROKEN);
    return vi_error(vi, VIAFW_STATUS_TRANSPORT_ERROR);
  }
  if (vi.reading) {
    read_again(vi, true);
  } else {
    count(VIAFW_BOX_STAT_RETRANSMITS);
    queue_header(vi, VIAFW_PKT_PROBE, 0, vi.send_seq, vi.unacked_length, 0);
  }
  retry_arm(r);
}

void disconnect(Vi &vi, bool tell_peer) {
  if (tell_peer && vi.state == State::Connected) {
    // Words 3 and 4: the last message of the peer's placed here, so that a
    // send whose ACK was lost completes rather than flushing (the host
    // library's DISCONNECT has 0 in word 4: nothing said).
    uint32_t placed = vi.in.active ? vi.in.seq - 1 : vi.in.seq;
    uint32_t msg[8] = {VIAFW_CTL_DISCONNECT, uint32_t(&vi - vis), vi.peer_vi,
                       placed, 1};
    if (!control_send(vi.peer_node, msg, vi.peer_vi))
      count(VIAFW_BOX_STAT_DROPPED);
  }
  retry_done(loss_of(vi).retry);
  // Whatever was in flight or posted completes as flushed.
  drop_outbound(vi, VIAFW_STATUS_DESC_FLUSHED_ERROR);
  if (vi.unacked)
    complete(vi, vi.unacked, VIAFW_STATUS_DESC_FLUSHED_ERROR | vi.unacked_op, 0,
             false);
  if (vi.reading)
    complete(vi, vi.read_desc,
             VIAFW_STATUS_DESC_FLUSHED_ERROR | VIAFW_STATUS_OP_RDMA_READ, 0,
             false);
  if (vi.in.desc)
    complete(vi, vi.in.desc,
             VIAFW_STATUS_DESC_FLUSHED_ERROR | VIAFW_STATUS_OP_RECEIVE, 0,
             true);
  vi.unacked = 0;
  vi.reading = false;
  vi.urgent = 0;
  vi.in = Inbound{};
  flush_queues(vi);
  vi.state = State::Idle;
}

// A control message, or the acknowledgement of one of ours.
void on_control(uint32_t src, const uint8_t *h, uint32_t n) {
  uint32_t seq = get32(h + 4);
  if (h[1] & VIAFW_F_ACK) {
    for (ControlSlot &c : controls)
      if (c.used && c.sent && c.dest == src && c.seq == seq)
        return control_free(c);
    return count(VIAFW_BOX_STAT_DUPLICATES);
  }
  if (n < 32)
    return count(VIAFW_BOX_STAT_DROPPED);
  if (seq == control_in[src]) { // a copy: the acknowledgement was lost
    count(VIAFW_BOX_STAT_DUPLICATES);
    return control_ack(src, seq);
  }
  control_in[src] = seq;
  uint32_t msg[8];
  memcpy(msg, h + VIAFW_HEADER_BYTES, sizeof msg);
  if (msg[0] == VIAFW_CTL_DISCONNECT) {
    uint32_t v = msg[2];
    if (v < vi_count && vis[v].state == State::Connected &&
        vis[v].peer_node == src && vis[v].peer_vi == msg[1]) {
      Vi &vi = vis[v];
      if (msg[4] == 1 && vi.unacked && vi.reliability != VIAFW_UNRELIABLE &&
          int32_t(vi.send_seq - msg[3]) <= 0) { // placed: its ACK was lost
        complete(vi, vi.unacked, vi.unacked_op, vi.unacked_length, false);
        vi.unacked = 0;
      }
      disconnect(vi, false);
      event_push(VIAFW_EV_DISCONNECTED, src, v, msg, 8);
    }
  } else {
    // To the process of the VI the sender names, or to every process when
    // it names none in use (a connection request: whoever listens).
    uint32_t v = h[3];
    if (v < vi_count && vis[v].state != State::Free)
      event_push_to(vi_owner[v], VIAFW_EV_CONTROL, src, 0, msg, 8);
    else
      for (uint32_t p = 0; p < VIAFW_MAX_PROCESSES; ++p)
        event_push_to(p, VIAFW_EV_CONTROL, src, 0, msg, 8);
  }
  control_ack(src, seq); // once the host has it
}

// A frame for a VI of ours that is not connected (dropped). One for a VI
// in the error state from its peer still sending on the connection is
// answered: the connection is broken (a NACK, as the first time; that one
// may have been lost).
SLOW void not_connected(uint32_t src, const uint8_t *h) {
  count(VIAFW_BOX_STAT_DROPPED);
  uint32_t v = h[3];
  if (v >= vi_count || vis[v].state != State::Error)
    return;
  Vi &vi = vis[v];
  if (vi.reliability == VIAFW_UNRELIABLE || vi.peer_node != src ||
      vi.peer_vi != h[2] || vi.kind != VIAFW_KIND_CONNECTED)
    return;
  if (h[0] == VIAFW_PKT_PROBE || h[0] == VIAFW_PKT_READ_REQUEST ||
      ((h[0] == VIAFW_PKT_SEND || h[0] == VIAFW_PKT_RDMA_WRITE) &&
       (h[1] & VIAFW_F_LAST)))
    queue_header(vi, VIAFW_PKT_NACK, 0, get32(h + 4), 0, 0,
                 loss_of(vi).error_status);
}

void via_frame(uint32_t src, const uint8_t *h, uint32_t n) {
  if (n < VIAFW_HEADER_BYTES)
    return count(VIAFW_BOX_STAT_DROPPED);
  n -= VIAFW_HEADER_BYTES;
  // A short frame arrives padded to Ethernet's minimum: the header says
  // how much of it is data.
  uint32_t length = get32(h + 8), offset = get32(h + 12);
  bool data = h[0] == VIAFW_PKT_SEND || h[0] == VIAFW_PKT_RDMA_WRITE ||
              h[0] == VIAFW_PKT_READ_RESPONSE;
  if (data && offset <= length && n > length - offset)
    n = length - offset;
  if (h[0] == VIAFW_PKT_CONTROL)
    return on_control(src, h, n);
  uint32_t v = h[3];
  if (v >= vi_count || vis[v].state != State::Connected ||
      vis[v].kind != VIAFW_KIND_CONNECTED || vis[v].peer_node != src ||
      vis[v].peer_vi != h[2])
    return not_connected(src, h);
  Vi &vi = vis[v];
  switch (h[0]) {
  case VIAFW_PKT_SEND:
  case VIAFW_PKT_RDMA_WRITE:
    return inbound_fragment(vi, h, n);
  case VIAFW_PKT_READ_REQUEST:
    return on_read_request(vi, h);
  case VIAFW_PKT_READ_RESPONSE:
    return on_read_response(vi, h, n);
  case VIAFW_PKT_ACK:
    return on_ack(vi, h, true);
  case VIAFW_PKT_NACK:
    return on_ack(vi, h, false);
  case VIAFW_PKT_RESUME:
    return vi.reliability == VIAFW_UNRELIABLE ? count(VIAFW_BOX_STAT_DROPPED)
                                              : on_resume(vi, h);
  case VIAFW_PKT_PROBE:
    return vi.reliability == VIAFW_UNRELIABLE ? count(VIAFW_BOX_STAT_DROPPED)
                                              : on_probe(vi, h);
  default:
    return count(VIAFW_BOX_STAT_DROPPED);
  }
}

// Retransmission timeouts: whatever waited past its deadline.
NICEMU_HANDLER void on_timer() {
  fw::irq_clear(NICEMU_IRQ_TIMER);
  timer_at = 0;
  uint64_t now = fw::cycles();
  for (uint32_t v = 0; v < vi_count; ++v)
    if (losses[v].retry.armed && losses[v].retry.deadline <= now)
      vi_timeout(v);
  for (ControlSlot &c : controls)
    if (c.used && c.retry.armed && c.retry.deadline <= now)
      control_timeout(c);
  if (control_ack_timer.armed && control_ack_timer.deadline <= now)
    control_acks();
  // The timer for the earliest deadline still to come.
  for (uint32_t v = 0; v < vi_count; ++v)
    if (losses[v].retry.armed)
      timer_at_most(losses[v].retry.deadline);
  for (ControlSlot &c : controls)
    if (c.used && c.retry.armed)
      timer_at_most(c.retry.deadline);
  if (control_ack_timer.armed)
    timer_at_most(control_ack_timer.deadline);
}

// -----------------------------------------------------

// Checks an IPv4/UDP frame for this node's FM port; returns the FM packet's
// length (0: not ours or bad).
uint32_t fm_check(const uint8_t *ip, uint32_t n) {
  if (n < kIp + kUdp + VIAFW_FM_HEADER_BYTES || ip[0] != 0x45 || ip[9] != 17)
    return 0;
  uint32_t ip_len = get_be16(ip + 2);
  if (ip_len > n || ip_len < kIp + kUdp ||
      get_be32(ip + 16) != node_table[me].ip ||
      (get_be16(ip + 6) & 0x3FFF)) // fragments are not ours
    return 0;
  if (fold(sum16(ip, kIp)) != 0) {
    count(VIAFW_BOX_STAT_BAD_CHECKSUM);
    return 0;
  }
  const uint8_t *udp = ip + kIp;
  uint32_t udp_len = get_be16(udp + 4);
  if (get_be16(udp + 2) != VIAFW_FM_UDP_PORT || udp_len != ip_len - kIp ||
      udp_len < kUdp + VIAFW_FM_HEADER_BYTES)
    return 0;
  if (get_be16(udp + 6) && udp_checksum(ip, udp, udp_len) != 0) {
    count(VIAFW_BOX_STAT_BAD_CHECKSUM);
    return 0;
  }
  const uint8_t *fm = udp + kUdp;
  uint32_t fm_len = udp_len - kUdp;
  if (get32(fm + 8) != fm_len - VIAFW_FM_HEADER_BYTES)
    return 0;
  return fm_len;
}

int fm_vi() {
  for (uint32_t v = 0; v < vi_count; ++v)
    if (vis[v].state == State::Connected && vis[v].kind == VIAFW_KIND_FM_IP)
      return int(v);
  return -1;
}

// A held FM frame can go: the FM VI has a receive descriptor.
bool fm_ready() {
  int v = fm_vi();
  return v >= 0 && !vis[v].recvs.empty();
}

// Places an FM packet; false if it must wait for a receive descriptor
// (FM never drops what the network delivered).
bool fm_frame(const uint8_t *ip, uint32_t n) {
  uint32_t fm_len = fm_check(ip, n);
  if (!fm_len) {
    count(VIAFW_BOX_STAT_DROPPED);
    return true;
  }
  int v = fm_vi();
  if (v < 0 || vis[v].recvs.empty())
    return false;
  Vi &vi = vis[v];
  uint32_t bus = vi.recvs.pop();
  Desc d;
  Piece pieces[kMaxPieces];
  uint32_t npieces = 0, total = 0, e = 0;
  if (!fetch(bus, d))
    e = VIAFW_STATUS_PROTECTION_ERROR;
  else if (d.segcount() > VIAFW_MAX_SEGMENTS)
    e = VIAFW_STATUS_FORMAT_ERROR;
  else
    e = local_pieces(d, 0, vi.ptag, pieces, npieces, total);
  if (!e && total < fm_len)
    e = VIAFW_STATUS_LENGTH_ERROR;
  if (!e && !move_pieces(pieces, npieces, 0,
                         const_cast<uint8_t *>(ip) + kIp + kUdp, fm_len, true))
    e = VIAFW_STATUS_PROTECTION_ERROR;
  if (e) // this descriptor was bad: the packet tries the next one
    return complete(vi, bus, e | VIAFW_STATUS_OP_RECEIVE, 0, true), false;
  complete(vi, bus, VIAFW_STATUS_OP_RECEIVE, fm_len, true);
  return true;
}

// ---- The receiver
// ----------------------------------------------------------------

// Two receive buffers: the engine takes the next frame into one while the
// core handles the other. Frames are handled in arrival order; an FM frame
// with no receive descriptor waits in its buffer (holding the next one
// behind it) until the host posts one.
struct RxBuf {
  FrameBuf buf;
  uint32_t length, status;
};
RxBuf rx_bufs[2];
int rx_armed = -1;         // buffer the engine fills
int rx_full[2] = {-1, -1}; // buffers holding frames, oldest first
bool rx_holding;           // rx_full[0] waits for a receive descriptor

void rx_rearm() {
  if (rx_armed >= 0 || rx_full[1] >= 0)
    return;
  rx_armed = rx_full[0] == 0 ? 1 : 0;
  fw::irq_clear(NICEMU_IRQ_RX);
  fw::rx_arm(rx_bufs[rx_armed].buf.frame, sizeof rx_bufs[rx_armed].buf.frame,
             true);
}

// Handles the frame in `b`; false if it has to wait (FM, no descriptor).
NICEMU_HANDLER bool on_frame(const RxBuf &b) {
  uint32_t n = b.length;
  const uint8_t *f = b.buf.frame;
  if (n < kEth || (b.status & (NICEMU_RX_CRC_ERROR | NICEMU_RX_TRUNCATED))) {
    count(VIAFW_BOX_STAT_DROPPED);
    return true;
  }
  uint32_t src = node_of_mac(f + 6);
  uint16_t type = get_be16(f + 12);
  if (type == 0x0800)
    return fm_frame(f + kEth, n - kEth);
  if (type == VIAFW_ETHERTYPE && src < nodes)
    via_frame(src, f + kEth, n - kEth);
  else
    count(VIAFW_BOX_STAT_DROPPED);
  return true;
}

bool poll_rx() {
  bool work = false;
  if (rx_armed >= 0 && (fw::rx_status() & NICEMU_RX_DONE)) {
    RxBuf &b = rx_bufs[rx_armed];
    b.length = fw::rx_length();
    b.status = fw::rx_status();
    count(VIAFW_BOX_STAT_FRAMES_IN);
    (rx_full[0] < 0 ? rx_full[0] : rx_full[1]) = rx_armed;
    rx_armed = -1;
    rx_rearm(); // the other buffer, if free, takes the next frame now
    work = true;
  }
  if (rx_full[0] < 0 || (rx_holding && !work && !fm_ready()))
    return work;
  rx_holding = !on_frame(rx_bufs[rx_full[0]]);
  if (rx_holding)
    return work; // retried when a doorbell brings a descriptor
  rx_full[0] = rx_full[1];
  rx_full[1] = -1;
  rx_rearm();
  return true;
}

// ---- Commands
// --------------------------------------------------------------------

// A command naming something of another process: refused, and counted.
uint32_t foreign() {
  count(VIAFW_BOX_STAT_FOREIGN);
  return VIAFW_R_BAD_ARGUMENT;
}

// Region `h` in use and process `p`'s; else the refusal (0: it is).
uint32_t check_region(uint32_t h, uint32_t p) {
  if (h == 0 || h >= VIAFW_MAX_REGIONS || !regions[h].used)
    return VIAFW_R_BAD_ARGUMENT;
  return regions[h].owner == p ? 0u : foreign();
}

// VI `v` in use and process `p`'s; else the refusal (0: it is).
uint32_t check_vi(uint32_t v, uint32_t p) {
  if (v >= vi_count || vis[v].state == State::Free)
    return VIAFW_R_BAD_ARGUMENT;
  return vi_owner[v] == p ? 0u : foreign();
}

// CQ `cq` is VIAFW_NO_CQ, or in use and process `p`'s.
bool cq_usable(uint32_t cq, uint32_t p) {
  if (cq == VIAFW_NO_CQ)
    return true;
  if (cq >= VIAFW_MAX_CQS || !cqs[cq].used)
    return false;
  if (cqs[cq].owner != p) {
    count(VIAFW_BOX_STAT_FOREIGN);
    return false;
  }
  return true;
}

// A new host process `p` (HELLO): the card forgets what it had of `p`.
SLOW void forget_process(uint32_t p) {
  for (uint32_t v = 0; v < VIAFW_MAX_VIS; ++v) {
    if (vi_owner[v] != p || vis[v].state == State::Free)
      continue;
    if (out.active && out.vi == v)
      out = Outbound{};
    retry_done(losses[v].retry);
    losses[v] = Loss{};
    vis[v] = Vi{};
    vis[v].index = uint8_t(v);
  }
  for (Region &r : regions)
    if (r.used && r.owner == p)
      r = Region{};
  for (Ring &r : cqs)
    if (r.used && r.owner == p)
      r = Ring{};
}

// Runs command block `c` of the node's process `p`.
uint32_t run_command(const uint32_t *c, uint32_t p) {
  const uint32_t *a = c + 2;
  switch (c[0]) {
  case VIAFW_CMD_HELLO:
    if (a[1] == 0 || (a[1] & (a[1] - 1)))
      return VIAFW_R_BAD_ARGUMENT;
    if (a[1] > VIAFW_WINDOW_BYTES / VIAFW_EVENT_BYTES ||
        !in_window(p, a[0], a[1] * VIAFW_EVENT_BYTES))
      return foreign();
    forget_process(p);
    events[p] = Ring{true, uint8_t(p), a[0], a[1], 0};
    box[VIAFW_BOX_EVENTS_FREED_BY(p)] = 0;
    return VIAFW_R_OK;
  case VIAFW_CMD_REGISTER: {
    if (a[0] == 0 || a[0] >= VIAFW_MAX_REGIONS || a[3] == 0 ||
        a[5] > VIAFW_MAX_PTAG)
      return VIAFW_R_BAD_ARGUMENT;
    // Only memory of the process itself: its driver pins no other pages.
    if (!in_window(p, a[4], a[3]))
      return foreign();
    Region &r = regions[a[0]];
    if (r.used)
      return VIAFW_R_RESOURCE;
    r = Region{true,
               uint8_t(p),
               owned_ptag(p, a[5]),
               a[6],
               a[3],
               a[4],
               uint64_t(a[1]) | uint64_t(a[2]) << 32};
    return VIAFW_R_OK;
  }
  case VIAFW_CMD_DEREGISTER:
    if (uint32_t refused = check_region(a[0], p))
      return refused;
    regions[a[0]].used = false;
    return VIAFW_R_OK;
  case VIAFW_CMD_SET_MEM:
    if (uint32_t refused = check_region(a[0], p))
      return refused;
    if (a[1] > VIAFW_MAX_PTAG)
      return VIAFW_R_BAD_ARGUMENT;
    regions[a[0]].ptag = owned_ptag(p, a[1]);
    regions[a[0]].attrs = a[2];
    return VIAFW_R_OK;
  case VIAFW_CMD_CREATE_VI: {
    if (a[0] >= vi_count || a[1] > VIAFW_KIND_FM_IP ||
        a[3] > VIAFW_RELIABLE_RECEPTION || a[2] > VIAFW_MAX_PTAG ||
        !cq_usable(a[5], p) || !cq_usable(a[6], p))
      return VIAFW_R_BAD_ARGUMENT;
    if (vis[a[0]].state != State::Free ||
        (a[1] == VIAFW_KIND_FM_IP && fm_vi() >= 0))
      return VIAFW_R_RESOURCE;
    Vi &vi = vis[a[0]];
    vi = Vi{};
    vi.index = uint8_t(a[0]);
    retry_done(losses[a[0]].retry);
    losses[a[0]] = Loss{};
    vi_owner[a[0]] = uint8_t(p);
    vi.kind = uint8_t(a[1]);
    vi.ptag = owned_ptag(p, a[2]);
    vi.reliability = uint8_t(a[3]);
    vi.attrs = a[4];
    vi.send_cq = a[5];
    vi.recv_cq = a[6];
    vi.max_transfer =
        a[7] && a[7] < VIAFW_MAX_TRANSFER ? a[7] : VIAFW_MAX_TRANSFER;
    // An FM VI needs no connection: it sends to any node.
    vi.state = a[1] == VIAFW_KIND_FM_IP ? State::Connected : State::Idle;
    return VIAFW_R_OK;
  }
  case VIAFW_CMD_DESTROY_VI:
    if (uint32_t refused = check_vi(a[0], p))
      return refused;
    disconnect(vis[a[0]], vis[a[0]].kind == VIAFW_KIND_CONNECTED);
    vis[a[0]].state = State::Free;
    return VIAFW_R_OK;
  case VIAFW_CMD_SET_VI:
    if (uint32_t refused = check_vi(a[0], p))
      return refused;
    if (a[1] > VIAFW_MAX_PTAG)
      return VIAFW_R_BAD_ARGUMENT;
    vis[a[0]].ptag = owned_ptag(p, a[1]);
    vis[a[0]].attrs = a[2];
    return VIAFW_R_OK;
  case VIAFW_CMD_CONNECT_VI: {
    if (a[0] >= vi_count || a[1] >= nodes || a[2] >= vi_count)
      return VIAFW_R_BAD_ARGUMENT;
    if (uint32_t refused = check_vi(a[0], p))
      return refused == VIAFW_R_BAD_ARGUMENT && vis[a[0]].state == State::Free
                 ? uint32_t(VIAFW_R_STATE)
                 : refused;
    Vi &vi = vis[a[0]];
    if (vi.state != State::Idle || vi.kind != VIAFW_KIND_CONNECTED)
      return VIAFW_R_STATE;
    vi.state = State::Connected;
    vi.peer_node = a[1];
    vi.peer_vi = a[2];
    vi.send_seq = 0;
    losses[a[0]].heard_seq = 0; // a new connection: nothing heard yet
    losses[a[0]].resumed_seq = 0;
    return VIAFW_R_OK;
  }
  case VIAFW_CMD_DISCONNECT_VI:
    if (uint32_t refused = check_vi(a[0], p))
      return refused;
    if (vis[a[0]].kind != VIAFW_KIND_CONNECTED)
      return VIAFW_R_BAD_ARGUMENT;
    disconnect(vis[a[0]], a[1] != 0);
    return VIAFW_R_OK;
  case VIAFW_CMD_CONTROL:
    if (a[0] >= nodes)
      return VIAFW_R_BAD_ARGUMENT;
    return control_send(a[0], a + 1, a[9] < vi_count ? a[9] : VIAFW_ANY_VI)
               ? VIAFW_R_OK
               : VIAFW_R_RESOURCE;
  case VIAFW_CMD_CREATE_CQ:
    if (a[0] >= VIAFW_MAX_CQS || a[2] == 0 || (a[2] & (a[2] - 1)))
      return VIAFW_R_BAD_ARGUMENT;
    if (a[2] > VIAFW_WINDOW_BYTES / VIAFW_CQ_ENTRY_BYTES ||
        !in_window(p, a[1], a[2] * VIAFW_CQ_ENTRY_BYTES))
      return foreign();
    if (cqs[a[0]].used)
      return VIAFW_R_RESOURCE;
    cqs[a[0]] = Ring{true, uint8_t(p), a[1], a[2], 0};
    return VIAFW_R_OK;
  case VIAFW_CMD_DESTROY_CQ:
    if (a[0] >= VIAFW_MAX_CQS || !cqs[a[0]].used)
      return VIAFW_R_BAD_ARGUMENT;
    if (cqs[a[0]].owner != p)
      return foreign();
    for (const Vi &vi : vis)
      if (vi.state != State::Free && (vi.send_cq == a[0] || vi.recv_cq == a[0]))
        return VIAFW_R_STATE;
    cqs[a[0]].used = false;
    return VIAFW_R_OK;
  default:
    return VIAFW_R_BAD_COMMAND;
  }
}

// A command block at `bus`, rung by the node's process `p`: read from
// and answered into that process's memory only.
NICEMU_HANDLER void on_command(uint32_t bus, uint32_t p) {
  uint32_t c[VIAFW_COMMAND_BYTES / 4];
  if (p >= VIAFW_MAX_PROCESSES || !in_window(p, bus, VIAFW_COMMAND_BYTES))
    return count(VIAFW_BOX_STAT_FOREIGN);
  if (!host_read(bus, c, sizeof c))
    return count(VIAFW_BOX_STAT_DROPPED);
  uint32_t result = events[p].used || c[0] == VIAFW_CMD_HELLO
                        ? run_command(c, p)
                        : uint32_t(VIAFW_R_BAD_COMMAND);
  uint32_t tail[2] = {result, c[1]};
  host_write(bus + VIAFW_COMMAND_RESULT, tail, sizeof tail);
}

// ---- Doorbells
// --------------------------------------------------------------------

uint32_t doorbell_pop(uint32_t fifo) {
  fw::reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_SELECT) = fifo;
  return fw::reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_POP);
}

// The process that rang the entry doorbell_pop took last.
uint32_t rung_by() {
  return fw::reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_SOURCE);
}

// The doorbell FIFOs whose entries can be taken now: a VI queue that is
// full leaves its FIFO alone.
uint32_t poppable() {
  uint32_t ready = fw::reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_NONEMPTY);
  for (uint32_t v = 0; v < vi_count; ++v) {
    if (vis[v].sends.full())
      ready &= ~(1u << VIAFW_FIFO_SEND(v));
    if (vis[v].recvs.full())
      ready &= ~(1u << VIAFW_FIFO_RECV(v));
  }
  return ready;
}

// Moves rung doorbells into the VIs' queues (leaving them in the FIFO while
// a queue is full, so the host's doorbell writes wait) and runs commands.
bool poll_doorbells() {
  uint32_t ready = poppable();
  if (!ready)
    return false;
  bool work = false;
  for (uint32_t v = 0; v < vi_count; ++v) {
    Vi &vi = vis[v];
    for (uint32_t q = 0; q < 2; ++q) {
      uint32_t fifo = q ? VIAFW_FIFO_RECV(v) : VIAFW_FIFO_SEND(v);
      if (!(ready & (1u << fifo)))
        continue;
      Queue &queue = q ? vi.recvs : vi.sends;
      uint32_t desc = doorbell_pop(fifo);
      work = true;
      if (vi.state == State::Free) {
        count(VIAFW_BOX_STAT_DROPPED); // the library never does this
        continue;
      }
      // Another process's VI, or a descriptor outside the ringer's own
      // memory: dropped (no completion: it would write where the ringer
      // may not).
      uint32_t p = rung_by();
      if (p != vi_owner[v] || !in_window(p, desc, kDescMax)) {
        count(VIAFW_BOX_STAT_FOREIGN);
        continue;
      }
      if (vi.state == State::Error) {
        complete(vi, desc,
                 VIAFW_STATUS_DESC_FLUSHED_ERROR |
                     (q ? VIAFW_STATUS_OP_RECEIVE : 0u),
                 0, q != 0);
        continue;
      }
      queue.push(desc);
    }
  }
  // Commands after descriptors: a host that posts and then destroys or
  // disconnects the VI rang in that order, and the descriptor must be
  // flushed by the command, not dropped after it.
  if (ready & (1u << VIAFW_FIFO_COMMAND)) {
    uint32_t bus = doorbell_pop(VIAFW_FIFO_COMMAND);
    on_command(bus, rung_by());
    work = true;
  }
  if (ready & (1u << VIAFW_FIFO_RESERVED))
    doorbell_pop(VIAFW_FIFO_RESERVED); // nothing uses it
  return work;
}

void idle() {
  fw::irq_clear(kWakeLines & ~NICEMU_IRQ_TIMER); // the timer: on_timer's
  if (poppable())
    return;
  if (rx_armed >= 0 && (fw::rx_status() & NICEMU_RX_DONE))
    return;
  if (rx_full[0] >= 0 && (!rx_holding || fm_ready()))
    return;
  if (tx_sending >= 0 &&
      (fw::tx_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    return;
  if (waiting) {
    if (control_ack_deferred) {
      control_ack_deferred = false;
      retry_arm_in(control_ack_timer, control_ack_cycles);
    }
    if (fw::irq_pending() & NICEMU_IRQ_TIMER)
      return on_timer();
  }
  fw::sleep();
}

} // namespace

int main() {
  box = fw::mailbox();
  // Two doorbell FIFOs for the system, then a send and a receive per VI.
  uint32_t fifos = fw::reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_FIFOS);
  vi_count = fifos < 2 ? 0 : (fifos - 2) / 2;
  if (vi_count > VIAFW_MAX_VIS)
    vi_count = VIAFW_MAX_VIS;
  box[VIAFW_BOX_VIS] = vi_count;
  for (uint32_t v = 0; v < VIAFW_MAX_VIS; ++v)
    vis[v].index = uint8_t(v);
  build_node_table();
  rto_cycles = fw::clock_hz() / 1000000 * VIAFW_RTO_US;
  rto_max_cycles = fw::clock_hz() / 1000000 * VIAFW_RTO_MAX_US;
  control_ack_cycles = fw::clock_hz() / 1000000 * kControlAckUs;
  fw::irq_master(false);
  fw::irq_enable(kWakeLines | NICEMU_IRQ_HDMA);
  rx_rearm();
  box[VIAFW_BOX_MAGIC] = VIAFW_MAGIC;
  for (uint32_t turn = 0;; ++turn) {
    if ((turn & 0xFF) == 0)
      fw::watchdog_kick();
    bool busy = poll_doorbells();
    busy |= poll_rx();
    busy |= pump_tx();
    if (!busy)
      idle();
  }
}
