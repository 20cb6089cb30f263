// End-to-end: an FM 2.x program (tests/e2e/programs/fm2_oldstyle.c)
// compiles against nicemu/fm2/fm.h as "fm.h" and runs on two comet nodes:
// handler ids from FM_register_handler, streams in pieces, FM_extract's
// byte bound and FM_QUIT.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

using namespace e2e;

TEST_CASE("FM 2.x: a program written for it compiles unchanged and runs") {
  CommandResult r = nicemu({"run", "-n", "2", "--model", "comet", "--firmware",
                            NICEMU_VIA_IMAGE, "--", NICEMU_FM2_OLDSTYLE});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(!contains(r.out, "FAILED"));
  CHECK(contains(r.out, "node 0: ok\n"));
  CHECK(contains(r.out, "node 1: ok\n"));
}
