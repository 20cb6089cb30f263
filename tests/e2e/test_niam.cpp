// End-to-end: the NI Active Messages firmware (firmware/niam) with its host
// API (nicemu::host::barrier, allreduce_*), on clusters of 1 to 16 nodes.
// The host program tests/e2e/programs/niam_barrier.cpp checks the semantics
// on every rank; here we check that every rank said so and read the
// latencies rank 0 prints.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

using namespace e2e;

namespace {

struct NiamRun {
  CommandResult result;
  int ok_ranks = 0;
  double barrier_us = 0, allreduce_us = 0, fuzzy_us = 0;
};

NiamRun niam_run(unsigned nodes, unsigned rounds) {
  NiamRun run;
  run.result = nicemu({"run", "-n", std::to_string(nodes), "--firmware",
                       NICEMU_NIAM_IMAGE, "--", NICEMU_NIAM_BARRIER,
                       std::to_string(rounds)});
  std::istringstream lines(run.result.out);
  for (std::string l; std::getline(lines, l);) {
    unsigned rank = 0, size = 0, n = 0;
    char word[16] = {};
    if (std::sscanf(l.c_str(), "rank %u of %u: %15s", &rank, &size, word) ==
            3 &&
        size == nodes && std::string(word) == "ok")
      ++run.ok_ranks;
    std::sscanf(l.c_str(),
                "niam %u nodes: barrier %lf us, allreduce %lf us, fuzzy wait "
                "%lf us",
                &n, &run.barrier_us, &run.allreduce_us, &run.fuzzy_us);
  }
  return run;
}

void check_cluster(unsigned nodes) {
  NiamRun run = niam_run(nodes, 20);
  INFO(run.result);
  REQUIRE(run.result.status == 0);
  CHECK(run.ok_ranks == int(nodes));
  MESSAGE(nodes << " nodes: barrier " << run.barrier_us << " us, allreduce "
                << run.allreduce_us << " us");
  // At least the request (one PIO write, a 32-byte host DMA), the result
  // (an 8-byte DMA back) and the host's poll; well under a millisecond.
  CHECK(run.barrier_us > 0.51 + 1.57 + 0.91 + 0.25);
  CHECK(run.barrier_us < 1000.0);
  CHECK(run.allreduce_us >= run.barrier_us * 0.9);
  // The fuzzy barrier completed during 20 us of work on one node: the wait
  // is the host's poll only.
  if (nodes == 1)
    CHECK(run.fuzzy_us < 1.0);
}

} // namespace

TEST_CASE("niam: barrier and all-reduce on 1 node") {
  check_cluster(1);
}
TEST_CASE("niam: barrier and all-reduce on 2 nodes") {
  check_cluster(2);
}
TEST_CASE("niam: barrier and all-reduce on 3 nodes (one folded rank)") {
  check_cluster(3);
}
TEST_CASE("niam: barrier and all-reduce on 6 nodes (two folded ranks)") {
  check_cluster(6);
}
TEST_CASE("niam: barrier and all-reduce on 8 nodes") {
  check_cluster(8);
}
TEST_CASE("niam: barrier and all-reduce on 16 nodes (two-level network)") {
  check_cluster(16);
}

TEST_CASE("niam: latency grows with log2 of the nodes") {
  NiamRun two = niam_run(2, 20), sixteen = niam_run(16, 20);
  REQUIRE(two.result.status == 0);
  REQUIRE(sixteen.result.status == 0);
  CHECK(sixteen.barrier_us > two.barrier_us);
  CHECK(sixteen.barrier_us < 4 * two.barrier_us + 20);
}

TEST_CASE("niam: the same run twice gives the same output") {
  NiamRun a = niam_run(3, 10), b = niam_run(3, 10);
  REQUIRE(a.result.status == 0);
  CHECK(sorted_lines(a.result.out) == sorted_lines(b.result.out));
}
