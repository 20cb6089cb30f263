#include "debug/fork_checkpoints.hpp"

#include "nicemu/error.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nicemu {

namespace {

enum class Command : uint32_t { Wait, Resume, Quit };

// The first process forwards SIGINT and SIGTERM sent to it alone.
volatile sig_atomic_t g_forward = 0;

void on_forwarded(int signal, siginfo_t *info, void *) {
  if (info && (info->si_code == SI_USER || info->si_code == SI_QUEUE))
    g_forward = signal;
}

double steady_seconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

void flush_output() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}

} // namespace

struct ForkCheckpoints::Slot {
  sem_t wake;
  std::atomic<uint32_t> command{uint32_t(Command::Wait)};
  bool live = false;
  int32_t pid = 0;
  Time time = 0;
  uint64_t tag = 0;
};

struct ForkCheckpoints::Shared {
  Costs costs;
  double restore_asked = 0;           // steady clock, seconds
  int32_t first_pid = 0;              // the process the shell waits for
  std::atomic<int32_t> active_pid{0}; // the copy that runs
  std::atomic<int32_t> exit_code{0};
  std::atomic<bool> ended{false};
  Time interval = 0;
  uint32_t request_size = 0;
  char request[kMaxRequest];
  Slot slots[kMaxCheckpoints];
  // Then kMaxCheckpoints * nodes instruction counts.
};

ForkCheckpoints::ForkCheckpoints(size_t nodes, Time interval) : nodes_(nodes) {
  bytes_ = sizeof(Shared) + kMaxCheckpoints * nodes * sizeof(uint64_t);
  void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error(std::string("checkpoints: cannot map their table: ") +
                std::strerror(errno));
  shared_ = new (p) Shared();
  shared_->first_pid = int32_t(getpid());
  shared_->active_pid = int32_t(getpid());
  shared_->interval = interval ? interval : 1;
  for (Slot &s : shared_->slots)
    sem_init(&s.wake, 1, 0);
  // Copies whose parent checkpoint was let go are the first process's to
  // reap, so that it learns how the running copy ended.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
}

ForkCheckpoints::~ForkCheckpoints() {
  // Only the first process removes the table (the others end with _exit).
  if (shared_ && getpid() == shared_->first_pid && size() == 0) {
    for (Slot &s : shared_->slots)
      sem_destroy(&s.wake);
    munmap(shared_, bytes_);
  }
}

ForkCheckpoints::Slot &ForkCheckpoints::slot(size_t index) const {
  return shared_->slots[index];
}

uint64_t *ForkCheckpoints::executed_of(size_t index) const {
  auto *base = reinterpret_cast<uint64_t *>(shared_ + 1);
  return base + index * nodes_;
}

size_t ForkCheckpoints::size() const {
  size_t n = 0;
  for (const Slot &s : shared_->slots)
    n += s.live;
  return n;
}

ForkCheckpoints::Info ForkCheckpoints::info(size_t index) const {
  const Slot &s = slot(index);
  Info i{s.time, {}, s.tag};
  const uint64_t *e = executed_of(index);
  i.executed.assign(e, e + nodes_);
  return i;
}

bool ForkCheckpoints::due(Time now) const {
  const Slot *latest = nullptr;
  for (const Slot &s : shared_->slots)
    if (s.live && (!latest || s.time > latest->time))
      latest = &s;
  return !latest || now >= latest->time + shared_->interval;
}

std::optional<size_t> ForkCheckpoints::find(std::span<const uint64_t> bound,
                                            uint64_t tag, Time before) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < kMaxCheckpoints; ++i) {
    const Slot &s = slot(i);
    if (!s.live || s.tag != tag || s.time >= before)
      continue;
    const uint64_t *e = executed_of(i);
    bool earlier = true;
    for (size_t n = 0; n < nodes_ && n < bound.size() && earlier; ++n)
      earlier = e[n] <= bound[n];
    if (earlier && (!best || s.time > slot(*best).time))
      best = i;
  }
  return best;
}

std::optional<size_t> ForkCheckpoints::earliest(uint64_t tag) const {
  std::optional<size_t> best;
  for (size_t i = 0; i < kMaxCheckpoints; ++i) {
    const Slot &s = slot(i);
    if (s.live && s.tag == tag && (!best || s.time < slot(*best).time))
      best = i;
  }
  return best;
}

// Lets every other checkpoint go (the first and the latest stay) and
// doubles the interval: old history gets coarser, not lost.
void ForkCheckpoints::thin_out() {
  std::vector<size_t> live;
  for (size_t i = 0; i < kMaxCheckpoints; ++i)
    if (slot(i).live)
      live.push_back(i);
  std::sort(live.begin(), live.end(),
            [&](size_t a, size_t b) { return slot(a).time < slot(b).time; });
  for (size_t k = 1; k + 1 < live.size(); k += 2) {
    Slot &s = slot(live[k]);
    s.live = false;
    s.command = uint32_t(Command::Quit);
    sem_post(&s.wake);
  }
  shared_->interval *= 2;
}

std::optional<std::string> ForkCheckpoints::take(const Info &info) {
  size_t index = kMaxCheckpoints;
  for (size_t i = 0; i < kMaxCheckpoints && index == kMaxCheckpoints; ++i)
    if (!slot(i).live && slot(i).pid == 0)
      index = i;
  if (index == kMaxCheckpoints) {
    if (size() == kMaxCheckpoints) // else some are still leaving
      thin_out();
    return std::nullopt; // a later round takes it
  }
  flush_output();
  Slot &s = slot(index);
  s.time = info.time;
  s.tag = info.tag;
  std::copy(info.executed.begin(), info.executed.end(), executed_of(index));
  s.command = uint32_t(Command::Wait);
  s.pid = int32_t(getpid()); // this process is the checkpoint
  s.live = true;
  double start = steady_seconds();
  pid_t child = fork();
  if (child < 0) {
    s.live = false;
    s.pid = 0;
    return std::nullopt; // no checkpoint here; going back takes longer
  }
  if (child == 0) {
    shared_->active_pid = int32_t(getpid());
    Costs &c = shared_->costs;
    c.last_take = steady_seconds() - start;
    c.take_seconds += c.last_take;
    ++c.taken;
    return std::nullopt;
  }
  return wait_frozen(index);
}

std::optional<std::string> ForkCheckpoints::wait_frozen(size_t index) {
  Slot &s = slot(index);
  const bool first = s.pid == shared_->first_pid;
  struct sigaction ignore {
  }, forward{}, old_int{}, old_term{};
  ignore.sa_handler = SIG_IGN;
  forward.sa_sigaction = on_forwarded;
  forward.sa_flags = SA_SIGINFO;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, first ? &forward : &ignore, &old_int);
  sigaction(SIGTERM, first ? &forward : &ignore, &old_term);
  for (;;) {
    timespec until{};
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 200'000'000;
    if (until.tv_nsec >= 1'000'000'000) {
      until.tv_sec += 1;
      until.tv_nsec -= 1'000'000'000;
    }
    bool woken = sem_timedwait(&s.wake, &until) == 0;
    // The running copy may be this one's child, or (its parent let go)
    // the first process's: whoever reaps it ends the session if it died.
    int status = 0;
    for (pid_t dead; (dead = waitpid(-1, &status, WNOHANG)) > 0;)
      if (dead == shared_->active_pid && !shared_->ended) {
        end(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        woken = true;
      }
    if (first && g_forward) {
      if (pid_t active = shared_->active_pid; active > 0)
        kill(active, g_forward);
      g_forward = 0;
    }
    if (!first && orphaned()) {
      s.live = false;
      s.pid = 0;
      _exit(0);
    }
    if (!woken)
      continue;
    switch (Command(s.command.exchange(uint32_t(Command::Wait)))) {
    case Command::Quit:
      if (!first) {
        s.pid = 0; // the slot is free again
        _exit(0);
      }
      // The first process outlives the copy that ended the session, and
      // reaps the copies (its own children, and those whose parent went).
      if (pid_t active = shared_->active_pid; active > 0)
        while (kill(active, 0) == 0 && waitpid(active, &status, 0) < 0 &&
               errno == ECHILD)
          usleep(1000);
      for (int waited = 0; waited < 2000; ++waited) {
        while (waitpid(-1, &status, WNOHANG) > 0) {
        }
        if (errno == ECHILD)
          break;
        usleep(1000);
      }
      _exit(shared_->exit_code);
    case Command::Resume: {
      std::string request(shared_->request, shared_->request_size);
      pid_t child = fork();
      if (child != 0)
        continue; // stays a checkpoint (a failed fork: try again later)
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGTERM, &old_term, nullptr);
      shared_->active_pid = int32_t(getpid());
      shared_->costs.last_restore = steady_seconds() - shared_->restore_asked;
      return request;
    }
    case Command::Wait:
      break;
    }
  }
}

void ForkCheckpoints::restore(size_t index, const std::string &request) {
  Slot &s = slot(index);
  if (index >= kMaxCheckpoints || !s.live)
    throw Error("checkpoints: no checkpoint " + std::to_string(index));
  if (request.size() > kMaxRequest)
    throw Error("checkpoints: request of " + std::to_string(request.size()) +
                " bytes (at most " + std::to_string(kMaxRequest) + ")");
  flush_output();
  std::memcpy(shared_->request, request.data(), request.size());
  shared_->request_size = uint32_t(request.size());
  shared_->active_pid = 0;
  shared_->restore_asked = steady_seconds();
  s.command = uint32_t(Command::Resume);
  sem_post(&s.wake);
  _exit(0);
}

void ForkCheckpoints::end(int exit_code) {
  if (shared_->ended.exchange(true))
    return;
  flush_output();
  shared_->exit_code = exit_code;
  for (Slot &s : shared_->slots)
    if (s.live) {
      s.command = uint32_t(Command::Quit);
      sem_post(&s.wake);
    }
}

ForkCheckpoints::Costs ForkCheckpoints::costs() const {
  Costs c = shared_->costs;
  c.interval = shared_->interval;
  return c;
}

bool ForkCheckpoints::orphaned() const {
  return getpid() != shared_->first_pid && kill(shared_->first_pid, 0) != 0 &&
         errno == ESRCH;
}

} // namespace nicemu
