// End-to-end: a GAM program written as in 1995-97 (tests/e2e/programs/
// gam_oldstyle.c: K&R C, pointers through handler words, gam_wait(&flag,
// n), medium gam_request, gam_enable(0)) compiles unchanged and runs, as a
// position-independent executable and without PIE, on 2 and 3 nodes.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace e2e;

TEST_CASE("GAM: an old-style K&R program runs unchanged, PIE and not, on 2 "
          "and 3 nodes") {
  for (const char *program :
       {NICEMU_GAM_OLDSTYLE_PIE, NICEMU_GAM_OLDSTYLE_NOPIE}) {
    for (unsigned nodes : {2u, 3u}) {
      CAPTURE(program);
      CAPTURE(nodes);
      CommandResult r =
          nicemu({"run", "-n", std::to_string(nodes), "--firmware",
                  NICEMU_NIAM_IMAGE, "--", program});
      INFO(r);
      CHECK(r.status == 0);
      CHECK(!contains(r.out, "FAILED"));
      for (unsigned n = 0; n < nodes; ++n)
        CHECK(contains(r.out, "node " + std::to_string(n) + ": ok\n"));
    }
  }
}
