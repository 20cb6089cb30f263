// niam: NI Active Messages firmware for lanai4. Handlers run on the NIC; the
// host posts requests through the mailbox and waits on words the NIC writes
// into its memory by DMA. Implemented: the polling main loop, the handler
// table, the barrier (also fuzzy) and int32 all-reduce (sum, min, max) over a
// butterfly, for any number of nodes. docs/niam.md is the protocol.
//
// Expect (with the host programs tests/e2e/programs/niam_*.cpp): every
// collective completes on every rank with the same result; nothing printed.
#include "niam_protocol.h"
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

namespace {

// ---- Engines: a queue in front of Tx and of host DMA ----------------------

// A queued packet: route bytes end at `body`, so the 32-byte AM stays
// word-aligned whatever the route length.
struct TxSlot {
  uint8_t bytes[8 + NIAM_PACKET_BYTES];
  uint32_t route_len;
};
constexpr uint32_t kTxSlots = 8;
TxSlot tx_queue[kTxSlots];
uint32_t tx_head, tx_tail; // head: next to start; tail: next free
bool tx_busy;

// A queued host DMA. Its card buffer lives in the entry because the engine
// reads card memory when the transfer ends, not when it starts.
enum class Dma : uint32_t { Fetch, Result };
struct DmaSlot {
  uint32_t words[NIAM_PACKET_BYTES / 4];
  uint32_t host, bytes;
  uint32_t seq; // Fetch: the request number expected in the tag
  Dma kind;
};
constexpr uint32_t kDmaSlots = 4;
DmaSlot dma_queue[kDmaSlots];
uint32_t dma_head, dma_tail;
bool dma_busy;

// Two Rx buffers: the engine fills one while a handler reads the other.
niam_packet rx_buf[2];
uint32_t rx_cur;

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
  // The engine copies the packet when it starts: the slot is free at once.
  fw::tx_start(s.bytes + 8 - s.route_len, s.route_len + NIAM_PACKET_BYTES,
               s.route_len, true);
  ++tx_head;
  tx_busy = true;
}

void poll_tx_until_idle();

// Queues an AM to `node` over the cached route `slot`.
void send(uint32_t route_slot, uint32_t handler, uint32_t a0, uint32_t a1,
          uint32_t a2) {
  if (tx_tail - tx_head == kTxSlots)
    poll_tx_until_idle(); // cannot happen with collectives alone
  TxSlot &s = tx_queue[tx_tail % kTxSlots];
  s.route_len = route_lens[route_slot];
  memcpy(s.bytes + 8 - s.route_len, routes[route_slot], s.route_len);
  uint32_t p[8] = {NIAM_TAG, handler, a0, a1, a2, 0, 0, 0};
  memcpy(s.bytes + 8, p, sizeof p);
  ++tx_tail;
  tx_kick();
}

bool poll_tx() {
  if (!tx_busy || !(fw::tx_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    return false;
  tx_busy = false;
  tx_kick();
  return true;
}

void poll_tx_until_idle() {
  while (tx_busy)
    poll_tx();
}

void dma_kick() {
  if (dma_busy || dma_head == dma_tail)
    return;
  DmaSlot &d = dma_queue[dma_head % kDmaSlots];
  fw::hdma_start(d.host, d.words, d.bytes, d.kind == Dma::Result, true);
  dma_busy = true;
}

DmaSlot *dma_push(Dma kind, uint32_t host, uint32_t bytes) {
  if (dma_tail - dma_head == kDmaSlots)
    return nullptr;
  DmaSlot &d = dma_queue[dma_tail++ % kDmaSlots];
  d.kind = kind;
  d.host = host;
  d.bytes = bytes;
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
  DmaSlot *d =
      dma_push(Dma::Result, box[NIAM_BOX_BLOCK] + NIAM_BLOCK_RESULT, 8);
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

// ---- Handler table --------------------------------------------------------

void h_nop(const niam_packet &) {}

void h_round(const niam_packet &p) {
  uint32_t c = p.arg[0], r = p.arg[1];
  if (r >= kMaxRounds)
    return;
  round_val[c & 1][r] = p.arg[2];
  round_flag[c & 1][r] = c;
  progress();
}

void h_fold_in(const niam_packet &p) {
  fold_in_val[p.arg[0] & 1] = p.arg[1];
  fold_in_flag[p.arg[0] & 1] = p.arg[0];
  progress();
}

void h_fold_out(const niam_packet &p) {
  fold_out_val[p.arg[0] & 1] = p.arg[1];
  fold_out_flag[p.arg[0] & 1] = p.arg[0];
  progress();
}

void h_collective(const niam_packet &p) {
  start_collective(p.arg[0], p.arg[1]);
}

using Handler = void (*)(const niam_packet &);
constexpr Handler handlers[NIAM_HANDLERS] = {h_nop, h_round, h_fold_in,
                                             h_fold_out, h_collective};

// Runs handler `index`; an index outside the table is counted, never called.
void dispatch(const niam_packet &p) {
  if (p.handler >= NIAM_HANDLERS) {
    count(NIAM_BOX_STAT_UNKNOWN);
    return;
  }
  handlers[p.handler](p);
}

// ---- The four event sources -----------------------------------------------

uint32_t requested; // the last host request number seen in the mailbox

// A new request number in the mailbox: fetch that slot of the host's ring.
bool poll_host() {
  uint32_t seq = box[NIAM_BOX_SEQ];
  if (seq == requested || box[NIAM_BOX_BLOCK] == 0)
    return false;
  uint32_t next = requested + 1;
  uint32_t slot = box[NIAM_BOX_BLOCK] + NIAM_BLOCK_RING +
                  (next % NIAM_RING_SLOTS) * NIAM_PACKET_BYTES;
  DmaSlot *d = dma_push(Dma::Fetch, slot, NIAM_PACKET_BYTES);
  if (!d)
    return false; // the DMA queue is full: try again on a later turn
  d->seq = requested = next;
  dma_kick();
  return true;
}

bool poll_dma() {
  if (!dma_busy || !(fw::hdma_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)))
    return false;
  DmaSlot &d = dma_queue[dma_head++ % kDmaSlots];
  bool ok = !(fw::hdma_status() & NICEMU_DMA_ERROR);
  dma_busy = false;
  if (d.kind == Dma::Fetch) {
    niam_packet p;
    memcpy(&p, d.words, sizeof p);
    dma_kick(); // the slot is copied: let the next transfer start
    // The tag must be the request's number: a stale slot is refused.
    count(NIAM_BOX_STAT_REQUESTS); // the host may now reuse the slot
    if (ok && p.tag == d.seq)
      dispatch(p);
    else
      count(NIAM_BOX_STAT_BAD);
  } else {
    dma_kick();
  }
  return true;
}

bool poll_rx() {
  uint32_t st = fw::rx_status();
  if (!(st & NICEMU_RX_DONE))
    return false;
  uint32_t len = fw::rx_length();
  niam_packet &p = rx_buf[rx_cur];
  rx_cur ^= 1;
  fw::rx_arm(&rx_buf[rx_cur], sizeof(niam_packet), true);
  if ((st & (NICEMU_RX_CRC_ERROR | NICEMU_RX_TRUNCATED)) ||
      len != NIAM_PACKET_BYTES || p.tag != NIAM_TAG)
    count(NIAM_BOX_STAT_BAD);
  else
    dispatch(p);
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

constexpr uint32_t kEngineLines =
    NICEMU_IRQ_TIMER | NICEMU_IRQ_HDMA | NICEMU_IRQ_TX | NICEMU_IRQ_RX;

// Sleeps until an engine or the mailbox timer has something. Pending lines
// are cleared before the engines are looked at, so an event that lands
// after the look makes `wait` return at once.
void idle() {
  fw::irq_clear(kEngineLines);
  if (box[NIAM_BOX_SEQ] != requested || (fw::rx_status() & NICEMU_RX_DONE))
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
  fw::rx_arm(&rx_buf[0], sizeof(niam_packet), true);
  fw::irq_master(false);
  fw::irq_enable(kEngineLines);
  // A host's PIO write raises no interrupt. Until a host registers its
  // request block we sleep and look at the mailbox every 10 us; from then on
  // the loop polls without sleeping, so a request is seen within one turn.
  uint32_t period = fw::clock_hz() / 100000;
  fw::timer_start(fw::cycles() + period, period);
  bool host_attached = false;
  for (uint32_t turn = 0;; ++turn) {
    // A spinning loop is alive: keep the watchdog (10 s on lanai4) quiet.
    if ((turn & 0xFF) == 0)
      fw::watchdog_kick();
    bool busy = poll_host();
    busy |= poll_rx();
    busy |= poll_tx();
    busy |= poll_dma();
    if (!host_attached && box[NIAM_BOX_BLOCK] != 0) {
      host_attached = true;
      fw::timer_stop();
    }
    if (!busy && !host_attached)
      idle();
  }
}
