// End-to-end: Active Messages with host handlers (nicemu::host::am_send,
// am_send_bulk) and Berkeley GAM (nicemu/am.h) over the niam firmware.
// tests/e2e/programs/host_messages.cpp checks order, contents, flow control
// and dropped handlers on every rank; here we check every rank said so, and
// run the two ping-pong examples of examples/.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

using namespace e2e;

namespace {

CommandResult run_on(unsigned nodes, const char *program) {
  return nicemu({"run", "-n", std::to_string(nodes), "--firmware",
                 NICEMU_NIAM_IMAGE, "--", program});
}

// The first number printed after `prefix` on a line of `out`, or -1.
double figure(const std::string &out, const std::string &prefix) {
  for (const std::string &l : lines_with(out, prefix)) {
    double v = -1;
    if (std::sscanf(l.c_str() + l.find(prefix) + prefix.size(), "%lf", &v) == 1)
      return v;
  }
  return -1;
}

// The per-node rows and the virtual time of the run summary: what must not
// change from run to run.
std::string deterministic_part(const std::string &err) {
  std::istringstream in(err);
  std::string out;
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l[0] >= '0' && l[0] <= '9')
      out += l + "\n";
    if (l.rfind("virtual time", 0) == 0)
      out += l.substr(0, l.find(", wall time")) + "\n";
  }
  return out;
}

} // namespace

TEST_CASE("host messages: order, contents and flow control on 1, 2, 3 and 8 "
          "nodes") {
  for (unsigned nodes : {1u, 2u, 3u, 8u}) {
    CAPTURE(nodes);
    CommandResult r = run_on(nodes, NICEMU_HOST_MESSAGES);
    INFO(r);
    REQUIRE(r.status == 0);
    for (unsigned rank = 0; rank < nodes; ++rank)
      CHECK(contains(r.out, "rank " + std::to_string(rank) + " of " +
                                std::to_string(nodes) + ": ok"));
  }
}

TEST_CASE("AM ping-pong example: round trips on the virtual clock, bulk "
          "echoes intact") {
  CommandResult r = run_on(2, NICEMU_AM_PINGPONG);
  INFO(r);
  REQUIRE(r.status == 0);
  double rtt = figure(r.out, "small AM round trip:");
  // Twice the hardware path: PIO flag 0.51, request DMA 1.32 + 8 words,
  // Tx gap 0.48, one switch 1.35, entry DMA 0.85 + 8 words, host poll 0.25.
  double wire =
      2 * (0.51 + 1.32 + 8 * 0.0316 + 0.48 + 1.35 + 0.85 + 8 * 0.0321 + 0.25);
  CHECK(rtt > wire);
  CHECK(rtt < 500.0);
  // Bulk round trips grow with size and stay below the DMA engines' peak.
  double small = figure(r.out, "       4 ");
  double big = figure(r.out, "   65472 ");
  CHECK(small > rtt);
  CHECK(big > small);
  CHECK(2 * 65472 / big < 121.0); // MB/s, both directions of the round trip
}

TEST_CASE("GAM: a K&R C program (gnu89) runs unchanged, request/reply, "
          "store and get") {
  CommandResult first = run_on(2, NICEMU_GAM_PINGPONG);
  INFO(first);
  REQUIRE(first.status == 0);
  double rtt = figure(first.out, "GAM request/reply round trip:");
  CHECK(rtt > 9.0);
  CHECK(rtt < 500.0);
  CHECK(figure(first.out, "GAM store + get of 4096 bytes:") > rtt);
  CHECK_FALSE(contains(first.out, "came back wrong"));
  SUBCASE("determinism: a second run gives the same output, cycles and "
          "virtual time") {
    CommandResult second = run_on(2, NICEMU_GAM_PINGPONG);
    CHECK(second.out == first.out);
    CHECK(deterministic_part(second.err) == deterministic_part(first.err));
  }
}

TEST_CASE("GAM on one node: messages to itself") {
  CommandResult r = run_on(1, NICEMU_GAM_PINGPONG);
  INFO(r);
  CHECK(r.status == 0);
}
