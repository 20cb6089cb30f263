// nicemu plot: gnuplot draws every JSON kind nicemu writes as SVG and PNG,
// each y axis above its highest value, histograms with their median and
// p99; what it says when gnuplot is missing or the input is wrong. The
// bench JSONs here are the golden ones of tests/data/golden; the tests that
// run bench dimmnet and bench uzura plot their own output.
#include "bench_checks.hpp"

#include <nlohmann/json.hpp>

using namespace e2e;

namespace {

std::string golden(const std::string &bench) {
  return (fs::path(NICEMU_SOURCE_DIR) / "tests/data/golden" /
          ("bench_" + bench + "_quick.json"))
      .string();
}

std::string cycle_report(const TempDir &dir) {
  CommandResult r =
      nicemu({"run", "--firmware", firmware("profile_handlers.img"), "-q",
              "--report-json", dir.file("report.json")});
  INFO(r);
  REQUIRE(r.status == 0);
  return dir.file("report.json");
}

} // namespace

TEST_CASE("nicemu plot: bench niam, logp and via JSON as SVG and PNG") {
  TempDir dir;
  // niam: barrier against nodes, bcopy against bytes; logp: back-to-back
  // messages against LogGP; via: latency, and bandwidth under its bounds.
  check_plot(dir, golden("niam"), 2);
  std::string logp = check_plot(dir, golden("logp"), 1);
  CHECK(contains(logp, "LogGP: g + k G"));
  std::string via = check_plot(dir, golden("via"), 2);
  CHECK(contains(via, "'VIPL framing bound'"));
  // Sizes from 4 bytes to 32 KiB: a log x axis.
  CHECK(contains(via, "set logscale x 2"));
}

TEST_CASE("nicemu plot: the y axis reaches above the highest point") {
  // The bcopy curve's last point is its highest (102.9 MB/s in a full
  // bench niam): the axis used to end at the tick below it, and the point
  // ran over the frame.
  TempDir dir;
  std::string script = check_plot(dir, golden("niam"));
  std::map<int, ChartRange> ranges = chart_ranges(script);
  REQUIRE(ranges.count(1));
  nlohmann::json bench = nlohmann::json::parse(read_text(golden("niam")));
  double top = bench["bcopy"].back()["mb_per_s"].get<double>();
  CHECK(ranges[1].data_hi == doctest::Approx(top));
  CHECK(ranges[1].y_hi > top);
}

TEST_CASE("nicemu plot: a cycle report, a histogram per handler with its "
          "median and p99") {
  TempDir dir;
  std::string report = cycle_report(dir);
  // synth_fixed, synth_loop, the stub, the dispatch, on_tick: 5 handlers.
  std::string script = check_plot(dir, report, 5);
  CHECK(lines_with(script, "with boxes").size() == 5);
  // synth_fixed's 100 calls of 22 cycles: median and p99 both 22.
  CHECK(contains(script, "synth_fixed: 100 calls, median 22 cycles, p99 22"));
  CHECK(contains(script, "set label 'median 22'"));
  CHECK(contains(script, "set label 'p99 22'"));
}

TEST_CASE("nicemu plot: without gnuplot it says which package to install") {
  TempDir dir;
  std::string report = cycle_report(dir);
  setenv("NICEMU_GNUPLOT", "/nonexistent/gnuplot", 1);
  CommandResult r = nicemu({"plot", report, "-o", dir.file("r.svg")});
  unsetenv("NICEMU_GNUPLOT");
  CHECK(r.status == 1);
  CHECK(contains(r.err, "gnuplot is not installed"));
  CHECK(contains(r.err, "gnuplot-nox"));
  CHECK(!fs::exists(dir.file("r.svg")));
}

TEST_CASE("nicemu plot: bad input") {
  TempDir dir;
  std::ofstream(dir.file("bad.json")) << "{ not json";
  std::ofstream(dir.file("other.json")) << "{\"hello\": 1}";
  std::ofstream(dir.file("cpu.json")) << "{\"bench\": \"cpu\"}";
  CommandResult bad = nicemu({"plot", dir.file("bad.json")});
  CHECK(bad.status == 1);
  CHECK(contains(bad.err, "is not JSON"));
  CommandResult other = nicemu({"plot", dir.file("other.json")});
  CHECK(other.status == 1);
  CHECK(contains(other.err, "not a document nicemu can plot"));
  CommandResult cpu = nicemu({"plot", dir.file("cpu.json")});
  CHECK(cpu.status == 1);
  CHECK(contains(cpu.err, "does not draw `bench cpu`"));
  CommandResult missing = nicemu({"plot", dir.file("missing.json")});
  CHECK(missing.status == 1);
  CHECK(contains(missing.err, "cannot read"));
}
