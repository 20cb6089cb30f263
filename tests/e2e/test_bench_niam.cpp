// `nicemu bench niam --quick --json`: the figures have the documented shape
// and plausible values (docs/benchmarks.md). The values themselves are for
// people; only their order is checked.
#include "cli_helpers.hpp"

#include <nlohmann/json.hpp>

using namespace e2e;

namespace {

nlohmann::json quick_bench() {
  CommandResult r = nicemu({"bench", "niam", "--quick", "--json"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  return j;
}

void check_barrier(const nlohmann::json &barrier) {
  REQUIRE(barrier.size() == 2);
  CHECK(barrier[0].at("nodes") == 2);
  CHECK(barrier[1].at("nodes") == 4);
  double two = barrier[0].at("latency_us"), four = barrier[1].at("latency_us");
  CHECK(two > 0);
  CHECK(four > two); // a barrier on more nodes takes more rounds
  for (const auto &b : barrier)
    CHECK(b.at("wall_seconds").get<double>() > 0);
}

void check_bcopy(const nlohmann::json &bcopy) {
  REQUIRE(bcopy.size() >= 3);
  CHECK(bcopy[0].at("bytes") == 4);
  for (size_t i = 1; i < bcopy.size(); ++i) {
    CAPTURE(bcopy[i]);
    CHECK(bcopy[i].at("bytes") > bcopy[i - 1].at("bytes"));
    CHECK(bcopy[i].at("mb_per_s").get<double>() >
          bcopy[i - 1].at("mb_per_s").get<double>());
  }
  CHECK(bcopy[0].at("mb_per_s").get<double>() > 0);
}

} // namespace

TEST_CASE("bench niam --quick --json: structure and plausible figures") {
  nlohmann::json j = quick_bench();
  CHECK(j.at("bench") == "niam");
  CHECK(j.at("model") == "lanai4");
  CHECK(j.at("barrier_rounds").get<int>() > 0);
  check_barrier(j.at("barrier"));
  check_bcopy(j.at("bcopy"));
  const auto &speed = j.at("speed");
  // Host-handler AMs: the send overhead is at least its PIO write (0.51 us
  // on lanai4) and far below the round trip; the gap is what the NICs need
  // per message, more than the overhead.
  const nlohmann::json &am = j.at("am");
  double rtt = am.at("round_trip_us"), overhead = am.at("send_overhead_us"),
         gap = am.at("gap_us");
  CHECK(overhead >= 0.51);
  CHECK(overhead < rtt / 4);
  CHECK(gap > overhead);
  CHECK(gap < rtt);
  CHECK(speed.at("nodes") == 8);
  CHECK(speed.at("virtual_seconds").get<double>() > 0);
  CHECK(speed.at("wall_seconds").get<double>() > 0);
  CHECK(speed.at("virtual_per_wall").get<double>() > 0);
  const auto &largest = j.at("largest_run");
  CHECK(largest.at("nodes") == 4);
  CHECK(largest.at("wall_seconds").get<double>() > 0);
  const auto &rss = largest.at("peak_rss_kib");
  CHECK(rss.at("emulator").get<long>() > 0);
  CHECK(rss.at("hosts").get<long>() > 0);
  CHECK(rss.at("total").get<long>() ==
        rss.at("emulator").get<long>() + rss.at("hosts").get<long>());
}
