// End-to-end: a message-passing layer over VIPL written as in 1998
// (tests/e2e/programs/vipl_oldstyle.c: K&R C, one reliable VI per peer, 200
// receives pre-posted on each, all-to-all messages checked byte by byte,
// disconnection) compiles unchanged and runs, as a position-independent
// executable and without PIE: on 2 and 3 comet nodes, on 6 nodes of
// comet:many-vis (5 VIs each), and on 5 comet nodes it stops cleanly at
// the VipCreateVi that finds the card's 3 VIs taken.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace e2e;

namespace {

CommandResult run_layer(const std::string &program, unsigned nodes,
                        const std::string &model,
                        const std::vector<std::string> &args) {
  std::vector<std::string> command = {
      "run",  "-n",         std::to_string(nodes), "--model",
      model,  "--firmware", NICEMU_VIA_IMAGE,      "--",
      program};
  command.insert(command.end(), args.begin(), args.end());
  return nicemu(command);
}

// Every host exited 0 and said it received `messages` from every peer (300
// unless the program was given -k).
void check_all_ok(const CommandResult &r, unsigned nodes,
                  unsigned messages = 300) {
  INFO(r);
  CHECK(r.status == 0);
  CHECK(!contains(r.out, "FAILED"));
  const std::string count =
      std::to_string(messages * (nodes - 1)) + " messages\n";
  for (unsigned n = 0; n < nodes; ++n) {
    const std::string node = std::to_string(n);
    CHECK(contains(r.out, "node " + node + ": vipl_oldstyle: ok, " + count));
    CHECK(contains(r.err, "host " + node + ": exited with status 0\n"));
  }
}

} // namespace

TEST_CASE("VIPL: an old-style K&R message-passing layer runs unchanged, PIE "
          "and not, on 2 and 3 comet nodes") {
  for (const char *program :
       {NICEMU_VIPL_OLDSTYLE_PIE, NICEMU_VIPL_OLDSTYLE_NOPIE}) {
    for (unsigned nodes : {2u, 3u}) {
      CAPTURE(program);
      CAPTURE(nodes);
      check_all_ok(run_layer(program, nodes, "comet", {"--expect-max-vi", "3"}),
                   nodes);
    }
  }
  // The same layer connecting peer to peer instead of client/server.
  check_all_ok(run_layer(NICEMU_VIPL_OLDSTYLE_NOPIE, 3, "comet",
                         {"--peer", "--expect-max-vi", "3"}),
               3);
}

TEST_CASE("VIPL: the old-style layer on 6 nodes of comet:many-vis, one VI "
          "per peer") {
  // Client/server with 220 messages per peer, still past the 200 receives
  // pre-posted, so the reposted ones are used too; then five peer-to-peer
  // requests pending at once on every node, with fewer messages (a few
  // seconds in all).
  check_all_ok(run_layer(NICEMU_VIPL_OLDSTYLE_PIE, 6, "comet:many-vis",
                         {"-k", "220", "--expect-max-vi", "15"}),
               6, 220);
  check_all_ok(run_layer(NICEMU_VIPL_OLDSTYLE_NOPIE, 6, "comet:many-vis",
                         {"-k", "50", "--peer", "--expect-max-vi", "15"}),
               6, 50);
}

TEST_CASE("VIPL: on 5 comet nodes the old-style layer stops cleanly at the "
          "fourth VipCreateVi") {
  CommandResult r =
      run_layer(NICEMU_VIPL_OLDSTYLE_PIE, 5, "comet", {"--expect-max-vi", "3"});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(!contains(r.out, ": ok"));
  // The library says why on stderr, the program which call failed.
  CHECK(contains(r.err, "nicemu: VipCreateVi: all 3 VIs of the card are in "
                        "use (two doorbell FIFOs each; the model variant "
                        "comet:many-vis has 15)\n"));
  const std::string refusal =
      ": vipl_oldstyle: FAILED VipCreateVi for VI 4 of 4: "
      "VIP_ERROR_RESOURCE; the NIC has MaxVI 3, one VI per peer needs 4 "
      "(peer node";
  // The first host to exit stops the run: the others may be stopped before
  // they say anything, but whoever speaks says this, and none exits 0.
  const std::vector<std::string> failed = lines_with(r.out, "FAILED");
  CHECK(!failed.empty());
  for (const std::string &line : failed)
    CHECK_MESSAGE(contains(line, refusal), line);
  CHECK(contains(r.err, "exited with status 1\n"));
  CHECK(!contains(r.err, "exited with status 0"));
}
