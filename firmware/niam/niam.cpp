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
// Expect (with the host programs tests/e2e/programs/niam_*.cpp): every
// collective completes on every rank with the same result; nothing printed.
#include "nicemu/fw.hpp"
#include "nicemu/niam_protocol.h"

namespace fw = nicemu::fw;

namespace {

// ---- Buffers --------------------------------------------------------------

// A packet buffer: route bytes end where the 32-byte AM header starts, so the
// header and the data stay word-aligned whatever the route length. Rx lands
// packets at `hdr`; the source stages bulk data at `data`.
struct Buf {
  uint8_t route[8];
  niam_packet hdr;
  uint8_t data[NIAM_PAGE_BYTES];
};
// Rx and Tx have separate pools: a node whose buffers were all waiting to
// send could otherwise refuse the packets its partner is blocked on.
constexpr int kRxBufs = 3, kTxBufs = 3, kBufs = kRxBufs + kTxBufs;
Buf bufs[kBufs];
bool buf_used[kBufs];

int take_buf(int first, int count) {
  for (int i = first; i < first + count; ++i)
    if (!buf_used[i]) {
      buf_used[i] = true;
      return i;
    }
  return -1;
}

int rx_armed = -1; // the buffer the Rx engine fills, or -1 when not armed

void rx_rearm() {
  if (rx_armed >= 0)
    return;
  rx_armed = take_buf(0, kRxBufs);
  if (rx_armed >= 0)
    fw::rx_arm(&bufs[rx_armed].hdr, NIAM_PACKET_BYTES + NIAM_PAGE_BYTES, true);
}

void pump();

void release(int b) {
  buf_used[b] = false;
  if (b < kRxBufs)
    rx_rearm(); // a packet may be waiting on the link for a buffer
}

// ---- Engines: a queue in front of Tx and of host DMA ----------------------

// A queued packet: `start` is the route, then the AM (and its data). Small
// packets live in the slot; bulk packets in buffer `buf`, freed when the
// engine has copied them.
struct TxSlot {
  uint8_t bytes[8 + NIAM_PACKET_BYTES];
  const uint8_t *start;
  uint32_t len, route_len;
  int buf;
};
constexpr uint32_t kTxSlots = 16;
TxSlot tx_queue[kTxSlots];
uint32_t tx_head, tx_tail; // head: next to start; tail: next free
bool tx_busy;

// A queued host DMA. Small transfers keep their card data in the entry
// because the engine reads card memory when the transfer ends, not when it
// starts; bulk ones point into a buffer.
enum class Dma : uint32_t { Fetch, Write, Stage, Deliver, Flag };
struct DmaSlot {
  uint32_t words[NIAM_PACKET_BYTES / 4];
  const void *card;
  uint32_t host, bytes;
  uint32_t arg; // Fetch: request number; Stage: node; Deliver: last; Flag:
                // issuer
  int buf;
  Dma kind;
};
constexpr uint32_t kDmaSlots = 16;
DmaSlot dma_queue[kDmaSlots];
uint32_t dma_head, dma_tail;
bool dma_busy;

uint32_t dma_free() {
  return kDmaSlots - (dma_tail - dma_head);
}

// ---- Geometry of the butterfly --------------------------------------------

constexpr uint32_t kMaxRounds = 16; // 65536 nodes
uint32_t me, nodes, pow2, rounds;   // pow2: the largest power of 2 <= nodes
uint8_t routes[kMaxRounds + 1][8];  // [round] partners, [kMaxRounds] fold
uint32_t route_lens[kMaxRounds + 1];

// Counters the host can read by PIO (mailbox words NIAM_BOX_STAT_*).
volatile uint32_t *box;

void count(uint32_t stat) {
  box[stat] = box[stat] + 1;
}

void tx_kick() {
  if (tx_busy || tx_head == tx_tail)
    return;
  TxSlot &s = tx_queue[tx_head % kTxSlots];
  // The engine copies the packet when it starts: the slot (and the bulk
  // buffer) is free at once.
  fw::tx_start(s.start, s.len, s.route_len, true);
  ++tx_head;
  tx_busy = true;
  if (s.buf >= 0)
    release(s.buf);
}

void poll_tx_until_idle();

TxSlot &tx_slot() {
  if (tx_tail - tx_head == kTxSlots)
    poll_tx_until_idle(); // rare: 16 slots, at most 3 of them bulk
  return tx_queue[tx_tail % kTxSlots];
}

// Queues a 32-byte AM over `route`.
void send_route(const uint8_t *route, uint32_t route_len,
                const niam_packet &p) {
  TxSlot &s = tx_slot();
  s.route_len = route_len;
  s.start = s.bytes + 8 - route_len;
  s.len = route_len + NIAM_PACKET_BYTES;
  s.buf = -1;
  memcpy(s.bytes + 8 - route_len, route, route_len);
  memcpy(s.bytes + 8, &p, sizeof p);
  ++tx_tail;
  tx_kick();
}

// Queues an AM over the cached butterfly route `slot`.
void send(uint32_t route_slot, uint32_t handler, uint32_t a0, uint32_t a1,
          uint32_t a2) {
  niam_packet p{NIAM_TAG, handler, {a0, a1, a2, 0, 0, 0}};
  send_route(routes[route_slot], route_lens[route_slot], p);
}

// The route to any node; the last one is kept, since a transfer sends all
// its packets to one node.
uint8_t last_route[8];
uint32_t last_route_node = ~0u, last_route_len;

const uint8_t *route_of(uint32_t node, uint32_t &len) {
  if (node != last_route_node) {
    last_route_len = fw::route_to(node, last_route, 8);
    last_route_node = node;
  }
  len = last_route_len;
  return last_route;
}

void send_node(uint32_t node, const niam_packet &p) {
  uint32_t len;
  const uint8_t *route = route_of(node, len);
  send_route(route, len, p);
}

// Queues bulk buffer `b` (header filled, `data` bytes after it) to `node`.
void send_buf(int b, uint32_t node, uint32_t data) {
  uint32_t len;
  const uint8_t *route = route_of(node, len);
  Buf &x = bufs[b];
  memcpy(x.route + 8 - len, route, len);
  TxSlot &s = tx_slot();
  s.route_len = len;
  s.start = x.route + 8 - len;
  s.len = len + NIAM_PACKET_BYTES + data;
  s.buf = b;
  ++tx_tail;
  tx_kick();
}

bool poll_tx() {
  if (!tx_busy || !(fw::tx_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    return false;
  tx_busy = false;
  tx_kick();
  pump(); // starting the next packet may have freed a Tx buffer
  return true;
}

void poll_tx_until_idle() {
  while (tx_busy)
    poll_tx();
}

bool to_host(Dma kind) {
  return kind == Dma::Write || kind == Dma::Deliver || kind == Dma::Flag;
}

void dma_kick() {
  if (dma_busy || dma_head == dma_tail)
    return;
  DmaSlot &d = dma_queue[dma_head % kDmaSlots];
  fw::hdma_start(d.host, d.card, d.bytes, to_host(d.kind), true);
  dma_busy = true;
}

// Callers keep enough room (see the dma_free() checks); a full queue here
// would be a firmware bug, so the transfer is counted and dropped.
DmaSlot *dma_push(Dma kind, uint32_t host, uint32_t bytes) {
  if (dma_tail - dma_head == kDmaSlots) {
    count(NIAM_BOX_STAT_BAD);
    return nullptr;
  }
  DmaSlot &d = dma_queue[dma_tail++ % kDmaSlots];
  d.kind = kind;
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
  uint32_t op, acc, round;
  Stage stage;
};
Collective coll;
uint32_t started; // collectives started on this node

// Per-step flags, set by the partners' AMs. A partner can be at most one
// collective ahead, so two slots (c & 1) suffice; a flag holds the number of
// the collective whose value is in the slot.
uint32_t round_flag[2][kMaxRounds], round_val[2][kMaxRounds];
uint32_t fold_in_flag[2], fold_in_val[2];
uint32_t fold_out_flag[2], fold_out_val[2];

uint32_t combine(uint32_t op, uint32_t a, uint32_t b) {
  int32_t x = static_cast<int32_t>(a), y = static_cast<int32_t>(b);
  switch (op) {
  case NIAM_OP_SUM:
    return a + b; // unsigned: wraps like the host's two's complement
  case NIAM_OP_MIN:
    return static_cast<uint32_t>(x < y ? x : y);
  case NIAM_OP_MAX:
    return static_cast<uint32_t>(x > y ? x : y);
  default:
    return 0;
  }
}

bool has_extra() {
  return me + pow2 < nodes;
}

void complete() {
  coll.stage = Stage::Idle;
  DmaSlot *d = dma_push(Dma::Write, box[NIAM_BOX_BLOCK] + NIAM_BLOCK_RESULT, 8);
  if (!d)
    return; // cannot happen: one collective at a time, one fetch at a time
  d->words[0] = coll.acc;
  d->words[1] = coll.c; // the host waits on this word
  dma_kick();
}

void step() {
  send(coll.round, NIAM_H_ROUND, coll.c, coll.round, coll.acc);
  coll.stage = Stage::Round;
}

void butterfly_done() {
  if (has_extra())
    send(kMaxRounds, NIAM_H_FOLD_OUT, coll.c, coll.acc, 0);
  complete();
}

void begin_rounds() {
  coll.round = 0;
  if (rounds == 0)
    butterfly_done();
  else
    step();
}

// Advances the running collective as far as the flags allow.
void progress() {
  uint32_t s = coll.c & 1;
  for (;;) {
    if (coll.stage == Stage::FoldIn && fold_in_flag[s] == coll.c) {
      coll.acc = combine(coll.op, coll.acc, fold_in_val[s]);
      begin_rounds();
    } else if (coll.stage == Stage::Round &&
               round_flag[s][coll.round] == coll.c) {
      coll.acc = combine(coll.op, coll.acc, round_val[s][coll.round]);
      if (++coll.round < rounds)
        step();
      else
        butterfly_done();
    } else if (coll.stage == Stage::FoldOut && fold_out_flag[s] == coll.c) {
      coll.acc = fold_out_val[s];
      complete();
    } else {
      return;
    }
  }
}

void start_collective(uint32_t op, uint32_t value) {
  if (coll.stage != Stage::Idle) {
    count(NIAM_BOX_STAT_BUSY); // the host library never does this
    return;
  }
  coll = {++started, op, value, 0, Stage::Idle};
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
uint32_t job_head, job_tail;
uint32_t fetching;  // request fetches in flight: each may become a job
uint32_t staging;   // Stage DMAs queued or running: chunks not sent yet
uint32_t host_sent; // staged host messages read (NIAM_BLOCK_SENT)

// Room for one more job, counting the requests being fetched.
bool job_room() {
  return job_tail - job_head + fetching < kJobs;
}

// Starts host DMAs of the next chunks into free Tx buffers. Chunks end at
// every page boundary of the source and of the destination.
bool send_small(const niam_packet &p);

// Room in the Tx queue for what one request or job may send. Without it the
// request waits: spinning on a Tx queue that the network backs up would
// stop this NIC from serving the Rx packets that its peers wait on.
bool tx_room() {
  return tx_tail - tx_head + 4 <= kTxSlots;
}

void pump() {
  while (job_head != job_tail) {
    Job &j = jobs[job_head % kJobs];
    if (j.small) {
      // Behind the chunks still being read, so host messages keep order.
      if (staging || !tx_room() || !send_small(j.msg))
        return;
      ++job_head;
      continue;
    }
    if (dma_free() < 4)
      return;
    int b = take_buf(kRxBufs, kTxBufs);
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
      ++job_head;
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
      job_tail - job_head == kJobs) {
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
  Job &j = jobs[job_tail++ % kJobs];
  j = {src,    dst,      bytes,    dst,   bytes, node,
       issuer, p.arg[4], p.arg[5], false, {}};
  pump();
}

// A bulk packet in buffer `b` with `data` bytes: DMA it into the host at the
// translated address. False when the host DMA queue has no room yet: the
// packet waits in its buffer.
bool deliver_to_host(int b, uint32_t data);

bool deliver(int b, uint32_t data) {
  if (dma_free() < 3)
    return false;
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
    memcpy(d->words, h.arg, sizeof h.arg);
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
  memcpy(e.arg, h.arg, sizeof e.arg);
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
  memcpy(d->words, &e, sizeof e);
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
  int b = take_buf(kRxBufs, kTxBufs);
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
  uint32_t c = p.arg[0], r = p.arg[1];
  if (r >= kMaxRounds)
    return;
  round_val[c & 1][r] = p.arg[2];
  round_flag[c & 1][r] = c;
  progress();
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
  if ((p.arg[0] & 0xFFFF) >= nodes || job_tail - job_head == kJobs) {
    count(NIAM_BOX_STAT_BAD);
    return;
  }
  if (job_head == job_tail && !staging && send_small(p))
    return;
  Job &j = jobs[job_tail++ % kJobs];
  j.small = true;
  j.msg = p;
  pump();
}

// Host: a staged host message, sent like a bcopy whose chunks land in the
// destination's receive ring.
NICEMU_HANDLER void h_host_msg(const niam_packet &p) {
  uint32_t args[6] = {p.arg[0], 0, p.arg[1], p.arg[2], p.arg[3], 0};
  niam_packet t{p.tag, NIAM_H_HOST_MSG, {}};
  memcpy(t.arg, args, sizeof args);
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
// another node map pages or issue transfers in this host's name.
bool host_only(uint32_t handler) {
  return handler == NIAM_H_COLLECTIVE || handler == NIAM_H_MAP ||
         handler == NIAM_H_BCOPY || handler == NIAM_H_SYNC ||
         handler == NIAM_H_HOST_SEND || handler == NIAM_H_HOST_MSG ||
         handler == NIAM_H_RING;
}

// Runs handler `index`; an index outside the table is counted, never called.
NICEMU_HANDLER void dispatch(const niam_packet &p) {
  if (p.handler >= NIAM_HANDLERS) {
    count(NIAM_BOX_STAT_UNKNOWN);
    return;
  }
  handlers[p.handler](p);
}

// ---- The four event sources -----------------------------------------------

uint32_t requested; // the last host request number seen in the mailbox

// A new request number in the mailbox: fetch that slot of the host's ring.
// Only with room for the job it may become and for the DMAs it may cause.
bool poll_host() {
  uint32_t seq = box[NIAM_BOX_SEQ];
  if (seq == requested || box[NIAM_BOX_BLOCK] == 0 || !job_room() ||
      dma_free() < 4 || !tx_room())
    return false;
  uint32_t next = requested + 1;
  uint32_t slot = box[NIAM_BOX_BLOCK] + NIAM_BLOCK_RING +
                  (next % NIAM_RING_SLOTS) * NIAM_PACKET_BYTES;
  DmaSlot *d = dma_push(Dma::Fetch, slot, NIAM_PACKET_BYTES);
  d->arg = requested = next;
  ++fetching;
  dma_kick();
  return true;
}

void fetched(const niam_packet &p, uint32_t seq, bool ok) {
  --fetching;
  // The tag must be the request's number: a stale slot is refused.
  count(NIAM_BOX_STAT_REQUESTS); // the host may now reuse the slot
  if (ok && p.tag == seq)
    dispatch(p);
  else
    count(NIAM_BOX_STAT_BAD);
}

// Completes the transfer at the head of the queue. Only the fields each kind
// needs are copied out before the next transfer starts (a whole-slot copy
// costs more than the polling loop turn), since completing one may queue
// others over this slot.
bool poll_dma() {
  if (!dma_busy || !(fw::hdma_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    return false;
  DmaSlot &slot = dma_queue[dma_head % kDmaSlots];
  bool ok = !(fw::hdma_status() & NICEMU_DMA_ERROR);
  Dma kind = slot.kind;
  dma_busy = false;
  if (kind == Dma::Fetch) {
    niam_packet p;
    memcpy(&p, slot.words, sizeof p);
    uint32_t seq = slot.arg;
    ++dma_head;
    dma_kick(); // the request is copied: let the next transfer start
    fetched(p, seq, ok);
    return true;
  }
  if (kind == Dma::Write) {
    ++dma_head;
    dma_kick();
    return true;
  }
  DmaSlot d = slot; // bulk paths: the copy is small next to the data
  ++dma_head;
  dma_kick();
  if (kind == Dma::Stage) {
    staged(d, ok);
  } else if (kind == Dma::Deliver) {
    release(d.buf);
    if (d.arg)
      delivered(d);
  } else { // Flag
    send_ack(d.arg, 0);
  }
  pump();
  return true;
}

// A packet that could not be served at once (no room for its DMA or job)
// waits in its buffer; later packets wait behind it, so order is kept.
int rx_held = -1;
uint32_t rx_held_len;

bool serve_held() {
  const niam_packet &p = bufs[rx_held].hdr;
  if (p.handler == NIAM_H_DATA || p.handler == NIAM_H_HOST_AM) {
    if (!deliver(rx_held, rx_held_len - NIAM_PACKET_BYTES))
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

bool well_formed(uint32_t st, uint32_t len, const niam_packet &p) {
  if ((st & (NICEMU_RX_CRC_ERROR | NICEMU_RX_TRUNCATED)) || p.tag != NIAM_TAG)
    return false;
  if (p.handler == NIAM_H_DATA)
    return len > NIAM_PACKET_BYTES;
  return len == NIAM_PACKET_BYTES;
}

bool poll_rx() {
  if (rx_held >= 0)
    return serve_held();
  if (rx_armed < 0)
    return false;
  uint32_t st = fw::rx_status();
  if (!(st & NICEMU_RX_DONE))
    return false;
  uint32_t len = fw::rx_length();
  int b = rx_armed;
  rx_armed = -1;
  rx_rearm(); // the next packet can land while this one is served
  if (!well_formed(st, len, bufs[b].hdr)) {
    count(NIAM_BOX_STAT_BAD);
    release(b);
    return true;
  }
  rx_held = b;
  rx_held_len = len;
  serve_held();
  return true;
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
  for (uint32_t r = 0; r < rounds; ++r)
    route_lens[r] = fw::route_to(me ^ (1u << r), routes[r], 8);
  if (me >= pow2 || has_extra()) {
    uint32_t partner = me >= pow2 ? me - pow2 : me + pow2;
    route_lens[kMaxRounds] = fw::route_to(partner, routes[kMaxRounds], 8);
  }
}

// The host's PIO writes to the mailbox raise NICEMU_IRQ_HOST, so the NIC
// sleeps whenever nothing is pending and wakes for its host or its engines.
constexpr uint32_t kEngineLines =
    NICEMU_IRQ_HOST | NICEMU_IRQ_HDMA | NICEMU_IRQ_TX | NICEMU_IRQ_RX;

// Sleeps until the host or an engine has something. Pending lines
// are cleared before the engines are looked at, so an event that lands
// after the look makes `wait` return at once.
void idle() {
  fw::irq_clear(kEngineLines);
  // A packet held for the receive ring waits for the host's PIO (a HOST
  // interrupt); one held for engine room is retried at once.
  bool held = rx_held >= 0 && !(held_for_ring && ring_full());
  if (box[NIAM_BOX_SEQ] != requested || held ||
      (rx_armed >= 0 && (fw::rx_status() & NICEMU_RX_DONE)))
    return;
  if (tx_busy && (fw::tx_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    return;
  if (dma_busy && (fw::hdma_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    return;
  fw::sleep();
}

} // namespace

int main() {
  box = fw::mailbox();
  setup_geometry();
  rx_rearm();
  fw::irq_master(false);
  fw::irq_enable(kEngineLines);
  for (uint32_t turn = 0;; ++turn) {
    // A spinning loop is alive: keep the watchdog (10 s on lanai4) quiet.
    if ((turn & 0xFF) == 0)
      fw::watchdog_kick();
    bool busy = poll_host();
    busy |= poll_rx();
    busy |= poll_tx();
    busy |= poll_dma();
    busy |= poll_local();
    if (!busy)
      idle();
  }
}
