// End-to-end: processes sharing a Comet card attack each other through VIPL
// and the raw channel, and a process on another node RDMA-writes into a
// memory handle that is not its peer's (issue 24, part 2; docs/via.md,
// "Processes sharing a card"). The host program is
// tests/e2e/programs/vipl_isolation.cpp: rank 0 is the victim, rank 1 the
// attacker beside it, rank 3 the remote attacker; each checks what it saw.
#include "cli_helpers.hpp"

#include <cstdio>

using namespace e2e;

namespace {

CommandResult run_isolation(const TempDir &dir,
                            const std::vector<std::string> &extra = {}) {
  std::vector<std::string> args = {
      "run",     "-n",    "2",          "--procs-per-node", "2",
      "--model", "comet", "--firmware", NICEMU_VIA_IMAGE};
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
