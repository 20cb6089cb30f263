// Host side of the doorbell_echo firmware (comet): rings doorbells and
// checks that the NIC echoes every value, in order, into host memory; times
// the calls in virtual picoseconds. `doorbell_echo_prog stuck` instead stops
// the firmware and then fills a FIFO: the run must end as a deadlock, not
// hang.
//
// Prints one line per check ("name: figures"), then "done"; any mismatch
// prints "FAIL ..." and exits 1.
#include <nicemu/host.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

namespace host = nicemu::host;

namespace {

constexpr uint32_t kLogRecords = 256; // as the firmware's log
constexpr uint32_t kDepth = 16;       // comet.toml [params.doorbell] depth
constexpr uint32_t kFifos = 8;        // comet.toml [params.doorbell] fifos

struct Record {
  uint32_t value, fifo, seq, pad;
};
static_assert(sizeof(Record) == 16);

Record *log_records = nullptr;
uint32_t echoed = 0; // values echoed so far (the firmware's count)

int fail(const char *what, unsigned a = 0, unsigned b = 0) {
  std::printf("FAIL %s (%u, %u)\n", what, a, b);
  return 1;
}

// Waits for the next echo; false if it is not `value` from `fifo`.
bool next_echo(uint32_t fifo, uint32_t value) {
  Record &r = log_records[echoed % kLogRecords];
  ++echoed;
  host::wait_word(&r.seq, ~0u, echoed);
  return r.value == value && r.fifo == fifo;
}

int echo() {
  log_records =
      static_cast<Record *>(host::alloc(sizeof(Record) * kLogRecords));
  auto *never = static_cast<volatile uint32_t *>(host::alloc(4));

  // One doorbell write: the model's doorbell_write, exactly.
  uint64_t t0 = host::now_ps();
  host::doorbell(0, host::bus_address(log_records));
  const uint64_t single = host::now_ps() - t0;
  std::printf("doorbell write: %llu ps\n", (unsigned long long)single);

  // One echo.
  host::doorbell(1, 0xC0FFEE01u);
  if (!next_echo(1, 0xC0FFEE01u))
    return fail("first echo", log_records[0].value, log_records[0].fifo);

  // A burst of 4 x DEPTH values into FIFO 1, faster than the firmware
  // echoes them: the FIFO fills, and writes are held until it pops.
  uint32_t held = 0;
  uint64_t longest = 0;
  std::vector<uint32_t> sent;
  for (uint32_t i = 0; i < 4 * kDepth; ++i) {
    uint32_t value = 0x1000u + i * 7u;
    uint64_t before = host::now_ps();
    host::doorbell(1, value);
    uint64_t took = host::now_ps() - before;
    if (took > single)
      ++held;
    if (took > longest)
      longest = took;
    sent.push_back(value);
  }
  for (uint32_t i = 0; i < sent.size(); ++i)
    if (!next_echo(1, sent[i]))
      return fail("burst echo out of order", i,
                  log_records[(echoed - 1) % kLogRecords].value);
  std::printf("burst: %zu values in order, %u writes held, longest %llu ps\n",
              sent.size(), held, (unsigned long long)longest);

  // Every FIFO but the control one is served.
  for (uint32_t f = 1; f < kFifos; ++f)
    host::doorbell(f, 0xF000u + f);
  uint32_t seen_fifos = 0;
  for (uint32_t f = 1; f < kFifos; ++f) {
    Record &r = log_records[echoed % kLogRecords];
    ++echoed;
    host::wait_word(&r.seq, ~0u, echoed);
    if (r.value != 0xF000u + r.fifo)
      return fail("fifo echo", r.fifo, r.value);
    seen_fifos |= 1u << r.fifo;
  }
  std::printf("fifos: 0x%x\n", seen_fifos);

  // A FIFO the card does not have is refused.
  try {
    host::doorbell(kFifos, 1);
    return fail("doorbell on a FIFO past the last");
  } catch (const host::Error &e) {
    std::printf("fifo %u: refused (%s)\n", kFifos, e.what());
  }

  // wait_word_until: a word nobody writes times out at the deadline exactly.
  uint64_t start = host::now_ps();
  uint64_t deadline = start + 7'000'000; // 7 us
  uint32_t seen = 99;
  bool matched = host::wait_word_until(never, ~0u, 1, deadline, &seen);
  std::printf("timeout: matched %d, at deadline %s, returned %llu ps after "
              "the call, word %u\n",
              int(matched), host::now_ps() == deadline ? "yes" : "no",
              (unsigned long long)(host::now_ps() - start), seen);
  // A deadline already past: at once.
  start = host::now_ps();
  matched = host::wait_word_until(never, ~0u, 1, start - 1, &seen);
  std::printf("past deadline: matched %d, took %llu ps\n", int(matched),
              (unsigned long long)(host::now_ps() - start));

  // And a word the NIC writes before the deadline: matched, early.
  host::doorbell(2, 0xABCDu);
  Record &r = log_records[echoed % kLogRecords];
  ++echoed;
  start = host::now_ps();
  deadline = start + 1'000'000'000; // 1 ms
  matched = host::wait_word_until(&r.seq, ~0u, echoed, deadline, &seen);
  std::printf("match: matched %d, before deadline %s, word ok %s, value ok "
              "%s\n",
              int(matched), host::now_ps() < deadline ? "yes" : "no",
              seen == echoed ? "yes" : "no", r.value == 0xABCDu ? "yes" : "no");
  std::printf("done\n");
  return 0;
}

// The firmware stops popping; DEPTH writes fit, the next one is held for
// ever. The emulator must end the run (every host waits, no NIC can act).
int stuck() {
  log_records =
      static_cast<Record *>(host::alloc(sizeof(Record) * kLogRecords));
  host::doorbell(0, host::bus_address(log_records));
  host::doorbell(0, 0); // stop serving: acknowledged by a record of FIFO 0
  host::wait_word(&log_records[0].seq, ~0u, 1);
  if (log_records[0].fifo != 0)
    return fail("stop acknowledged", log_records[0].fifo);
  for (uint32_t i = 0; i < kDepth; ++i)
    host::doorbell(1, i + 1);
  std::printf("rang %u, ringing one more\n", kDepth);
  std::fflush(stdout);
  host::doorbell(1, kDepth + 1); // never completes
  std::printf("FAIL the held write completed\n");
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  try {
    if (argc > 1 && std::strcmp(argv[1], "stuck") == 0)
      return stuck();
    return echo();
  } catch (const host::Error &e) {
    std::printf("error: %s\n", e.what());
    std::fflush(stdout);
    return 3;
  }
}
