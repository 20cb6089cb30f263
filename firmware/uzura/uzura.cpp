// uzura: the protocol firmware of the UZURA card (docs/uzura.md). The
// FPGA's engine fetches the host's commands, moves the data and places
// arrivals; this firmware decides what it does: it takes the host's
// endpoint, turns each command into a work request (WR) for the engine,
// and answers each WR's end with a completion for the host.
//
// Per message it runs once (the command and its completion); never per
// frame: segmentation, translation, DMA and placement are the engine's.
//
// Expect (with tests/e2e/programs/uzura_basic.cpp): nothing printed.
#include "nicemu/fw.hpp"
#include "nicemu/uzura_card.h"

namespace fw = nicemu::fw;

namespace {

// Measured one by one (`nicemu run --report cycles`): a command becomes a
// WR (run_command), a WR's end becomes a completion (wr_done); on_event
// is the dispatch around them.
NICEMU_HANDLER void on_event(const uint32_t *event);
NICEMU_HANDLER void run_command(uint32_t seq);
NICEMU_HANDLER void wr_done(uint32_t msg, uint32_t status);

volatile uint32_t &engine(uint32_t reg) {
  return fw::reg(NICEMU_ENGINE_BASE, reg);
}

// ---- Card memory the engine uses ------------------------------------------

constexpr uint32_t kEvents = 256;     // event ring entries
constexpr uint32_t kMaxCommands = 64; // host command ring entries, at most
constexpr uint32_t kOps = 256;        // WRs in flight

alignas(16) uint32_t events[kEvents][UZ_EVENT_BYTES / 4];
alignas(64) uint8_t commands[kMaxCommands][UZ_CMD_BYTES];
alignas(64) uz_endpoint endpoint;
alignas(64) uz_wr wr;
alignas(16) uz_datatype datatypes[UZ_MAX_DATATYPES];

// What the host is owed when a WR ends: the op of command `seq` lives in
// ops[seq % kOps]. A command whose slot is still busy waits (with every
// later one: commands run in order) until that op ends.
struct Op {
  uint64_t cookie;
  uint32_t seq;
  bool busy, silent;
};
Op ops[kOps];
uint32_t landed; // the newest command the engine has fetched
uint32_t ran;    // the newest command run

constexpr uint32_t kSetupMsg = 0xFFFFFFFFu; // the endpoint's FETCH
uint32_t cmd_mask;   // command ring entries - 1 (a power of two)
uint32_t node_total; // nodes in the cluster, read once at boot

void submit() {
  engine(NICEMU_ENGINE_SUBMIT) = uint32_t(reinterpret_cast<uintptr_t>(&wr));
}

// The WRs below fill only the fields the engine reads for their op.
void complete(uint64_t cookie, uint32_t status) {
  wr.op = UZ_WR_COMPLETE;
  wr.remote = cookie;
  wr.imm = status;
  submit();
}

bool power_of_two(uint32_t n) {
  return n && !(n & (n - 1));
}

// ---- The endpoint ----------------------------------------------------------

void fetch_endpoint() {
  wr.op = UZ_WR_FETCH;
  wr.len = UZ_ENDPOINT_BYTES;
  wr.msg = kSetupMsg;
  wr.host = engine(NICEMU_ENGINE_ENDPOINT);
  wr.card = uint32_t(reinterpret_cast<uintptr_t>(&endpoint));
  submit();
}

// The endpoint block has landed: give the engine its rings. A block the
// card cannot use leaves the status at 0 (the host library times out).
void take_endpoint(uint32_t status) {
  const uz_endpoint &e = endpoint;
  if (status != UZ_S_OK || !power_of_two(e.cmd_entries) ||
      e.cmd_entries > kMaxCommands || !power_of_two(e.cq_entries) ||
      !power_of_two(e.rx_entries) ||
      (e.overflow_entries && !power_of_two(e.overflow_entries)))
    return;
  cmd_mask = e.cmd_entries - 1;
  const uint32_t rings[8] = {e.cmd_ring,   e.cmd_entries,     e.cq_ring,
                             e.cq_entries, e.rx_ring,         e.rx_entries,
                             e.overflow,   e.overflow_entries};
  for (uint32_t i = 0; i < 8; ++i)
    engine(NICEMU_ENGINE_RINGS + 4 * i) = rings[i];
  engine(NICEMU_ENGINE_NOTIFY) = e.notify_in | (e.notify_out << 8);
  engine(NICEMU_ENGINE_HOST_STATUS) = UZ_STATUS_ALIVE | UZ_STATUS_READY;
}

// ---- Commands --------------------------------------------------------------

// Command `seq`, in the engine's command area: checked, turned into a WR.
NICEMU_HANDLER void run_command(uint32_t seq) {
  const uz_cmd &c =
      *reinterpret_cast<const uz_cmd *>(commands[(seq - 1) & cmd_mask]);
  Op &op = ops[seq % kOps];
  uint32_t status = UZ_S_OK;
  wr.flags = c.flags;
  wr.node = c.node;
  wr.len = c.len;
  wr.count = c.count;
  wr.local = c.local;
  wr.remote = c.remote;
  wr.tag = c.tag;
  wr.imm = c.imm;
  wr.msg = seq;
  wr.local_type = c.local_type;
  wr.remote_type = c.remote_type;
  uint64_t cookie = c.cookie;
  bool silent = c.flags & UZ_F_SILENT;
  switch (c.op) {
  case UZ_OP_SEND:
  case UZ_OP_WRITE:
  case UZ_OP_READ:
    if (c.node >= node_total) // (this node itself: the engine loops it back)
      status = UZ_S_BAD_NODE;
    else if (c.op == UZ_OP_SEND && c.len > UZ_EAGER_MAX)
      status = UZ_S_TOO_LONG;
    wr.op = c.op == UZ_OP_SEND    ? UZ_WR_SEND
            : c.op == UZ_OP_WRITE ? UZ_WR_WRITE
                                  : UZ_WR_READ;
    break;
  case UZ_OP_DATATYPE:
    // A layout for later commands: fetched into the engine's table.
    if (c.tag == 0 || c.tag >= UZ_MAX_DATATYPES || c.local >> 32) {
      status = UZ_S_BAD_COMMAND;
      break;
    }
    wr.op = UZ_WR_FETCH;
    wr.host = uint32_t(c.local);
    wr.card = uint32_t(reinterpret_cast<uintptr_t>(&datatypes[c.tag]));
    wr.len = sizeof(uz_datatype);
    break;
  case UZ_OP_MAP:
    // Translation entries into the SRAM, by DMA from the host's table.
    if (c.count == 0 || c.remote >= UZ_SRAM_ENTRIES ||
        c.count > UZ_SRAM_ENTRIES - c.remote || c.local >> 32) {
      status = UZ_S_BAD_COMMAND;
      break;
    }
    wr.op = UZ_WR_FETCH;
    wr.host = uint32_t(c.local);
    wr.card = UZ_HOST_SRAM + uint32_t(c.remote) * 8;
    wr.len = c.count * 8;
    break;
  case UZ_OP_NOP:
    engine(NICEMU_ENGINE_CMD_DONE) = seq;
    if (!silent)
      complete(cookie, UZ_S_OK);
    return;
  default:
    status = UZ_S_BAD_COMMAND;
  }
  engine(NICEMU_ENGINE_CMD_DONE) = seq; // its slot is free for the next
  if (status != UZ_S_OK) {
    complete(cookie, status);
    return;
  }
  op = {cookie, seq, true, silent};
  submit();
}

void run_commands() {
  while (ran != landed && !ops[(ran + 1) % kOps].busy)
    run_command(++ran);
}

// A WR ended: the host hears of it unless it asked not to (and it worked).
NICEMU_HANDLER void wr_done(uint32_t msg, uint32_t status) {
  if (msg == kSetupMsg) {
    take_endpoint(status);
    return;
  }
  Op &op = ops[msg % kOps];
  if (!op.busy || op.seq != msg)
    return; // not ours (a late answer): the engine counted it
  op.busy = false;
  if (!op.silent || status != UZ_S_OK)
    complete(op.cookie, status);
  run_commands(); // one may have waited for this slot
}

NICEMU_HANDLER void on_event(const uint32_t *event) {
  switch (event[0]) {
  case UZ_EV_COMMAND:
    landed = event[1];
    run_commands();
    break;
  case UZ_EV_WR_DONE:
    wr_done(event[1], event[2]);
    break;
  case UZ_EV_DOORBELL:
    if ((event[3] & 0xFF) == UZ_QUEUE_SETUP)
      fetch_endpoint();
    break;
  default: // UZ_EV_REFUSED: the engine counted it
    break;
  }
}

} // namespace

int main() {
  node_total = fw::node_count();
  engine(NICEMU_ENGINE_EVENTS) = uint32_t(reinterpret_cast<uintptr_t>(events));
  engine(NICEMU_ENGINE_EVENT_ENTRIES) = kEvents;
  engine(NICEMU_ENGINE_CMD_AREA) =
      uint32_t(reinterpret_cast<uintptr_t>(commands));
  engine(NICEMU_ENGINE_DATATYPES) =
      uint32_t(reinterpret_cast<uintptr_t>(datatypes));
  fw::irq_master(false);
  fw::irq_enable(NICEMU_IRQ_ENGINE);
  engine(NICEMU_ENGINE_HOST_STATUS) = UZ_STATUS_ALIVE;
  uint32_t freed = 0;
  for (uint32_t turn = 0;; ++turn) {
    if ((turn & 0xFF) == 0)
      fw::watchdog_kick();
    fw::irq_clear(NICEMU_IRQ_ENGINE);
    uint32_t count = engine(NICEMU_ENGINE_EVENT_COUNT);
    if (count == freed) {
      fw::sleep(); // the engine raises its line with each event
      continue;
    }
    while (freed != count) {
      on_event(events[freed % kEvents]);
      engine(NICEMU_ENGINE_EVENT_FREED) = ++freed;
    }
  }
}
