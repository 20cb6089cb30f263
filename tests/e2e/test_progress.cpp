// End-to-end: the progress line (--progress, --no-progress). Forced on with
// stderr in a file, it appears there, updated in place with carriage
// returns, and stdout (console, reports, JSON) is byte for byte what a run
// without it prints; by default, with no terminal, there is none.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace e2e;
using json = nlohmann::json;

namespace {

std::vector<std::string> hang_run(const std::string &max_time,
                                  const std::string &progress) {
  std::vector<std::string> args = {
      "run",        "--firmware", firmware("hang.img"), "--watchdog", "0",
      "--max-time", max_time,     "--report",           "cycles"};
  if (!progress.empty())
    args.push_back(progress);
  return args;
}

// The line is drawn from half a second of wall time on: a run long enough
// to show it, whatever the speed of the machine (the spinning firmware
// for 4, 8, .. 64 s of virtual time, until one lasts 0.75 s).
struct LongRun {
  std::string max_time;
  CommandResult result;
};

LongRun long_run_with_progress() {
  LongRun run;
  for (const char *max_time : {"4s", "8s", "16s", "32s", "64s"}) {
    run.max_time = max_time;
    run.result = nicemu(hang_run(max_time, "--progress"));
    REQUIRE_MESSAGE(run.result.status == 124, run.result);
    if (parse_summary(run.result.err).wall_ms > 750)
      break;
  }
  return run;
}

// stderr without the progress line: every "\r..." up to the next '\r' or
// newline (the line is drawn as "\r" + text, and cleared as "\r" +
// blanks + "\r").
std::string without_progress(const std::string &err) {
  std::string out;
  for (size_t i = 0; i < err.size(); ++i) {
    if (err[i] != '\r') {
      out += err[i];
      continue;
    }
    while (i + 1 < err.size() && err[i + 1] != '\r' && err[i + 1] != '\n')
      ++i;
  }
  return out;
}

// The figures of a bench JSON without its wall-clock figures.
void drop_wall(json &j) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end();) {
      if (it.key().find("wall") != std::string::npos)
        it = j.erase(it);
      else
        drop_wall(*it++);
    }
  } else if (j.is_array()) {
    for (json &e : j)
      drop_wall(e);
  }
}

} // namespace

TEST_CASE("run --progress: the line on stderr, stdout and the summary "
          "unchanged") {
  LongRun run = long_run_with_progress();
  const CommandResult &with = run.result;
  INFO(with);
  CHECK(contains(with.err, "\rrun: "));
  CHECK(contains(with.err, " virtual ("));
  CHECK(contains(with.err, "% of --max-time"));
  CHECK(contains(with.err, " wall, "));
  CHECK(!contains(with.out, "\r"));
  CommandResult without = nicemu(hang_run(run.max_time, "--no-progress"));
  CHECK(without.status == 124);
  CHECK(!contains(without.err, "\r"));
  CHECK(with.out == without.out); // the cycle report, byte for byte
  CHECK(parse_summary(without_progress(with.err)).deterministic_lines ==
        parse_summary(without.err).deterministic_lines);
  // The line is cleared before the summary: it starts a line of its own.
  CHECK(contains(with.err, "\rnicemu: stopped at --max-time"));
}

TEST_CASE("progress is off by default when stderr is not a terminal") {
  LongRun run = long_run_with_progress();
  REQUIRE(contains(run.result.err, "\rrun: "));
  CommandResult plain = nicemu(hang_run(run.max_time, ""));
  CHECK(plain.status == 124);
  CHECK(!contains(plain.err, "\r"));
  CHECK(plain.out == run.result.out);
}

TEST_CASE("bench --progress: the JSON on stdout is the same") {
  // No wall-clock figure in bench logp's JSON: the same bytes.
  CommandResult with =
      nicemu({"bench", "logp", "--quick", "--json", "--progress"});
  CommandResult without = nicemu({"bench", "logp", "--quick", "--json"});
  REQUIRE_MESSAGE(with.status == 0, with);
  REQUIRE_MESSAGE(without.status == 0, without);
  CHECK(with.out == without.out);
  CHECK(json::accept(with.out));
  // FM on bench via runs long enough to show the line; its figures apart
  // from the wall times are the same.
  CommandResult via = nicemu(
      {"bench", "via", "--quick", "--only", "fm", "--json", "--progress"});
  CommandResult via_plain =
      nicemu({"bench", "via", "--quick", "--only", "fm", "--json"});
  REQUIRE_MESSAGE(via.status == 0, via);
  REQUIRE_MESSAGE(via_plain.status == 0, via_plain);
  CHECK(!contains(via.out, "\r"));
  CHECK(!contains(via_plain.err, "\r"));
  REQUIRE(json::accept(via.out));
  json a = json::parse(via.out), b = json::parse(via_plain.out);
  // Drawn from half a second on, four times a second.
  if (a["fm"]["wall_seconds"].get<double>() > 1.0)
    CHECK(contains(via.err, "\rbench via 1/1: fm_pingpong, 2 nodes, "));
  drop_wall(a);
  drop_wall(b);
  CHECK(a == b);
}
