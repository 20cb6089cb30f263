// End-to-end regressions of issue 23 ("Reliability"): attacks on the
// emulator by host programs, firmware and files, each refused with a clear
// error, never a crash, a hang or a wrong figure (docs/reliability.md).
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

using namespace e2e;

namespace {

CommandResult attack(const std::string &mode, const std::string &nodes = "1") {
  return nicemu({"run", "-n", nodes, "-q", "--firmware",
                 firmware("host_echo.img"), "--", NICEMU_RELIABILITY_PROG,
                 mode});
}

} // namespace

TEST_CASE("regression: virtual time neither wraps nor runs backwards on host "
          "requests (issue 23.1)") {
  CommandResult r = attack("time");
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "compute(UINT64_MAX): refused (bad argument): "
                        "nicemu: compute(18446744073709551615 ps) would pass "
                        "the end of virtual time (2^63 ps); the clock stays "
                        "at 1000000 ps\n"));
  CHECK(contains(r.out, "after compute(UINT64_MAX): clock 1000000 ps\n"));
  CHECK(contains(r.out, "wait_word_until(UINT64_MAX - 1): refused (bad "
                        "argument): nicemu: wait_word_until: the deadline "
                        "18446744073709551614 ps is past the end"));
  CHECK(contains(r.out, "after compute(10): clock 1000010 ps\n"));
  CHECK(contains(r.out, "a deadline 100 ps ahead: missed\n"));
  CHECK(contains(r.out, "after the timed wait: clock 1000110 ps\n"));
  CHECK(contains(r.out, "sleep(UINT_MAX) left 4294967295 s unslept\n"));
  CHECK(contains(r.out, "after usleep(1): clock 2000110 ps\n"));
  CHECK(contains(r.out, "at the end: clock 9223372036854775808 ps\n"));
  CHECK(contains(r.out, "compute(1) at the end: refused (bad argument)"));
  CHECK(contains(r.out, "still: clock 9223372036854775808 ps\n"));
}

TEST_CASE("regression: firmware exit code 256 does not exit 0 (issue 23.8)") {
  CommandResult r = nicemu({"run", "--firmware", firmware("exit_256.img")});
  INFO(r);
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(parse_summary(r.err).state == "halted");
  CHECK(parse_summary(r.err).exit == "256");
}

TEST_CASE("regression: a route longer than the ROUTE device's 8 bytes is "
          "refused at load (issue 23.9)") {
  TempDir dir;
  std::string text = "switches 12\nnodes 2\nnode 0 s0:0\nnode 1 s11:0\n";
  for (int s = 0; s < 11; ++s)
    text +=
        "cable s" + std::to_string(s) + ":1 s" + std::to_string(s + 1) + ":2\n";
  const std::string topo = dir.file("chain.topo");
  std::ofstream(topo) << text;
  CommandResult r = nicemu({"run", "-n", "2", "--topology", topo, "--firmware",
                            firmware("net_pingpong.img")});
  INFO(r);
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(contains(r.err, "nicemu: error: " + topo +
                            ": the route from node 0 to node 1 crosses 12 "
                            "switches, but the ROUTE device holds at most 8 "
                            "route bytes"));
  // Generated networks: up to 4802 nodes fit (two centres from 2745);
  // 4803 need 9 bytes.
  CommandResult big =
      nicemu({"run", "-n", "4803", "--firmware", firmware("hello.img")});
  INFO(big);
  CHECK(big.status == 1);
  CHECK(contains(big.err, "the generated network of 4803 nodes: the route "
                          "from node 0 to node"));
}

TEST_CASE("regression: files are read up to their format's largest size, "
          "not without end (issue 23.11)") {
  TempDir dir;
  auto refused = [](const std::vector<std::string> &args,
                    const std::string &message) {
    CommandResult r = nicemu(args);
    INFO(r);
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "nicemu: error: " + message));
  };
  const std::string image = "/dev/zero: more than 16 MiB, too large for an "
                            "image or a flash file";
  refused({"run", "--firmware", "/dev/zero"}, image);
  refused({"image", "--info", "/dev/zero"}, image);
  refused({"flash", "/dev/zero", "--flash", dir.file("f.flash")}, image);
  refused({"run", "--model", "/dev/zero", "--firmware", firmware("hello.img")},
          "/dev/zero: more than 1 MiB, too large for a model file");
  refused({"run", "-n", "2", "--topology", "/dev/zero", "--firmware",
           firmware("hello.img")},
          "/dev/zero: more than 64 MiB, too large for a topology file");
}

TEST_CASE("regression: children forked from a host program cannot call the "
          "library on its channel (issue 23.4)") {
  CommandResult r = attack("fork");
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "early child: refused (not run)\n"));
  CHECK(contains(r.out, "child 0: host channel: this process (pid "));
  CHECK(contains(r.out, ") was forked from the one nicemu started for rank "
                        "0 (pid "));
  for (int child = 0; child < 4; ++child)
    CHECK(contains(r.out, "child " + std::to_string(child) +
                              ": 5 of 5 calls refused"));
  CHECK(contains(r.out, "parent: the children were refused\n"));
  // Nothing the children did reached the parent's clock or card: 1000 ps
  // computed, then 1000 ps, a posted PIO write (0.51 us) and a PIO read
  // (0.69 us); its exit is its own.
  CHECK(contains(r.out, "parent after the children: clock 1000 ps\n"));
  CHECK(contains(r.out, "parent read back 7\n"));
  CHECK(contains(r.out, "parent at the end: clock 1202000 ps\n"));
}
