// End-to-end: NI-AM's protection under attack (issue 24, part 2). A rank
// sends raw transfer requests at another rank's memory that was never
// exported, past the end of the virtual space, with a flag outside the
// exported memory, reads the other rank's unexported memory, and forges
// page-table entries on its own card that name host memory it never
// registered (tests/e2e/programs/niam_isolation.cpp). docs/reliability.md,
// section 6.
#include "cli_helpers.hpp"

#include <cstdio>

using namespace e2e;

TEST_CASE("NI-AM isolation: transfers outside exported memory and forged "
          "page-table entries are refused, counted, and change nothing") {
  CommandResult r = nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE,
                            "--", NICEMU_NIAM_ISOLATION});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "rank 0: isolation: ok\n"));
  CHECK(contains(r.out, "rank 1: isolation: ok\n"));
  // Every refusal was acknowledged to the issuer as failed, and each card
  // counted the ones its page table or its host's memory refused.
  unsigned refused = 0, attacker = 0, victim = 0;
  for (const std::string &line : lines_with(r.out, "rank 1: isolation: ")) {
    if (line.find("transfers refused") != std::string::npos)
      CHECK(std::sscanf(line.c_str(),
                        "rank 1: isolation: %u of 8 transfers refused; its "
                        "own card refused %u addresses",
                        &refused, &attacker) == 2);
  }
  for (const std::string &line :
       lines_with(r.out, "rank 0: isolation: card refused "))
    CHECK(std::sscanf(line.c_str(), "rank 0: isolation: card refused %u",
                      &victim) == 1);
  CHECK(refused == 8);
  CHECK(attacker + victim == 8);
}
