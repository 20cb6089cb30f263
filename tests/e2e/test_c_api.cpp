// End-to-end: the C API (nicemu/host.h) from a C program on the niam
// firmware. tests/e2e/programs/c_api.c checks the calls and their error
// codes on every rank; here we check that every rank said so, on 1, 2 and 4
// nodes, for its C99 and GNU C89 builds, and that outside `nicemu run` the
// first call returns an error code instead of crashing.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

using namespace e2e;

namespace {

void check_cluster(const char *program, unsigned nodes) {
  CommandResult r = nicemu({"run", "-n", std::to_string(nodes), "--firmware",
                            NICEMU_NIAM_IMAGE, "--", program});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(count_ok_ranks(r.out, nodes) == int(nodes));
  const unsigned sum = nodes * (nodes + 1) / 2;
  CHECK(contains(r.out, "c_api " + std::to_string(nodes) +
                            " nodes: sum of rank + 1 = " + std::to_string(sum) +
                            ", failures on all ranks 0\n"));
  // Rank 0 shows the message of a failed call: the C function's name, then
  // the reason.
  CHECK(contains(r.out, "stack variable: nicemu_bus_address: buffer is not "
                        "registered memory (use nicemu_alloc)"));
}

} // namespace

TEST_CASE("C API: a C99 program on 1, 2 and 4 nodes") {
  for (unsigned nodes : {1u, 2u, 4u}) {
    CAPTURE(nodes);
    check_cluster(NICEMU_C_API_C99, nodes);
  }
}

TEST_CASE("C API: the same program built as GNU C89 on 2 nodes") {
  check_cluster(NICEMU_C_API_GNU89, 2);
}

TEST_CASE("C API: outside nicemu run the first call returns an error code") {
  CommandResult r = run_command(NICEMU_C_API_C99, {"outside"});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "outside nicemu run: status -3 (not started by nicemu "
                        "run): nicemu_rank: NICEMU_CHANNEL_FD is not set"));
}
