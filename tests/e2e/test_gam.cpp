// End-to-end: Berkeley GAM (nicemu/am.h) conformance over the niam firmware.
// tests/e2e/programs/gam_checks.c, an old-style C program built as GNU C89,
// calls every function of the header with checked arguments, data, guard
// bytes and error cases on every rank; here we check every rank said so,
// that the transfers to unmapped memory were dropped as docs/gam.md says,
// and that a second run gives the same result.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace e2e;

namespace {

CommandResult run_checks(unsigned nodes) {
  return nicemu({"run", "-n", std::to_string(nodes), "--firmware",
                 NICEMU_NIAM_IMAGE, "--", NICEMU_GAM_CHECKS,
                 std::to_string(nodes)});
}

// Every rank printed its "ok" line and nothing failed.
void check_all_ok(const CommandResult &r, unsigned nodes) {
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(lines_with(r.out, "FAIL").empty());
  CHECK(lines_with(r.out, ": ok (").size() == nodes);
  for (unsigned rank = 0; rank < nodes; ++rank)
    CHECK(contains(r.out, "rank " + std::to_string(rank) + ": ok ("));
  // Each rank stores to and gets from unmapped memory of the next one:
  // both are dropped there, with a message on stderr.
  CHECK(lines_with(r.err, "gam: store of 16 bytes from node").size() == nodes);
  CHECK(lines_with(r.err, "gam: get of 16 bytes from node").size() == nodes);
  CHECK(lines_with(r.err, "dropped").size() == 2 * nodes);
}

// What must not change from run to run: the ranks' lines (in any order:
// host processes print concurrently), the dropped transfers, and the run
// summary's cycles and virtual time.
std::vector<std::string> outcome(const CommandResult &r) {
  std::vector<std::string> lines = sorted_lines(r.out);
  for (const std::string &l : sorted_lines(r.err))
    if (contains(l, "dropped"))
      lines.push_back(l);
  lines.push_back(run_summary(r.err));
  return lines;
}

} // namespace

TEST_CASE("GAM conformance: every call of nicemu/am.h from GNU C89, with "
          "checked arguments, data and errors, on 1, 2 and 3 nodes") {
  for (unsigned nodes : {1u, 2u, 3u}) {
    CAPTURE(nodes);
    check_all_ok(run_checks(nodes), nodes);
  }
}

// On 2 nodes: a 3-node run takes seconds (every empty gam_poll is a call
// to the emulator).
TEST_CASE("GAM conformance: a second run on 2 nodes gives the same output, "
          "cycles and virtual time") {
  CommandResult first = run_checks(2);
  check_all_ok(first, 2);
  CommandResult second = run_checks(2);
  INFO(second);
  REQUIRE(second.status == 0);
  CHECK(outcome(second) == outcome(first));
}
