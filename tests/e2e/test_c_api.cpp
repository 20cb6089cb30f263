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

TEST_CASE("C API: a channel that cannot be opened is NICEMU_ENOTRUN") {
  // The variables are set, but name no open descriptor: the code comes from
  // the kind of the channel's error, whatever its message says.
  CommandResult r = run_command("/usr/bin/env",
                                {"NICEMU_CHANNEL_FD=900", "NICEMU_WAKE_FD=901",
                                 NICEMU_C_API_C99, "outside", "is not open"});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "outside nicemu run: status -3 (not started by nicemu "
                        "run): nicemu_rank: host channel: the channel "
                        "(NICEMU_CHANNEL_FD) descriptor 900 is not open"));
}

TEST_CASE("C API: a cluster that stops makes calls fail with "
          "NICEMU_ESTOPPED") {
  CommandResult r =
      nicemu({"run", "-n", "1", "--firmware", firmware("fault_illegal.img"),
              "--", NICEMU_C_API_C99, "stopped"});
  INFO(r);
  CHECK(r.status == 125);
  CHECK(contains(r.err, "node 0: firmware fault: illegal instruction"));
  // The fault (at 1.97 us of virtual time) stops the cluster while the host
  // computes; the ignored SIGTERM lets it report the status and exit.
  CHECK(contains(r.out, "stopped cluster: status -4 (the cluster is "
                        "stopping): nicemu_compute: the emulator stopped"));
  CHECK(contains(r.err, "host 0: exited with status 0"));
}
