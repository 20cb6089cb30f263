#include "host_end.hpp"

#include "nicemu/error.hpp"
#include "nicemu/spin_wait.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

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
// Then the host yields its core this many times before it sleeps: the
// emulator usually answers within microseconds, and a sleeping process's
// wake-up costs tens of microseconds (an inter-processor interrupt, and in
// a virtual machine an exit), where a yield hands the core to a runnable
// process (often the emulator itself) in well under one. Only while the
// hosts are few (few_enough_to_yield).
constexpr int kYields = 200;

int yields_for(uint32_t hosts) {
  return few_enough_to_yield(hosts) ? kYields : 0;
}
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

// Set in every child forked from this process once the library is loaded
// (pthread_atfork): such a child shares the channel's mapping, but the
// channel is its parent's. posix_spawn'ed children exec at once and start
// afresh.
std::atomic<bool> forked_child{false};
[[maybe_unused]] const int fork_watch =
    pthread_atfork(nullptr, nullptr, [] { forked_child.store(true); });

// A close-on-exec duplicate the caller owns; clear message if `fd` is bad.
int duplicate(int fd, const char *what) {
  int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0)
    throw not_run("host channel: the " + std::string(what) + " descriptor " +
                  std::to_string(fd) + " is not open (" + std::strerror(errno) +
                  ")");
  return dup;
}

} // namespace

// ---------------------------------------------------------------------------
// HostEnd

HostEnd &HostEnd::from_environment() {
  // Never destroyed: atexit handlers and static destructors may still call.
  static HostEnd *end = [] {
    if (forked_child.load())
      throw not_run("host channel: this process (pid " +
                    std::to_string(getpid()) +
                    ") was forked from the one nicemu started for its rank; "
                    "only that process may call the host library");
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
  owner_ = int32_t(getpid());
}

bool HostEnd::foreign() const {
  return forked_child.load(std::memory_order_relaxed) &&
         int32_t(getpid()) != owner_;
}

// Before anything else: a forked child may even have inherited
// call_mutex_ locked by another thread of its parent.
void HostEnd::check_owner() const {
  if (foreign())
    throw not_run(
        "host channel: this process (pid " + std::to_string(getpid()) +
        ") was forked from the one nicemu "
        "started for rank " +
        std::to_string(control_->rank) + " (pid " + std::to_string(owner_) +
        "); only that process may call the host library");
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
  check_owner();
  std::lock_guard<std::mutex> lock(call_mutex_);
  ControlBlock &cb = *control_;
  check_callable();
  // Read before posting: any reply from now on changes it.
  uint32_t seen = cb.reply_seq.load(std::memory_order_acquire);
  r.time = cb.host_time.load(std::memory_order_relaxed);
  post(r);
  // seq_cst store, then load: pairs with the emulator's flag-then-check
  // (HostGroup::wait): either it sees this request or this sees it asleep.
  cb.state.store(uint32_t(HostState::Requesting));
  if (cb.emulator_sleeping.load())
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
  const bool leased = r.op == Op::WaitWord && reply.status == Status::Ok &&
                      reply.stable_until > reply.time && reply.data > 0;
  lease_until_ = leased ? reply.stable_until : 0;
  poll_cost_ = leased ? reply.data : 0;
  return reply;
}

bool HostEnd::poll_locally() {
  check_owner();
  std::lock_guard<std::mutex> lock(call_mutex_);
  ControlBlock &cb = *control_;
  check_callable();
  // Strictly before the lease ends: a write landing at that very time may
  // come before the poll's answer.
  uint64_t now = cb.host_time.load(std::memory_order_relaxed);
  if (lease_until_ == 0 || cb.local_polls >= kMaxLocalPolls ||
      now >= lease_until_ || poll_cost_ >= lease_until_ - now)
    return false;
  // fetch_add: a clock read in another thread (the shim) is not lost.
  uint64_t start = cb.host_time.fetch_add(poll_cost_);
  cb.local_poll_start[cb.local_polls++] = start;
  return true;
}

bool HostEnd::post_write(uint32_t card_addr, uint32_t value) {
  return post_write(card_addr, 4, value);
}

bool HostEnd::post_write(uint32_t card_addr, uint32_t size, uint64_t value) {
  check_owner();
  std::lock_guard<std::mutex> lock(call_mutex_);
  ControlBlock &cb = *control_;
  check_callable();
  uint32_t seq = cb.posted_seq.load(std::memory_order_relaxed);
  if (cb.posted_taken.load(std::memory_order_acquire) != seq)
    return false;
  // fetch_add: a clock read in another thread (the shim) is not lost.
  uint64_t now = cb.host_time.fetch_add(cb.posted_write_ps);
  cb.posted.op = Op::Write;
  cb.posted.a = card_addr;
  cb.posted.b = size;
  cb.posted.arg64 = value;
  lease_until_ = 0; // the write may wake the card (post_write)
  cb.posted.time = now;
  // The emulator reads the slot only after it sees the new sequence number.
  cb.posted_seq.store(seq + 1, std::memory_order_release);
  return true;
}

void HostEnd::exit(int status) {
  if (foreign()) // a forked child's exit is not its parent's
    return;
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
  static const int yields = yields_for(control_->size);
  static const int liveness = liveness_check_ms(control_->size);
  for (int i = 0; i < spins; ++i) {
    if (seq.load(std::memory_order_acquire) != seen)
      return;
    cpu_relax();
  }
  for (int i = 0; i < yields; ++i) {
    if (seq.load(std::memory_order_acquire) != seen)
      return;
    sched_yield();
  }
  for (;;) {
    // seq_cst: pairs with the emulator's bump-then-check in reply().
    control_->host_sleeping.store(1);
    if (seq.load() == seen)
      futex_wait(seq, seen, liveness);
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

} // namespace nicemu::channel
