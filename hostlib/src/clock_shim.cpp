// libnicemu_clock.so: preloaded by `nicemu run` into host programs so that
// clock_gettime, gettimeofday and time report the host's virtual time, and
// existing benchmarks print emulated microseconds; and gethostname names
// the emulated node ("node3"), so programs that look themselves up by host
// name (VIPL's name service) find their node. Outside `nicemu run`
// (no NICEMU_CHANNEL_FD) every call goes to the C library unchanged.
//
// Each clock read costs the host NICEMU_CLOCK_COST_PS of virtual time (set
// by the launcher), so a program that spins on the clock still advances.
// The shim moves the host's clock in the channel's control block; the next
// library call carries it to the emulator.
#include "nicemu/channel_layout.hpp"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

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

struct Shim {
  ControlBlock *control = nullptr;
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
      made.control = static_cast<ControlBlock *>(p);
    return made;
  }();
  return s;
}

// The host's virtual time after paying for this read, in picoseconds.
uint64_t read_virtual() {
  Shim &s = shim();
  return s.control->host_time.fetch_add(s.cost_ps) + s.cost_ps;
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
  if (!s.control || !virtual_clock(clock))
    return s.real_clock_gettime ? s.real_clock_gettime(clock, ts) : -1;
  uint64_t ps = read_virtual();
  bool wall = clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE;
  ts->tv_sec = time_t(ps / 1'000'000'000'000ull) + (wall ? kEpochOffset : 0);
  ts->tv_nsec = long(ps / 1000 % 1'000'000'000ull);
  return 0;
}

int gettimeofday(timeval *tv, void *tz) {
  Shim &s = shim();
  if (!s.control)
    return s.real_gettimeofday ? s.real_gettimeofday(tv, tz) : -1;
  uint64_t ps = read_virtual();
  tv->tv_sec = time_t(ps / 1'000'000'000'000ull) + kEpochOffset;
  tv->tv_usec = suseconds_t(ps / 1'000'000 % 1'000'000);
  return 0;
}

int gethostname(char *name, size_t len) {
  const char *rank = std::getenv("NICEMU_RANK");
  if (!rank || !shim().control) {
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

time_t time(time_t *out) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out)
    *out = ts.tv_sec;
  return ts.tv_sec;
}

} // extern "C"
