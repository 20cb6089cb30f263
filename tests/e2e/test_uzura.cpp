// End-to-end: the UZURA card (the uzura board's engine, the uzura firmware
// and nicemu/uzura.h) on two nodes. The host program
// tests/e2e/programs/uzura_basic.cpp checks the data and statuses on both
// ranks; here we check that both said so, and the figures rank 0 prints.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

using namespace e2e;

namespace {

CommandResult uzura_run(const std::string &mode) {
  return nicemu({"run", "-n", "2", "--model", "uzura", "--firmware",
                 NICEMU_UZURA_IMAGE, "--", NICEMU_UZURA_BASIC, mode});
}

void check_ok(const CommandResult &r, const std::string &mode) {
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(!contains(r.out, "FAILED"));
  CHECK(contains(r.out, "rank 0: " + mode + ": ok"));
  CHECK(contains(r.out, "rank 1: " + mode + ": ok"));
}

double figure(const std::string &out, const char *format) {
  double v = 0;
  size_t at = out.find(std::string(format).substr(0, 12));
  if (at != std::string::npos)
    std::sscanf(out.c_str() + at, format, &v);
  return v;
}

} // namespace

TEST_CASE("uzura: messages of 0 to 4064 bytes arrive in order, with their "
          "tags, and a 64-byte ping-pong") {
  CommandResult r = uzura_run("messages");
  check_ok(r, "messages");
  // Both ways: doorbell, command and data DMAs, FPGA, MAC, wire, arrival
  // DMA and the poll. Deterministic: the same figure on every run.
  double rtt = figure(r.out, "uzura 64-byte round trip %lf us");
  MESSAGE("64-byte round trip " << rtt << " us");
  CHECK(rtt > 2 * (0.78 + 0.76 + 1.56 + 0.18));
  CHECK(rtt < 100);
  // (The hosts' lines may interleave either way: compare the figure.)
  CHECK(figure(uzura_run("messages").out,
               "uzura 64-byte round trip %lf us") == rtt);
}

TEST_CASE("uzura: RDMA write and read of 256 KiB, through the translation "
          "tables, bounded by the PCI-X bus") {
  CommandResult r = uzura_run("rdma");
  check_ok(r, "rdma");
  double mbps = figure(r.out, "uzura 256 KiB write %*lf us, %lf MB/s");
  MESSAGE("256 KiB RDMA write " << mbps << " MB/s");
  // 4 KB blocks cross the source bus in 4.02 us: at most 1019 MB/s.
  CHECK(mbps > 500);
  CHECK(mbps < 4096 / 4.02);
}

TEST_CASE("uzura: refusals: remote pages not registered for the access, "
          "unknown pages, unregistered local pages, bad nodes") {
  check_ok(uzura_run("refusals"), "refusals");
}
