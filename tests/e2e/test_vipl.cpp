// End-to-end: VIPL (nicemu/vipl.h) on the via firmware, comet model, two
// nodes. tests/e2e/programs/vipl_basic.c checks the calls of one node (and
// their errors) in classic C; tests/e2e/programs/vipl_pair.cpp runs the
// two-node scenarios (connections, transfers, completion queues, errors,
// RDMA). Each rank prints "ok" or what failed; here every rank must say ok.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

using namespace e2e;

namespace {

CommandResult run_vipl(const std::vector<std::string> &program) {
  std::vector<std::string> args = {
      "run", "-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE,
      "--"};
  args.insert(args.end(), program.begin(), program.end());
  return nicemu(args);
}

// Runs a scenario of vipl_pair_prog; both ranks must report ok.
CommandResult pair(const std::string &scenario) {
  CommandResult r = run_vipl({NICEMU_VIPL_PAIR, scenario});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "rank 0: " + scenario + ": ok\n"));
  CHECK(contains(r.out, "rank 1: " + scenario + ": ok\n"));
  return r;
}

// "rank R: SCENARIO: N messages, B bytes, sum 0x..." of both ranks: what
// one sent is what the other received.
void same_sums(const CommandResult &r, const std::string &scenario) {
  std::string sums[2];
  for (const std::string &line : lines_with(r.out, scenario + ": ")) {
    unsigned rank = 0, messages = 0, bytes = 0, sum = 0;
    if (std::sscanf(line.c_str(), "rank %u: %*s %u messages, %u bytes, sum %x",
                    &rank, &messages, &bytes, &sum) == 4 &&
        rank < 2) {
      CHECK(messages == 320);
      CHECK(bytes ==
            16 * (0 + 1 + 3 + 4 + 5 + 63 + 64 + 65 + 1467 + 1468 + 1469 + 2936 +
                  2937 + 4095 + 4096 + 4097 + 9999 + 32768 + 65535 + 65536));
      sums[rank] = line.substr(line.find("messages"));
    }
  }
  INFO(r);
  CHECK(!sums[0].empty());
  CHECK(sums[0] == sums[1]);
}

// Whether `err` has a line "nicemu: FUNCTION: ..." that contains `reason`.
bool explained(const std::string &err, const std::string &function,
               const std::string &reason) {
  for (const std::string &line : lines_with(err, reason))
    if (line.rfind("nicemu: " + function + ": ", 0) == 0)
      return true;
  return false;
}

} // namespace

TEST_CASE("VIPL: the calls of one node, from classic C") {
  CommandResult r = run_vipl({NICEMU_VIPL_BASIC});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "rank 0: vipl_basic: 0 failures\n"));
  CHECK(contains(r.out, "rank 1: vipl_basic: 0 failures\n"));
  // Memory that is not there is refused with a message that says why.
  CHECK(contains(r.err, "nicemu: VipRegisterMem: memory at 0x1000 (64 bytes) "
                        "is not mapped writable in this process"));
  CHECK(contains(r.err, "nicemu: VipOpenNic: no device \"eth0\""));
  // A descriptor outside registered memory says so too.
  CHECK(explained(r.err, "VipPostRecv",
                  "segments run past the end of memory handle"));
  CHECK(explained(r.err, "VipPostRecv", "is not registered (VipRegisterMem)"));
  // NICEMU_VIPL_DIAGNOSTICS=0: the same run, quietly.
  CommandResult quiet =
      run_vipl({"env", "NICEMU_VIPL_DIAGNOSTICS=0", NICEMU_VIPL_BASIC});
  INFO(quiet);
  CHECK(quiet.status == 0);
  CHECK(contains(quiet.out, "rank 0: vipl_basic: 0 failures\n"));
  CHECK(!contains(quiet.err, "nicemu: Vip"));
}

TEST_CASE("VIPL: the card must run the via firmware") {
  CommandResult r =
      nicemu({"run", "-n", "1", "--model", "comet", "--firmware",
              firmware("doorbell_echo.img"), "--", NICEMU_VIPL_BASIC});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.err, "nicemu: VipOpenNic: the card does not run the via "
                        "firmware (--firmware via.img)"));
}

TEST_CASE("VIPL: connect and accept") {
  pair("connect");
}

TEST_CASE("VIPL: a rejected connection, then an accepted one") {
  pair("reject");
}

TEST_CASE("VIPL: connection timeouts in virtual time, a late accept") {
  pair("timeout");
}

TEST_CASE("VIPL: peer-to-peer connections") {
  pair("peer");
}

TEST_CASE("VIPL: sends and receives of 0..65536 bytes in 1..16 segments") {
  for (const char *level : {"unreliable", "delivery", "reception"}) {
    CAPTURE(level);
    const std::string scenario = std::string("transfer-") + level;
    same_sums(pair(scenario), scenario);
  }
}

TEST_CASE("VIPL: completion queues") {
  same_sums(pair("cq"), "cq");
}

TEST_CASE("VIPL: Wait timeouts and Done polling") {
  pair("waits");
}

TEST_CASE("VIPL: 200 receives posted before the connection, then 200 "
          "messages in order") {
  pair("prepost");
}

TEST_CASE("VIPL: disconnect flushes the peer's receives") {
  pair("disconnect");
}

TEST_CASE("VIPL: descriptor errors and broken connections, every refusal "
          "explained") {
  CommandResult r = pair("errors");
  INFO(r);
  // A handle of another kind, and handles that name nothing any more.
  CHECK(explained(r.err, "VipPostSend", "is a NIC handle, not a VI handle"));
  CHECK(explained(r.err, "VipDestroyVi",
                  "names no VI open in this process (destroyed"));
  CHECK(explained(r.err, "VipCQDone",
                  "names no CQ open in this process (destroyed"));
  CHECK(explained(r.err, "VipPostRecv",
                  "memory handle 250 is not registered (VipRegisterMem)"));
  // States.
  CHECK(explained(r.err, "VipPostSend",
                  "the VI is not connected (VIP_STATE_IDLE): receives may be "
                  "posted before connecting, sends may not"));
  CHECK(explained(r.err, "VipDestroyVi",
                  "the VI is connected (VIP_STATE_CONNECTED): VipDisconnect "
                  "it first"));
  CHECK(explained(r.err, "VipDestroyCQ",
                  "1 VI queue still reports to the CQ (VipDestroyVi first)"));
  // The card's result.
  CHECK(explained(r.err, "VipCreateViKind",
                  "the card has an FM VI (VIP_VI_KIND_FM_IP) already and "
                  "serves one at a time"));
  // Nothing completed yet is an answer, not a refusal.
  CHECK(lines_with(r.err, "nicemu: VipRecvDone").empty());
  CHECK(lines_with(r.err, "nicemu: VipRecvWait").empty());

  // NICEMU_VIPL_DIAGNOSTICS=0: the same run, quietly.
  CommandResult quiet = run_vipl(
      {"env", "NICEMU_VIPL_DIAGNOSTICS=0", NICEMU_VIPL_PAIR, "errors"});
  INFO(quiet);
  CHECK(quiet.status == 0);
  CHECK(contains(quiet.out, "rank 0: errors: ok\n"));
  CHECK(contains(quiet.out, "rank 1: errors: ok\n"));
  CHECK(!contains(quiet.err, "nicemu: Vip"));
}

TEST_CASE("VIPL: RDMA write and read") {
  pair("rdma");
}
