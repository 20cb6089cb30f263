// nicemu host library (C++): what a host program uses to drive its node's
// emulated NIC. The program is started by `nicemu run -n N -- ./prog`; every
// call is charged its host-bus cost on the virtual clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace nicemu::host {

// Why a call failed, for programs that react to it. The values are the C
// API's status codes (NICEMU_EINVAL and the others in nicemu/host.h).
enum class ErrorCode : int {
  BadArgument = -1, // a bad value, memory not from alloc, an unknown address
  OutOfMemory = -2, // registered memory or NIC registration slots used up
  NotRun = -3,      // not started by `nicemu run` (or no channel to it)
  Stopped = -4,     // the cluster is stopping; every later call fails too
  State = -5,       // a call out of order (e.g. barrier_wait without post)
  Failure = -6,     // anything else: what() says what happened
};

// Thrown when a call cannot be carried out: bad arguments, the program was
// not started by `nicemu run`, or the cluster is stopping. what() is the
// message, code() the reason.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &what, ErrorCode code = ErrorCode::Failure)
      : std::runtime_error(what), code_(code) {}
  explicit Error(const char *what, ErrorCode code = ErrorCode::Failure)
      : std::runtime_error(what), code_(code) {}

  ErrorCode code() const noexcept { return code_; }

private:
  ErrorCode code_;
};

// The nicemu release this library belongs to, e.g. "0.1.0".
const char *version();

// This process's rank (its node number) and the number of ranks.
uint32_t rank();
uint32_t size();
// With several processes per node (nicemu run --procs-per-node N, DIMMnet
// only), rank r drives node r / N as that node's process r % N: the node,
// the index and N. With one process per node: rank(), 0 and 1.
uint32_t node();
uint32_t node_process();
uint32_t processes_per_node();

// The virtual clock, in picoseconds and in microseconds.
uint64_t now_ps();
double now_us();
// Spends `ps` of virtual time computing (the host's own work). A duration
// that would pass the end of virtual time (2^63 ps, about 106.7 days)
// throws Error (ErrorCode::BadArgument) and leaves the clock where it was.
void compute(uint64_t ps);

// Registered memory: NIC-reachable buffers from the host's arena, aligned to
// 64 bytes. Freed when the program ends.
void *alloc(size_t bytes);
// The bus address the NIC's DMA engines use for `p` (inside alloc'd memory).
uint32_t bus_address(const void *p);

// Programmed I/O to card memory: one 32-bit word, charged the model's PIO
// cost. `card_addr` must be word-aligned card memory.
void pio_write(uint32_t card_addr, uint32_t value);
uint32_t pio_read(uint32_t card_addr);
// The card address of the host mailbox (the last page of card data memory,
// where firmware expects host requests).
uint32_t mailbox();

// Waits until (*word & mask) == expected, where `word` is in alloc'd memory
// that the NIC writes by DMA; returns the word. The host notices the change
// one poll after the write lands.
uint32_t wait_word(const volatile uint32_t *word, uint32_t mask,
                   uint32_t expected);
// As wait_word, but gives up at the virtual time `deadline_ps` (absolute,
// like now_ps()). True if the word matched by the deadline (the host
// notices it one poll after the write lands, as with wait_word); false if
// not, and the call then returns at the deadline exactly (at once if the
// deadline has passed). `value_out`, if not null, receives the word as the
// host saw it last. UINT64_MAX is no deadline; any other deadline past the
// end of virtual time (2^63 ps) throws Error (ErrorCode::BadArgument).
bool wait_word_until(const volatile uint32_t *word, uint32_t mask,
                     uint32_t expected, uint64_t deadline_ps,
                     uint32_t *value_out = nullptr);
// As wait_word, but the host sleeps until the card interrupts it (a card
// that writes the word and raises an interrupt, as UZURA can): it wakes the
// model's host.interrupt after the write lands instead of one poll later.
uint32_t wait_interrupt(const volatile uint32_t *word, uint32_t mask,
                        uint32_t expected);

// Rings doorbell FIFO `fifo` of the NIC with `value` (on comet, the
// physical address of a posted descriptor; the firmware pops it), charged
// the model's doorbell write. A full FIFO holds the write, as a PCI retry
// does, until the firmware pops an entry of it; the call returns then. A
// FIFO the NIC does not have (or a model without doorbells) throws Error.
void doorbell(uint32_t fifo, uint32_t value);

} // namespace nicemu::host

// ---- NI Active Messages (needs the niam firmware: --firmware niam.img) ----
// Collectives run on the NICs (docs/niam.md): the host posts a request with
// one PIO write and waits on a word the NIC writes into its memory. Every
// rank must call the same collectives in the same order. One collective at a
// time: posting a second before the first completed throws Error.
namespace nicemu::host {

// Returns when every rank has entered the barrier.
void barrier();
// Fuzzy barrier: barrier_post() enters it and returns at once;
// barrier_wait() returns when every rank has entered it.
void barrier_post();
void barrier_wait();

// The sum (wrapping), minimum or maximum of `value` over all ranks; every
// rank gets the same result.
int32_t allreduce_sum(int32_t value);
int32_t allreduce_min(int32_t value);
int32_t allreduce_max(int32_t value);

// Posts a raw request to the local NIC's handler `handler` (an index into
// the firmware's handler table, niam_protocol.h) with six argument words;
// no completion. For new primitives and tests.
void am_request(uint32_t handler, const uint32_t (&args)[6]);

// The niam firmware's counters, read by PIO: AMs naming an unknown handler
// (dropped, never called) and malformed packets or requests.
uint32_t am_unknown_handlers();
uint32_t am_bad_packets();

} // namespace nicemu::host

// ---- Remote memory transfers (NI-AM; docs/niam.md) ----
// Addresses name memory from am_alloc. A pointer stands for its offset in
// the registered arena, and the same offset on another node names the
// allocation made there at the same point: when every rank makes the same
// alloc/am_alloc calls in the same order (the NI-AM state takes 320 bytes
// at the first NI-AM call), a pointer to a local buffer also names the
// matching buffer on every other rank. Sizes and addresses are multiples of
// 4 bytes. Transfers are split at 4 KB page boundaries and move at most
// 64 MB of address space. Errors the host can see (a node out of range, an
// address outside this process's am_alloc'd memory, unaligned or empty
// transfers) throw Error; the NICs refuse, count and acknowledge as failed
// anything their page tables do not map, and write nothing of it.
namespace nicemu::host {

// Like alloc, but page-aligned, whole pages, and entered into the local
// NIC's page table, so other nodes may read and write it. Call barrier()
// after the ranks' am_allocs before another node uses the memory.
void *am_alloc(size_t bytes);

// Copies `bytes` from `src` on node `src_node` to `dst` on node `dst_node`.
// Returns once the local NIC has the request; the data moves later (sync).
// Any node may issue it: when `src_node` is another node the request is
// forwarded to its NIC.
void bcopy(uint32_t src_node, const void *src, uint32_t dst_node, void *dst,
           size_t bytes);
// As bcopy; then, once the data is in place, the destination NIC writes
// `value` into `*flag` (a word of dst_node's memory, named like `dst`).
void bcopy_notify(uint32_t src_node, const void *src, uint32_t dst_node,
                  void *dst, size_t bytes, volatile uint32_t *flag,
                  uint32_t value = 1);
// Waits until every transfer this node issued has been acknowledged;
// returns how many of them a NIC refused, since the program started.
uint32_t sync();

// Addresses this NIC refused (transfers, counted once each), read by PIO.
uint32_t am_protection_errors();

// The NIC virtual address of `p` (its offset in the registered arena), for
// raw requests (am_request with the arguments of niam_protocol.h).
uint32_t am_address(const void *p);

} // namespace nicemu::host

// ---- Active Messages with host handlers (NI-AM host messages) ----
// Classic Active Messages: a message names a handler function that runs on
// the destination *host*, inside that host's am_poll() or am_wait() (or
// while it blocks in a barrier, reduction, sync or send), with the sender's
// rank. Messages from one sender arrive in the order they were sent; none is
// lost: when a receiver does not poll, its NIC holds the next message and
// the network backs up. Handlers are functions of this program or of a
// library it loaded; a handler travels as its offset in that object, so
// ranks that load it at different addresses (ASLR) agree, as long as every
// rank runs the same executable. A message naming no code here is dropped
// and counted (am_dropped_messages), never called.
namespace nicemu::host {

using AmHandler = void (*)(uint32_t src, uint32_t a0, uint32_t a1, uint32_t a2,
                           uint32_t a3);
// `data` is valid during the call only.
using AmBulkHandler = void (*)(uint32_t src, void *data, size_t bytes,
                               uint64_t a0, uint64_t a1);

// Sends four words to `handler` on `node` (any node, this one included).
void am_send(uint32_t node, AmHandler handler, uint32_t a0 = 0, uint32_t a1 = 0,
             uint32_t a2 = 0, uint32_t a3 = 0);
// Sends `bytes` of `data` (any memory; copied before the call returns) and
// two 64-bit words. At most am_max_bulk() bytes.
void am_send_bulk(uint32_t node, AmBulkHandler handler, const void *data,
                  size_t bytes, uint64_t a0 = 0, uint64_t a1 = 0);
size_t am_max_bulk();

// Runs the handlers of the messages that have arrived; returns how many.
// Costs one poll of host memory on the virtual clock.
int am_poll();
// Waits until at least one message has arrived, then runs as am_poll.
int am_wait();

// Messages this host dropped because their handler named no code here.
uint32_t am_dropped_messages();

} // namespace nicemu::host
