// End-to-end: processes sharing a Comet card attack each other through VIPL
// and the raw channel, and a process on another node RDMA-writes into a
// memory handle that is not its peer's (issue 24, part 2; docs/via.md,
// "Processes sharing a card"). The host program is
// tests/e2e/programs/vipl_isolation.cpp: rank 0 is the victim, rank 1 the
// attacker beside it, rank 3 the remote attacker; each checks what it saw.
// On 3 nodes, node 2 runs a rogue card (firmware/samples/via_rogue.cpp)
// that sends forged frames at the victim.
#include "cli_helpers.hpp"

#include <cstdio>

using namespace e2e;

namespace {

// On `nodes` 2, or 3 with node 2 the rogue card.
CommandResult run_isolation(const TempDir &dir, int nodes = 2) {
  std::vector<std::string> args = {
      "run",     "-n",    std::to_string(nodes), "--procs-per-node", "2",
      "--model", "comet", "--firmware",          NICEMU_VIA_IMAGE};
  std::vector<std::string> extra;
  if (nodes == 3)
    extra = {"--node-firmware",
             "2=" + std::string(NICEMU_FIRMWARE_DIR) + "/via_rogue.img"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--");
  args.push_back(NICEMU_VIPL_ISOLATION);
  args.push_back(dir.file("victim"));
  return nicemu(args);
}

// The number after `prefix` on the line that has it (decimal, or hex with
// 0x), or -1.
long number_after(const std::string &text, const std::string &prefix) {
  for (const std::string &line : lines_with(text, prefix)) {
    long n = -1;
    if (std::sscanf(line.c_str() + line.find(prefix) + prefix.size(), "%li",
                    &n) == 1)
      return n;
  }
  return -1;
}

} // namespace

TEST_CASE("VIA isolation: processes sharing a comet card cannot reach each "
          "other's memory, VIs, handles or doorbells") {
  TempDir dir;
  CommandResult r = run_isolation(dir);
  INFO(r);
  CHECK(r.status == 0);
  for (int rank = 0; rank < 4; ++rank)
    CHECK(
        contains(r.out, "rank " + std::to_string(rank) + ": isolation: ok\n"));
  // The attacker aimed at what the victim has: the same handle and bus
  // address (so each refusal is the card's check, not a wrong guess).
  long handle = number_after(r.out, "rank 0: isolation: handle ");
  CHECK(handle > 0);
  CHECK(contains(r.out, "rank 1: isolation: aims at handle " +
                            std::to_string(handle) + " bus 0x"));
  // Its descriptor naming the victim's handle completed with a protection
  // error (DONE | PROTECTION_ERROR), the remote RDMA write with an RDMA
  // protection error.
  CHECK(contains(r.out, "victim's handle: status 0x5\n"));
  long rdma = number_after(r.out, "RDMA write into the victim's handle " +
                                      std::to_string(handle) + ": status ");
  CHECK(rdma > 0);
  CHECK((rdma & 0x80) != 0); // VIP_STATUS_RDMA_PROT_ERROR
  long unregistered =
      number_after(r.out, "RDMA write into unregistered handle 200: status ");
  CHECK(unregistered > 0);
  CHECK((unregistered & 0x80) != 0);
  // Every refusal of a command, doorbell or address was counted on node
  // 0's card: 10 commands, a command block, 4 doorbells (the descriptor
  // with the victim's handle is a protection error, not a foreign request).
  CHECK(number_after(r.out, "rank 0: isolation: card refused ") == 15);
}

TEST_CASE("VIA isolation: the same attacks give the same results, run after "
          "run") {
  TempDir a, b;
  CommandResult first = run_isolation(a), second = run_isolation(b);
  CHECK(first.status == 0);
  CHECK(sorted_lines(first.out) == sorted_lines(second.out));
  // The same virtual time to the picosecond (the line goes on with the
  // wall time).
  auto virtual_time = [](const CommandResult &r) {
    std::vector<std::string> lines = lines_with(r.err, "virtual time ");
    return lines.empty() ? std::string()
                         : lines[0].substr(0, lines[0].find(", wall"));
  };
  CHECK(!virtual_time(first).empty());
  CHECK(virtual_time(first) == virtual_time(second));
}

TEST_CASE("VIA isolation: a rogue card's forged frames change nothing, and "
          "the switches drop those with another node's address") {
  TempDir dir;
  CommandResult r = run_isolation(dir, 3);
  INFO(r);
  CHECK(r.status == 0);
  for (int rank = 0; rank < 6; ++rank)
    CHECK(
        contains(r.out, "rank " + std::to_string(rank) + ": isolation: ok\n"));
  // 3 kinds of data frame x 8 message numbers + 4 control messages, from
  // its own address and then from the peer's.
  CHECK(contains(r.out, "rank 4: isolation: rogue card sent 56 frames, 28 of "
                        "them with the peer's address\n"));
  CHECK(contains(r.err, "network: 28 frames dropped by the switches for a "
                        "forged source address"));
  // The 24 data frames from the rogue's own address reached the victim's
  // card, which dropped them: they are not from its VI's peer. A run
  // without the rogue says how many the card drops of its own.
  long dropped = number_after(r.out, "rank 0: isolation: card dropped ");
  TempDir quiet;
  CommandResult without = run_isolation(quiet);
  CHECK(without.status == 0);
  long baseline = number_after(without.out, "rank 0: isolation: card dropped ");
  CHECK(baseline >= 0);
  CHECK(dropped == baseline + 24);
}

TEST_CASE("run: --node-firmware is NODE=IMAGE, a node of the run, an image "
          "for the run's model") {
  CommandResult bad =
      nicemu({"run", "-n", "2", "--model", "comet", "--firmware",
              NICEMU_VIA_IMAGE, "--node-firmware", "two=x.img"});
  CHECK(bad.status == 1);
  CHECK(contains(bad.err, "--node-firmware 'two=x.img' is not NODE=IMAGE"));
  CommandResult past =
      nicemu({"run", "-n", "2", "--model", "comet", "--firmware",
              NICEMU_VIA_IMAGE, "--node-firmware",
              "2=" + std::string(NICEMU_FIRMWARE_DIR) + "/via_rogue.img"});
  CHECK(past.status == 1);
  CHECK(contains(past.err, "names node 2; the run has nodes 0 to 1"));
  CommandResult model =
      nicemu({"run", "-n", "2", "--model", "comet", "--firmware",
              NICEMU_VIA_IMAGE, "--node-firmware",
              "1=" + std::string(NICEMU_FIRMWARE_DIR) + "/hello.img"});
  CHECK(model.status == 1);
  CHECK(contains(model.err, "built for model 'lanai4', not 'comet'"));
}
