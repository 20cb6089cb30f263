// Host programs that attack the emulator the way a buggy or hostile program
// would (issue 23), run on the host_echo firmware by test_reliability.cpp.
// Each mode prints what it saw, one fact per line, and exits 0 when every
// attack was refused as documented (docs/reliability.md).
//   time: durations and deadlines past the end of virtual time
#include <nicemu/host.hpp>

#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

} // namespace

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "time") == 0)
    return attack_time();
  std::fprintf(stderr, "usage: %s time\n", argv[0]);
  return 2;
}
