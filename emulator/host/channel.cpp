#include "host/channel.hpp"

#include "nicemu/error.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <new>

namespace nicemu::channel {

namespace {

// Spinning first saves two context switches when the emulator answers fast
// (a few thousand pauses are a few microseconds), but only when every host
// and the emulator have a core of their own: otherwise spinning hosts take
// the emulator's core and everything slows down.
constexpr int kSpins = 4000;

int spins_for(uint32_t hosts) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 && long(hosts) + 1 <= cpus ? kSpins : 0;
}
// A waiting host re-checks this often that the emulator still runs.
constexpr int kLivenessCheckMs = 250;

Error sys_error(const std::string &what, ErrorKind kind = ErrorKind::Failure) {
  return Error("host channel: " + what + ": " + std::strerror(errno), kind);
}

// What a host's call gets when the emulator or the cluster stops.
Error stopped(const std::string &why) {
  return Error("the emulator stopped: " + why, ErrorKind::Stopped);
}

// What a host gets when its channel cannot be opened.
Error not_run(const std::string &what) {
  return Error(what, ErrorKind::NotRun);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
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

// Shared futexes (no FUTEX_PRIVATE_FLAG): waiter and waker are different
// processes with different mappings of the same page.
void futex_wait(std::atomic<uint32_t> &word, uint32_t expected,
                int timeout_ms) {
  timespec timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000L};
  long r = syscall(SYS_futex, futex_word(word), FUTEX_WAIT, expected, &timeout,
                   nullptr, 0);
  // EAGAIN: the word changed already; EINTR, ETIMEDOUT: the caller re-checks.
  if (r < 0 && errno != EAGAIN && errno != EINTR && errno != ETIMEDOUT)
    throw sys_error("waiting for the emulator");
}

void futex_wake(std::atomic<uint32_t> &word) {
  syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

// A write to a pipe or socket whose readers are all gone raises SIGPIPE,
// which would kill the host program instead of reporting the stopped
// emulator. Changing the program's SIGPIPE disposition is not ours to do.
// The wake channel is a socket, where MSG_NOSIGNAL makes that one system
// call; on a pipe (ENOTSOCK) the signal is blocked in this thread for the
// write, and the one the write raised (if it was not already pending) is
// consumed before unblocking. Returns 0 or errno.
int write_byte_without_sigpipe(int fd) {
  const char byte = 1;
  ssize_t n;
  do
    n = send(fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n >= 0 || errno != ENOTSOCK)
    return n < 0 ? errno : 0;
  sigset_t pipe_only, old, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  sigpending(&pending);
  bool was_pending = sigismember(&pending, SIGPIPE);
  do
    n = write(fd, &byte, 1);
  while (n < 0 && errno == EINTR);
  int err = n < 0 ? errno : 0;
  if (err == EPIPE && !was_pending) {
    timespec zero{};
    while (sigtimedwait(&pipe_only, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return err;
}

int env_fd(const char *name) {
  const char *text = std::getenv(name);
  if (!text)
    throw not_run(std::string(name) +
                  " is not set: start this program with `nicemu run -n N -- "
                  "./prog`");
  char *end = nullptr;
  errno = 0;
  long fd = std::strtol(text, &end, 10);
  if (errno || end == text || *end || fd < 0 || fd > INT_MAX)
    throw not_run(std::string(name) + "='" + text +
                  "' is not a descriptor number: start this program with "
                  "`nicemu run -n N -- ./prog`");
  return int(fd);
}

// A close-on-exec duplicate the caller owns; clear message if `fd` is bad.
int duplicate(int fd, const char *what) {
  int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0)
    throw not_run("host channel: the " + std::string(what) + " descriptor " +
                  std::to_string(fd) + " is not open (" + std::strerror(errno) +
                  ")");
  return dup;
}

bool ranges_overlap(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_len) {
  return a < b + b_len && b < a + a_len;
}

} // namespace

// ---------------------------------------------------------------------------
// EmulatorEnd

EmulatorEnd::EmulatorEnd(uint32_t rank, uint32_t size, uint64_t arena_bytes) {
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
  control_->arena_offset = arena_offset_;
  control_->arena_size = arena_size_;
  control_->emulator_pid = int32_t(getpid());
  control_->state.store(uint32_t(HostState::Starting),
                        std::memory_order_release);
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
  out.op = Op::PioWrite; // the slot only ever holds writes
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
  if (bus_addr < kArenaBusBase)
    return false;
  uint64_t offset = bus_addr - kArenaBusBase;
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
// HostEnd

HostEnd &HostEnd::from_environment() {
  // Never destroyed: atexit handlers and static destructors may still call.
  static HostEnd *end = [] {
    int channel_fd = env_fd("NICEMU_CHANNEL_FD");
    int wake_fd = env_fd("NICEMU_WAKE_FD");
    auto *attached = new HostEnd(channel_fd, wake_fd);
    fcntl(channel_fd, F_SETFD, FD_CLOEXEC);
    fcntl(wake_fd, F_SETFD, FD_CLOEXEC);
    return attached;
  }();
  return *end;
}

HostEnd::HostEnd(int channel_fd, int wake_fd) {
  try {
    fd_ = duplicate(channel_fd, "channel (NICEMU_CHANNEL_FD)");
    wake_fd_ = duplicate(wake_fd, "wake pipe (NICEMU_WAKE_FD)");
    struct stat st {};
    if (fstat(wake_fd_, &st) < 0 ||
        !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
      throw not_run("host channel: descriptor " + std::to_string(wake_fd) +
                    " is not the emulator's wake pipe");
    map(channel_fd);
  } catch (...) {
    release();
    throw;
  }
  parent_ = int32_t(getppid());
}

HostEnd::~HostEnd() {
  release();
}

void HostEnd::release() noexcept {
  if (base_)
    munmap(base_, mapped_);
  if (fd_ >= 0)
    close(fd_);
  if (wake_fd_ >= 0)
    close(wake_fd_);
  base_ = nullptr;
  control_ = nullptr;
  fd_ = wake_fd_ = -1;
}

// Maps the whole object and checks that it is a channel this code speaks.
// `channel_fd` only names the caller's descriptor in messages.
void HostEnd::map(int channel_fd) {
  const std::string which = "descriptor " + std::to_string(channel_fd);
  struct stat st {};
  if (fstat(fd_, &st) < 0)
    throw sys_error("cannot inspect " + which, ErrorKind::NotRun);
  if (uint64_t(st.st_size) < sizeof(ControlBlock))
    throw not_run("host channel: " + which + " is not a nicemu channel (" +
                  std::to_string(st.st_size) + " bytes, too small)");
  mapped_ = size_t(st.st_size);
  void *p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED)
    throw sys_error("cannot map " + which, ErrorKind::NotRun);
  base_ = static_cast<uint8_t *>(p);
  const auto *cb = reinterpret_cast<const ControlBlock *>(base_);
  if (cb->magic != kMagic)
    throw not_run("host channel: " + which +
                  " is not a nicemu channel (bad magic number)");
  if (cb->version != kVersion)
    throw not_run(
        "host channel: version mismatch: the emulator speaks version " +
        std::to_string(cb->version) + ", this program version " +
        std::to_string(kVersion) + " (rebuild it with this nicemu)");
  if (cb->arena_offset < sizeof(ControlBlock) || cb->arena_offset > mapped_ ||
      cb->arena_size > mapped_ - cb->arena_offset || cb->rank >= cb->size)
    throw not_run("host channel: " + which + " has a corrupt control block");
  control_ = reinterpret_cast<ControlBlock *>(base_);
}

// Every call and posted write: the cluster still runs and this host has not
// said it exits.
void HostEnd::check_callable() const {
  if (control_->shutdown.load())
    throw stopped("the cluster is shutting down");
  if (HostState(control_->state.load()) == HostState::Exited)
    throw Error("host channel: call after exit", ErrorKind::State);
}

Reply HostEnd::call(Request r) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  ControlBlock &cb = *control_;
  check_callable();
  // Read before posting: any reply from now on changes it.
  uint32_t seen = cb.reply_seq.load(std::memory_order_acquire);
  r.time = cb.host_time.load(std::memory_order_relaxed);
  post(r);
  cb.state.store(uint32_t(HostState::Requesting), std::memory_order_release);
  wake_emulator();
  wait_for_reply(seen);
  if (cb.shutdown.load())
    throw stopped("the cluster is shutting down");
  Reply reply = cb.reply;
  if (reply.status == Status::Shutdown)
    throw stopped("the cluster is shutting down (another host failed, or a "
                  "fault)");
  cb.host_time.store(reply.time, std::memory_order_relaxed);
  cb.state.store(uint32_t(HostState::Computing), std::memory_order_release);
  return reply;
}

bool HostEnd::post_write(uint32_t card_addr, uint32_t value) {
  std::lock_guard<std::mutex> lock(call_mutex_);
  ControlBlock &cb = *control_;
  check_callable();
  uint32_t seq = cb.posted_seq.load(std::memory_order_relaxed);
  if (cb.posted_taken.load(std::memory_order_acquire) != seq)
    return false;
  // fetch_add: a clock read in another thread (the shim) is not lost.
  uint64_t now = cb.host_time.fetch_add(cb.posted_write_ps);
  cb.posted.op = Op::PioWrite;
  cb.posted.a = card_addr;
  cb.posted.b = value;
  cb.posted.time = now;
  // The emulator reads the slot only after it sees the new sequence number.
  cb.posted_seq.store(seq + 1, std::memory_order_release);
  return true;
}

void HostEnd::exit(int status) {
  // The run ends with the last host's exit: a posted write not taken in yet
  // would never land. An empty call (Advance 0) makes the emulator run it,
  // as a waited-for write would have been, without moving the clock.
  if (control_->posted_seq.load() != control_->posted_taken.load()) {
    Request flush;
    flush.op = Op::Advance;
    try {
      call(flush);
    } catch (const Error &) { // the emulator is gone or stopping: exit anyway
    }
  }
  std::lock_guard<std::mutex> lock(call_mutex_);
  Request r;
  r.op = Op::Exit;
  r.a = uint32_t(status);
  r.time = control_->host_time.load(std::memory_order_relaxed);
  post(r);
  control_->state.store(uint32_t(HostState::Exited), std::memory_order_release);
  write_byte_without_sigpipe(wake_fd_); // an emulator that is gone is fine
}

void HostEnd::post(const Request &r) {
  control_->request = r;
  control_->request_seq += 1;
}

void HostEnd::wake_emulator() {
  int err = write_byte_without_sigpipe(wake_fd_);
  if (err == EPIPE)
    throw stopped("its end of the wake pipe is closed");
  // EAGAIN: the pipe is full, so a wake is pending anyway.
  if (err != 0 && err != EAGAIN) {
    errno = err;
    throw sys_error("cannot wake the emulator");
  }
}

void HostEnd::wait_for_reply(uint32_t seen) {
  std::atomic<uint32_t> &seq = control_->reply_seq;
  static const int spins = spins_for(control_->size);
  for (int i = 0; i < spins; ++i) {
    if (seq.load(std::memory_order_acquire) != seen)
      return;
    cpu_relax();
  }
  for (;;) {
    // seq_cst: pairs with the emulator's bump-then-check in reply().
    control_->host_sleeping.store(1);
    if (seq.load() == seen)
      futex_wait(seq, seen, kLivenessCheckMs);
    control_->host_sleeping.store(0);
    if (seq.load(std::memory_order_acquire) != seen)
      return;
    if (emulator_gone())
      throw stopped("its process is gone");
  }
}

// The shutdown flag covers an orderly stop; a crashed emulator is noticed
// by being re-parented (for its own children: a dead emulator stays a
// zombie until reaped, and kill() still finds zombies) or by its pid
// disappearing.
bool HostEnd::emulator_gone() const {
  int32_t emulator = control_->emulator_pid;
  if (emulator == int32_t(getpid())) // in-process form: never gone
    return false;
  if (parent_ == emulator && int32_t(getppid()) != emulator)
    return true;
  return kill(emulator, 0) < 0 && errno == ESRCH;
}

// ---------------------------------------------------------------------------
// WakePipe

WakePipe::WakePipe() {
  // A socket pair rather than a pipe: a host's wake is then one send() with
  // MSG_NOSIGNAL (see write_byte_without_sigpipe). Not close-on-exec: host
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
  int err = write_byte_without_sigpipe(write_fd);
  if (err != 0 && err != EAGAIN) {
    errno = err;
    throw sys_error("cannot write to the wake pipe");
  }
}

} // namespace nicemu::channel
