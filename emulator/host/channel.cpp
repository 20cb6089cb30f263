#include "host/channel.hpp"

#include "mem/zeroed_buffer.hpp"
#include "nicemu/error.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace nicemu::channel {

namespace {

Error sys_error(const std::string &what) {
  return Error("host channel: " + what + ": " + std::strerror(errno));
}

uint64_t page_size() {
  return uint64_t(sysconf(_SC_PAGESIZE));
}

// Rounds up to whole pages; 0 if that overflows.
uint64_t page_round(uint64_t bytes) {
  uint64_t page = page_size();
  if (bytes > UINT64_MAX - (page - 1))
    return 0;
  return (bytes + page - 1) / page * page;
}

uint32_t *futex_word(std::atomic<uint32_t> &word) {
  return reinterpret_cast<uint32_t *>(&word);
}

void futex_wake(std::atomic<uint32_t> &word) {
  syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

bool ranges_overlap(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_len) {
  return a < b + b_len && b < a + a_len;
}

} // namespace

// ---------------------------------------------------------------------------
// EmulatorEnd

EmulatorEnd::EmulatorEnd(uint32_t rank, uint32_t size, uint64_t arena_bytes,
                         uint32_t per_node) {
  const std::string who = "rank " + std::to_string(rank);
  if (rank >= size)
    throw Error("host channel: " + who + " of a cluster of " +
                    std::to_string(size),
                ErrorKind::BadArgument);
  arena_offset_ = page_round(sizeof(ControlBlock));
  uint64_t arena_span = page_round(arena_bytes);
  if (arena_bytes == 0 || arena_span == 0 ||
      arena_span > uint64_t(INT64_MAX) - arena_offset_)
    throw Error("host channel for " + who + ": bad arena size " +
                    std::to_string(arena_bytes),
                ErrorKind::BadArgument);
  if (per_node > 1 && arena_bytes > kArenaBusStride)
    throw Error("host channel for " + who + ": an arena of " +
                    std::to_string(arena_bytes) +
                    " bytes does not fit a process's bus window (" +
                    std::to_string(kArenaBusStride) +
                    " bytes) on a node several processes share",
                ErrorKind::BadArgument);
  mapped_ = arena_offset_ + arena_span;
  arena_size_ = arena_bytes;
  try {
    // Not MFD_CLOEXEC: the host process inherits it across exec. Sealing
    // stops a host from resizing it under the emulator (SIGBUS).
    std::string name = "nicemu-node-" + std::to_string(rank);
    fd_ = memfd_create(name.c_str(), MFD_ALLOW_SEALING);
    if (fd_ < 0)
      throw sys_error("cannot create the shared memory for " + who);
    if (ftruncate(fd_, off_t(mapped_)) < 0)
      throw sys_error("cannot size the shared memory for " + who + " (" +
                      std::to_string(mapped_) + " bytes)");
    // Best effort: hardening, not needed for the protocol.
    fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    void *p =
        mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED)
      throw sys_error("cannot map the shared memory for " + who);
    fresh_mapping(p, mapped_);
    base_ = static_cast<uint8_t *>(p);
  } catch (...) {
    release();
    throw;
  }
  // Fresh memfd pages are zero: the arena and the region table start empty.
  control_ = new (base_) ControlBlock();
  control_->magic = kMagic;
  control_->version = kVersion;
  control_->rank = rank;
  control_->size = size;
  control_->per_node = per_node ? per_node : 1;
  control_->node = rank / control_->per_node;
  control_->local = rank % control_->per_node;
  bus_base_ = arena_bus_base(control_->local);
  control_->arena_offset = arena_offset_;
  control_->arena_size = arena_size_;
  control_->emulator_pid = int32_t(getpid());
  // Until its owner says otherwise, the emulator is taken to sleep: every
  // request wakes it (HostGroup::wait clears this while it spins).
  control_->emulator_sleeping.store(1);
  control_->state.store(uint32_t(HostState::Starting),
                        std::memory_order_release);
}

void EmulatorEnd::make_private() {
  if (fd_ < 0)
    return;
  std::vector<uint8_t> head(base_, base_ + arena_offset_);
  void *p =
      mmap(base_, mapped_, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw sys_error("cannot make the replay's memory of rank " +
                    std::to_string(control_->rank) + " private");
  std::memcpy(base_, head.data(), head.size());
  close(fd_);
  fd_ = -1;
}

EmulatorEnd::~EmulatorEnd() {
  if (control_)
    shutdown();
  release();
}

void EmulatorEnd::release() noexcept {
  if (base_)
    munmap(base_, mapped_);
  if (fd_ >= 0)
    close(fd_);
  base_ = nullptr;
  control_ = nullptr;
  fd_ = -1;
}

bool EmulatorEnd::pending(Request &out) const {
  auto state = HostState(control_->state.load(std::memory_order_acquire));
  // Only after the host published a request may its fields be read: until
  // then the host may be writing them.
  if (state != HostState::Requesting && state != HostState::Exited)
    return false;
  if (control_->request_seq == answered_seq_)
    return false;
  out = control_->request;
  return true;
}

bool EmulatorEnd::take_posted(Request &out) {
  uint32_t seq = control_->posted_seq.load(std::memory_order_acquire);
  if (seq == control_->posted_taken.load(std::memory_order_relaxed))
    return false;
  out = control_->posted;
  out.op = Op::Write; // the slot only ever holds writes
  control_->posted_taken.store(seq, std::memory_order_release);
  return true;
}

void EmulatorEnd::reply(const Reply &r) {
  ControlBlock &cb = *control_;
  answered_seq_ = cb.request_seq;
  cb.reply = r;
  cb.host_time.store(r.time, std::memory_order_relaxed);
  // An exited host stays Exited.
  uint32_t requesting = uint32_t(HostState::Requesting);
  cb.state.compare_exchange_strong(requesting, uint32_t(HostState::Computing),
                                   std::memory_order_release);
  // seq_cst pairs with the host's host_sleeping store (see wait_for_reply):
  // either the host sees the new reply_seq or this sees it sleeping.
  cb.reply_seq.fetch_add(1);
  if (cb.host_sleeping.load())
    futex_wake(cb.reply_seq);
}

void EmulatorEnd::shutdown() {
  control_->shutdown.store(1);
  control_->reply_seq.fetch_add(1);
  futex_wake(control_->reply_seq);
}

bool EmulatorEnd::registered(uint64_t bus_addr, size_t len) const {
  if (bus_addr < bus_base_)
    return false;
  uint64_t offset = bus_addr - bus_base_;
  // The arena bound comes from the emulator's own copy: a corrupt region
  // table (host-writable) must not open memory outside the arena.
  uint64_t need = len ? len : 1; // an empty range still needs its address
  if (offset >= arena_size_ || need > arena_size_ - offset)
    return false;
  for (const Region &region : control_->regions)
    if (region.length != 0 && offset >= region.offset &&
        offset - region.offset < region.length &&
        need <= region.length - (offset - region.offset))
      return true;
  return false;
}

Status EmulatorEnd::add_region(uint64_t offset, uint64_t length) {
  if (length == 0 || offset > arena_size_ || length > arena_size_ - offset)
    return Status::BadArgument;
  Region *free_slot = nullptr, *before = nullptr;
  for (Region &region : control_->regions) {
    if (region.length == 0) {
      if (!free_slot)
        free_slot = &region;
    } else if (ranges_overlap(offset, length, region.offset, region.length)) {
      return Status::BadArgument;
    } else if (region.offset + region.length == offset) {
      before = &region;
    }
  }
  // Memory registered right after a region grows it: a host's allocations
  // follow each other, and one region lets a DMA span two of them.
  if (before) {
    before->length += length;
    return Status::Ok;
  }
  if (!free_slot)
    return Status::Exhausted;
  *free_slot = Region{offset, length};
  return Status::Ok;
}

Status EmulatorEnd::remove_region(uint64_t offset) {
  for (Region &region : control_->regions)
    if (region.length != 0 && region.offset == offset) {
      region = Region{};
      return Status::Ok;
    }
  return Status::NotRegistered;
}

// ---------------------------------------------------------------------------
// WakePipe

WakePipe::WakePipe() {
  // A socket pair rather than a pipe: a host's wake is then one send() with
  // MSG_NOSIGNAL (hostlib/src/host_end.cpp). Not close-on-exec: host
  // processes inherit the write end (the launcher closes what a child
  // should not have). Non-blocking: wait() drains without blocking and a
  // full buffer never blocks a host.
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) < 0)
    throw sys_error("cannot create the wake pipe");
  read_fd = fds[0];
  write_fd = fds[1];
  // Only the emulator reads; a host never needs to see its own bytes.
  ::shutdown(read_fd, SHUT_WR);
  ::shutdown(write_fd, SHUT_RD);
}

WakePipe::~WakePipe() {
  if (read_fd >= 0)
    close(read_fd);
  if (write_fd >= 0)
    close(write_fd);
}

bool WakePipe::wait(int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  pollfd p{read_fd, POLLIN, 0};
  int n;
  while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
    if (timeout_ms < 0)
      continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    timeout_ms = int(std::max<int64_t>(0, left.count()));
  }
  if (n < 0)
    throw sys_error("waiting on the wake pipe");
  if (n == 0)
    return false;
  char drain[256];
  while (read(read_fd, drain, sizeof drain) > 0) {
  }
  return true;
}

void WakePipe::wake() {
  // A socket (see the constructor): MSG_NOSIGNAL keeps a closed reader from
  // raising SIGPIPE.
  const char byte = 1;
  ssize_t n;
  do
    n = send(write_fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno != EAGAIN)
    throw sys_error("cannot write to the wake pipe");
}

} // namespace nicemu::channel
