// libnicemu_clock.so: preloaded by `nicemu run` into host programs so that
// clock_gettime, gettimeofday and time report the host's virtual time, and
// existing benchmarks print emulated microseconds; sleep, usleep,
// nanosleep, clock_nanosleep, and select, poll and epoll_wait with nothing
// to wait for but their timeout, pass virtual time instead of wall time; and
// gethostname names the emulated node ("node3"), so programs that look
// themselves up by host name (VIPL's name service) find their node.
// Outside `nicemu run` (no NICEMU_CHANNEL_FD), and in a child forked from
// the host program, every call goes to the C library unchanged
// (docs/compatibility.md, "Time"; docs/host-channel.md, "Forked
// processes").
//
// Each clock read costs the host NICEMU_CLOCK_COST_PS of virtual time (set
// by the launcher), so a program that spins on the clock still advances.
// The shim moves the host's clock in the channel's control block; the next
// library call carries it to the emulator.
#include "nicemu/channel_layout.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace {

using nicemu::channel::ControlBlock;

// Virtual time 0 reads as this wall-clock date (2000-01-01T00:00:00Z), so
// CLOCK_REALTIME stays plausible and the same on every run.
constexpr time_t kEpochOffset = 946684800;

// Set in every child forked from the host program (pthread_atfork, from
// when the shim is loaded): the control block it inherited is its parent's,
// and it is not emulated, so it gets the real clocks and sleeps.
std::atomic<bool> forked_child{false};
[[maybe_unused]] const int fork_watch =
    pthread_atfork(nullptr, nullptr, [] { forked_child.store(true); });

struct Shim {
  ControlBlock *mapped = nullptr;
  // The control block, or nullptr outside `nicemu run` or in a forked child.
  ControlBlock *control() const {
    return forked_child.load(std::memory_order_relaxed) ? nullptr : mapped;
  }
  uint64_t cost_ps = 50'000; // 50 ns by default
  int (*real_clock_gettime)(clockid_t, timespec *) = nullptr;
  int (*real_gettimeofday)(timeval *, void *) = nullptr;
};

Shim &shim() {
  static Shim s = [] {
    Shim made;
    made.real_clock_gettime = reinterpret_cast<int (*)(clockid_t, timespec *)>(
        dlsym(RTLD_NEXT, "clock_gettime"));
    made.real_gettimeofday = reinterpret_cast<int (*)(timeval *, void *)>(
        dlsym(RTLD_NEXT, "gettimeofday"));
    const char *fd = std::getenv("NICEMU_CHANNEL_FD");
    if (const char *cost = std::getenv("NICEMU_CLOCK_COST_PS"))
      made.cost_ps = std::strtoull(cost, nullptr, 10);
    if (!fd)
      return made;
    size_t bytes = (sizeof(ControlBlock) + 4095) & ~size_t(4095);
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                   std::atoi(fd), 0);
    if (p != MAP_FAILED &&
        static_cast<ControlBlock *>(p)->magic == nicemu::channel::kMagic)
      made.mapped = static_cast<ControlBlock *>(p);
    return made;
  }();
  return s;
}

// The host's virtual time after paying for this read, in picoseconds.
uint64_t read_virtual() {
  Shim &s = shim();
  return s.control()->host_time.fetch_add(s.cost_ps) + s.cost_ps;
}

// Set by the host library once it talks to the emulator
// (nicemu_clock_set_sleeper): spends virtual time through it.
std::atomic<int (*)(uint64_t)> sleeper{nullptr};

// Sleeps `ps` of virtual time. Once the program talks to the emulator,
// through the host library, which runs the cluster up to then: a program
// that sleeps while it waits for its card sees the card act. Before that
// the sleep only moves the program's clock (the next call carries it).
// False, with the clock unmoved, for a sleep past the end of virtual time
// (or one the emulator refused): the caller fails with EINVAL.
bool sleep_virtual(uint64_t ps) {
  if (auto fn = sleeper.load())
    return fn(ps) == 0;
  std::atomic<uint64_t> &clock = shim().control()->host_time;
  uint64_t now = clock.load();
  do {
    if (now > nicemu::channel::kTimeEnd || ps > nicemu::channel::kTimeEnd - now)
      return false;
  } while (!clock.compare_exchange_weak(now, now + ps));
  return true;
}

// `seconds` plus `rest_ps` in picoseconds; UINT64_MAX (past the end of
// virtual time) when that does not fit.
uint64_t seconds_ps(uint64_t seconds, uint64_t rest_ps = 0) {
  uint64_t ps;
  if (__builtin_mul_overflow(seconds, 1'000'000'000'000ull, &ps) ||
      __builtin_add_overflow(ps, rest_ps, &ps))
    return UINT64_MAX;
  return ps;
}

uint64_t ps_of(const timespec &t) {
  return seconds_ps(uint64_t(t.tv_sec), uint64_t(t.tv_nsec) * 1000ull);
}

template <typename Fn> Fn real(const char *name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

bool virtual_clock(clockid_t clock) {
  switch (clock) {
  case CLOCK_REALTIME:
  case CLOCK_MONOTONIC:
  case CLOCK_MONOTONIC_RAW:
  case CLOCK_MONOTONIC_COARSE:
  case CLOCK_REALTIME_COARSE:
  case CLOCK_BOOTTIME:
    return true;
  default:
    return false;
  }
}

} // namespace

extern "C" {

int clock_gettime(clockid_t clock, timespec *ts) {
  Shim &s = shim();
  if (!s.control() || !virtual_clock(clock))
    return s.real_clock_gettime ? s.real_clock_gettime(clock, ts) : -1;
  uint64_t ps = read_virtual();
  bool wall = clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
  ts->tv_sec = time_t(ps / 1'000'000'000'000ull) + (wall ? kEpochOffset : 0);
  ts->tv_nsec = long(ps / 1000 % 1'000'000'000ull);
  return 0;
}

int gettimeofday(timeval *tv, void *tz) {
  Shim &s = shim();
  if (!s.control())
    return s.real_gettimeofday ? s.real_gettimeofday(tv, tz) : -1;
  uint64_t ps = read_virtual();
  tv->tv_sec = time_t(ps / 1'000'000'000'000ull) + kEpochOffset;
  tv->tv_usec = suseconds_t(ps / 1'000'000 % 1'000'000);
  return 0;
}

int gethostname(char *name, size_t len) {
  const char *rank = std::getenv("NICEMU_RANK");
  if (!rank || !shim().control()) {
    using Real = int (*)(char *, size_t);
    static auto real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "gethostname"));
    return real ? real(name, len) : -1;
  }
  char host[32];
  int n = std::snprintf(host, sizeof host, "node%s", rank);
  if (n < 0 || size_t(n) >= len) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(name, host, size_t(n) + 1);
  return 0;
}

void nicemu_clock_set_sleeper(int (*fn)(uint64_t)) {
  sleeper.store(fn);
}

int nanosleep(const timespec *req, timespec *rem) {
  if (!shim().control()) {
    static auto next = real<int (*)(const timespec *, timespec *)>("nanosleep");
    return next ? next(req, rem) : -1;
  }
  if (!req || req->tv_nsec < 0 || req->tv_nsec >= 1'000'000'000 ||
      req->tv_sec < 0) {
    errno = EINVAL;
    return -1;
  }
  if (!sleep_virtual(ps_of(*req))) {
    errno = EINVAL;
    return -1;
  }
  if (rem)
    *rem = timespec{};
  return 0;
}

int clock_nanosleep(clockid_t clock, int flags, const timespec *req,
                    timespec *rem) {
  if (!shim().control() || !virtual_clock(clock)) {
    static auto next =
        real<int (*)(clockid_t, int, const timespec *, timespec *)>(
            "clock_nanosleep");
    return next ? next(clock, flags, req, rem) : EINVAL;
  }
  if (!req || req->tv_nsec < 0 || req->tv_nsec >= 1'000'000'000 ||
      req->tv_sec < 0)
    return EINVAL;
  uint64_t ps = ps_of(*req);
  if (flags & TIMER_ABSTIME) { // until the clock reads `req`
    bool wall = clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
    uint64_t offset = wall ? uint64_t(kEpochOffset) * 1'000'000'000'000ull : 0;
    uint64_t now = shim().control()->host_time.load() + offset;
    ps = ps > now ? ps - now : 0;
  }
  if (!sleep_virtual(ps))
    return EINVAL;
  if (rem && !(flags & TIMER_ABSTIME))
    *rem = timespec{};
  return 0;
}

int usleep(useconds_t us) {
  if (!shim().control()) {
    static auto next = real<int (*)(useconds_t)>("usleep");
    return next ? next(us) : -1;
  }
  if (!sleep_virtual(uint64_t(us) * 1'000'000ull)) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

unsigned int sleep(unsigned int seconds) {
  if (!shim().control()) {
    static auto next = real<unsigned int (*)(unsigned int)>("sleep");
    return next ? next(seconds) : seconds;
  }
  return sleep_virtual(seconds_ps(seconds)) ? 0 : seconds;
}

// With no descriptor to wait for, a select or poll is a sleep; with some,
// the call goes to the C library as it is (they may wait for the world).
int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
           timeval *timeout) {
  static auto next =
      real<int (*)(int, fd_set *, fd_set *, fd_set *, timeval *)>("select");
  if (!shim().control() || nfds > 0 || !timeout)
    return next ? next(nfds, readfds, writefds, exceptfds, timeout) : -1;
  if (timeout->tv_sec < 0 || timeout->tv_usec < 0 ||
      timeout->tv_usec >= 1'000'000) {
    errno = EINVAL;
    return -1;
  }
  if (!sleep_virtual(seconds_ps(uint64_t(timeout->tv_sec),
                                uint64_t(timeout->tv_usec) * 1'000'000ull))) {
    errno = EINVAL;
    return -1;
  }
  *timeout = timeval{}; // Linux leaves the time not slept
  return 0;
}

int poll(pollfd *fds, nfds_t n, int timeout_ms) {
  static auto next = real<int (*)(pollfd *, nfds_t, int)>("poll");
  bool any = false;
  for (nfds_t i = 0; i < n; ++i)
    any = any || fds[i].fd >= 0; // negative descriptors are ignored
  if (!shim().control() || any || timeout_ms < 0)
    return next ? next(fds, n, timeout_ms) : -1;
  for (nfds_t i = 0; i < n; ++i)
    fds[i].revents = 0;
  if (!sleep_virtual(uint64_t(timeout_ms) * 1'000'000'000ull)) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

// epoll: the shim counts the descriptors each epoll set watches (the
// program's epoll_ctl calls), so that a wait on an empty set is a sleep.
namespace {
constexpr int kEpollSets = 4096;
std::atomic<int> epoll_watched[kEpollSets];

bool empty_epoll_set(int epfd) {
  return epfd >= 0 && epfd < kEpollSets && epoll_watched[epfd].load() <= 0;
}
} // namespace

int epoll_ctl(int epfd, int op, int fd, epoll_event *event) {
  static auto next = real<int (*)(int, int, int, epoll_event *)>("epoll_ctl");
  int result = next ? next(epfd, op, fd, event) : -1;
  if (result == 0 && epfd >= 0 && epfd < kEpollSets) {
    if (op == EPOLL_CTL_ADD)
      ++epoll_watched[epfd];
    else if (op == EPOLL_CTL_DEL)
      --epoll_watched[epfd];
  }
  return result;
}

int epoll_wait(int epfd, epoll_event *events, int maxevents, int timeout_ms) {
  static auto next = real<int (*)(int, epoll_event *, int, int)>("epoll_wait");
  if (!next)
    return -1;
  if (!shim().control() || timeout_ms < 0 || !empty_epoll_set(epfd))
    return next(epfd, events, maxevents, timeout_ms);
  if (int now = next(epfd, events, maxevents, 0); now != 0)
    return now; // an error (not an epoll set, bad arguments)
  if (!sleep_virtual(uint64_t(timeout_ms) * 1'000'000'000ull)) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

time_t time(time_t *out) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out)
    *out = ts.tv_sec;
  return ts.tv_sec;
}

} // extern "C"
