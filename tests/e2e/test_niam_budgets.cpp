// End-to-end: the NI Active Messages firmware keeps the cycle budgets of the
// LANai firmware it stands for (docs/niam.md, "Cycle budgets"), measured by
// nicemu's own cycle reports on the lanai4 model. A change that makes one of
// these paths slower fails here; behaviour is tested elsewhere (test_niam,
// test_niam_bcopy, the host-message and GAM tests).
#include "cli_helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace e2e;
using nlohmann::json;

namespace {

const json &handler(const json &report, const std::string &name) {
  for (const json &h : report["handlers"])
    if (h["name"] == name)
      return h;
  FAIL("no handler " << name << " in the cycle report");
  static const json none;
  return none;
}

// The main loop's own cycles around ready_sources() in an idle turn: jal
// and its delay slot, the branch on the result and its delay slot, the test
// for a host DMA in flight (move, lw with its load-use stall, branch, delay
// slot) and `wait`. Counted from the disassembly of firmware/niam/niam.cpp's
// main(); recount when the loop changes.
constexpr int kIdleLoopCycles = 10;

} // namespace

TEST_CASE("NI-AM budgets: barrier step, completion and idle turn on 8 nodes") {
  TempDir dir;
  CommandResult r = nicemu(
      {"run", "-n", "8", "--firmware", NICEMU_NIAM_IMAGE, "-q", "--budget",
       "rx_packet=150", "--budget", "complete=80", "--budget",
       "ready_sources=" + std::to_string(33 - kIdleLoopCycles), "--report-json",
       dir.file("r.json"), "--", NICEMU_NIAM_BARRIER, "20"});
  INFO(r);
  // 122 would be a budget exceeded (docs/profiling.md).
  REQUIRE(r.status == 0);
  CHECK(count_ok_ranks(r.out, 8) == 8);
  json report = json::parse(read_text(dir.file("r.json")));
  // The paths were taken: every round packet went through rx_packet into
  // h_round, every collective completed through complete().
  const json &rx = handler(report, "rx_packet");
  const json &round = handler(report, "h_round");
  CHECK(round["calls"].get<int>() > 0);
  CHECK(rx["calls"] == round["calls"]);
  CHECK(handler(report, "complete")["calls"] ==
        handler(report, "h_collective")["calls"]);
}

TEST_CASE("NI-AM budgets: a host request to an empty handler") {
  TempDir dir;
  CommandResult r = nicemu({"run", "-n", "1", "--firmware", NICEMU_NIAM_IMAGE,
                            "-q", "--report-json", dir.file("r.json"), "--",
                            NICEMU_NIAM_REQUESTS, "200"});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "rank 0: 200 empty requests, bad 0, unknown 0"));
  json report = json::parse(read_text(dir.file("r.json")));
  CHECK(handler(report, "h_nop")["calls"] == 200);
  // Seen -> fetch DMA started (host_request), then fetch done -> h_nop
  // returned (dma_done). The medians are the empty requests' (200 of about
  // 205 calls: the run also serves the host library's set-up requests and a
  // barrier, some of which find the DMA engine busy and queue their fetch).
  const json &seen = handler(report, "host_request");
  const json &done = handler(report, "dma_done");
  int path =
      seen["median_cycles"].get<int>() + done["median_cycles"].get<int>();
  MESSAGE("host request path: " << path << " cycles");
  CHECK(path <= 120);
}

TEST_CASE("NI-AM: a request fetch the DMA engine refuses is counted, and the "
          "NIC carries on") {
  CommandResult r = nicemu({"run", "-n", "1", "--firmware", NICEMU_NIAM_IMAGE,
                            "-q", "--", NICEMU_NIAM_REQUESTS, "refused"});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "refused fetch counted as bad: 1; barrier after it "
                        "completed"));
}
