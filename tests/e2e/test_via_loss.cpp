// End-to-end: the via firmware's reliability levels over a lossy network
// (`nicemu run --link-loss P --link-corrupt P --fault-seed N`, issue 24;
// docs/via.md, "Reliability levels under loss"). The host program is
// tests/e2e/programs/vipl_loss.cpp: rank 1 sends, rank 0 receives and checks
// every byte; each rank prints what it saw and "ok".
#include "bench_checks.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

using namespace e2e;

namespace {

CommandResult run_loss(const std::string &scenario,
                       const std::vector<std::string> &faults) {
  std::vector<std::string> args = {
      "run", "-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE};
  args.insert(args.end(), faults.begin(), faults.end());
  args.push_back("--");
  args.push_back(NICEMU_VIPL_LOSS);
  args.push_back(scenario);
  return nicemu(args);
}

// Both ranks said ok.
void both_ok(const CommandResult &r, const std::string &scenario) {
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "rank 0: " + scenario + ": ok\n"));
  CHECK(contains(r.out, "rank 1: " + scenario + ": ok\n"));
}

// "rank R: SCENARIO: card: retransmitted N, duplicates D, ..." of a rank.
struct Counters {
  unsigned retransmitted = 0, duplicates = 0, dropped = 0, broken = 0;
  bool found = false;
};
Counters counters(const CommandResult &r, const std::string &scenario,
                  unsigned rank) {
  Counters c;
  std::string prefix =
      "rank " + std::to_string(rank) + ": " + scenario + ": card: ";
  for (const std::string &line : lines_with(r.out, prefix))
    c.found = std::sscanf(line.c_str() + line.find(prefix) + prefix.size(),
                          "retransmitted %u, duplicates %u, dropped %u, "
                          "broken %u",
                          &c.retransmitted, &c.duplicates, &c.dropped,
                          &c.broken) == 4;
  return c;
}

// The fabric's own count of what it struck: "injected faults: C corrupted,
// L lost, D duplicated".
unsigned struck(const CommandResult &r) {
  unsigned corrupted = 0, lost = 0, duplicated = 0;
  for (const std::string &line : lines_with(r.err, "injected faults: ")) {
    std::sscanf(line.c_str() + line.find("injected faults: "),
                "injected faults: %u corrupted, %u lost, %u duplicated",
                &corrupted, &lost, &duplicated);
  }
  return corrupted + lost + duplicated;
}

// A reliable scenario: every message arrived once, in order, whole; every
// send completed; the RDMA writes landed and read back right.
void all_delivered(const CommandResult &r, const std::string &scenario) {
  both_ok(r, scenario);
  INFO(r);
  CHECK(contains(r.out, "rank 0: " + scenario +
                            ": 240 messages, 1598789 bytes in order, RDMA "
                            "target right\n"));
  CHECK(contains(r.out, "rank 1: " + scenario +
                            ": 240 sends completed, 0 failed, RDMA writes "
                            "failed 0, RDMA read right\n"));
  // No connection broke.
  CHECK(counters(r, scenario, 0).broken == 0);
  CHECK(counters(r, scenario, 1).broken == 0);
}

} // namespace

TEST_CASE("VIA under loss: without faults, nothing is sent twice") {
  for (const char *scenario : {"reliable-delivery", "reliable-reception"}) {
    CAPTURE(scenario);
    CommandResult r = run_loss(scenario, {});
    all_delivered(r, scenario);
    for (unsigned rank : {0u, 1u}) {
      Counters c = counters(r, scenario, rank);
      CHECK(c.found);
      CHECK(c.retransmitted == 0); // no timeout fired early
      CHECK(c.duplicates == 0);
      CHECK(c.dropped == 0);
    }
  }
}

TEST_CASE("VIA under loss: reliable VIs deliver every message once, in "
          "order, whole, and RDMA survives, at 1 and 10 percent loss, 10 "
          "percent corruption and duplicated frames") {
  struct Case {
    const char *scenario;
    std::vector<std::string> faults;
  };
  const Case cases[] = {
      {"reliable-delivery", {"--link-loss", "0.01"}},
      {"reliable-delivery", {"--link-loss", "0.1"}},
      {"reliable-delivery", {"--link-corrupt", "0.1"}},
      {"reliable-reception", {"--link-loss", "0.1", "--fault-seed", "5"}},
      {"reliable-reception",
       {"--link-loss", "0.05", "--link-corrupt", "0.05", "--fault-seed", "9"}},
      // Frames that arrive twice (--link-dup): each message still once.
      {"reliable-delivery",
       {"--link-dup", "0.1", "--link-loss", "0.05", "--fault-seed", "2"}},
  };
  for (const Case &c : cases) {
    CAPTURE(c.scenario);
    CAPTURE(c.faults[1]);
    CommandResult r = run_loss(c.scenario, c.faults);
    all_delivered(r, c.scenario);
    INFO(r);
    // Faults were struck, and the card recovered from them by sending
    // again (without it, the run above would have failed).
    CHECK(struck(r) > 10);
    CHECK(counters(r, c.scenario, 1).retransmitted > 0);
  }
}

TEST_CASE("VIA under loss: an unreliable VI loses messages but never "
          "delivers a corrupted or partial one") {
  // 5% loss and 5% corruption per cable, seed 1: some of the 240 messages
  // (up to 6 fragments each) are struck.
  CommandResult r =
      run_loss("unreliable", {"--link-loss", "0.05", "--link-corrupt", "0.05"});
  both_ok(r, "unreliable"); // every message that arrived was checked whole
  INFO(r);
  unsigned got = 0, sent = 0;
  for (const std::string &line : lines_with(r.out, "messages arrived"))
    std::sscanf(line.c_str(), "rank 0: unreliable: %u of %u messages arrived",
                &got, &sent);
  CHECK(sent == 240);
  CHECK(got > 0);
  CHECK(got < sent); // lost, not delivered with a hole
  // Frames that arrive twice: a message is still taken at most once (the
  // numbers checked rising), and never with a hole.
  CommandResult dup =
      run_loss("unreliable", {"--link-dup", "0.1", "--link-loss", "0.05",
                              "--fault-seed", "2"});
  both_ok(dup, "unreliable");
  CHECK(counters(dup, "unreliable", 0).duplicates > 0);
  // Without faults every one arrives.
  CommandResult clean = run_loss("unreliable", {});
  both_ok(clean, "unreliable");
  CHECK(contains(clean.out,
                 "rank 0: unreliable: 240 of 240 messages arrived, each "
                 "whole\n"));
}

TEST_CASE("VIA under loss: a reliable VI whose peer is gone breaks with "
          "VIP_STATUS_TRANSPORT_ERROR and the VI error state") {
  CommandResult r = run_loss("unreachable", {});
  both_ok(r, "unreachable");
  INFO(r);
  // The send's status is DONE | TRANSPORT_ERROR, after the retries: the
  // first timeout 1 ms, doubling to 4 ms, 16 in all: 1 + 2 + 14 * 4 = 59 ms
  // after the message left.
  double ms = 0;
  unsigned status = 0;
  for (const std::string &line :
       lines_with(r.out, "rank 0: unreachable: status"))
    std::sscanf(line.c_str(), "rank 0: unreachable: status 0x%x after %lf ms",
                &status, &ms);
  CHECK(status == 0x41);
  CHECK(ms >= 59.0);
  CHECK(ms < 61.0);
  CHECK(contains(r.out, "VI state error, 1 error callback"));
  Counters c = counters(r, "unreachable", 0);
  // A probe on each timeout but the last (15); and the peer's card, busy
  // for about 2 ms with the HELLO that made it forget, may acknowledge the
  // connection's last control message late, which then goes again.
  CHECK(c.retransmitted >= 15);
  CHECK(c.retransmitted <= 16);
  CHECK(c.broken == 1);
}

TEST_CASE("VIA under loss: the same seed gives the same run, another seed "
          "another") {
  const std::vector<std::string> faults = {"--link-loss", "0.1", "--fault-seed",
                                           "3"};
  CommandResult a = run_loss("reliable-delivery", faults);
  CommandResult b = run_loss("reliable-delivery", faults);
  all_delivered(a, "reliable-delivery");
  // The ranks' lines interleave as the host processes are scheduled.
  CHECK(sorted_lines(a.out) == sorted_lines(b.out));
  CHECK(run_summary(a.err) == run_summary(b.err));
  CommandResult other = run_loss("reliable-delivery",
                                 {"--link-loss", "0.1", "--fault-seed", "4"});
  all_delivered(other, "reliable-delivery");
  CHECK(counters(other, "reliable-delivery", 1).retransmitted !=
        counters(a, "reliable-delivery", 1).retransmitted);
}

TEST_CASE("VIA under loss: bench via --loss puts VIPL under loss beside the "
          "lossless figures") {
  CommandResult r = nicemu({"bench", "via", "--quick", "--loss", "0.01",
                            "--only", "vipl", "--json"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  TempDir dir;
  check_bench_schema(dir, r.out, "via");
  CHECK(!j.contains("fm"));
  const nlohmann::json &loss = j.at("loss");
  CHECK(loss.at("rate").get<double>() == 0.01);
  CHECK(loss.at("fault_seed") == 1);
  const nlohmann::json &lossless = j.at("vipl").at("sizes");
  const nlohmann::json &lossy = loss.at("vipl").at("sizes");
  REQUIRE(lossy.size() == lossless.size());
  // Goodput under loss is at most the lossless one: for each size within
  // 0.5% (a stream that no loss struck can land a few cycles either way,
  // the timer having run before it), and in all.
  double sum_lossy = 0, sum_lossless = 0;
  for (size_t i = 0; i < lossy.size(); ++i) {
    CAPTURE(i);
    CHECK(lossy[i].at("bytes") == lossless[i].at("bytes"));
    double a = lossy[i].at("mb_per_s"), b = lossless[i].at("mb_per_s");
    CHECK(a > 0);
    CHECK(a <= b * 1.005);
    sum_lossy += a;
    sum_lossless += b;
  }
  CHECK(sum_lossy < sum_lossless);
  CHECK(loss.at("retransmitted").get<unsigned>() > 0);
  // The table says the same, with the frames sent again.
  CommandResult t =
      nicemu({"bench", "via", "--quick", "--loss", "0.01", "--only", "vipl"});
  INFO(t);
  CHECK(t.status == 0);
  CHECK(contains(t.out, "VIPL, reliable delivery, 1% of frames lost on each "
                        "cable (nicemu run --link-loss 0.01 --fault-seed 1"));
  // Without --loss, no loss figures.
  CommandResult plain =
      nicemu({"bench", "via", "--quick", "--only", "vipl", "--json"});
  INFO(plain);
  CHECK(plain.status == 0);
  CHECK(!contains(plain.out, "\"loss\""));
}
