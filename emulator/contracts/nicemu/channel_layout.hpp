// The channel between one host process and the emulator, as both ends see
// it: a shared-memory object holding a control block (below) at offset 0
// and the host's arena (the memory its registered buffers come from, which
// the NIC's DMA engines read and write directly) at `arena_offset`. The
// emulator's end is emulator/host/channel.hpp, the host's end
// hostlib/src/host_end.hpp; the clock shim reads the control block too.
//
// Protocol (docs/host-channel.md): the host posts one request at a time,
// stamped with its virtual time, wakes the emulator through the cluster's
// wake pipe, and waits (spin, then futex on reply_seq) for the reply, which
// carries the virtual time at which the operation completed. The emulator
// never runs past the virtual time of a host that is computing.
#pragma once

#include <atomic>
#include <cstdint>

namespace nicemu::channel {

constexpr uint32_t kMagic = 0x4E4D4348; // 'NMCH'
// 2: Op::Doorbell, Op::WaitWordUntil and Reply::word.
// 3: posted PIO writes (ControlBlock::posted*).
// 4: generic card accesses: Op::Read and Op::Write at host bus addresses
//    (PioWrite, PioRead and Doorbell are gone), Reply::data.
// 5: Op::WriteBlock (a write-combined burst from the arena).
// 6: Reply::stable_until (DIMMnet's LLCM loads).
// 7: Op::ReadBlock; bursts of up to 4 KiB.
// 8: ControlBlock::node, local, per_node (several processes per node).
// 9: Op::WaitInterrupt.
// 10: WaitEither's arg64 bit 32: woken by an interrupt.
// 11: ControlBlock::emulator_sleeping (a host wakes the emulator only when
//     it sleeps); host leases (Reply::stable_until for WaitWord,
//     ControlBlock::local_polls).
// 12: each process of a node has its own bus window (arena_bus_base).
constexpr uint32_t kVersion = 12;
// Bus address of arena offset 0 of a node's first process as the NIC's DMA
// engines see it (0 is never a valid host address). The node's other
// processes follow, one window of kArenaBusStride each, so that a card
// several processes share reaches each one's memory at its own addresses
// (as distinct physical pages): process `local` at arena_bus_base(local).
constexpr uint64_t kArenaBusBase = 0x10000000;
constexpr uint64_t kArenaBusStride = 0x04000000; // 64 MiB: the largest arena
constexpr uint64_t arena_bus_base(uint32_t local) {
  return kArenaBusBase + uint64_t(local) * kArenaBusStride;
}
constexpr uint32_t kMaxRegions = 64;
// A host answers at most this many polls by itself under one lease.
constexpr uint32_t kMaxLocalPolls = 32;
// The end of virtual time (2^63 ps, about 106.7 days): a request whose time
// would pass it (the host's clock, an Advance, a WaitWordUntil deadline
// other than UINT64_MAX) is refused with Status::BadArgument and moves no
// clock (docs/host-channel.md, "The end of virtual time").
constexpr uint64_t kTimeEnd = uint64_t(1) << 63;

enum class Op : uint32_t {
  None = 0,
  Hello,         // first call: the host is running; reply: its start time
  Write,         // a = host bus address (nicemu/regs.h: card memory, the
                 //   doorbells...), b = size in bytes, arg64 = value: a
                 //   store to the card's host port; a window may hold it
                 //   (a full doorbell FIFO: a PCI retry)
  Read,          // a = host bus address, b = size; reply.data (and the
                 //   low 32 bits in reply.value)
  WaitWord,      // a = arena offset, b = mask, c = expected: wait until
                 //   (word & mask) == expected in the host's own memory
  Advance,       // arg64 = picoseconds the host computed (e.g. a clock shim)
  Register,      // a = arena offset, b = length: the NIC may touch it
  Deregister,    // a = arena offset
  Exit,          // a = exit status; no reply is awaited
  WaitEither,    // a = arena offset, c = expected; b = arena offset, arg64 =
                 //   expected (bits 0-31): wait until either word equals
                 //   its value (bit 32 set: woken as by WaitInterrupt);
                 //   reply.value: 0 for the first, 1 for the second
  WaitWordUntil, // a = arena offset, b = mask, c = expected, arg64 =
                 //   absolute virtual deadline (ps): as WaitWord, but
                 //   reply.value is 0 if the word matched by the deadline, 1
                 //   if not (the reply then comes at the deadline);
                 //   reply.word is the word as the host saw it last
  WriteBlock,    // a = host bus address, b = bytes (1-4096), c = arena
                 //   offset of the data: one burst to the card (DIMMnet's
                 //   BOTF windows and SO-DIMM banks)
  ReadBlock,     // a = host bus address, b = bytes (1-4096), c = arena
                 //   offset: a burst from the card into the arena
  WaitInterrupt, // as WaitWord, but the host sleeps until the card
                 //   interrupts it: it wakes the model's host.interrupt
                 //   after the word matched, not one poll later
};

enum class Status : int32_t {
  Ok = 0,
  BadArgument = -1,   // unaligned, out of the arena, no card window at
                      //   that address (or the window refused the access)
  NotRegistered = -2, // WaitWord/Deregister on memory never registered
  Exhausted = -3,     // no free registration slot
  Shutdown = -4,      // the cluster is stopping (another host died, a fault)
};

struct Request {
  Op op = Op::None;
  uint32_t a = 0, b = 0, c = 0;
  uint64_t arg64 = 0;
  uint64_t time = 0; // the host's virtual time (ps) when it made the call
};

struct Reply {
  Status status = Status::Ok;
  uint32_t value = 0;
  uint64_t time = 0; // virtual time (ps) when the call completed
  uint32_t word = 0; // WaitWordUntil: the watched word
  uint64_t data = 0; // Read: the data, up to 8 bytes
  // Read: what was read does not change before this time unless this host
  // acts (HostBusResult::stable_until; 0: no promise).
  // WaitWord that matched at once: the host's own memory does not change
  // before this time (a lease; 0: none), and `data` is what one poll costs.
  // Until then the host answers such polls itself (docs/host-channel.md,
  // "Host leases").
  uint64_t stable_until = 0;
};

struct Region {
  uint64_t offset = 0, length = 0; // length 0: free slot
};

enum class HostState : uint32_t {
  Starting = 0, // not attached yet
  Computing,    // running host code; its virtual time is `host_time`
  Requesting,   // a request is posted, not answered yet
  Exited,
};

// At offset 0 of the shared object; the arena follows at `arena_offset`.
struct ControlBlock {
  uint32_t magic;
  uint32_t version;
  uint32_t rank, size;
  // The node whose card this process drives, its index among that node's
  // processes, and how many each node has (nicemu run --procs-per-node).
  uint32_t node, local, per_node;
  uint64_t arena_offset, arena_size;
  std::atomic<uint32_t> state;     // HostState
  std::atomic<uint32_t> reply_seq; // futex word: bumped on each reply
  uint32_t request_seq;            // bumped by the host on each request
  std::atomic<uint64_t> host_time; // the host's virtual time (ps)
  Request request;
  Reply reply;
  Region regions[kMaxRegions]; // written by the emulator (Register op)
  // Set once by EmulatorEnd::shutdown: every call from now on fails, and a
  // host waiting for a reply is woken to notice.
  std::atomic<uint32_t> shutdown;
  // 1 while the host sleeps on reply_seq, so that replies to a spinning host
  // skip the futex system call.
  std::atomic<uint32_t> host_sleeping;
  int32_t emulator_pid; // for the host's check that the emulator still runs
  // A posted PIO write (HostEnd::post_write): the host goes on without a
  // reply, its clock moved by `posted_write_ps`; the emulator takes the
  // write in before the host's next request, so its place in the host's
  // call order and its virtual time are those of a waited-for write.
  Request posted;
  std::atomic<uint32_t> posted_seq;   // bumped by the host per posted write
  std::atomic<uint32_t> posted_taken; // posted_seq the emulator took in
  uint64_t posted_write_ps;           // the model's host.pio_write_word
  // 1 while the emulator may sleep on the wake pipe (its initial value;
  // HostGroup::wait clears it while it spins or runs): a host that posts a
  // request writes the wake byte only then.
  std::atomic<uint32_t> emulator_sleeping;
  // The polls the host answered by itself under a lease since its last
  // request (their start times; each took the lease's poll cost). Written
  // before the next request is posted, read and cleared by the emulator
  // when it takes that request in, so that observers still see every poll.
  uint32_t local_polls;
  uint64_t local_poll_start[kMaxLocalPolls];
};

// Shared between processes: atomics must be address-free and plain words.
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
              sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
static_assert(std::atomic<uint64_t>::is_always_lock_free);

} // namespace nicemu::channel
