// End-to-end: doorbells and timed waits on the comet model. The host
// program (programs/doorbell_echo.cpp) rings the card's doorbell FIFOs; the
// doorbell_echo firmware pops every value and writes it back into the
// host's memory by host DMA. A burst longer than a FIFO is deep exercises
// the held (retried) write; a firmware that stops popping leaves the host
// blocked, and the run must end with a message instead of hanging.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

using namespace e2e;

namespace {

std::vector<std::string> doorbell_run(const std::string &program,
                                      const std::string &mode = "") {
  std::vector<std::string> args = {
      "run", "--model", "comet", "--firmware", firmware("doorbell_echo.img"),
      "--",  program};
  if (!mode.empty())
    args.push_back(mode);
  return args;
}

// comet.toml's [timing.host] doorbell_write, in picoseconds, read from the
// model file itself ("0.51 us").
uint64_t comet_doorbell_write_ps() {
  const std::string toml =
      read_text(fs::path(NICEMU_SOURCE_DIR) / "emulator/models/comet.toml");
  size_t at = toml.find("\ndoorbell_write");
  REQUIRE(at != std::string::npos);
  size_t open = toml.find('"', at), close = toml.find('"', open + 1);
  REQUIRE(close != std::string::npos);
  double value = 0;
  char unit[4] = {};
  REQUIRE(std::sscanf(toml.substr(open + 1, close - open - 1).c_str(),
                      "%lf %3s", &value, unit) == 2);
  const std::string u = unit;
  double scale = u == "us" ? 1e6 : u == "ns" ? 1e3 : u == "ps" ? 1 : 0;
  REQUIRE_MESSAGE(scale != 0, "unexpected unit " << u);
  return uint64_t(std::llround(value * scale));
}

} // namespace

TEST_CASE("doorbells on comet: every value echoed in order, a write costs "
          "doorbell_write, a full FIFO holds the write, timed waits") {
  const uint64_t cost = comet_doorbell_write_ps();
  CHECK(cost == 510'000); // comet.toml: 0.51 us, one PIO write
  CommandResult r = nicemu(doorbell_run(NICEMU_DOORBELL_ECHO));
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK_FALSE(contains(r.out, "FAIL"));
  CHECK(contains(r.out, "doorbell write: " + std::to_string(cost) + " ps\n"));
  // 64 values through a 16-deep FIFO, each echo a host DMA (0.85 us + 4
  // words x 32.1 ns, more than a doorbell write): the FIFO fills and some
  // writes are held until the firmware pops. All arrive, in order.
  auto burst = lines_with(r.out, "burst:");
  REQUIRE(burst.size() == 1);
  unsigned values = 0, held = 0;
  unsigned long long longest = 0;
  REQUIRE(std::sscanf(burst[0].c_str(),
                      "burst: %u values in order, %u writes held, longest "
                      "%llu ps",
                      &values, &held, &longest) == 3);
  CHECK(values == 64);
  CHECK(held > 0);
  CHECK(longest > cost);
  CHECK(contains(r.out, "fifos: 0xfe\n")); // FIFOs 1-7 served
  CHECK(contains(r.out, "fifo 8: refused (nicemu: doorbell write failed "
                        "(status -1): the NIC has no doorbell FIFO 8)\n"));
  // The deadline is 7 us after the call: the reply comes then, exactly.
  CHECK(contains(r.out, "timeout: matched 0, at deadline yes, returned "
                        "7000000 ps after the call, word 0\n"));
  CHECK(contains(r.out, "past deadline: matched 0, took 0 ps\n"));
  CHECK(contains(r.out, "match: matched 1, before deadline yes, word ok yes, "
                        "value ok yes\n"));
  CHECK(contains(r.out, "done\n"));
  CHECK(contains(r.err, "host 0: exited with status 0"));
}

TEST_CASE("doorbells: the same run twice gives the same virtual times") {
  CommandResult a = nicemu(doorbell_run(NICEMU_DOORBELL_ECHO));
  CommandResult b = nicemu(doorbell_run(NICEMU_DOORBELL_ECHO));
  REQUIRE(a.status == 0);
  CHECK(a.out == b.out);
  CHECK(run_summary(a.err) == run_summary(b.err));
}

TEST_CASE("a host held on a full FIFO that is never popped: the run ends as "
          "a deadlock with a message") {
  CommandResult r = nicemu(doorbell_run(NICEMU_DOORBELL_ECHO, "stuck"));
  INFO(r);
  CHECK(r.status == 126); // the deadlock exit code
  CHECK(contains(r.out, "[node0] doorbell_echo: stopped after 0 values\n"));
  CHECK(contains(r.out, "rang 16, ringing one more\n"));
  CHECK_FALSE(contains(r.out, "FAIL"));
  CHECK(contains(r.err, "nicemu: stopped: every host waits for its NIC and "
                        "no NIC has anything left to do"));
}

TEST_CASE("doorbells and timed waits through the C API") {
  CommandResult r = nicemu(doorbell_run(NICEMU_DOORBELL_C));
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "c doorbell ok\n"));
  CHECK_FALSE(contains(r.out, "FAIL"));
}

TEST_CASE("a doorbell on a card without doorbells (lanai4) is refused") {
  CommandResult r = nicemu({"run", "--firmware", firmware("host_echo.img"),
                            "--", NICEMU_DOORBELL_ECHO});
  INFO(r);
  CHECK(r.status == 3);
  CHECK(contains(r.out, "error: nicemu: doorbell write failed (status -1): "
                        "the NIC has no doorbell FIFO 0\n"));
}
