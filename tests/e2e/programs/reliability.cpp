// Host programs that attack the emulator the way a buggy or hostile program
// would (issue 23), run on the host_echo firmware by test_reliability.cpp.
// Each mode prints what it saw, one fact per line, and exits 0 when every
// attack was refused as documented (docs/reliability.md).
//   time: durations and deadlines past the end of virtual time
//   fork: children forked from the program call the library
//   crash-mid-dma abort|kill: rank 0 dies while a bcopy into its memory is
//     half done (niam firmware, 2 nodes)
//   leave-mid-request: rank 1 closes its descriptors and _exit(0)s while its
//     wait_word is pending; rank 0 then DMAs into its memory (niam, 2 nodes)
#include <nicemu/host.h>
#include <nicemu/host.hpp>

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <thread>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

namespace host = nicemu::host;

namespace {

constexpr uint64_t kTimeEnd = uint64_t(1) << 63;

void clock_line(const char *when) {
  std::printf("%s: clock %" PRIu64 " ps\n", when, host::now_ps());
}

// Runs `f`; prints whether it was refused with BadArgument.
template <typename F> bool refused(const char *what, F f) {
  try {
    f();
  } catch (const host::Error &e) {
    bool bad_argument = e.code() == host::ErrorCode::BadArgument;
    std::printf("%s: refused (%s): %s\n", what,
                bad_argument ? "bad argument" : "other", e.what());
    return bad_argument;
  }
  std::printf("%s: accepted\n", what);
  return false;
}

// Issue 23.1: compute(UINT64_MAX) after compute(1000000) left the clock at
// 999999 ps; wait_word_until(..., UINT64_MAX - 1) then compute(10) gave 8.
int attack_time() {
  bool ok = true;
  auto *word = static_cast<volatile uint32_t *>(host::alloc(4));
  host::compute(1'000'000);
  ok &= refused("compute(UINT64_MAX)", [] { host::compute(UINT64_MAX); });
  clock_line("after compute(UINT64_MAX)");
  ok &= refused("wait_word_until(UINT64_MAX - 1)",
                [&] { host::wait_word_until(word, ~0u, 1, UINT64_MAX - 1); });
  host::compute(10);
  clock_line("after compute(10)");
  bool matched = host::wait_word_until(word, ~0u, 1, host::now_ps() + 100);
  std::printf("a deadline 100 ps ahead: %s\n", matched ? "matched" : "missed");
  clock_line("after the timed wait");
  // The clock shim's sleeps: past the end, refused with the clock unmoved.
  unsigned left = sleep(~0u);
  std::printf("sleep(UINT_MAX) left %u s unslept\n", left);
  ok &= left == ~0u;
  ok &= usleep(1) == 0;
  clock_line("after usleep(1)");
  // Up to the end exactly is allowed; one picosecond more is not.
  host::compute(kTimeEnd - host::now_ps());
  clock_line("at the end");
  ok &= refused("compute(1) at the end", [] { host::compute(1); });
  clock_line("still");
  return ok ? 0 : 1;
}

// In a forked child: every call of the library must fail with NotRun
// (NICEMU_ENOTRUN in C) before it reaches the parent's channel, and its
// clock reads and sleeps must leave the parent's virtual clock alone.
// 0 if so. Child 0 prints the message.
int child_calls(int child, uint32_t box) {
  int refused = 0, calls = 0;
  auto attempt = [&](auto f) {
    ++calls;
    try {
      f();
    } catch (const host::Error &e) {
      refused += e.code() == host::ErrorCode::NotRun;
      if (child == 0 && calls == 1)
        std::printf("child 0: %s\n", e.what());
    }
  };
  attempt([] { host::compute(1); });
  attempt([&] { host::pio_write(box + 16, 99); }); // posted, when it may
  attempt([&] { host::pio_read(box); });
  attempt([] { host::alloc(64); });
  ++calls;
  refused += nicemu_compute(1) == NICEMU_ENOTRUN;
  for (int i = 0; i < 1000; ++i) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
  }
  usleep(1);
  std::printf("child %d: %d of %d calls refused\n", child, refused, calls);
  return refused == calls ? 0 : 1;
}

// Issue 23.4: 4 children forked from a host program called the library on
// their parent's channel (only 563 of about 700 calls were served, yet all
// "succeeded"), and a child returning from main posted Exit for the
// parent's rank. Children return from main here, so the library's atexit
// handler runs in them.
int attack_fork(bool *is_child) {
  bool early_ok = false;
  std::fflush(stdout);
  // A child forked before the library's first call gets no channel either.
  if (pid_t early = fork(); early == 0) {
    *is_child = true;
    try {
      host::compute(1);
      std::printf("early child: accepted\n");
      return 1;
    } catch (const host::Error &e) {
      std::printf("early child: refused (%s)\n",
                  e.code() == host::ErrorCode::NotRun ? "not run" : "other");
      return e.code() == host::ErrorCode::NotRun ? 0 : 1;
    }
  } else {
    int status = 0;
    waitpid(early, &status, 0);
    early_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  host::compute(1000);
  uint32_t box = host::mailbox();
  std::fflush(stdout);
  pid_t children[4];
  for (int i = 0; i < 4; ++i) {
    children[i] = fork();
    if (children[i] == 0) {
      *is_child = true;
      return child_calls(i, box);
    }
  }
  bool ok = true;
  for (pid_t child : children) {
    int status = 0;
    ok &= waitpid(child, &status, 0) == child && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0;
  }
  std::printf("parent: the children %s\n", ok ? "were refused" : "failed");
  // The parent's channel is as it was: its clock, its calls.
  clock_line("parent after the children");
  host::compute(1000);
  host::pio_write(box + 16, 7);
  uint32_t read = host::pio_read(box + 16);
  std::printf("parent read back %u\n", read);
  clock_line("parent at the end");
  return early_ok && ok && read == 7 ? 0 : 1;
}

// Sleeps `ms` of wall time without the clock shim (which would make it a
// library call): the program computes, as far as the emulator knows.
void wall_sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  while (syscall(SYS_nanosleep, &ts, &ts) != 0) {
  }
}

constexpr size_t kTransfer = 64 << 10;

// Rank 0 copies rank 1's memory into its own (a get: rank 1's NIC sends,
// rank 0's NIC DMAs each 4 KB chunk into rank 0's memory), computes 1 us at
// a time until part of it has landed, then dies by `how` with the rest in
// flight. Rank 1 waits in a barrier rank 0 never reaches.
int crash_mid_dma(const char *how) {
  auto *src = static_cast<uint8_t *>(host::am_alloc(kTransfer));
  auto *dst = static_cast<volatile uint8_t *>(host::am_alloc(kTransfer));
  std::memset(src, 0x5A, kTransfer);
  for (size_t i = 0; i < kTransfer; ++i)
    dst[i] = 0;
  host::barrier();
  if (host::rank() != 0) {
    try {
      host::barrier();
    } catch (const host::Error &e) {
      std::printf("rank %u: %s\n", host::rank(), e.what());
    }
    return 3;
  }
  host::bcopy(1, src, 0, const_cast<uint8_t *>(dst), kTransfer);
  for (;;) {
    host::compute(1'000'000); // 1 us
    size_t landed = 0;
    for (size_t i = 0; i < kTransfer; ++i)
      landed += dst[i] == 0x5A;
    if (landed == kTransfer) {
      std::printf("rank 0: the whole transfer landed first\n");
      return 1;
    }
    if (landed > 0) {
      std::printf("rank 0: %zu of %zu bytes landed; dying by %s\n", landed,
                  kTransfer, how);
      std::fflush(stdout);
      if (std::strcmp(how, "kill") == 0)
        std::raise(SIGKILL);
      std::abort();
    }
  }
}

// Rank 1 waits for a flag (a request the emulator holds); another thread
// closes every descriptor the program has (the channel's and the wake
// pipe's among them) and ends the process with _exit(0), with no library
// exit. Rank 0, computing meanwhile, then copies into rank 1's memory and
// raises the flag it waited for: the data and the flag land in memory whose
// process is gone.
int leave_mid_request() {
  auto *src = static_cast<uint8_t *>(host::am_alloc(kTransfer));
  auto *dst = static_cast<uint8_t *>(host::am_alloc(kTransfer));
  auto *flag = static_cast<volatile uint32_t *>(host::am_alloc(4));
  std::memset(src, 0x5A, kTransfer);
  *flag = 0;
  host::barrier();
  if (host::rank() == 1) {
    std::thread([] {
      wall_sleep_ms(300);
      std::printf("rank 1: leaving in the middle of wait_word, without the "
                  "library's exit\n");
      std::fflush(stdout);
      for (int fd = 3; fd < 1024; ++fd)
        close(fd);
      _exit(0);
    }).detach();
    host::wait_word(flag, ~0u, 1);
    std::printf("rank 1: the wait ended\n");
    return 1;
  }
  wall_sleep_ms(1000); // rank 1 has left by now
  host::bcopy_notify(0, src, 1, dst, kTransfer, flag, 1);
  uint32_t refused = host::sync();
  std::printf("rank 0: the copy into rank 1's memory ended, %u refused\n",
              refused);
  return refused == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "time") == 0)
    return attack_time();
  if (std::strcmp(mode, "fork") == 0) {
    bool is_child = false;
    int status = attack_fork(&is_child);
    if (is_child)
      std::fflush(stdout);
    return status; // children too: the library's atexit handler runs
  }
  if (std::strcmp(mode, "crash-mid-dma") == 0 && argc > 2)
    return crash_mid_dma(argv[2]);
  if (std::strcmp(mode, "leave-mid-request") == 0)
    return leave_mid_request();
  std::fprintf(stderr,
               "usage: %s time|fork|crash-mid-dma abort|kill|"
               "leave-mid-request\n",
               argv[0]);
  return 2;
}
