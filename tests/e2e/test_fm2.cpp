// End-to-end: an FM 2.x program (tests/e2e/programs/fm2_oldstyle.c)
// compiles against nicemu/fm2/fm.h as "fm.h" and runs on comet nodes, as a
// position-independent executable and without PIE, on 2 and 3 nodes:
// handler ids from FM_register_handler, streams in pieces, FM_extract's
// byte bound and FM_QUIT.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace e2e;

TEST_CASE("FM 2.x: a program written for it compiles unchanged and runs, PIE "
          "and not, on 2 and 3 nodes") {
  for (const char *program :
       {NICEMU_FM2_OLDSTYLE_PIE, NICEMU_FM2_OLDSTYLE_NOPIE}) {
    for (unsigned nodes : {2u, 3u}) {
      CAPTURE(program);
      CAPTURE(nodes);
      CommandResult r =
          nicemu({"run", "-n", std::to_string(nodes), "--model", "comet",
                  "--firmware", NICEMU_VIA_IMAGE, "--", program});
      INFO(r);
      CHECK(r.status == 0);
      CHECK(!contains(r.out, "FAILED"));
      // Node 0 handles 10 pongs from every other node; each other node 10
      // pings, 7 data messages and a stop.
      CHECK(contains(r.out, "node 0: ok, " + std::to_string(10 * (nodes - 1)) +
                                " messages\n"));
      for (unsigned n = 1; n < nodes; ++n)
        CHECK(contains(r.out,
                       "node " + std::to_string(n) + ": ok, 18 messages\n"));
      for (unsigned n = 0; n < nodes; ++n)
        CHECK(contains(r.err, "host " + std::to_string(n) +
                                  ": exited with status 0\n"));
    }
  }
}
