// `nicemu bench speed --quick --json`: the documented shape (its schema),
// the cases in order, the 1024-node case skipped and said why, and the
// virtual figures, which are deterministic: equal to those recorded in
// tests/data/golden/bench_speed_quick.json, whatever the threads (recorded
// with one; run here with two). Wall times are for people and never
// checked.
#include "bench_checks.hpp"

#include <nlohmann/json.hpp>

using namespace e2e;

namespace {

nlohmann::json quick_speed_bench() {
  CommandResult r =
      nicemu({"bench", "speed", "--quick", "--json", "--threads", "2"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  TempDir dir;
  check_bench_schema(dir, r.out, "speed");
  return j;
}

// The cases without their wall-clock figures and threads (the machine's).
nlohmann::json virtual_figures(const nlohmann::json &cases) {
  nlohmann::json out = cases;
  for (auto &c : out) {
    c.erase("wall");
    c.erase("threads");
  }
  return out;
}

const nlohmann::json &case_named(const nlohmann::json &j,
                                 const std::string &name) {
  for (const auto &c : j.at("cases"))
    if (c.at("name") == name)
      return c;
  FAIL("no case " << name);
  throw 0; // not reached
}

void check_cases(const nlohmann::json &j) {
  struct Expected {
    const char *name, *model;
    unsigned nodes;
  };
  const Expected expected[] = {
      {"gam_pingpong", "lanai4", 2}, {"fm_pingpong", "comet", 2},
      {"barrier_8", "lanai4", 8},    {"barrier_64", "lanai4", 64},
      {"barrier_1024", "", 1024},    {"sleep_1s", "lanai4", 1},
      {"poll_1s", "lanai4", 1},      {"poll_1s_full", "lanai4", 1}};
  const nlohmann::json &cases = j.at("cases");
  REQUIRE(cases.size() == std::size(expected));
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json &c = cases[i];
    CAPTURE(c);
    CHECK(c.at("name") == expected[i].name);
    CHECK(c.at("nodes") == expected[i].nodes);
    if (c.at("name") == "barrier_1024") {
      CHECK(c.at("ran") == false);
      CHECK(contains(c.at("skipped").get<std::string>(), "--quick"));
      continue;
    }
    REQUIRE(c.at("ran") == true);
    CHECK(c.at("model") == expected[i].model);
    // --threads 2: the cores of every host-program case ran on two
    // threads; a lone node has nothing to share them with.
    CHECK(c.at("threads") == (expected[i].nodes > 1 ? 2 : 1));
    CHECK(c.at("virtual").at("picoseconds").get<uint64_t>() > 0);
    CHECK(c.at("virtual").at("instructions").get<uint64_t>() > 0);
  }
  CHECK(contains(case_named(j, "barrier_8").at("shrunk"), "--quick"));
  CHECK(case_named(j, "barrier_8").at("rounds") == 100);
  CHECK(case_named(j, "barrier_64").at("rounds") == 20);
}

// The sleeping and the polling firmware cover the same virtual second; the
// sleeper runs about 100 instructions per millisecond, the poller about
// 18,800, and never sleeps. With fast-forward, nearly all of the poller's
// are skipped, not emulated; without it (poll_1s_full) none, with the same
// virtual figures.
void check_polling_pair(const nlohmann::json &j) {
  const nlohmann::json &sleep = case_named(j, "sleep_1s").at("virtual");
  const nlohmann::json &poll = case_named(j, "poll_1s").at("virtual");
  CHECK(case_named(j, "poll_1s_full").at("virtual") == poll);
  CHECK(case_named(j, "poll_1s_full")
            .at("command")
            .get<std::string>()
            .find("--no-fast-forward") != std::string::npos);
  uint64_t skipped = case_named(j, "poll_1s")
                         .at("wall")
                         .at("fast_forwarded_instructions")
                         .get<uint64_t>();
  CHECK(skipped > poll.at("instructions").get<uint64_t>() * 99 / 100);
  CHECK(case_named(j, "poll_1s_full")
            .at("wall")
            .at("fast_forwarded_instructions") == 0);
  double slept_s = sleep.at("seconds"), polled_s = poll.at("seconds");
  CHECK(slept_s >= 1.0);
  CHECK(slept_s < 1.001);
  CHECK(polled_s >= 1.0);
  CHECK(polled_s < 1.001);
  CHECK(poll.at("slept_cycles") == 0);
  CHECK(sleep.at("slept_cycles").get<uint64_t>() >
        sleep.at("cycles").get<uint64_t>() * 9 / 10);
  CHECK(poll.at("instructions").get<uint64_t>() >
        100 * sleep.at("instructions").get<uint64_t>());
  CHECK(j.contains("polling"));
  CHECK(j.at("polling").at("full_case") == "poll_1s_full");
}

} // namespace

TEST_CASE("bench speed --quick --json: structure, and virtual figures as "
          "recorded") {
  nlohmann::json j = quick_speed_bench();
  CHECK(j.at("bench") == "speed");
  CHECK(j.at("quick") == true);
  check_cases(j);
  check_polling_pair(j);
  // Every NIC core is accounted for the whole barrier loop: 8 cores at
  // lanai4's 33 MHz.
  const nlohmann::json &loop = case_named(j, "barrier_8").at("virtual");
  CHECK(loop.at("cycles").get<double>() ==
        doctest::Approx(8 * loop.at("seconds").get<double>() * 33e6)
            .epsilon(0.001));
  // A change that moves a virtual figure on purpose records the new JSON
  // (without the "wall" objects and "threads") and says why in its commit.
  const fs::path golden_path =
      fs::path(NICEMU_SOURCE_DIR) / "tests/data/golden/bench_speed_quick.json";
  nlohmann::json golden;
  REQUIRE_NOTHROW(golden = nlohmann::json::parse(read_text(golden_path)));
  nlohmann::json patch =
      nlohmann::json::diff(golden, virtual_figures(j.at("cases")));
  CHECK_MESSAGE(patch.empty(), "figures differ from " << golden_path.string()
                                                      << ":\n"
                                                      << patch.dump(2));
}

TEST_CASE("bench speed: a case whose host program is missing is skipped, "
          "with the reason, and gives no figures") {
  TempDir empty;
  CommandResult r = nicemu({"bench", "speed", "--quick", "--json",
                            "--programs-dir", empty.path().string()});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  check_bench_schema(empty, r.out, "speed");
  for (const char *name : {"gam_pingpong", "fm_pingpong", "barrier_8"}) {
    const nlohmann::json &c = case_named(j, name);
    CAPTURE(c);
    CHECK(c.at("ran") == false);
    CHECK(contains(c.at("skipped").get<std::string>(), "--programs-dir"));
    CHECK_FALSE(c.contains("virtual"));
    CHECK_FALSE(c.contains("wall"));
  }
  CHECK(case_named(j, "poll_1s").at("ran") == true);
}
