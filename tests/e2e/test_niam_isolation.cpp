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

TEST_CASE("NI-AM isolation: a rogue card's forged packets are refused and "
          "change nothing the victim did not export") {
  TempDir dir;
  CommandResult r = nicemu(
      {"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--node-firmware",
       "1=" + std::string(NICEMU_FIRMWARE_DIR) + "/niam_rogue.img", "--",
       NICEMU_NIAM_ISOLATION, "rogue", dir.file("victim")});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "rank 0: isolation: ok\n"));
  CHECK(contains(r.out, "rank 1: isolation: rogue card sent 8 packets\n"));
  // Every forged packet was refused: by the page table (the data into
  // unexported memory, the read of it) or as a bad packet (requests only a
  // host may make, data past the end of the space, no such handler, a bad
  // tag).
  unsigned protection = 0, bad = 0, unknown = 0;
  for (const std::string &line :
       lines_with(r.out, "rank 0: isolation: card refused "))
    CHECK(std::sscanf(line.c_str(),
                      "rank 0: isolation: card refused %u addresses, %u bad "
                      "packets, %u unknown handlers",
                      &protection, &bad, &unknown) == 3);
  CHECK(protection == 2);
  CHECK(protection + bad + unknown == 8);
}
