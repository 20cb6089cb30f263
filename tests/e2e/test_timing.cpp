// End-to-end: interrupts, sleeping and the virtual clock, and determinism
// (same firmware, same model => the same output and the same figures).
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

using namespace e2e;

TEST_CASE("timer_irq: ten timer interrupts are taken") {
  CommandResult r = nicemu({"run", "--firmware", firmware("timer_irq.img")});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(r.out == "[node0] ticks 10\n");
  const RunSummary s = parse_summary(r.err);
  CHECK(s.state == "halted");
  // Ten periods of 1000 cycles, most of them asleep.
  CHECK(s.cycles >= 10000);
  CHECK(s.cycles < 20000);
  CHECK(s.slept_cycles > 5000);
}

TEST_CASE("sleep_1s: one second of virtual time, spent asleep") {
  CommandResult r = nicemu({"run", "--firmware", firmware("sleep_1s.img")});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(r.out == "[node0] slept 1000 ms\n");
  const RunSummary s = parse_summary(r.err);
  CHECK(s.state == "halted");
  CHECK(s.virtual_us >= 1.0e6);
  CHECK(s.virtual_us <= 1.01e6);
  CHECK(s.cycles >= 33000000);
  // The core sleeps through the deadlines instead of running an idle loop
  // (a polling loop would execute one instruction every few cycles; the
  // 1000 deadline computations, soft 64-bit divisions, take ~2%).
  CHECK(s.slept_cycles > s.cycles * 9 / 10);
  CHECK(s.instructions < s.cycles / 10);
}

TEST_CASE("runs are deterministic: same output, same figures") {
  for (const char *sample : {"timer_irq", "cycles"}) {
    SUBCASE(sample) {
      const std::string img = firmware(std::string(sample) + ".img");
      CommandResult first = nicemu({"run", "--firmware", img});
      CommandResult second = nicemu({"run", "--firmware", img});
      INFO(first);
      INFO(second);
      CHECK(first.status == 0);
      CHECK(second.status == 0);
      CHECK(!first.out.empty());
      CHECK(first.out == second.out);
      // Only the wall time and the MIPS derived from it may differ.
      CHECK(parse_summary(first.err).deterministic_lines ==
            parse_summary(second.err).deterministic_lines);
    }
  }
}

TEST_CASE("cycles: the counter measures the fixed loop") {
  CommandResult r = nicemu({"run", "--firmware", firmware("cycles.img")});
  INFO(r);
  CHECK(r.status == 0);
  unsigned long long cycles = 0;
  REQUIRE(std::sscanf(r.out.c_str(), "[node0] cycles %llu\n", &cycles) == 1);
  // 1000 turns of addiu, bnez and nop: at least 3000 cycles, and little
  // more than the loop and the counter reads.
  CHECK(cycles >= 3000);
  CHECK(cycles < 3200);
}
