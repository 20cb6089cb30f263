// The channel between one host process and the emulator: a shared-memory
// object holding a control block and the host's arena (the memory its
// registered buffers come from, which the NIC's DMA engines read and write
// directly). Compiled into both the emulator and the host library.
//
// Protocol (docs/host-channel.md): the host posts one request at a time,
// stamped with its virtual time, wakes the emulator through the cluster's
// wake pipe, and waits (spin, then futex) for the reply, which carries the
// virtual time at which the operation completed. The emulator never runs
// past the virtual time of a host that is computing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace nicemu::channel {

constexpr uint32_t kMagic = 0x4E4D4348; // 'NMCH'
// 2: Op::Doorbell, Op::WaitWordUntil and Reply::word.
// 3: posted PIO writes (ControlBlock::posted*).
constexpr uint32_t kVersion = 3;
// Bus address of arena offset 0 as the NIC's DMA engines see it (0 is never
// a valid host address).
constexpr uint64_t kArenaBusBase = 0x10000000;
constexpr uint32_t kMaxRegions = 64;

enum class Op : uint32_t {
  None = 0,
  Hello,         // first call: the host is running; reply: its start time
  PioWrite,      // a = card address, b = value
  PioRead,       // a = card address; reply.value
  WaitWord,      // a = arena offset, b = mask, c = expected: wait until
                 //   (word & mask) == expected in the host's own memory
  Advance,       // arg64 = picoseconds the host computed (e.g. a clock shim)
  Register,      // a = arena offset, b = length: the NIC may touch it
  Deregister,    // a = arena offset
  Exit,          // a = exit status; no reply is awaited
  WaitEither,    // a = arena offset, c = expected; b = arena offset, arg64 =
                 //   expected: wait until either word equals its value;
                 //   reply.value: 0 for the first, 1 for the second
  Doorbell,      // a = FIFO index, b = value: a doorbell write; a full FIFO
                 //   holds it until the firmware pops an entry (a PCI retry)
  WaitWordUntil, // a = arena offset, b = mask, c = expected, arg64 =
                 //   absolute virtual deadline (ps): as WaitWord, but
                 //   reply.value is 0 if the word matched by the deadline, 1
                 //   if not (the reply then comes at the deadline);
                 //   reply.word is the word as the host saw it last
};

enum class Status : int32_t {
  Ok = 0,
  BadArgument = -1,   // unaligned, out of the arena, unknown card address,
                      //   no such doorbell FIFO
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
};

// Shared between processes: atomics must be address-free and plain words.
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
              sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// The emulator's end: creates the object, keeps it mapped.
class EmulatorEnd {
public:
  // Creates a channel for `rank` of `size` with an arena of `arena_bytes`.
  // Throws nicemu::Error on failure.
  EmulatorEnd(uint32_t rank, uint32_t size, uint64_t arena_bytes);
  ~EmulatorEnd();
  EmulatorEnd(const EmulatorEnd &) = delete;
  EmulatorEnd &operator=(const EmulatorEnd &) = delete;

  // The descriptor a child inherits (not close-on-exec).
  int fd() const { return fd_; }
  ControlBlock &control() { return *control_; }
  // Arena place and size as the emulator created them: the host can write
  // the control block, so the emulator never trusts the copies in it.
  uint8_t *arena() { return base_ + arena_offset_; }
  uint64_t arena_size() const { return arena_size_; }

  // True and the request if one is posted and not yet answered (Exit
  // included: it stays pending until replied to, and nobody waits for that
  // reply).
  bool pending(Request &out) const;
  // Answers the request pending() returned and wakes the host.
  void reply(const Reply &r);
  // True and the write if the host posted one not taken in yet. A caller
  // that also takes requests must call pending() first: a request the host
  // made after a posted write is then never seen before that write.
  bool take_posted(Request &out);
  // What a posted write costs the host (its clock moves on by this much).
  void set_posted_write_cost(uint64_t ps) { control_->posted_write_ps = ps; }
  // The cluster stops: the host's call in progress and all later ones throw
  // nicemu::Error. Also done by the destructor.
  void shutdown();

  // Registration table, for the NIC's view of host memory (bus addresses).
  bool registered(uint64_t bus_addr, size_t len) const;
  Status add_region(uint64_t offset, uint64_t length);
  Status remove_region(uint64_t offset);

private:
  void release() noexcept;

  int fd_ = -1;
  size_t mapped_ = 0;
  uint8_t *base_ = nullptr;
  ControlBlock *control_ = nullptr;
  uint64_t arena_offset_ = 0, arena_size_ = 0;
  uint32_t answered_seq_ = 0; // request_seq of the last request answered
};

// The host's end: maps the object named by the environment.
class HostEnd {
public:
  // From NICEMU_CHANNEL_FD and NICEMU_WAKE_FD; throws nicemu::Error (kind
  // NotRun) with a clear message if the program was not started by `nicemu
  // run`. Created
  // once and never destroyed (atexit handlers may still call it); the
  // descriptors become close-on-exec, so the program's own children do not
  // inherit the channel.
  static HostEnd &from_environment();
  // Works on its own duplicates of the descriptors (close-on-exec); the
  // caller keeps its own.
  HostEnd(int channel_fd, int wake_fd);
  ~HostEnd();
  HostEnd(const HostEnd &) = delete;
  HostEnd &operator=(const HostEnd &) = delete;

  // Posts `r` (stamped with the host's virtual time), wakes the emulator,
  // waits for the reply, and moves the host's clock to reply.time. Throws
  // nicemu::Error "the emulator stopped: ..." (kind Stopped) if the
  // emulator is gone or the cluster stops (Status::Shutdown), and one of
  // kind State for a call after exit(). Calls from several threads take
  // turns.
  Reply call(Request r);
  // A PIO write the host does not wait for (PCI writes are posted): the
  // request goes into the control block's posted slot and the host's clock
  // moves on by the model's write cost, with no system call. The emulator
  // takes it in with the next call (which wakes it) and runs it at the
  // host's time, as if the host had waited. False, with nothing done, while
  // the previous posted write has not been taken in (then make the call).
  // The address is not checked: post only writes known to be valid.
  bool post_write(uint32_t card_addr, uint32_t value);
  // Posts Exit without waiting (quietly, if the emulator is already gone).
  void exit(int status);

  uint32_t rank() const { return control_->rank; }
  uint32_t size() const { return control_->size; }
  uint64_t time() const { return control_->host_time.load(); }
  uint8_t *arena() { return base_ + control_->arena_offset; }
  uint64_t arena_size() const { return control_->arena_size; }
  // The shared object and where the arena starts in it, for mapping arena
  // pages elsewhere in the process (hostlib/src/pinned.cpp).
  int fd() const { return fd_; }
  uint64_t arena_file_offset() const { return control_->arena_offset; }

private:
  void map(int channel_fd);
  void release() noexcept;
  void check_callable() const;
  void post(const Request &r);
  void wake_emulator();
  void wait_for_reply(uint32_t seen);
  bool emulator_gone() const;

  int fd_ = -1, wake_fd_ = -1;
  size_t mapped_ = 0;
  uint8_t *base_ = nullptr;
  ControlBlock *control_ = nullptr;
  int32_t parent_ = 0; // getppid() when attached
  std::mutex call_mutex_;
};

// The "wake pipe" every host writes one byte into after posting a request,
// so the emulator can sleep until some host needs it: a Unix socket pair
// (one send() per wake, without SIGPIPE). The write end is inherited by
// children; the emulator reads.
struct WakePipe {
  int read_fd = -1, write_fd = -1;
  WakePipe(); // throws nicemu::Error; both ends non-blocking
  ~WakePipe();
  WakePipe(const WakePipe &) = delete;
  WakePipe &operator=(const WakePipe &) = delete;
  // Blocks until at least one byte is there (or `timeout_ms` passes; -1:
  // forever), then drains it. Returns false on timeout.
  bool wait(int timeout_ms);
  // Writes one byte; a full pipe means a wake is already pending.
  void wake();
};

} // namespace nicemu::channel
