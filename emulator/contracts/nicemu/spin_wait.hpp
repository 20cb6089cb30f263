// Waits that spin or yield before they sleep, because putting a process or
// thread to sleep and waking it costs tens of microseconds: both ends of the
// host channel (hostlib/src/host_end.cpp waits for a reply,
// emulator/host/hosts.cpp for the next request; docs/host-channel.md,
// "Performance plan") and the cores' worker threads
// (emulator/node/core_workers.cpp).
#pragma once

#include <cstdint>
#include <unistd.h>

namespace nicemu {

// What a spinning wait does between two looks: tells the core that this is
// a spin (it saves power, and on a shared core lets the sibling run).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Whether `hosts` host processes (and the emulator) are few enough for the
// channel's waits to yield the core rather than sleep: a crowd of yielding
// processes would keep the emulator, the one that can answer them, off the
// cores.
inline bool few_enough_to_yield(uint32_t hosts) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 && long(hosts) + 1 <= 2 * cpus;
}

// How often, in milliseconds, a host asleep on the channel wakes to see
// whether the emulator still runs (an orderly stop wakes it; this finds an
// emulator that died): every 250 ms up to 64 hosts, then less often, so
// that all of them together wake at most 256 times a second, up to 16 s
// (4096 hosts). Each wake costs the machine tens of microseconds, and 4096
// hosts checking every 250 ms kept both cores of a 2-core machine busy and
// left the emulator 3 % of one.
inline int liveness_check_ms(uint32_t hosts) {
  constexpr uint64_t kPeriodMs = 250, kLongestMs = 16'000;
  uint64_t ms = kPeriodMs * hosts / 64;
  return int(ms < kPeriodMs ? kPeriodMs : ms > kLongestMs ? kLongestMs : ms);
}

} // namespace nicemu
