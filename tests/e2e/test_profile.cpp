// End-to-end: handler cycle reports (nicemu run --report, --report-json,
// --measure, --budget) against cycle counts worked out by hand
// (firmware/samples/profile_handlers.cpp), and on the NI-AM cluster.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace e2e;
using nlohmann::json;

namespace {

const json *handler(const json &rows, const std::string &name) {
  for (const json &h : rows)
    if (h["name"] == name)
      return &h;
  return nullptr;
}

json run_report(TempDir &dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      "run", "--firmware",    firmware("profile_handlers.img"),
      "-q",  "--report-json", dir.file("report.json")};
  args.insert(args.end(), extra.begin(), extra.end());
  CommandResult r = nicemu(args);
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("[node0] sum 63 ticks 5") != std::string::npos);
  return json::parse(read_text(dir.file("report.json")));
}

} // namespace

TEST_CASE("cycle report: handler figures match the hand count") {
  TempDir dir;
  json report = run_report(dir, {"--measure", "scale"});
  const json &rows = report["handlers"];

  // 10 single-cycle instructions + 11 for mult + 1 load-use interlock.
  const json *fixed = handler(rows, "synth_fixed");
  REQUIRE(fixed);
  CHECK((*fixed)["calls"] == 100);
  CHECK((*fixed)["min_cycles"] == 22);
  CHECK((*fixed)["max_cycles"] == 22);
  CHECK((*fixed)["total_cycles"] == 2200);
  CHECK((*fixed)["stall_cycles"] == 0);

  // 4 + 3n cycles for n = 0..99: lower median n = 49, p99 (nearest rank
  // 99 of 100) n = 98.
  const json *loop = handler(rows, "synth_loop");
  REQUIRE(loop);
  CHECK((*loop)["calls"] == 100);
  CHECK((*loop)["min_cycles"] == 4);
  CHECK((*loop)["median_cycles"] == 4 + 3 * 49);
  CHECK((*loop)["p99_cycles"] == 4 + 3 * 98);
  CHECK((*loop)["max_cycles"] == 4 + 3 * 99);
  CHECK((*loop)["total_cycles"] == 100 * 4 + 3 * 4950);
  // 33 MHz: 301 cycles are 9.121 us.
  CHECK((*loop)["max_us"].get<double>() ==
        doctest::Approx(301 / 33.0).epsilon(1e-9));
  uint64_t histogram_calls = 0;
  for (const json &c : (*loop)["histogram"]["counts"])
    histogram_calls += c.get<uint64_t>();
  CHECK(histogram_calls == 100);

  // A function that is not a handler, named on the command line.
  const json *scale = handler(rows, "scale");
  REQUIRE(scale);
  CHECK((*scale)["calls"] == 7);

  // Interrupts: the handler the firmware marked and the runtime's stub, once
  // per timer tick; the stub includes the dispatch which includes on_tick,
  // and on_tick's device register write is a stall.
  const json *tick = handler(rows, "on_tick");
  const json *stub = handler(rows, "nicemu_irq_stub");
  const json *dispatch = handler(rows, "nicemu_irq_dispatch");
  REQUIRE(tick);
  REQUIRE(stub);
  REQUIRE(dispatch);
  CHECK((*tick)["calls"] == 5);
  CHECK((*stub)["calls"] == 5);
  CHECK((*dispatch)["calls"] == 5);
  CHECK((*stub)["min_cycles"] > (*dispatch)["max_cycles"]);
  CHECK((*dispatch)["min_cycles"] > (*tick)["max_cycles"]);
  CHECK((*tick)["stall_cycles"] > 0);

  // Hotspots: leaf functions' self cycles are their calls' cycles; sleep
  // is not execution.
  const json &functions = report["hotspots"]["functions"];
  const json *loop_fn = handler(functions, "synth_loop");
  REQUIRE(loop_fn);
  CHECK((*loop_fn)["self_cycles"] == 15250);
  CHECK((*loop_fn)["inclusive_cycles"] == 15250);
  const json *main_fn = handler(functions, "main");
  REQUIRE(main_fn);
  CHECK((*main_fn)["inclusive_cycles"] > 15250 + 2200);
  // profile_handlers.elf lies next to the image: source lines are found.
  bool main_line = false;
  for (const json &l : report["hotspots"]["lines"])
    main_line |=
        l["file"].get<std::string>().ends_with("profile_handlers.cpp") &&
        l["function"] == "main";
  CHECK(main_line);
}

TEST_CASE("cycle report: the JSON validates against its schema") {
  TempDir dir;
  run_report(dir, {"--budget", "synth_fixed=22"});
  const fs::path schema =
      fs::path(NICEMU_SOURCE_DIR) / "docs/schemas/cycle-report.schema.json";
  CommandResult v = run_command(
      "/usr/bin/python3", {"-c",
                           "import json, sys, jsonschema\n"
                           "jsonschema.validate(json.load(open(sys.argv[1])),"
                           " json.load(open(sys.argv[2])))\n"
                           "print('valid')",
                           dir.file("report.json"), schema.string()});
  INFO(v);
  CHECK(v.status == 0);
  CHECK(v.out == "valid\n");
}

TEST_CASE("cycle report: the text table") {
  CommandResult r =
      nicemu({"run", "--firmware", firmware("profile_handlers.img"), "-q",
              "--report", "cycles,hotspots"});
  INFO(r);
  REQUIRE(r.status == 0);
  auto rows = lines_with(r.out, "synth_fixed ");
  REQUIRE(rows.size() == 2); // the handler table and the hotspots
  CHECK(contains(rows[0], " 100 "));
  CHECK(contains(rows[0], " 2200 "));
  CHECK(contains(r.out, "hottest lines"));
  CHECK(contains(r.out, "profile_handlers.cpp:"));
}

TEST_CASE("cycle budgets: kept, exceeded") {
  CommandResult ok =
      nicemu({"run", "--firmware", firmware("profile_handlers.img"), "-q",
              "--budget", "synth_loop=301", "--budget", "synth_fixed=22"});
  INFO(ok);
  CHECK(ok.status == 0);
  CHECK(!contains(ok.err, "budget"));

  CommandResult over =
      nicemu({"run", "--firmware", firmware("profile_handlers.img"), "-q",
              "--budget", "synth_loop=300", "--budget", "synth_fixed=22"});
  INFO(over);
  CHECK(over.status == 122);
  CHECK(contains(over.err,
                 "nicemu: cycle budget exceeded: synth_loop: 1 of 100 calls "
                 "over the budget of 300 cycles; the worst took 301 cycles, "
                 "on node 0"));
  CHECK(!contains(over.err, "synth_fixed"));
}

TEST_CASE("cycle reports: bad options are refused before the run") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case &c : std::vector<Case>{
           {{"--measure", "no_such_function"},
            "--measure no_such_function: no function of that name"},
           {{"--budget", "synth_loop"}, "expected HANDLER=CYCLES"},
           {{"--budget", "synth_loop=12x"}, "not a whole number of cycles"},
           {{"--budget", "nope=10"}, "--budget nope: no function"},
           {{"--report", "cycles,flames"}, "--report flames: expected"},
           {{"--report-json", "/nonexistent/dir/r.json"}, "cannot write"},
       }) {
    std::vector<std::string> args = {"run", "--firmware",
                                     firmware("profile_handlers.img")};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CommandResult r = nicemu(args);
    INFO(r);
    CHECK(r.status == 1);
    CHECK(contains(r.err, c.message));
    CHECK(!contains(r.out, "[node0]")); // nothing ran
  }
}

TEST_CASE("cycle report: NI-AM handlers on a cluster, per node, "
          "deterministic") {
  TempDir dir;
  auto run = [&](const std::string &json_name) {
    CommandResult r =
        nicemu({"run", "-n", "4", "--firmware", NICEMU_NIAM_IMAGE, "-q",
                "--report", "cycles", "--per-node", "--report-json",
                dir.file(json_name), "--", NICEMU_NIAM_BARRIER, "20"});
    INFO(r);
    REQUIRE(r.status == 0);
    CHECK(lines_with(r.out, "--- handler cycles: lanai4").size() == 4);
    return read_text(dir.file(json_name));
  };
  std::string first = run("a.json"), second = run("b.json");
  CHECK(first == second);
  json report = json::parse(first);
  CHECK(report["nodes"] == 4);
  // Every node runs the barrier's rounds through rx_packet (a landed packet)
  // and h_round, which it calls: the outer call's cycles include the inner.
  for (const json &node : report["per_node"]) {
    const json *round = handler(node["handlers"], "h_round");
    const json *rx = handler(node["handlers"], "rx_packet");
    REQUIRE(round);
    REQUIRE(rx);
    CHECK((*round)["calls"] > 0);
    CHECK((*rx)["calls"] >= (*round)["calls"]);
    CHECK((*rx)["min_cycles"] > (*round)["min_cycles"]);
  }
}
