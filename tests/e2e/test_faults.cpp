// End-to-end: firmware that misbehaves is stopped and reported (exit 125
// and a fault report on stderr), never a crash of the emulator; a firmware
// that hangs is stopped by the watchdog or by --max-time; one that sleeps
// with nothing to wake it ends as a deadlock at the time its core reached.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

using namespace e2e;

namespace {

constexpr int kExitFault = 125, kExitMaxTime = 124;

struct FaultCase {
  const char *sample;   // firmware/samples/NAME.cpp
  const char *kind;     // fault_name() text
  const char *function; // where the PC must be
  const char *mnemonic; // of the faulting instruction ("" = not decodable)
  std::vector<std::string> extra; // more words the report must contain
};

// The cycle of "  at cycle N (T us of virtual time)".
uint64_t fault_cycle(const std::string &err) {
  const auto lines = lines_with(err, "at cycle ");
  REQUIRE_MESSAGE(lines.size() == 1, "no single 'at cycle' line");
  unsigned long long cycle = 0;
  double us = -1;
  REQUIRE(std::sscanf(lines[0].c_str(),
                      " at cycle %llu (%lf us of virtual time)", &cycle,
                      &us) == 2);
  CHECK(us >= 0);
  return cycle;
}

// Checks the parts every fault report has (debug/fault_report.cpp).
void check_report(const CommandResult &r, const FaultCase &c) {
  CHECK(r.status == kExitFault);
  CHECK(contains(r.err,
                 "nicemu: node 0: firmware fault: " + std::string(c.kind)));
  // The PC line names the function, e.g. "  pc do_break+0x4".
  const auto pc = lines_with(r.err, "  pc ");
  REQUIRE(!pc.empty());
  CHECK(contains(pc[0], c.function));
  const auto insn = lines_with(r.err, "  instruction: ");
  REQUIRE(insn.size() == 1);
  if (*c.mnemonic)
    CHECK(contains(insn[0], std::string("instruction: ") + c.mnemonic + " "));
  CHECK(contains(insn[0], "[")); // the raw word is always shown
  CHECK(contains(r.err, "  registers:\n"));
  for (const char *reg : {"zero ", " sp ", " ra ", " hi ", " lo ", " pc "})
    CHECK_MESSAGE(contains(r.err, reg), "register " << reg << " not shown");
  CHECK(fault_cycle(r.err) > 0);
  for (const std::string &word : c.extra)
    CHECK_MESSAGE(contains(r.err, word), "the report does not say " << word);
  const RunSummary s = parse_summary(r.err);
  CHECK(s.state == "faulted");
  CHECK(s.exit == "-");
}

} // namespace

TEST_CASE("every fault sample is reported with kind, place, instruction, "
          "registers and cycle") {
  const std::vector<FaultCase> cases = {
      {"fault_unaligned", "unaligned read", "do_unaligned_load", "lw", {}},
      {"fault_unmapped",
       "write to unmapped address",
       "do_unmapped_store",
       "sw",
       {"0x40000000"}},
      {"fault_illegal",
       "illegal instruction",
       "do_illegal",
       "",
       {"not an instruction: 0xffffffff"}},
      {"fault_break", "break instruction", "do_break", "break", {}},
      {"fault_bad_register",
       "bus error",
       "do_bad_register_store",
       "sw",
       {"SYS+0xff0", "no such register"}},
  };
  for (const FaultCase &c : cases) {
    SUBCASE(c.sample) {
      CommandResult r = nicemu(
          {"run", "--firmware", firmware(std::string(c.sample) + ".img")});
      INFO(r);
      check_report(r, c);
      CHECK(r.out.empty()); // none of them prints anything
    }
  }
}

TEST_CASE("hang: the watchdog stops a firmware that makes no progress") {
  CommandResult r = nicemu(
      {"run", "--watchdog", "100000", "--firmware", firmware("hang.img")});
  INFO(r);
  check_report(r, {"hang", "watchdog", "spin_forever", "b", {"100000 cycles"}});
  // It fires after 100000 cycles without progress, not much later.
  const uint64_t cycle = fault_cycle(r.err);
  CHECK(cycle >= 100000);
  CHECK(cycle < 101000);
}

TEST_CASE("hang: --max-time stops the run at exactly that virtual time") {
  CommandResult r = nicemu({"run", "--watchdog", "0", "--max-time", "1ms",
                            "--firmware", firmware("hang.img")});
  INFO(r);
  CHECK(r.status == kExitMaxTime);
  CHECK(contains(r.err, "nicemu: stopped at --max-time 1ms"));
  CHECK(!contains(r.err, "firmware fault"));
  const RunSummary s = parse_summary(r.err);
  CHECK(s.state == "running");
  CHECK(contains(s.deterministic_lines.back(), "virtual time 1000.000 us"));
  // 1 ms at 33 MHz.
  CHECK(s.cycles == doctest::Approx(33000).epsilon(0.001));
}

// Regression: the summary said "virtual time 0.000 us". The lone core
// went to sleep with nothing scheduled, so the scheduler's clock never
// moved; the run reached the core's time.
TEST_CASE("a one-node deadlock reports the virtual time the core reached") {
  CommandResult r = nicemu({"run", "--firmware", firmware("host_echo.img")});
  INFO(r);
  CHECK(r.status == 126); // deadlock
  RunSummary s = parse_summary(r.err);
  CHECK(s.state == "sleeping");
  REQUIRE(s.cycles > 0);
  // lanai4 runs at 33 MHz: the time of the core's last cycle.
  CHECK(s.virtual_us == doctest::Approx(double(s.cycles) / 33.0).epsilon(1e-4));
}
