// End-to-end: every speed-up can be switched off (docs/benchmarks.md,
// "Speed"), and switching it off changes no virtual result. Each scenario
// runs both ways and the two runs must agree byte for byte: what the host
// programs print (their latencies are virtual), the run's summary, the
// trace, the packet captures and the cycle report.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace e2e;

namespace {

// What a run leaves that must not depend on how fast it ran.
struct Observed {
  std::string out, summary, trace, report;
  std::vector<std::pair<std::string, std::string>> captures; // name, bytes
};

Observed observe(const std::vector<std::string> &cluster,
                 const std::vector<std::string> &program,
                 const std::vector<std::string> &switches) {
  TempDir dir;
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), cluster.begin(), cluster.end());
  args.insert(args.end(), switches.begin(), switches.end());
  for (const char *a :
       {"--trace", "t.json", "--pcap", "caps", "--report-json", "report.json"})
    args.push_back(a);
  // The files go into the temporary directory.
  for (std::string &a : args)
    if (a == "t.json" || a == "caps" || a == "report.json")
      a = dir.file(a);
  args.push_back("--");
  args.insert(args.end(), program.begin(), program.end());
  CommandResult r = nicemu(args);
  INFO(r);
  REQUIRE(r.status == 0);
  Observed o{r.out,
             run_summary(r.err),
             read_text(dir.file("t.json")),
             read_text(dir.file("report.json")),
             {}};
  for (const auto &e : fs::directory_iterator(dir.path() / "caps"))
    o.captures.emplace_back(e.path().filename().string(), read_text(e.path()));
  std::sort(o.captures.begin(), o.captures.end());
  REQUIRE_FALSE(o.captures.empty());
  REQUIRE(o.trace.size() > 1000);
  return o;
}

void same_both_ways(const std::vector<std::string> &cluster,
                    const std::vector<std::string> &program,
                    const std::vector<std::string> &switch_off) {
  Observed on = observe(cluster, program, {});
  Observed off = observe(cluster, program, switch_off);
  CHECK(on.out == off.out);
  CHECK(on.summary == off.summary);
  CHECK(on.report == off.report);
  CHECK(on.captures == off.captures);
  // Not CHECK(a == b): a failure would print two traces of megabytes.
  CHECK_MESSAGE(on.trace == off.trace, "the traces differ");
}

} // namespace

TEST_CASE("speed switches: host leases change nothing in an NI-AM run "
          "(GAM ping-pong)") {
  same_both_ways({"-n", "2", "--firmware", NICEMU_NIAM_IMAGE},
                 {NICEMU_GAM_PINGPONG}, {"--no-leases"});
}

TEST_CASE("speed switches: host leases change nothing in a VIA run "
          "(FM ping-pong)") {
  same_both_ways(
      {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE},
      {NICEMU_FM_PINGPONG, "--quick"}, {"--no-leases"});
}

TEST_CASE("speed switches: host leases change nothing in a VIPL run "
          "(VIPL ping-pong)") {
  same_both_ways(
      {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE},
      {NICEMU_VIPL_PINGPONG, "--quick"}, {"--no-leases"});
}
