// niam: NI Active Messages firmware for lanai4. Handlers run on the NIC; the
// host posts requests through the mailbox and waits on words the NIC writes
// into its memory by DMA. Implemented: the polling main loop, the handler
// table, the barrier (also fuzzy) and int32 all-reduce (sum, min, max) over a
// butterfly, for any number of nodes; remote memory transfers (bcopy,
// bcopy_notify, sync) split at 4 KiB pages, through a page table in SRAM
// that every address from the network is checked against; host messages
// (small and staged) delivered in order into a receive ring in the
// destination host's memory, for handlers that run on the host (GAM).
// docs/niam.md is the protocol.
//
// Written the way LANai firmware was, so that its cycle counts say what the
// design costs (docs/niam.md, "Cycle budgets"): one read of IRQ_PENDING per
// turn of the polling loop; butterfly packets prepared once per partner and
// sent from where they lie, with two words filled in; engines started with
// only the registers that change; word copies, never byte loops; the hot
// path inlined into the measured functions (ready_sources, rx_packet,
// dispatch and the handlers, host_request, dma_done, complete).
//
// Expect (with the host programs tests/e2e/programs/niam_*.cpp): every
// collective completes on every rank with the same result; nothing printed.
#include "nicemu/fw.hpp"
#include "nicemu/niam_protocol.h"

namespace fw = nicemu::fw;

// On the hot path: always inlined, so a measured function is one call.
#define NIAM_HOT inline __attribute__((always_inline))

// The reliable mode (docs/niam.md, "Reliable mode"): built as the image
// niam_reliable, with a link header on every packet, acknowledgements and
// retransmission. The lean image (0) is the one the cycle budgets measure.
#ifndef NIAM_RELIABLE
#define NIAM_RELIABLE 0
#endif

namespace {

constexpr bool kReliable = NIAM_RELIABLE != 0;
// What precedes the data of a packet on the wire, after the route bytes.
constexpr uint32_t kRelBytes = kReliable ? NIAM_REL_BYTES : 0;
constexpr uint32_t kWireHeader = kRelBytes + NIAM_PACKET_BYTES;

// Counters and requests in the mailbox page (a link-time address: no
// pointer to load).
volatile uint32_t *const box = fw::nicemu_mailbox;

NIAM_HOT void count(uint32_t stat) {
  box[stat] = box[stat] + 1;
}

// Word copies of whole packets (both sides word-aligned).
template <uint32_t Words> NIAM_HOT void copy_words(void *to, const void *from) {
  auto *d = static_cast<uint32_t *>(to);
  auto *s = static_cast<const uint32_t *>(from);
  for (uint32_t i = 0; i < Words; ++i)
    d[i] = s[i];
}
NIAM_HOT void copy_packet(niam_packet &to, const niam_packet &from) {
  copy_words<NIAM_PACKET_BYTES / 4>(&to, &from);
}

// ---- Engines --------------------------------------------------------------

// The engines keep their address registers and clear DONE when they start
// (docs/firmware.md), so a start writes only what changes. A start the
// engine refuses raises no line, so the firmware raises it: completion is
// always seen the same way, through IRQ_PENDING.
NIAM_HOT volatile uint32_t &tx_reg(uint32_t r) {
  return fw::reg(NICEMU_TX_BASE, r);
}
NIAM_HOT volatile uint32_t &rx_reg(uint32_t r) {
  return fw::reg(NICEMU_RX_BASE, r);
}
NIAM_HOT volatile uint32_t &hdma_reg(uint32_t r) {
  return fw::reg(NICEMU_HDMA_BASE, r);
}

NIAM_HOT void tx_go(const void *packet, uint32_t bytes, uint32_t route_len) {
  tx_reg(NICEMU_TX_ADDR) = uint32_t(reinterpret_cast<uintptr_t>(packet));
  tx_reg(NICEMU_TX_LENGTH) = bytes;
  tx_reg(NICEMU_TX_ROUTE_LEN) = route_len;
  tx_reg(NICEMU_TX_CTRL) = NICEMU_DMA_START | NICEMU_DMA_IRQ;
  if (tx_reg(NICEMU_TX_STATUS) & NICEMU_DMA_ERROR)
    fw::irq_raise(NICEMU_IRQ_TX);
}

// A butterfly packet, prepared and checked at boot: the engine cannot
// refuse it (it is idle, the length and route are good), so no read-back.
NIAM_HOT void tx_go_prepared(const void *packet, uint32_t bytes,
                             uint32_t route_len) {
  tx_reg(NICEMU_TX_ADDR) = uint32_t(reinterpret_cast<uintptr_t>(packet));
  tx_reg(NICEMU_TX_LENGTH) = bytes;
  tx_reg(NICEMU_TX_ROUTE_LEN) = route_len;
  tx_reg(NICEMU_TX_CTRL) = NICEMU_DMA_START | NICEMU_DMA_IRQ;
}

// `ctrl`: NICEMU_DMA_START | NICEMU_DMA_IRQ, and the direction. Starts
// without looking whether the engine took it: see dma_check_refused.
NIAM_HOT void hdma_start(uint32_t host, const void *card, uint32_t bytes,
                         uint32_t ctrl) {
  hdma_reg(NICEMU_HDMA_HOST_ADDR) = host;
  hdma_reg(NICEMU_HDMA_CARD_ADDR) = uint32_t(reinterpret_cast<uintptr_t>(card));
  hdma_reg(NICEMU_HDMA_LENGTH) = bytes;
  hdma_reg(NICEMU_HDMA_CTRL) = ctrl;
}

// A refused start (a host address the host never registered) raises no
// line, so the transfer would never end: when the engine is supposed to be
// busy and says ERROR, raise its line by hand, and dma_done fails the
// transfer. Looked at before sleeping and whenever work waits for DMA room,
// not after every start (a register read costs as much as a start).
__attribute__((noinline)) void dma_check_refused();

// ---- Buffers --------------------------------------------------------------

// A packet buffer: route bytes end where the 32-byte AM header starts, so the
// header and the data stay word-aligned whatever the route length. Rx lands
// packets at `hdr`; the source stages bulk data at `data`.
struct Buf {
  Buf *next_rx;   // Rx buffers are armed in a ring
  uint32_t index; // in bufs[]
  uint8_t route[8];
#if NIAM_RELIABLE
  uint32_t rel[2]; // the link header (niam_protocol.h): Rx lands here
#endif
  niam_packet hdr;
  uint8_t data[NIAM_PAGE_BYTES];
};
// Rx and Tx have separate pools: a node whose buffers were all waiting to
// send could otherwise refuse the packets its partner is blocked on.
constexpr int kRxBufs = 3, kTxBufs = 3, kBufs = kRxBufs + kTxBufs;
constexpr uint32_t kTxPool = ((1u << kBufs) - 1) & ~((1u << kRxBufs) - 1);
constexpr uint32_t kRxBytes = kWireHeader + NIAM_PAGE_BYTES;
Buf bufs[kBufs];
// Bit i: bufs[i] is free. Rx buffers are taken in ring order, so their bits
// are tested one at a time.
uint32_t free_bufs = (1u << kBufs) - 1;

// The lowest free buffer of `pool`, taken; -1 when there is none.
NIAM_HOT int take_buf(uint32_t pool) {
  uint32_t m = free_bufs & pool;
  if (!m)
    return -1;
  int i = __builtin_ctz(m);
  free_bufs &= ~(1u << i);
  return i;
}

// The buffer the Rx engine fills (nullptr while the next one in the ring is
// in use: it is armed when released), and the next one to arm.
Buf *rx_armed, *rx_next;

// Arms Rx on the ring's next buffer (RX_SIZE is set once, at boot).
NIAM_HOT void rx_rearm() {
  Buf *n = rx_next;
  uint32_t bit = 1u << n->index;
  uint32_t free = free_bufs;
  if (rx_armed || !(free & bit))
    return;
  free_bufs = free & ~bit;
  rx_armed = n;
  rx_next = n->next_rx;
#if NIAM_RELIABLE
  rx_reg(NICEMU_RX_ADDR) = uint32_t(reinterpret_cast<uintptr_t>(n->rel));
#else
  rx_reg(NICEMU_RX_ADDR) = uint32_t(reinterpret_cast<uintptr_t>(&n->hdr));
#endif
  rx_reg(NICEMU_RX_CTRL) = NICEMU_RX_ARM | NICEMU_DMA_IRQ;
}

void pump();

void release(int b) {
  free_bufs |= 1u << b;
  if (b < kRxBufs)
    rx_rearm(); // a packet may be waiting on the link for a buffer
}

// ---- Routes and packets ---------------------------------------------------

// A packet ready to send: the route's bytes end where the AM starts, so the
// AM stays word-aligned; `start` is the route's first byte.
struct alignas(64) Ready { // 64 bytes: an index is a shift
  uint32_t route[2];
#if NIAM_RELIABLE
  uint32_t rel[2]; // the link header, filled as the packet is sent
#endif
  niam_packet am;
  const uint8_t *start;
  uint32_t len, route_len;
#if NIAM_RELIABLE
  uint32_t node; // where the route leads
#endif
};
static_assert(sizeof(Ready) == 64, "a Ready is 64 bytes");

// Sets `p`'s route to `node` from the ROUTE device, right-aligned: its n
// bytes (first switch first, little-endian in BYTES_LO/HI) move up by 8 - n
// bytes, in words.
void set_route(Ready &p, uint32_t node) {
  fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_DEST) = node;
  uint32_t n = fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_LENGTH);
  uint32_t lo = fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_BYTES_LO);
  uint32_t hi = fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_BYTES_HI);
  n = n < 8 ? n : 8;
  uint32_t shift = 8 * (8 - n); // bits
  if (shift >= 32) {
    p.route[0] = 0;
    p.route[1] = shift == 64 ? 0 : lo << (shift - 32);
  } else {
    p.route[0] = lo << shift;
    p.route[1] = shift ? (hi << shift) | (lo >> (32 - shift)) : hi;
  }
  auto *r = reinterpret_cast<uint8_t *>(p.route);
  p.route_len = n;
  p.start = r + 8 - n;
  p.len = n + kWireHeader;
#if NIAM_RELIABLE
  p.node = node;
#endif
}

// ---- Engines: a queue in front of Tx and of host DMA ----------------------

// A queued packet: small packets are copied into the slot; bulk packets stay
// in buffer `buf`, freed when the engine has taken them. When Tx is idle a
// packet starts from where it lies: the engine copies it as it starts.
struct TxSlot {
  Ready small;
  const uint8_t *start;
  uint32_t len, route_len;
  int buf;
};
constexpr uint32_t kTxSlots = 16;
TxSlot tx_queue[kTxSlots];
// The counters of the queues and of the request path, side by side: one
// base address serves them all (the compiler then builds it once).
struct Counters {
  uint32_t tx_head, tx_tail; // head: next to start; tail: next free
  uint32_t job_head, job_tail;
  uint32_t dma_head, dma_tail;
  uint32_t fetching;     // request fetches in flight: each may become a job
  uint32_t requested;    // the last host request number seen in the mailbox
  uint32_t direct_fetch; // a fetch outside the DMA queue (host_request)
  uint32_t tx_busy, dma_busy; // words: a byte would cost a mask per test
} counters;
// The counters, through a base register. Without a small-data area (-G0)
// every global access builds its address with a `lui` of its own; q() hides
// the struct's address from the optimiser, which would otherwise fold it
// back into each access, so a function builds it once.
NIAM_HOT Counters &q() {
  Counters *c = &counters;
  asm("" : "+r"(c));
  return *c;
}

// A queued host DMA. Small transfers keep their card data in the entry
// because the engine reads card memory when the transfer ends, not when it
// starts; bulk ones point into a buffer.
enum class Dma : uint32_t { Fetch, Write, Stage, Deliver, Flag };
struct alignas(64) DmaSlot { // 64 bytes: an index is a shift
  uint32_t words[NIAM_PACKET_BYTES / 4];
  const void *card;
  uint32_t host, bytes;
  uint32_t ctrl; // HDMA_CTRL: start, IRQ, direction (from `kind`)
  uint32_t arg;  // Fetch: request number; Stage: node; Deliver: last; Flag:
                 // issuer
  int buf;
  Dma kind;
};
constexpr uint32_t kDmaSlots = 16;
DmaSlot dma_queue[kDmaSlots];

NIAM_HOT uint32_t dma_free() {
  return kDmaSlots - (q().dma_tail - q().dma_head);
}

// ---- Geometry of the butterfly --------------------------------------------

constexpr uint32_t kMaxRounds = 16; // 65536 nodes
uint32_t me, nodes, pow2, rounds;   // pow2: the largest power of 2 <= nodes
// The packets to the butterfly partners, prepared at boot: [round] the
// round's partner, [kMaxRounds] the fold partner.
Ready partner[kMaxRounds + 1];

// Tx has taken bulk buffer `b` (the engine copied it as it started).
#if NIAM_RELIABLE
void tx_taken(int b);
#else
NIAM_HOT void tx_taken(int b) {
  release(b);
}
#endif

NIAM_HOT void tx_kick() {
  if (q().tx_busy || q().tx_head == q().tx_tail)
    return;
  TxSlot &s = tx_queue[q().tx_head % kTxSlots];
  tx_go(s.start, s.len, s.route_len); // copied now: the slot is free
  ++q().tx_head;
  q().tx_busy = true;
  if (s.buf >= 0)
    tx_taken(s.buf);
}

void poll_tx_until_idle();

NIAM_HOT TxSlot &tx_slot() {
  if (q().tx_tail - q().tx_head == kTxSlots)
    poll_tx_until_idle(); // rare: 16 slots, at most 3 of them bulk
  return tx_queue[q().tx_tail % kTxSlots];
}

// Queues a copy of a prepared packet behind the ones waiting for Tx.
__attribute__((noinline, cold)) void send_queued(const Ready &p) {
  TxSlot &s = tx_slot();
  copy_words<sizeof(Ready) / 4>(&s.small, &p);
  s.route_len = p.route_len;
  s.start = reinterpret_cast<const uint8_t *>(s.small.route) + 8 - p.route_len;
  s.len = p.len;
  s.buf = -1;
  ++q().tx_tail;
  tx_kick();
}

// Puts a prepared packet on the wire: at once from where it lies when Tx is
// idle (the engine copies it as it starts), else through a copy in the
// queue.
NIAM_HOT void wire_ready(const Ready &p) {
  if (!q().tx_busy) { // a queued packet means Tx is busy (tx_kick)
    tx_go(p.start, p.len, p.route_len);
    q().tx_busy = true;
  } else {
    send_queued(p);
  }
}

NIAM_HOT Ready &route_of(uint32_t node);

// ---- The reliable mode ----------------------------------------------------
//
// Go-back-N per pair of nodes (docs/niam.md, "Reliable mode"): each packet
// to a peer is numbered and kept until the peer acknowledges it; the peer
// runs only the packet it expects next and acknowledges what it has, on the
// packets it sends back or, at the end of the turn, in a header-only
// packet; a periodic timer sends again, in order, all that a peer has not
// acknowledged for a timeout. Small packets are kept as copies; bulk ones
// in their Tx buffer, which is freed when acknowledged.

#if NIAM_RELIABLE
constexpr uint32_t kMaxPeers = 1024;
// Packets kept until acknowledged. Replies a NIC must send (transfer
// acknowledgements, a collective's next step) need room to be kept, and
// the network decides when they come: a host request is taken only with
// kKeptReserve free, a numbered packet from the network only with
// kKeptFloor free (otherwise it is dropped as if lost, and comes again),
// and what the packets taken may still make this NIC send fits in the
// rest.
constexpr uint32_t kKept = 128;
constexpr uint32_t kKeptReserve = 48, kKeptFloor = 32;
constexpr uint8_t kNone = 0xFF;
// The timeout: 500 us, about three times the longest round trip the lanai4
// model gives a packet without loss (a 4 KiB packet behind a full Tx queue
// at 160 MB/s, its host DMA at the far end, the acknowledgement back),
// doubled after each timeout in a row up to 32 times; a peer that answers
// none of 16 in a row (about 190 ms) is given up. Chosen from the model's
// figures before measuring anything.
constexpr uint32_t kMaxBackoffShift = 5, kMaxTimeouts = 16;
// Time is counted in ticks of the timer (a quarter of the timeout), not
// read from the cycle counter: a register read on every packet would cost
// more than the rest of the bookkeeping.
constexpr uint32_t kTicksPerTimeout = 4;
uint32_t tick;  // cycles per tick: from the clock at boot
uint32_t ticks; // ticks so far

struct Peer {
  uint16_t send_seq;  // the number of the next packet to it
  uint16_t expect;    // the number of the next packet expected from it
  uint8_t head, tail; // packets it has not acknowledged (kept[]), oldest
                      // first; kNone when there are none
  uint8_t timeouts;   // in a row, without an acknowledgement
  uint8_t owed;       // kOwed: an acknowledgement is due, kNack: a NACK;
                      // kListed: in owed[]
  bool fast_resent;   // the packets kept were sent again on a NACK
  uint32_t deadline;  // the tick when the kept packets go again
  uint32_t active_at; // its index in active[] while it has packets kept
  uint16_t nacked;    // `expect` when the last NACK went out, + 1 (0: none)
  uint8_t received;   // packets taken since the last acknowledgement
};
// kLate: an acknowledgement that may wait for a packet going back, until
// the next tick (kLateListed: in late[]).
constexpr uint8_t kListed = 1, kOwed = 2, kNack = 4, kLateListed = 8,
                  kLate = 16;
// Small packets received in order before an acknowledgement goes at once
// rather than waiting for a tick: the sender keeps at most kKept.
constexpr uint8_t kAckEvery = 4;
Peer peers[kMaxPeers];

// Kept packets: small ones whole in kept[i], bulk ones in Tx buffer `buf`.
struct KeptInfo {
  uint16_t seq, len; // len, route_len: a bulk packet's, to send it again
  uint8_t next;      // the next kept packet to the same peer, or kNone
  int8_t buf;        // -1: small
  uint8_t route_len;
};
Ready kept[kKept];
KeptInfo kept_info[kKept];
uint32_t kept_free[kKept / 32] = {~0u, ~0u, ~0u, ~0u}; // bit: kept[] free
uint32_t kept_left = kKept;                            // how many are

uint32_t active[kMaxPeers], active_count; // peers with packets kept
uint32_t owed[kMaxPeers], owed_count;     // peers listed for an ack
uint32_t late[kMaxPeers], late_count;     // ... for an ack at the tick
bool timer_on;
// A bulk packet's buffer is freed once acknowledged and no longer waiting
// in the Tx queue (a packet sent again may be).
uint8_t buf_refs[kBufs];
bool buf_acked[kBufs];
bool bufs_freed; // a Tx buffer came free: the jobs may go on

// The deadline of packets kept from now, after `timeouts` in a row: a
// timeout doubled that many times (up to 2^kMaxBackoffShift), plus one
// tick, since the current one is partly gone.
NIAM_HOT uint32_t deadline_after(uint32_t timeouts) {
  uint32_t shift = timeouts < kMaxBackoffShift ? timeouts : kMaxBackoffShift;
  return ticks + 1 + (kTicksPerTimeout << shift);
}

int take_kept() {
  for (uint32_t w = 0; w < kKept / 32; ++w)
    if (uint32_t m = kept_free[w]) {
      uint32_t i = uint32_t(__builtin_ctz(m));
      kept_free[w] = m & ~(1u << i);
      --kept_left;
      return int(32 * w + i);
    }
  return -1;
}

NIAM_HOT uint32_t kept_room() {
  return kept_left;
}

// The acknowledgement rides on a packet to `node`: none is due any more.
void stamp(uint32_t *rel, uint32_t node, uint32_t seq, uint32_t flags) {
  Peer &pr = peers[node];
  rel[0] = me | seq << 16;
  rel[1] = pr.expect | flags << 16;
  pr.owed &= ~(kOwed | kLate);
  pr.received = 0;
}

void owe(uint32_t node) {
  Peer &pr = peers[node];
  if (!(pr.owed & kListed))
    owed[owed_count++] = node;
  pr.owed |= kListed | kOwed;
}

void timer_needed() {
  if (!timer_on) {
    fw::timer_start(fw::cycles() + tick, tick);
    timer_on = true;
  }
}

// A small packet taken in order: its acknowledgement rides on the next
// packet back if one goes before the tick (a barrier's or a reply's), and
// goes alone at the tick otherwise, or at once every kAckEvery packets.
void owe_late(uint32_t node) {
  Peer &pr = peers[node];
  if (++pr.received >= kAckEvery) {
    owe(node);
    return;
  }
  if (!(pr.owed & kLateListed))
    late[late_count++] = node;
  pr.owed |= kLateListed | kLate;
  timer_needed();
}

void free_buf(int b) {
  release(b);
  bufs_freed = true;
}

void tx_ref(int b) {
  ++buf_refs[b];
}

void keep(uint32_t node, uint32_t i, uint32_t seq, int buf, uint32_t len,
          uint32_t route_len) {
  kept_info[i] = {uint16_t(seq), uint16_t(len), kNone, int8_t(buf),
                  uint8_t(route_len)};
  Peer &pr = peers[node];
  if (pr.head != kNone) {
    kept_info[pr.tail].next = uint8_t(i);
    pr.tail = uint8_t(i);
    return;
  }
  pr.head = pr.tail = uint8_t(i);
  pr.active_at = active_count;
  active[active_count++] = node;
  pr.deadline = deadline_after(0);
  pr.timeouts = 0;
  timer_needed();
}

void deactivate(uint32_t node) {
  Peer &pr = peers[node];
  uint32_t last = active[--active_count];
  active[pr.active_at] = last;
  peers[last].active_at = pr.active_at;
}

// Frees the kept packets to `node` numbered before `ack` (all: `all`).
void acked_to(uint32_t node, uint32_t ack, bool all = false) {
  Peer &pr = peers[node];
  if (pr.head == kNone)
    return;
  bool progress = false;
  while (pr.head != kNone &&
         (all || int16_t(uint16_t(kept_info[pr.head].seq - ack)) < 0)) {
    uint32_t i = pr.head;
    pr.head = kept_info[i].next;
    if (int b = kept_info[i].buf; b >= 0) {
      buf_acked[b] = true;
      if (!buf_refs[b])
        free_buf(b);
    }
    kept_free[i / 32] |= 1u << (i % 32);
    ++kept_left;
    progress = true;
  }
  if (progress)
    pr.fast_resent = false;
  if (pr.head == kNone) {
    deactivate(node);
  } else if (progress) {
    pr.timeouts = 0;
    pr.deadline = deadline_after(0);
  }
}

// A small packet to p.node, numbered and kept (or, with nothing free to
// keep it in, sent unnumbered and counted: it may then be lost).
void rel_send(const Ready &p) {
  uint32_t node = p.node;
  int i = take_kept();
  if (i < 0) {
    count(NIAM_BOX_STAT_UNTRACKED);
    Ready u = p;
    u.start = reinterpret_cast<const uint8_t *>(u.route) + 8 - u.route_len;
    stamp(u.rel, node, 0, NIAM_REL_UNNUMBERED);
    wire_ready(u);
    return;
  }
  Ready &k = kept[i];
  copy_words<sizeof(Ready) / 4>(&k, &p);
  k.start = reinterpret_cast<const uint8_t *>(k.route) + 8 - k.route_len;
  uint32_t seq = peers[node].send_seq++;
  stamp(k.rel, node, seq, 0);
  keep(node, uint32_t(i), seq, -1, 0, 0);
  wire_ready(k);
}

// Bulk buffer `b`, about to be queued for Tx to `node`: numbered and kept.
void rel_send_buf(int b, uint32_t node, uint32_t len, uint32_t route_len) {
  int i = take_kept();
  buf_refs[b] = 0;
  if (i < 0) {
    count(NIAM_BOX_STAT_UNTRACKED);
    stamp(bufs[b].rel, node, 0, NIAM_REL_UNNUMBERED);
    buf_acked[b] = true; // freed once Tx has it, as in the lean mode
    return;
  }
  uint32_t seq = peers[node].send_seq++;
  stamp(bufs[b].rel, node, seq, 0);
  buf_acked[b] = false;
  keep(node, uint32_t(i), seq, b, len, route_len);
}

// Free Tx queue slots. Resending and acknowledging leave kTxSpare of them
// to what the turn's handlers send: a full queue makes the NIC spin until
// Tx is idle (tx_slot), and Tx may wait for a peer that spins too.
NIAM_HOT uint32_t tx_free() {
  return kTxSlots - (q().tx_tail - q().tx_head);
}
constexpr uint32_t kTxSpare = 6;

// Sends again, in order, the packets `node` has not acknowledged, as far
// as the Tx queue has room: false when some did not fit (the first ones
// went; the rest go at the next tick, or on a NACK).
bool resend(uint32_t node) {
  Peer &pr = peers[node];
  for (uint32_t i = pr.head; i != kNone; i = kept_info[i].next) {
    if (tx_free() <= kTxSpare)
      return false;
    count(NIAM_BOX_STAT_RESENT);
    int b = kept_info[i].buf;
    if (b < 0) {
      kept[i].rel[1] = pr.expect;
      wire_ready(kept[i]);
      continue;
    }
    Buf &x = bufs[b];
    x.rel[1] = pr.expect;
    if (buf_refs[b])
      continue; // still waiting in the queue: it goes out anyway
    TxSlot &s = tx_slot();
    s.route_len = kept_info[i].route_len;
    s.start = x.route + 8 - s.route_len;
    s.len = kept_info[i].len;
    s.buf = b;
    tx_ref(b);
    ++q().tx_tail;
    tx_kick();
  }
  pr.owed &= ~kOwed;
  return true;
}

// The timer's tick: peers whose timeout ran out get their packets again,
// or are given up.
void rel_tick() {
  fw::irq_clear(NICEMU_IRQ_TIMER);
  for (uint32_t i = 0; i < late_count; ++i) { // sent at the turn's end
    Peer &pr = peers[late[i]];
    if (pr.owed & kLate)
      owe(late[i]);
    pr.owed &= ~(kLateListed | kLate);
  }
  late_count = 0;
  uint32_t now = ++ticks;
  for (uint32_t a = 0; a < active_count;) {
    uint32_t node = active[a];
    Peer &pr = peers[node];
    if (int32_t(now - pr.deadline) < 0) {
      ++a;
      continue;
    }
    if (tx_free() <= kTxSpare) { // no room to resend: not a timeout yet
      pr.deadline = now + 1;
      ++a;
      continue;
    }
    if (++pr.timeouts > kMaxTimeouts) {
      count(NIAM_BOX_STAT_PEER_LOST);
      acked_to(node, 0, true); // active[a] is now another peer
      continue;
    }
    resend(node);
    pr.deadline = deadline_after(pr.timeouts);
    ++a;
  }
  if (!active_count && !late_count && timer_on) {
    fw::timer_stop();
    timer_on = false;
  }
}

// The link header of a packet that arrived whole: its acknowledgement is
// taken; true when the packet is the one expected from its source (run
// it), false for a duplicate, a packet behind a lost one, or a header-only
// acknowledgement (drop it).
bool rel_accept(const uint32_t *rel, bool bulk) {
  uint32_t src = rel[0] & 0xFFFF, seq = rel[0] >> 16;
  uint32_t ack = rel[1] & 0xFFFF, flags = rel[1] >> 16;
  if (src >= nodes || src == me) {
    count(NIAM_BOX_STAT_BAD);
    return false;
  }
  Peer &pr = peers[src];
  // An acknowledgement of packets never sent is forged or stale: ignored.
  if (int16_t(uint16_t(ack - pr.send_seq)) <= 0)
    acked_to(src, ack);
  // A NACK: the peer got a packet behind one it is missing. The packets
  // kept go again at once, not after the timeout; once per packet at the
  // head (if that is lost too, the timeout is there).
  if ((flags & NIAM_REL_NACK) && pr.head != kNone &&
      kept_info[pr.head].seq == ack && !pr.fast_resent) {
    pr.fast_resent = true;
    resend(src);
    pr.deadline = deadline_after(0);
  }
  if (flags & NIAM_REL_ACK_ONLY)
    return false;
  if (flags & NIAM_REL_UNNUMBERED)
    return true;
  if (seq == pr.expect && kept_room() < kKeptFloor) {
    // No room for what it may make this NIC send: as if lost (the sender
    // sends it again after its timeout). The acknowledgement it carried
    // was taken, which is what frees room.
    count(NIAM_BOX_STAT_NO_ROOM);
    return false;
  }
  if (seq == pr.expect) {
    pr.expect = uint16_t(seq + 1);
    if (bulk)
      owe(src); // the sender's Tx buffer waits for it: at once
    else
      owe_late(src);
    return true;
  }
  owe(src); // the sender may be waiting for an acknowledgement that was lost
  if (int16_t(uint16_t(seq - pr.expect)) < 0) {
    count(NIAM_BOX_STAT_DUPLICATE);
    return false;
  }
  count(NIAM_BOX_STAT_OUT_OF_ORDER);
  // A packet is missing: say so once for it (its resending may be lost too;
  // then the sender's timeout is there).
  if (pr.nacked != uint16_t(pr.expect + 1)) {
    pr.nacked = uint16_t(pr.expect + 1);
    pr.owed |= kNack;
  }
  return false;
}

// The end of a busy turn: acknowledgements that no packet carried go out
// alone.
void flush_acks() {
  uint32_t i = 0;
  for (; i < owed_count; ++i) {
    uint32_t node = owed[i];
    Peer &pr = peers[node];
    if ((pr.owed & (kOwed | kNack)) && tx_free() <= kTxSpare)
      break; // the rest at the end of the next turn
    if (pr.owed & (kOwed | kNack)) {
      const Ready &r = route_of(node);
      Ready a;
      copy_words<2>(a.route, r.route);
      a.route_len = r.route_len;
      a.start = reinterpret_cast<const uint8_t *>(a.route) + 8 - r.route_len;
      a.len = r.route_len + kRelBytes;
      stamp(a.rel, node, 0,
            NIAM_REL_ACK_ONLY | (pr.owed & kNack ? NIAM_REL_NACK : 0u));
      wire_ready(a);
    }
    pr.owed &= ~(kListed | kOwed | kNack);
  }
  uint32_t left = owed_count - i;
  for (uint32_t k = 0; k < left; ++k)
    owed[k] = owed[i + k];
  owed_count = left;
}

void tx_taken(int b) {
  if (--buf_refs[b] == 0 && buf_acked[b])
    free_buf(b);
}

void rel_setup() {
  if (nodes > kMaxPeers) {
    fw::printf("niam_reliable: %u nodes; the reliable mode keeps state for "
               "at most %u\n",
               unsigned(nodes), unsigned(kMaxPeers));
    fw::exit(2);
  }
  for (uint32_t n = 0; n < nodes; ++n)
    peers[n].head = peers[n].tail = kNone;
  tick = fw::clock_hz() / 2000 / kTicksPerTimeout; // 500 us / 4
}
#else
NIAM_HOT void tx_ref(int) {}
#endif

// Sends a prepared packet (numbered and kept in the reliable mode).
NIAM_HOT void send_ready(const Ready &p) {
#if NIAM_RELIABLE
  rel_send(p);
#else
  wire_ready(p);
#endif
}

// Sends an AM to butterfly partner `slot`: the packet is prepared, only the
// handler and the three words change.
NIAM_HOT void send(uint32_t slot, uint32_t handler, uint32_t a0, uint32_t a1,
                   uint32_t a2) {
  Ready &p = partner[slot];
  p.am.handler = handler;
  p.am.arg[0] = a0;
  p.am.arg[1] = a1;
  p.am.arg[2] = a2;
  send_ready(p);
}

// The route to any node; the last one is kept, since a transfer sends all
// its packets to one node.
Ready last_route;
uint32_t last_route_node = ~0u;

NIAM_HOT Ready &route_of(uint32_t node) {
  if (node != last_route_node) {
    set_route(last_route, node);
    last_route_node = node;
  }
  return last_route;
}

void send_node(uint32_t node, const niam_packet &p) {
  Ready &r = route_of(node);
  copy_packet(r.am, p);
  send_ready(r);
}

// Queues bulk buffer `b` (header filled, `data` bytes after it) to `node`.
void send_buf(int b, uint32_t node, uint32_t data) {
  Ready &r = route_of(node);
  Buf &x = bufs[b];
  copy_words<2>(x.route, r.route);
#if NIAM_RELIABLE
  rel_send_buf(b, node, r.len + data, r.route_len);
#endif
  TxSlot &s = tx_slot();
  s.route_len = r.route_len;
  s.start = x.route + 8 - r.route_len;
  s.len = r.len + data;
  s.buf = b;
  tx_ref(b);
  ++q().tx_tail;
  tx_kick();
}

// Tx finished a packet (its line was pending): start the next.
void tx_done() {
  fw::irq_clear(NICEMU_IRQ_TX);
  tx_reg(NICEMU_TX_STATUS) = NICEMU_DMA_ERROR; // a refused start's mark
  q().tx_busy = false;
  tx_kick();
  if (q().job_head != q().job_tail)
    pump(); // starting the next packet may have freed a Tx buffer
}

void poll_tx_until_idle() {
  while (q().tx_busy)
    if (fw::irq_pending() & NICEMU_IRQ_TX)
      tx_done();
}

constexpr uint32_t dma_ctrl(Dma kind) {
  return NICEMU_DMA_START | NICEMU_DMA_IRQ |
         (kind == Dma::Write || kind == Dma::Deliver || kind == Dma::Flag
              ? NICEMU_DMA_TO_HOST
              : 0u);
}

NIAM_HOT void dma_start(const DmaSlot &d) {
  hdma_start(d.host, d.card, d.bytes, d.ctrl);
  q().dma_busy = true;
}

NIAM_HOT void dma_kick() {
  if (q().dma_busy || q().dma_head == q().dma_tail)
    return;
  dma_start(dma_queue[q().dma_head % kDmaSlots]);
}

// Starts a transfer just pushed when the engine is idle: then nothing else
// was queued (the queue is started whenever the engine goes idle), so it is
// the head. The caller passes what it pushed, so nothing is read back.
NIAM_HOT void dma_submit(uint32_t host, const void *card, uint32_t bytes,
                         Dma kind) {
  if (q().dma_busy)
    return;
  hdma_start(host, card, bytes, dma_ctrl(kind));
  q().dma_busy = true;
}

void dma_check_refused() {
  if (q().dma_busy && (hdma_reg(NICEMU_HDMA_STATUS) & NICEMU_DMA_ERROR))
    fw::irq_raise(NICEMU_IRQ_HDMA);
}

// Callers keep enough room (see the dma_free() checks); a full queue here
// would be a firmware bug, so the transfer is counted and dropped.
NIAM_HOT DmaSlot *dma_push(Dma kind, uint32_t host, uint32_t bytes) {
  if (q().dma_tail - q().dma_head == kDmaSlots) {
    count(NIAM_BOX_STAT_BAD);
    return nullptr;
  }
  DmaSlot &d = dma_queue[q().dma_tail++ % kDmaSlots];
  d.kind = kind;
  d.ctrl = dma_ctrl(kind);
  d.host = host;
  d.bytes = bytes;
  d.card = d.words;
  d.buf = -1;
  return &d;
}

// ---- Collectives ----------------------------------------------------------

enum class Stage : uint32_t { Idle, FoldIn, Round, FoldOut };
struct Collective {
  uint32_t c; // collective number: 1, 2, ... the same on every rank
  uint32_t op, acc;
  uint32_t round; // the round awaited; kNoRound outside Stage::Round
  Stage stage;
};
constexpr uint32_t kNoRound = ~0u; // matches no packet's round
Collective coll;
uint32_t started; // collectives started on this node

// Per-step flags, set by the partners' AMs. A partner can be at most one
// collective ahead, so two slots (c & 1) suffice; a flag holds the number of
// the collective whose value is in the slot.
uint32_t round_flag[2][kMaxRounds], round_val[2][kMaxRounds];
// Round packets that came before this node got to their round and are not
// consumed yet: while there are none, a step need not look at the flags.
uint32_t early;
uint32_t fold_in_flag[2], fold_in_val[2];
uint32_t fold_out_flag[2], fold_out_val[2];

// A barrier runs as a sum of zeros (start_collective), so it takes the
// first test.
NIAM_HOT uint32_t combine(uint32_t op, uint32_t a, uint32_t b) {
  int32_t x = static_cast<int32_t>(a), y = static_cast<int32_t>(b);
  if (__builtin_expect(op == NIAM_OP_SUM, 1))
    return a + b; // unsigned: wraps like the host's two's complement
  if (op == NIAM_OP_MIN)
    return static_cast<uint32_t>(x < y ? x : y);
  if (op == NIAM_OP_MAX)
    return static_cast<uint32_t>(x > y ? x : y);
  return 0;
}

NIAM_HOT bool has_extra() {
  return me + pow2 < nodes;
}

// The collective's result is known: the main loop hands it to the host
// after the turn's handlers (complete), so a round packet's path ends at the
// Tx start and the completion is measured on its own.
bool complete_due;

NIAM_HOT void finish() {
  coll.round = kNoRound;
  complete_due = true;
}

// The collective's result and number to the host: measured, it is the
// completion budget (docs/niam.md).
NICEMU_HANDLER void complete() {
  complete_due = false;
  coll.stage = Stage::Idle;
  uint32_t host = box[NIAM_BOX_BLOCK] + NIAM_BLOCK_RESULT;
  DmaSlot *d = dma_push(Dma::Write, host, 8);
  if (!d)
    return; // cannot happen: one collective at a time, one fetch at a time
  d->words[0] = coll.acc;
  d->words[1] = coll.c; // the host waits on this word
  dma_submit(host, d->words, 8, Dma::Write);
}

// Sends this collective's packet of round `r` (prepared: only the collective
// number and the value change).
NIAM_HOT void send_round(uint32_t r, uint32_t c, uint32_t acc) {
  Ready &p = partner[r];
  p.am.arg[0] = c;
  p.am.arg[2] = acc;
  if constexpr (kReliable) {
    send_ready(p);
    return;
  }
  if (q().tx_busy) {
    send_queued(p);
    return;
  }
  tx_go_prepared(p.start, p.len, p.route_len);
  q().tx_busy = true;
}

// The last round is done: the extra rank gets the result, the host too.
__attribute__((noinline)) void butterfly_done() {
  if (has_extra())
    send(kMaxRounds, NIAM_H_FOLD_OUT, coll.c, coll.acc, 0);
  finish();
}

// The rounds of the butterfly, as far as the partners' packets allow. Each
// round's packet goes out as soon as the previous round's value is in.
__attribute__((noinline)) void advance_rounds() {
  for (;;) {
    uint32_t c = coll.c, s = c & 1, r = coll.round;
    if (round_flag[s][r] != c)
      return;
    if (early)
      --early;
    uint32_t acc = combine(coll.op, coll.acc, round_val[s][r]);
    coll.acc = acc;
    coll.round = ++r;
    if (r == rounds) {
      butterfly_done();
      return;
    }
    send_round(r, c, acc);
  }
}

void begin_rounds() {
  coll.round = 0;
  coll.stage = Stage::Round;
  if (rounds == 0) {
    butterfly_done();
    return;
  }
  send_round(0, coll.c, coll.acc);
  advance_rounds(); // a partner ahead of us may have sent round 0 already
}

// Advances the running collective as far as the flags allow (the fold
// stages and the start; the rounds' own packets call advance_rounds).
__attribute__((noinline)) void progress() {
  uint32_t s = coll.c & 1;
  if (coll.stage == Stage::FoldIn && fold_in_flag[s] == coll.c) {
    coll.acc = combine(coll.op, coll.acc, fold_in_val[s]);
    begin_rounds();
  } else if (coll.stage == Stage::FoldOut && fold_out_flag[s] == coll.c) {
    coll.acc = fold_out_val[s];
    finish();
  }
}

void start_collective(uint32_t op, uint32_t value) {
  if (coll.stage != Stage::Idle) {
    count(NIAM_BOX_STAT_BUSY); // the host library never does this
    return;
  }
  if (op == NIAM_OP_BARRIER) { // a sum of zeros: the result is 0 as before
    op = NIAM_OP_SUM;
    value = 0;
  }
  coll = {++started, op, value, kNoRound, Stage::Idle};
  if (me >= pow2) {
    // Ranks beyond the largest power of two report to their partner, which
    // runs the butterfly for both and sends back the result.
    send(kMaxRounds, NIAM_H_FOLD_IN, coll.c, value, 0);
    coll.stage = Stage::FoldOut;
  } else if (has_extra()) {
    coll.stage = Stage::FoldIn;
  } else {
    begin_rounds();
  }
  progress();
}

// ---- Page table -----------------------------------------------------------

// One word per 4 KiB page of the virtual space: the page's bus address with
// bit 0 set when the host registered it. Addresses from the network are
// translated through it; nothing else reaches host memory.
constexpr uint32_t kPages = NIAM_VIRT_BYTES / NIAM_PAGE_BYTES;
constexpr uint32_t kValid = 1;
uint32_t page_table[kPages];

bool translate(uint32_t virt, uint32_t &bus) {
  uint32_t page = virt / NIAM_PAGE_BYTES;
  if (page >= kPages || !(page_table[page] & kValid))
    return false;
  bus = (page_table[page] & ~(NIAM_PAGE_BYTES - 1)) |
        (virt & (NIAM_PAGE_BYTES - 1));
  return true;
}

// Range check, then an entry check for every page of [virt, virt + bytes).
bool range_ok(uint32_t virt, uint32_t bytes) {
  if (bytes == 0 || virt >= NIAM_VIRT_BYTES || bytes > NIAM_VIRT_BYTES - virt)
    return false;
  uint32_t last = (virt + bytes - 1) / NIAM_PAGE_BYTES;
  for (uint32_t page = virt / NIAM_PAGE_BYTES; page <= last; ++page)
    if (!(page_table[page] & kValid))
      return false;
  return true;
}

// The destination checks a transfer's whole range (and its flag) on every
// chunk, so a bad transfer is refused as a whole, never half-written. The
// last answer is kept: chunks of one transfer arrive together.
struct RangeCache {
  uint32_t start, bytes, flag;
  bool known, ok;
};
RangeCache dst_cache;

bool flag_ok(uint32_t flag) {
  return !(flag & NIAM_NOTIFY) || range_ok(flag & ~3u, 4);
}

bool transfer_ok(uint32_t start, uint32_t bytes, uint32_t flag) {
  RangeCache &c = dst_cache;
  if (!c.known || c.start != start || c.bytes != bytes || c.flag != flag)
    c = {start, bytes, flag, true, range_ok(start, bytes) && flag_ok(flag)};
  return c.ok;
}

// ---- Remote memory transfers ----------------------------------------------

// Transfers this NIC issued for its host, and their acknowledgements.
uint32_t issued, acked, failed;
uint32_t sync_wanted; // a sync request waiting for acked == issued, or 0

void check_sync() {
  if (!sync_wanted || acked != issued)
    return;
  DmaSlot *d =
      dma_push(Dma::Write, box[NIAM_BOX_BLOCK] + NIAM_BLOCK_SYNC_FAILED, 8);
  if (d) {
    d->words[0] = failed;
    d->words[1] = sync_wanted; // the host waits on this word
    dma_kick();
  }
  sync_wanted = 0;
}

void acknowledge(uint32_t status) {
  ++acked;
  if (status)
    ++failed;
  check_sync();
}

void send_ack(uint32_t issuer, uint32_t status) {
  if (issuer == me)
    acknowledge(status);
  else
    send_node(issuer, {NIAM_TAG, NIAM_H_ACK, {status, 0, 0, 0, 0, 0}});
}

// A transfer this node is the source of: read page by page from its host and
// sent (or delivered here when it is also the destination).
struct Job {
  uint32_t src, dst, left; // the next chunk
  uint32_t start, bytes;   // the whole destination range
  uint32_t node, issuer, flag, value;
  bool small; // a small host message in `msg`, not a transfer
  niam_packet msg;
};
constexpr uint32_t kJobs = 8;
Job jobs[kJobs];
uint32_t staging;   // Stage DMAs queued or running: chunks not sent yet
uint32_t host_sent; // staged host messages read (NIAM_BLOCK_SENT)

// Room for one more job, counting the requests being fetched.
bool job_room() {
  return q().job_tail - q().job_head + q().fetching < kJobs;
}

// Starts host DMAs of the next chunks into free Tx buffers. Chunks end at
// every page boundary of the source and of the destination.
bool send_small(const niam_packet &p);

// Room in the Tx queue for what one request or job may send. Without it the
// request waits: spinning on a Tx queue that the network backs up would
// stop this NIC from serving the Rx packets that its peers wait on.
bool tx_room() {
  return q().tx_tail - q().tx_head + 4 <= kTxSlots;
}

void pump() {
  while (q().job_head != q().job_tail) {
    Job &j = jobs[q().job_head % kJobs];
    if (j.small) {
      // Behind the chunks still being read, so host messages keep order.
      if (staging || !tx_room() || !send_small(j.msg))
        return;
      ++q().job_head;
      continue;
    }
    if (dma_free() < 4)
      return;
    int b = take_buf(kTxPool);
    if (b < 0)
      return;
    uint32_t n = j.left;
    uint32_t src_room = NIAM_PAGE_BYTES - (j.src & (NIAM_PAGE_BYTES - 1));
    uint32_t dst_room = NIAM_PAGE_BYTES - (j.dst & (NIAM_PAGE_BYTES - 1));
    n = n < src_room ? n : src_room;
    n = n < dst_room ? n : dst_room;
    uint32_t bus = 0;
    translate(j.src, bus); // checked when the job was accepted
    bufs[b].hdr = {NIAM_TAG,
                   NIAM_H_DATA,
                   {j.dst, j.start, j.bytes, j.issuer, j.flag, j.value}};
    DmaSlot *d = dma_push(Dma::Stage, bus, n);
    d->card = bufs[b].data;
    d->buf = b;
    d->arg = j.node;
    j.src += n;
    j.dst += n;
    j.left -= n;
    // The last chunk of a host message: its memory is free once read.
    d->words[0] = j.left == 0 && (j.issuer & NIAM_DATA_TO_HOST);
    ++staging;
    dma_kick();
    if (j.left == 0)
      ++q().job_head;
  }
}

// bcopy arguments (niam_protocol.h) from this host or forwarded by the
// issuer: check the source range here, then queue the job.
void accept(const niam_packet &p, uint32_t issuer) {
  uint32_t src = p.arg[0], dst = p.arg[1], bytes = p.arg[2];
  uint32_t node = p.arg[3] & 0xFFFF;
  // A refused host message is only counted: no one waits for its ack.
  bool acked_transfer = !(issuer & NIAM_DATA_TO_HOST);
  if (node >= nodes || bytes % 4 || src % 4 || dst % 4 ||
      q().job_tail - q().job_head == kJobs) {
    count(NIAM_BOX_STAT_BAD);
    if (acked_transfer)
      send_ack(issuer, 1);
    return;
  }
  if (!range_ok(src, bytes)) {
    count(NIAM_BOX_STAT_PROTECTION);
    if (acked_transfer)
      send_ack(issuer, 1);
    return;
  }
  Job &j = jobs[q().job_tail++ % kJobs];
  j = {src,    dst,      bytes,    dst,   bytes, node,
       issuer, p.arg[4], p.arg[5], false, {}};
  pump();
}

// A bulk packet in buffer `b` with `data` bytes: DMA it into the host at the
// translated address. False when the host DMA queue has no room yet: the
// packet waits in its buffer.
bool deliver_to_host(int b, uint32_t data);

bool deliver(int b, uint32_t data) {
  if (dma_free() < 3) {
    dma_check_refused(); // the caller retries: the queue must move
    return false;
  }
  const niam_packet &h = bufs[b].hdr;
  if (h.handler == NIAM_H_HOST_AM || (h.arg[3] & NIAM_DATA_TO_HOST))
    return deliver_to_host(b, data);
  uint32_t v = h.arg[0], start = h.arg[1], bytes = h.arg[2];
  uint32_t off = v - start;
  bool shaped = data && data % 4 == 0 && v % 4 == 0 && v >= start &&
                off < bytes && data <= bytes - off &&
                (v & (NIAM_PAGE_BYTES - 1)) + data <= NIAM_PAGE_BYTES;
  uint32_t bus = 0;
  if (!shaped) {
    count(NIAM_BOX_STAT_BAD); // no transfer to acknowledge: drop
  } else if ((h.arg[3] & NIAM_DATA_POISON) ||
             !transfer_ok(start, bytes, h.arg[4]) || !translate(v, bus)) {
    if (off + data == bytes) { // counted and acknowledged once, at the end
      count(NIAM_BOX_STAT_PROTECTION);
      send_ack(h.arg[3] & 0xFFFF, 1);
    }
  } else {
    DmaSlot *d = dma_push(Dma::Deliver, bus, data);
    copy_words<6>(d->words, h.arg);
    d->card = bufs[b].data;
    d->buf = b;
    d->arg = off + data == bytes;
    dma_kick();
    return true;
  }
  release(b);
  return true;
}

// Data of a transfer is in place. With bcopy_notify, the flag is written
// next (the engine keeps order, so it lands after the data); then the issuer
// is acknowledged.
void delivered(const DmaSlot &d) {
  uint32_t issuer = d.words[3] & 0xFFFF, flag = d.words[4], bus = 0;
  if (!(flag & NIAM_NOTIFY) || !translate(flag & ~3u, bus)) {
    send_ack(issuer, 0);
    return;
  }
  DmaSlot *f = dma_push(Dma::Flag, bus, 4);
  if (!f)
    return;
  f->words[0] = d.words[5];
  f->arg = issuer;
  dma_kick();
}

// Local deliveries (source = destination) waiting for room in the DMA
// queue, in order.
int local_ready[kTxBufs];
uint32_t local_head, local_tail;
uint32_t local_bytes[kTxBufs];

bool poll_local() {
  if (local_head == local_tail)
    return false;
  uint32_t i = local_head % kTxBufs;
  if (!deliver(local_ready[i], local_bytes[i]))
    return false;
  ++local_head;
  return true;
}

// A chunk is in a Tx buffer: send it, or deliver it here.
void staged(const DmaSlot &d, bool ok) {
  --staging;
  if (!ok) // the host's memory was not readable after all
    bufs[d.buf].hdr.arg[3] |= NIAM_DATA_POISON;
  if (d.words[0]) {
    DmaSlot *w = dma_push(Dma::Write, box[NIAM_BOX_BLOCK] + NIAM_BLOCK_SENT, 4);
    if (w) {
      w->words[0] = ++host_sent;
      dma_kick();
    }
  }
  if (d.arg != me) {
    send_buf(d.buf, d.arg, d.bytes);
    return;
  }
  local_ready[local_tail % kTxBufs] = d.buf;
  local_bytes[local_tail % kTxBufs] = d.bytes;
  ++local_tail;
  poll_local();
}

// ---- Host messages --------------------------------------------------------

// The destination host's receive ring (NIAM_H_RING): entries and landing
// slots in its memory, `ring_seq` entries written so far.
uint32_t ring_bus, landing_bus, ring_slots, ring_seq;
bool held_for_ring; // the held Rx packet waits for the host to free a slot

bool ring_full() {
  return ring_slots == 0 || ring_seq - box[NIAM_BOX_RING_FREED] >= ring_slots;
}

// Writes the next ring entry (after `data` bytes of buffer `b` into its
// landing slot, when there are any). False while the ring is full.
bool deliver_to_host(int b, uint32_t data) {
  const niam_packet &h = bufs[b].hdr;
  held_for_ring = ring_full();
  if (held_for_ring)
    return false;
  uint32_t slot = ring_seq % ring_slots;
  niam_packet e{ring_seq + 1, NIAM_RING_SMALL, {}};
  copy_words<6>(e.arg, h.arg);
  if (h.handler != NIAM_H_HOST_AM) {
    uint32_t off = h.arg[0], bytes = h.arg[2];
    if ((h.arg[3] & NIAM_DATA_POISON) || data % 4 || data > NIAM_PAGE_BYTES ||
        off > bytes || data > bytes - off) {
      count(NIAM_BOX_STAT_BAD); // a message with a hole: dropped
      release(b);
      return true;
    }
    e = {ring_seq + 1,
         NIAM_RING_CHUNK,
         {h.arg[3] & 0xFFFF, off, data, bytes, h.arg[4], 0}};
    DmaSlot *d =
        dma_push(Dma::Deliver, landing_bus + slot * NIAM_PAGE_BYTES, data);
    d->card = bufs[b].data;
    d->buf = b;
    d->arg = 0; // no acknowledgement: the sender counts reads, not arrivals
  } else {
    release(b);
  }
  ++ring_seq;
  // The engine keeps order: the entry lands after its data.
  DmaSlot *d = dma_push(Dma::Write, ring_bus + slot * NIAM_PACKET_BYTES,
                        NIAM_PACKET_BYTES);
  copy_words<NIAM_PACKET_BYTES / 4>(d->words, &e);
  dma_kick();
  return true;
}

// A small host message from this host (arg 0 names the destination), sent
// or, to this node, queued like a local chunk. False without a buffer.
bool send_small(const niam_packet &p) {
  uint32_t node = p.arg[0] & 0xFFFF;
  niam_packet m = p;
  m.tag = NIAM_TAG;
  m.handler = NIAM_H_HOST_AM;
  m.arg[0] = (p.arg[0] & 0xFFFF0000u) | me;
  if (node != me) {
    send_node(node, m);
    return true;
  }
  int b = take_buf(kTxPool);
  if (b < 0)
    return false;
  bufs[b].hdr = m;
  local_ready[local_tail % kTxBufs] = b;
  local_bytes[local_tail % kTxBufs] = 0;
  ++local_tail;
  poll_local();
  return true;
}

// ---- Handler table --------------------------------------------------------

NICEMU_HANDLER void h_nop(const niam_packet &) {}

NICEMU_HANDLER void h_round(const niam_packet &p) {
  uint32_t c = p.arg[0], r = p.arg[1], v = p.arg[2];
  if (r == coll.round && c == coll.c) { // coll.round: only in the rounds
    // The packet this node waits for, the usual case: the barrier step's
    // hot path. Combine, and send the next round's packet.
    uint32_t acc = combine(coll.op, coll.acc, v);
    coll.acc = acc;
    coll.round = ++r;
    if (r == rounds) {
      butterfly_done();
      return;
    }
    send_round(r, c, acc);
    if (early && round_flag[c & 1][r] == c) // that partner was ahead of us
      advance_rounds();
    return;
  }
  if (r >= kMaxRounds)
    return;
  round_val[c & 1][r] = v; // early: kept until this node gets there
  round_flag[c & 1][r] = c;
  ++early;
  if (coll.stage == Stage::Round)
    advance_rounds();
}

NICEMU_HANDLER void h_fold_in(const niam_packet &p) {
  fold_in_val[p.arg[0] & 1] = p.arg[1];
  fold_in_flag[p.arg[0] & 1] = p.arg[0];
  progress();
}

NICEMU_HANDLER void h_fold_out(const niam_packet &p) {
  fold_out_val[p.arg[0] & 1] = p.arg[1];
  fold_out_flag[p.arg[0] & 1] = p.arg[0];
  progress();
}

NICEMU_HANDLER void h_collective(const niam_packet &p) {
  start_collective(p.arg[0], p.arg[1]);
}

// Host: pages [virt, virt + 4 KiB x pages) are registered at bus address
// `bus` onwards.
NICEMU_HANDLER void h_map(const niam_packet &p) {
  uint32_t virt = p.arg[0], pages = p.arg[1], bus = p.arg[2];
  uint32_t first = virt / NIAM_PAGE_BYTES;
  if (virt % NIAM_PAGE_BYTES || bus % NIAM_PAGE_BYTES || first >= kPages ||
      pages > kPages - first) {
    count(NIAM_BOX_STAT_BAD);
    return;
  }
  for (uint32_t i = 0; i < pages; ++i)
    page_table[first + i] = (bus + i * NIAM_PAGE_BYTES) | kValid;
  dst_cache.known = false; // a refused range may be good now
}

// Host: a transfer from node arg[3] >> 16; forwarded when that is not us.
NICEMU_HANDLER void h_bcopy(const niam_packet &p) {
  ++issued;
  uint32_t src_node = p.arg[3] >> 16;
  if (src_node == me) {
    accept(p, me);
  } else if (src_node >= nodes) {
    count(NIAM_BOX_STAT_BAD);
    acknowledge(1);
  } else {
    niam_packet f = p;
    f.tag = NIAM_TAG;
    f.handler = NIAM_H_FORWARD;
    f.arg[3] = (p.arg[3] & 0xFFFF) | (me << 16);
    send_node(src_node, f);
  }
}

NICEMU_HANDLER void h_sync(const niam_packet &p) {
  sync_wanted = p.arg[0];
  check_sync();
}

NICEMU_HANDLER void h_forward(const niam_packet &p) {
  accept(p, p.arg[3] >> 16);
}

// Bulk packets are served by deliver(); one arriving any other way (a host
// request naming it) is malformed.
NICEMU_HANDLER void h_data(const niam_packet &) {
  count(NIAM_BOX_STAT_BAD);
}

NICEMU_HANDLER void h_ack(const niam_packet &p) {
  acknowledge(p.arg[0]);
}

// Host: a small host message. Sent at once unless earlier host messages or
// transfers are still on their way out, then queued behind them.
NICEMU_HANDLER void h_host_send(const niam_packet &p) {
  if ((p.arg[0] & 0xFFFF) >= nodes || q().job_tail - q().job_head == kJobs) {
    count(NIAM_BOX_STAT_BAD);
    return;
  }
  if (q().job_head == q().job_tail && !staging && send_small(p))
    return;
  Job &j = jobs[q().job_tail++ % kJobs];
  j.small = true;
  copy_packet(j.msg, p);
  pump();
}

// Host: a staged host message, sent like a bcopy whose chunks land in the
// destination's receive ring.
NICEMU_HANDLER void h_host_msg(const niam_packet &p) {
  niam_packet t{
      p.tag, NIAM_H_HOST_MSG, {p.arg[0], 0, p.arg[1], p.arg[2], p.arg[3], 0}};
  accept(t, me | NIAM_DATA_TO_HOST);
}

// Host: where its receive ring is.
NICEMU_HANDLER void h_ring(const niam_packet &p) {
  ring_bus = p.arg[0];
  landing_bus = p.arg[1];
  ring_slots = p.arg[2];
  ring_seq = 0;
}

// Small host messages are served by deliver_to_host(); one arriving as a
// host request is malformed.
NICEMU_HANDLER void h_host_am(const niam_packet &) {
  count(NIAM_BOX_STAT_BAD);
}

using Handler = void (*)(const niam_packet &);
constexpr Handler handlers[NIAM_HANDLERS] = {
    h_nop, h_round,     h_fold_in, h_fold_out, h_collective,
    h_map, h_bcopy,     h_sync,    h_forward,  h_data,
    h_ack, h_host_send, h_host_am, h_host_msg, h_ring};

// Handlers only the local host may name: from the network they would let
// another node map pages or issue transfers in this host's name. One bit
// per handler: a single test.
constexpr uint32_t kHostOnly = 1u << NIAM_H_COLLECTIVE | 1u << NIAM_H_MAP |
                               1u << NIAM_H_BCOPY | 1u << NIAM_H_SYNC |
                               1u << NIAM_H_HOST_SEND | 1u << NIAM_H_HOST_MSG |
                               1u << NIAM_H_RING;
static_assert(NIAM_HANDLERS <= 32, "kHostOnly has a bit per handler");

NIAM_HOT bool host_only(uint32_t handler) {
  return (kHostOnly >> handler) & 1u;
}

// Runs handler `index`; an index outside the table is counted, never called.
NICEMU_HANDLER void dispatch(const niam_packet &p) {
  if (p.handler >= NIAM_HANDLERS) {
    count(NIAM_BOX_STAT_UNKNOWN);
    return;
  }
  handlers[p.handler](p);
}

// ---- The event sources ----------------------------------------------------

// A new request number in the mailbox: fetch that slot of the host's ring.
// Only with room for the job it may become and for the DMAs it may cause.
// Measured: with dma_done, the host request budget (docs/niam.md).
// A request fetched while the engine is idle (so the queue is empty) lands
// in `request`, outside the queue: no slot to fill, none to look up when it
// is done. `q().direct_fetch` is its number, 0 when none is in flight.
niam_packet request;

NICEMU_HANDLER bool host_request() {
  uint32_t block = box[NIAM_BOX_BLOCK];
  bool idle = !q().dma_busy; // then the DMA queue is empty
  // job_room() and tx_room() in one test: both differences are negative
  // when there is room.
  int32_t jobs = int32_t(q().job_tail - q().job_head + q().fetching - kJobs);
  int32_t tx = int32_t(q().tx_tail - q().tx_head + 4 - kTxSlots - 1);
  if (block == 0 || (jobs & tx) >= 0 || (!idle && dma_free() < 4))
    return false; // retried next turn (the loop checks the DMA engine)
#if NIAM_RELIABLE
  // Room to keep what the request may send, and what the network's packets
  // make this NIC send meanwhile.
  if (kept_room() < kKeptReserve)
    return false;
#endif
  uint32_t next = q().requested + 1;
  q().requested = next;
  ++q().fetching;
  uint32_t slot =
      block + NIAM_BLOCK_RING + (next % NIAM_RING_SLOTS) * NIAM_PACKET_BYTES;
  if (idle) {
    q().direct_fetch = next;
    hdma_start(slot, &request, NIAM_PACKET_BYTES, dma_ctrl(Dma::Fetch));
    q().dma_busy = true;
    return true;
  }
  DmaSlot *d = dma_push(Dma::Fetch, slot, NIAM_PACKET_BYTES);
  d->arg = next;
  return true;
}

// A chunk, a delivery or a flag is done (the bulk paths, out of line).
__attribute__((noinline)) void transfer_done(const DmaSlot &slot, bool ok) {
  DmaSlot d = slot; // the copy is small next to the data
  if (d.kind == Dma::Stage) {
    staged(d, ok);
  } else if (d.kind == Dma::Deliver) {
    release(d.buf);
    if (d.arg)
      delivered(d);
  } else { // Flag
    send_ack(d.arg, 0);
  }
  pump();
}

// A fetched request: the tag must be the request's number (a stale slot is
// refused).
NIAM_HOT void fetched(const niam_packet &p, uint32_t seq, bool ok) {
  --q().fetching;
  count(NIAM_BOX_STAT_REQUESTS); // the host may now reuse the slot
  uint32_t h = p.handler;
  if (!ok || p.tag != seq)
    count(NIAM_BOX_STAT_BAD);
  else if (h >= NIAM_HANDLERS) // dispatch's check, inline
    count(NIAM_BOX_STAT_UNKNOWN);
  else
    handlers[h](p);
}

// Completes the transfer at the head of the queue (its line was pending).
NICEMU_HANDLER void dma_done() {
  fw::irq_clear(NICEMU_IRQ_HDMA);
  q().dma_busy = false; // the line rises only for a started transfer
  if (uint32_t seq = q().direct_fetch) { // not in the queue: its head waits
    // A failed fetch leaves `request` as it was, with an older number than
    // `seq`, so the tag check refuses it: no need to read the status, only
    // to clear a failure's mark before the next start.
    hdma_reg(NICEMU_HDMA_STATUS) = NICEMU_DMA_ERROR;
    q().direct_fetch = 0;
    if (q().dma_head != q().dma_tail) // what was queued meanwhile (dma_kick)
      dma_start(dma_queue[q().dma_head % kDmaSlots]);
    fetched(request, seq, true);
    return;
  }
  bool ok = !(hdma_reg(NICEMU_HDMA_STATUS) & NICEMU_DMA_ERROR);
  if (!ok)
    hdma_reg(NICEMU_HDMA_STATUS) = NICEMU_DMA_ERROR;
  DmaSlot &slot = dma_queue[q().dma_head % kDmaSlots];
  Dma kind = slot.kind;
  ++q().dma_head;
  dma_kick(); // the next transfer starts before this one is dealt with
  if (kind == Dma::Fetch) {
    // The request is read in place: the slot just freed is the last one a
    // push reuses (when all sixteen are taken), and a handler pushes at
    // most three. With fewer than four free it is copied first.
    const niam_packet *p = reinterpret_cast<const niam_packet *>(slot.words);
    niam_packet copy;
    if (dma_free() < 4) {
      copy_packet(copy, *p);
      p = &copy;
    }
    fetched(*p, slot.arg, ok);
    return;
  }
  if (kind != Dma::Write)
    transfer_done(slot, ok);
}

// A packet that could not be served at once (no room for its DMA or job)
// waits in its buffer; later packets wait behind it, so order is kept.
int rx_held = -1;
uint32_t rx_held_len;

__attribute__((noinline)) bool serve_held() {
  const niam_packet &p = bufs[rx_held].hdr;
  if (p.handler == NIAM_H_DATA || p.handler == NIAM_H_HOST_AM) {
    if (!deliver(rx_held, rx_held_len - kWireHeader))
      return false;
  } else if (p.handler == NIAM_H_FORWARD && !job_room()) {
    return false;
  } else {
    if (host_only(p.handler))
      count(NIAM_BOX_STAT_BAD);
    else
      dispatch(p);
    release(rx_held);
  }
  rx_held = -1;
  return true;
}

// Packets from the network that run their handler at once: a 32-byte AM
// for a NIC handler. Bulk data, host messages and forwarded transfers need
// engine room and go through serve_held(); so do unknown handlers and the
// host-only ones, which it counts and drops.
constexpr uint32_t kRunAtOnce =
    ((1u << NIAM_HANDLERS) - 1) & ~kHostOnly &
    ~(1u << NIAM_H_DATA | 1u << NIAM_H_HOST_AM | 1u << NIAM_H_FORWARD);

// A packet has landed (the Rx line was pending): re-arm on the next buffer,
// check the packet and serve it. Measured: the barrier step's budget runs
// from here to the next round's packet on the wire (docs/niam.md).
NICEMU_HANDLER void rx_packet() {
  fw::irq_clear(NICEMU_IRQ_RX);
  uint32_t st = rx_reg(NICEMU_RX_STATUS);
  if (!(st & NICEMU_RX_DONE))
    return;
  uint32_t len = rx_reg(NICEMU_RX_LENGTH);
  Buf *x = rx_armed; // armed: DONE is set only for an armed buffer
  const niam_packet &p = x->hdr;
  uint32_t h = p.handler;
  // The usual case first: a well-formed 32-byte AM for a NIC handler runs
  // from the buffer (dispatch's range check is the mask's), and the same
  // buffer is armed again with one RX_CTRL write (its address stays).
  uint32_t flaws = (st & (NICEMU_RX_CRC_ERROR | NICEMU_RX_TRUNCATED)) |
                   (p.tag ^ NIAM_TAG) | (len ^ kWireHeader);
  if (!flaws && h < NIAM_HANDLERS && ((kRunAtOnce >> h) & 1)) {
#if NIAM_RELIABLE
    if (rel_accept(x->rel, false))
#endif
      handlers[h](p);
    rx_reg(NICEMU_RX_CTRL) = NICEMU_RX_ARM | NICEMU_DMA_IRQ;
    return;
  }
  // Bulk data, host messages, forwards: the packet stays in its buffer, so
  // the next one is armed before it is served.
  rx_armed = nullptr;
  rx_rearm();
  bool damaged = st & (NICEMU_RX_CRC_ERROR | NICEMU_RX_TRUNCATED);
#if NIAM_RELIABLE
  // A header-only acknowledgement: the AM words are not this packet's.
  if (!damaged && len >= kRelBytes && ((x->rel[1] >> 16) & NIAM_REL_ACK_ONLY)) {
    rel_accept(x->rel, false);
    release(int(x->index));
    return;
  }
#endif
  if (damaged || p.tag != NIAM_TAG ||
      (h == NIAM_H_DATA ? len <= kWireHeader : len != kWireHeader)) {
    count(NIAM_BOX_STAT_BAD);
    release(int(x->index));
    return;
  }
#if NIAM_RELIABLE
  if (!rel_accept(x->rel, len > kWireHeader)) {
    release(int(x->index));
    return;
  }
#endif
  rx_held = int(x->index);
  rx_held_len = len;
  serve_held();
}

// What the loop has to do, from one read of IRQ_PENDING (the engines raise
// their lines when done; a host PIO raises HOST) and three words of card
// memory. Measured: with the loop's branch and `wait`, the idle turn's
// budget (docs/niam.md).
constexpr uint32_t kEngineLines =
    NICEMU_IRQ_HDMA | NICEMU_IRQ_TX | NICEMU_IRQ_RX;
constexpr uint32_t kHostWork = 1u << 16, kHeldWork = 1u << 17,
                   kLocalWork = 1u << 18;
static_assert(((kHostWork | kHeldWork | kLocalWork) &
               (kEngineLines | NICEMU_IRQ_HOST)) == 0,
              "work bits clear of the IRQ lines");

// Work that is not an IRQ line: a held packet that can be retried, local
// deliveries. Only a busy turn changes it, so the loop computes it after one.
uint32_t soft_work;

NIAM_HOT uint32_t soft_sources() {
  uint32_t work = 0;
  // A packet held for the receive ring waits for the host's PIO (a HOST
  // line); one held for engine room is retried at once.
  if (rx_held >= 0 && !(held_for_ring && ring_full()))
    work |= kHeldWork;
  if (local_head != local_tail)
    work |= kLocalWork;
  return work;
}

// The reliable mode's retransmission timer.
constexpr uint32_t kTimerLine = kReliable ? NICEMU_IRQ_TIMER : 0u;

NICEMU_HANDLER uint32_t ready_sources() {
  uint32_t pending = fw::irq_pending();
  uint32_t work =
      (pending & (kEngineLines | NICEMU_IRQ_HOST | kTimerLine)) | soft_work;
  if (box[NIAM_BOX_SEQ] != q().requested)
    work |= kHostWork;
  return work;
}

// ---- Start-up and the main loop -------------------------------------------

void setup_geometry() {
  me = fw::node_id();
  nodes = fw::node_count();
  pow2 = 1;
  rounds = 0;
  while (pow2 * 2 <= nodes && rounds < kMaxRounds) {
    pow2 *= 2;
    ++rounds;
  }
  // The butterfly's packets, prepared once: route, tag, handler and round.
  for (uint32_t r = 0; r < rounds; ++r) {
    set_route(partner[r], me ^ (1u << r));
    partner[r].am = {NIAM_TAG, NIAM_H_ROUND, {0, r, 0, 0, 0, 0}};
  }
  if (me >= pow2 || has_extra()) {
    set_route(partner[kMaxRounds], me >= pow2 ? me - pow2 : me + pow2);
    partner[kMaxRounds].am = {NIAM_TAG, NIAM_H_FOLD_IN, {}};
  }
}

} // namespace

int main() {
  for (int i = 0; i < kBufs; ++i)
    bufs[i].index = uint32_t(i);
  for (int i = 0; i < kRxBufs; ++i)
    bufs[i].next_rx = &bufs[(i + 1) % kRxBufs];
  rx_next = &bufs[0];
  setup_geometry();
#if NIAM_RELIABLE
  rel_setup();
#endif
  rx_reg(NICEMU_RX_SIZE) = kRxBytes; // every Rx buffer has this room
  rx_rearm();
  fw::irq_master(false);
  fw::irq_enable(kEngineLines | NICEMU_IRQ_HOST | kTimerLine);
  // Each engine is started with its IRQ bit, and a host PIO into the
  // mailbox raises HOST, so the loop sleeps whenever there is nothing to do
  // and `wait` returns at once while a line is pending.
  for (uint32_t turn = 0;;) {
    uint32_t work = ready_sources();
    if (!work) {
      // A transfer in flight may have been refused at its start, which
      // raises no line (hdma_start): look before sleeping on it.
      if (!q().dma_busy || !(hdma_reg(NICEMU_HDMA_STATUS) & NICEMU_DMA_ERROR)) {
        fw::sleep(); // `wait` returns at once if a line rose since the look
        continue;
      }
      work = NICEMU_IRQ_HDMA;
    }
    // A busy loop is alive: keep the watchdog (10 s on lanai4) quiet.
    if ((++turn & 0xFF) == 0)
      fw::watchdog_kick();
    // A host PIO: the mailbox's SEQ is read every turn anyway; the host may
    // also have freed ring entries a held packet waits for.
    if (work & NICEMU_IRQ_HOST) {
      fw::irq_clear(NICEMU_IRQ_HOST);
      if (rx_held >= 0)
        work |= kHeldWork;
    }
    // Tx first: a packet a handler sends then starts at once, not queued.
    if (work & NICEMU_IRQ_TX)
      tx_done();
    if (work & (NICEMU_IRQ_RX | kHeldWork)) {
      if (rx_held >= 0)
        serve_held();
      else
        rx_packet();
    }
    if (work & NICEMU_IRQ_HDMA)
      dma_done();
    if ((work & kHostWork) && !host_request())
      dma_check_refused(); // the request waits for room: the queues must move
    if (work & kLocalWork)
      poll_local();
    if (complete_due)
      complete();
#if NIAM_RELIABLE
    if (work & NICEMU_IRQ_TIMER)
      rel_tick();
    if (owed_count)
      flush_acks();
    if (bufs_freed) {
      bufs_freed = false;
      if (q().job_head != q().job_tail)
        pump(); // a Tx buffer was acknowledged: the next chunk may go
    }
#endif
    soft_work = soft_sources();
  }
}
