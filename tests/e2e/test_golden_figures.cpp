// The virtual figures of `nicemu bench niam|via|logp --quick --json` are the
// product: they must not move unless a change means them to. The JSON of
// each, recorded from main before the board/register-bank redesign (issue
// 16) and stripped of wall-clock figures, lives in tests/data/golden/. A
// change that moves a figure on purpose records the new JSON there and
// says why in its commit.
#include "cli_helpers.hpp"

#include <nlohmann/json.hpp>

#include <set>

using namespace e2e;

namespace {

// Keys whose values come from the wall clock or the host's memory use.
const std::set<std::string> kWallKeys = {
    "wall_seconds",     "instructions_per_wall_second",
    "virtual_per_wall", "peak_pss_kib",
    "peak_rss_kib",     "pss_samples"};

nlohmann::json virtual_figures(const nlohmann::json &j) {
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto &[key, value] : j.items())
      if (!kWallKeys.count(key))
        out[key] = virtual_figures(value);
    return out;
  }
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto &value : j)
      out.push_back(virtual_figures(value));
    return out;
  }
  return j;
}

void check_against_golden(const std::string &bench) {
  CAPTURE(bench);
  const fs::path golden_path = fs::path(NICEMU_SOURCE_DIR) / "tests" / "data" /
                               "golden" / ("bench_" + bench + "_quick.json");
  nlohmann::json golden;
  REQUIRE_NOTHROW(golden = nlohmann::json::parse(read_text(golden_path)));
  CommandResult r = nicemu({"bench", bench, "--quick", "--json"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json now;
  REQUIRE_NOTHROW(now = virtual_figures(nlohmann::json::parse(r.out)));
  // The patch names every figure that moved, with its new value.
  nlohmann::json patch = nlohmann::json::diff(golden, now);
  CHECK_MESSAGE(patch.empty(), "figures differ from " << golden_path.string()
                                                      << ":\n"
                                                      << patch.dump(2));
}

} // namespace

TEST_CASE("golden figures: bench niam --quick is bit-identical to main's") {
  check_against_golden("niam");
}

TEST_CASE("golden figures: bench via --quick is bit-identical to main's") {
  check_against_golden("via");
}

TEST_CASE("golden figures: bench logp --quick is bit-identical to main's") {
  check_against_golden("logp");
}
