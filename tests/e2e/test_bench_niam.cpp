// `nicemu bench niam --quick --json`: the figures have the documented shape
// and plausible values (docs/benchmarks.md). The values themselves are for
// people; only their order is checked.
#include "bench_checks.hpp"

#include <nlohmann/json.hpp>

using namespace e2e;

namespace {

nlohmann::json quick_bench() {
  CommandResult r = nicemu({"bench", "niam", "--quick", "--json"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  TempDir dir;
  check_bench_schema(dir, r.out, "niam");
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
  // Every core is accounted for the whole loop, asleep or not: the cycles of
  // the 8 cores add up to 8 times the run at lanai4's 33 MHz (each core
  // stops within a block of the end).
  double cycles = speed.at("cycles"), instructions = speed.at("instructions"),
         vsec = speed.at("virtual_seconds");
  CHECK(cycles == doctest::Approx(8 * vsec * 33e6).epsilon(0.001));
  CHECK(instructions > 0);
  CHECK(instructions <= cycles);
  CHECK(speed.at("slept_cycles").get<double>() <= cycles);
  CHECK(speed.at("instructions_per_virtual_second").get<double>() ==
        doctest::Approx(instructions / vsec));
  const auto &largest = j.at("largest_run");
  CHECK(largest.at("nodes") == 4);
  CHECK(largest.at("wall_seconds").get<double>() > 0);
  CHECK(largest.at("rounds") == j.at("barrier_rounds"));
  // At least one sample, with the emulator's own pages (megabytes) in it.
  CHECK(largest.at("pss_samples").get<int>() >= 1);
  CHECK(largest.at("peak_pss_kib").get<long>() > 1024);
  for (const auto &b : j.at("barrier"))
    CHECK(b.at("rounds") == j.at("barrier_rounds"));
  const auto &rss = largest.at("peak_rss_kib");
  CHECK(rss.at("emulator").get<long>() > 0);
  CHECK(rss.at("hosts").get<long>() > 0);
  CHECK(rss.at("total").get<long>() ==
        rss.at("emulator").get<long>() + rss.at("hosts").get<long>());
}

// `nicemu bench logp`: each LogP parameter is at least what the model's
// inputs make unavoidable, and the figures are consistent with each other.
TEST_CASE("bench logp --quick --json: LogP parameters within the model's "
          "bounds") {
  CommandResult r = nicemu({"bench", "logp", "--quick", "--json"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  CHECK(j.at("bench") == "logp");
  TempDir dir;
  check_bench_schema(dir, r.out, "logp");
  CHECK(j.at("model") == "lanai4");
  const auto &m = j.at("measured");
  const auto &in = j.at("model_inputs");
  // A send is at least the PIO write that rings the NIC; a receive at least
  // the poll of host memory that finds the message.
  CHECK(m.at("o_send_us").get<double>() >= in.at("pio_write_us").get<double>());
  CHECK(m.at("o_recv_us").get<double>() >=
        in.at("poll_own_memory_us").get<double>());
  CHECK(m.at("o_recv_us").get<double>() >= m.at("empty_poll_us").get<double>());
  // One way through a switch: two cables and the switch at least.
  CHECK(m.at("L_us").get<double>() >
        2 * in.at("link_latency_us").get<double>() +
            in.at("switch_latency_us").get<double>());
  // Back-to-back messages cannot come closer than the send overhead, and
  // bytes no faster than the slowest stage of the path.
  CHECK(m.at("g_us").get<double>() > m.at("o_send_us").get<double>());
  double slowest =
      std::max({in.at("host_dma_to_card_ns_per_byte").get<double>(),
                in.at("host_dma_to_host_ns_per_byte").get<double>(),
                in.at("tx_ns_per_byte").get<double>(),
                in.at("link_ns_per_byte").get<double>()});
  CHECK(m.at("G_ns_per_byte").get<double>() >= slowest);
  REQUIRE(m.at("bulk").size() == 2);
  CHECK(m.at("bulk")[1].at("interval_us").get<double>() >
        m.at("bulk")[0].at("interval_us").get<double>());
}

TEST_CASE("bench niam --loss: goodput and latency of the reliable mode "
          "against loss, beside the lean image, the same twice") {
  std::vector<std::string> args = {"bench",  "niam", "--quick", "--json",
                                   "--loss", "0.01", "0.1"};
  CommandResult r = nicemu(args);
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  TempDir dir;
  check_bench_schema(dir, r.out, "niam-loss");
  const nlohmann::json &rows = j.at("rows");
  REQUIRE(rows.size() == 4); // lean 0, reliable 0, 1 %, 10 %
  CHECK(rows[0].at("image") == "niam.img");
  CHECK(rows[1].at("image") == "niam_reliable.img");
  CHECK(rows[1].at("loss").get<double>() == 0);
  CHECK(rows[3].at("loss").get<double>() == doctest::Approx(0.1));
  // Without loss nothing is lost or sent again; the reliable mode's
  // bookkeeping costs something against the lean image.
  for (int i : {0, 1}) {
    CHECK(rows[i].at("packets_lost") == 0);
    CHECK(rows[i].at("resent") == 0);
  }
  CHECK(rows[0].at("bcopy_mb_per_s").get<double>() >=
        rows[1].at("bcopy_mb_per_s").get<double>());
  // Losses are repaired by resending, and cost goodput and latency, the
  // more so the more is lost.
  for (int i : {2, 3}) {
    CHECK(rows[i].at("packets_lost").get<uint64_t>() > 0);
    CHECK(rows[i].at("resent").get<uint64_t>() > 0);
  }
  double lossless = rows[1].at("bcopy_mb_per_s"),
         one = rows[2].at("bcopy_mb_per_s"), ten = rows[3].at("bcopy_mb_per_s");
  CHECK(one <= lossless);
  CHECK(ten < one);
  CHECK(rows[3].at("barrier_us").get<double>() >
        rows[1].at("barrier_us").get<double>());
  // Deterministic: the same seed gives the same figures.
  CommandResult again = nicemu(args);
  CHECK(again.out == r.out);
}
