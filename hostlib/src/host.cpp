// The native host API on top of the channel to the emulator.
#include "nicemu/host.hpp"

#include "am_internal.hpp"
#include "host_end.hpp"
#include "nicemu/error.hpp"
#include "nicemu/host.h"
#include "nicemu/regs.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace nicemu::host {

namespace {

using channel::Op;
using channel::Reply;
using channel::Request;
using channel::Status;

struct Session {
  channel::HostEnd *end = nullptr;
  uint32_t mailbox = 0;
  uint64_t next_free = 0; // arena bump allocator
};

// The channel's errors (nicemu::Error) as this library's.
ErrorCode code_of(nicemu::ErrorKind kind) {
  switch (kind) {
  case nicemu::ErrorKind::BadArgument:
    return ErrorCode::BadArgument;
  case nicemu::ErrorKind::OutOfMemory:
    return ErrorCode::OutOfMemory;
  case nicemu::ErrorKind::NotRun:
    return ErrorCode::NotRun;
  case nicemu::ErrorKind::Stopped:
    return ErrorCode::Stopped;
  case nicemu::ErrorKind::State:
    return ErrorCode::State;
  case nicemu::ErrorKind::Failure:
    break;
  }
  return ErrorCode::Failure;
}

[[noreturn]] void rethrow(const nicemu::Error &e) {
  throw Error(e.what(), code_of(e.kind()));
}

// A status the emulator answered with.
ErrorCode code_of(Status s) {
  switch (s) {
  case Status::BadArgument:
  case Status::NotRegistered:
    return ErrorCode::BadArgument;
  case Status::Exhausted:
    return ErrorCode::OutOfMemory;
  case Status::Shutdown:
    return ErrorCode::Stopped;
  case Status::Ok:
    break;
  }
  return ErrorCode::Failure;
}

void say_exit() {
  // Lets the run end without waiting for this process's last breath.
  try {
    channel::HostEnd::from_environment().exit(0);
  } catch (...) {
  }
}

Session &session() {
  static Session s = [] {
    Session made;
    Request hello;
    hello.op = Op::Hello;
    try {
      made.end = &channel::HostEnd::from_environment();
      made.mailbox = made.end->call(hello).value;
    } catch (const nicemu::Error &e) {
      rethrow(e);
    }
    std::atexit(say_exit);
    // From now on the clock shim's sleeps (sleep, usleep, nanosleep...)
    // pass virtual time through the emulator.
    using SetSleeper = void (*)(int (*)(uint64_t));
    if (auto set = reinterpret_cast<SetSleeper>(
            dlsym(RTLD_DEFAULT, "nicemu_clock_set_sleeper")))
      set(&nicemu_compute);
    return made;
  }();
  return s;
}

Reply call(Request r) {
  Reply rep;
  try {
    rep = session().end->call(r);
  } catch (const nicemu::Error &e) {
    rethrow(e);
  }
  if (rep.status == Status::Shutdown)
    throw Error("nicemu: the cluster is stopping", ErrorCode::Stopped);
  return rep;
}

bool poll_locally() {
  try {
    return session().end->poll_locally();
  } catch (const nicemu::Error &e) {
    rethrow(e);
  }
}

// A store of `size` bytes to the card's host bus at `addr` (card memory,
// a doorbell...): the channel's generic write.
Status card_store(uint32_t addr, uint32_t size, uint64_t value) {
  Request r;
  r.op = Op::Write;
  r.a = addr;
  r.b = size;
  r.arg64 = value;
  return call(r).status;
}

void check(Status s, const char *what) {
  if (s != Status::Ok)
    throw Error(std::string("nicemu: ") + what + " failed (status " +
                    std::to_string(int(s)) + ")",
                code_of(s));
}

uint64_t arena_offset(const void *p, size_t len) {
  auto *arena = session().end->arena();
  auto *b = static_cast<const uint8_t *>(p);
  if (b < arena || b + len > arena + session().end->arena_size())
    throw Error("nicemu: buffer is not registered memory (use "
                "nicemu::host::alloc)",
                ErrorCode::BadArgument);
  return uint64_t(b - arena);
}

} // namespace

uint32_t rank() {
  return session().end->rank();
}
uint32_t size() {
  return session().end->size();
}

uint32_t node() {
  return session().end->node();
}

uint32_t node_process() {
  return session().end->local();
}

uint32_t processes_per_node() {
  return session().end->per_node();
}
uint64_t now_ps() {
  return session().end->time();
}
double now_us() {
  return double(now_ps()) / 1e6;
}

void compute(uint64_t ps) {
  Request r;
  r.op = Op::Advance;
  r.arg64 = ps;
  if (call(r).status != Status::Ok)
    throw Error("nicemu: compute(" + std::to_string(ps) +
                    " ps) would pass the end of virtual time (2^63 ps); "
                    "the clock stays at " +
                    std::to_string(now_ps()) + " ps",
                ErrorCode::BadArgument);
}

void *alloc(size_t bytes) {
  Session &s = session();
  uint64_t start = (s.next_free + 63) & ~uint64_t(63);
  uint64_t len = (bytes + 63) & ~uint64_t(63);
  if (bytes == 0 || start + len > s.end->arena_size())
    throw Error("nicemu: out of registered memory (" + std::to_string(bytes) +
                    " bytes asked)",
                ErrorCode::OutOfMemory);
  // Registered from the end of the previous allocation (alignment padding
  // included), so the emulator keeps all of them as one region.
  Request r;
  r.op = Op::Register;
  r.a = uint32_t(s.next_free);
  r.b = uint32_t(start + len - s.next_free);
  check(call(r).status, "registering memory");
  s.next_free = start + len;
  return s.end->arena() + start;
}

uint32_t bus_address(const void *p) {
  return uint32_t(session().end->bus_base() + arena_offset(p, 1));
}

void pio_write(uint32_t card_addr, uint32_t value) {
  // A write to the mailbox page cannot be refused (every model has one), so
  // it is posted: no round trip to the emulator, same virtual times. On a
  // card several processes share, a process may write only its own word
  // of the page (NICEMU_MAILBOX_PROCESS_WORDS): that one is posted.
  Session &s = session();
  const bool shared = s.end->per_node() > 1;
  const uint32_t own =
      s.mailbox + 4 * (NICEMU_MAILBOX_PROCESS_WORDS + s.end->local());
  if (card_addr % 4 == 0 && card_addr - s.mailbox < 4096 &&
      (!shared || card_addr == own)) {
    try {
      if (s.end->post_write(card_addr, value))
        return;
    } catch (const nicemu::Error &e) {
      rethrow(e);
    }
  }
  check(card_store(card_addr, 4, value), "PIO write");
}

uint32_t pio_read(uint32_t card_addr) {
  Request r;
  r.op = Op::Read;
  r.a = card_addr;
  r.b = 4;
  Reply rep = call(r);
  check(rep.status, "PIO read");
  return rep.value;
}

uint32_t mailbox() {
  return session().mailbox;
}

uint32_t wait_word(const volatile uint32_t *word, uint32_t mask,
                   uint32_t expected) {
  // The emulator would find the word matching and answer one poll later:
  // under a lease the library knows that already (HostEnd::poll_locally).
  // The offset is checked first, as the emulator would.
  uint64_t offset = arena_offset(const_cast<const uint32_t *>(word), 4);
  uint32_t seen = *word;
  if (offset % 4 == 0 && (seen & mask) == expected && poll_locally())
    return seen;
  Request r;
  r.op = Op::WaitWord;
  r.a = uint32_t(arena_offset(const_cast<const uint32_t *>(word), 4));
  r.b = mask;
  r.c = expected;
  Reply rep = call(r);
  check(rep.status, "waiting for a word");
  return rep.value;
}

uint32_t wait_interrupt(const volatile uint32_t *word, uint32_t mask,
                        uint32_t expected) {
  Request r;
  r.op = Op::WaitInterrupt;
  r.a = uint32_t(arena_offset(const_cast<const uint32_t *>(word), 4));
  r.b = mask;
  r.c = expected;
  Reply rep = call(r);
  check(rep.status, "waiting for an interrupt");
  return rep.value;
}

bool wait_word_until(const volatile uint32_t *word, uint32_t mask,
                     uint32_t expected, uint64_t deadline_ps,
                     uint32_t *value_out) {
  Request r;
  r.op = Op::WaitWordUntil;
  r.a = uint32_t(arena_offset(const_cast<const uint32_t *>(word), 4));
  r.b = mask;
  r.c = expected;
  r.arg64 = deadline_ps;
  Reply rep = call(r);
  if (rep.status != Status::Ok && deadline_ps > channel::kTimeEnd &&
      deadline_ps != UINT64_MAX)
    throw Error("nicemu: wait_word_until: the deadline " +
                    std::to_string(deadline_ps) +
                    " ps is past the end of virtual time (2^63 ps; "
                    "UINT64_MAX is no deadline)",
                ErrorCode::BadArgument);
  check(rep.status, "waiting for a word");
  if (value_out)
    *value_out = rep.word;
  return rep.value == 0;
}

void doorbell(uint32_t fifo, uint32_t value) {
  // FIFO i is the word at NICEMU_HOST_DOORBELLS + 4 i of the card's host
  // bus window; a FIFO number past the 32-bit bus is no FIFO either.
  constexpr uint32_t kBusFifos = (0u - NICEMU_HOST_DOORBELLS) / 4;
  Status s = fifo < kBusFifos
                 ? card_store(NICEMU_HOST_DOORBELLS + 4 * fifo, 4, value)
                 : Status::BadArgument;
  if (s == Status::BadArgument)
    throw Error("nicemu: doorbell write failed (status -1): the NIC has no "
                "doorbell FIFO " +
                    std::to_string(fifo),
                ErrorCode::BadArgument);
  check(s, "doorbell write");
}

uint32_t detail::wait_either(const volatile uint32_t *a, uint32_t ea,
                             const volatile uint32_t *b, uint32_t eb,
                             bool interrupt) {
  Request r;
  r.op = Op::WaitEither;
  r.a = uint32_t(arena_offset(const_cast<const uint32_t *>(a), 4));
  r.c = ea;
  r.b = uint32_t(arena_offset(const_cast<const uint32_t *>(b), 4));
  r.arg64 = eb | (uint64_t(interrupt) << 32);
  Reply rep = call(r);
  check(rep.status, "waiting for a word");
  return rep.value;
}

} // namespace nicemu::host
