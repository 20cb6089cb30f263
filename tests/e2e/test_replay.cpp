// End-to-end: nicemu run --record and nicemu replay (docs/replay.md). A
// replay runs the recorded cluster without its host programs and must give
// the same run byte for byte: the firmware's console, the summary, the
// trace, the packet captures and the cycle report. A damaged or altered
// recording is refused, or the replay stops where it differs and says so.
#include "bench_checks.hpp"
#include "cli_helpers.hpp"
#include "gdb_helpers.hpp"
#include "gzip_helpers.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

using namespace e2e;

namespace {

// What a run or a replay leaves that must be the same in both.
struct Observed {
  int status = 0;
  std::string out, err, summary, trace, report;
  std::vector<std::pair<std::string, std::string>> captures; // name, bytes
};

std::vector<std::string> observe_args(const TempDir &dir,
                                      const std::string &tag,
                                      const std::vector<std::string> &extra) {
  std::vector<std::string> args = {"--trace",       dir.file(tag + ".json"),
                                   "--pcap",        dir.file(tag + "-caps"),
                                   "--report-json", dir.file(tag + "-r.json")};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The summary to its last line (the hosts' ends, the lease counts, the
// network's counts), less the wall time.
std::string whole_summary(const std::string &err) {
  std::istringstream in(err.substr(err.find("--- nicemu:")));
  std::string kept;
  for (std::string line; std::getline(in, line);)
    kept += line.substr(0, line.find(", wall time")) + "\n";
  return kept;
}

Observed observed(const CommandResult &r, const TempDir &dir,
                  const std::string &tag) {
  REQUIRE_MESSAGE(contains(r.err, "--- nicemu:"), "no summary:\n" << r.err);
  Observed o{r.status,
             r.out,
             r.err,
             whole_summary(r.err),
             read_text(dir.file(tag + ".json")),
             read_text(dir.file(tag + "-r.json")),
             {}};
  if (fs::exists(dir.path() / (tag + "-caps")))
    for (const auto &e : fs::directory_iterator(dir.path() / (tag + "-caps")))
      o.captures.emplace_back(e.path().filename().string(),
                              read_text(e.path()));
  std::sort(o.captures.begin(), o.captures.end());
  return o;
}

// The firmware's console lines ("[nodeN] ..."): the host programs' own
// lines are theirs, and a replay has no host programs.
std::vector<std::string> console(const std::string &out) {
  return lines_with(out, "[node");
}

// Records `run` (cluster options) with `program`, replays the recording,
// and checks that both agree byte for byte. `extra`: options both take
// (reports). Returns what the recorded run and the replay left, for more
// checks.
std::pair<Observed, Observed>
record_and_replay(const std::vector<std::string> &run,
                  const std::vector<std::string> &program,
                  const std::vector<std::string> &extra = {}) {
  TempDir dir;
  const std::string recording = dir.file("run.nrec");
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), run.begin(), run.end());
  for (const std::string &a : observe_args(dir, "rec", extra))
    args.push_back(a);
  args.push_back("--record");
  args.push_back(recording);
  if (!program.empty()) {
    args.push_back("--");
    args.insert(args.end(), program.begin(), program.end());
  }
  CommandResult rec = nicemu(args);
  INFO("recorded run: " << rec);
  REQUIRE(fs::exists(recording));
  std::vector<std::string> replay_args = {"replay", recording};
  for (const std::string &a : observe_args(dir, "rep", extra))
    replay_args.push_back(a);
  CommandResult rep = nicemu(replay_args);
  INFO("replay: " << rep);
  Observed a = observed(rec, dir, "rec"), b = observed(rep, dir, "rep");
  CHECK(a.status == b.status);
  CHECK(console(a.out) == console(b.out));
  CHECK(a.summary == b.summary);
  CHECK(a.report == b.report);
  CHECK(a.captures == b.captures);
  // Not CHECK(a == b): a failure would print two traces of megabytes.
  CHECK_MESSAGE(a.trace == b.trace, "the traces differ");
  REQUIRE(a.trace.size() > 1000);
  // What the run prints after the hosts end (reports) is the same; what
  // the host programs printed is the recorded run's alone.
  const std::string report = "--- handler cycles:";
  CHECK(contains(a.out, report) == contains(b.out, report));
  if (contains(a.out, report))
    CHECK(a.out.substr(a.out.find(report)) == b.out.substr(b.out.find(report)));
  return {a, b};
}

} // namespace

TEST_CASE("replay: an NI-AM run (GAM ping-pong) replays byte for byte "
          "without its host programs") {
  auto [rec, rep] = record_and_replay(
      {"-n", "2", "--firmware", NICEMU_NIAM_IMAGE}, {NICEMU_GAM_PINGPONG});
  CHECK(rec.status == 0);
  // The recorded run had its host programs, the replay none (it compared
  // their lease counts, though).
  CHECK(contains(rec.out, "GAM request/reply round trip"));
  CHECK_FALSE(contains(rep.out, "GAM request/reply round trip"));
  CHECK(contains(rec.summary, "host leases:"));
}

TEST_CASE("replay: a VIA run (FM ping-pong) replays byte for byte") {
  record_and_replay(
      {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE},
      {NICEMU_FM_PINGPONG, "--quick"});
}

TEST_CASE("replay: NI-AM collectives with the cycle profiler replay with "
          "the same cycle report") {
  auto [rec, rep] =
      record_and_replay({"-n", "8", "--firmware", NICEMU_NIAM_IMAGE},
                        {NICEMU_NIAM_BARRIER, "3"}, {"--report", "cycles"});
  // The cycle table is there to compare.
  CHECK(contains(rep.out, "--- handler cycles:"));
}

TEST_CASE("replay: a DIMMnet-1 run on a model variant (AOTF ping-pong on "
          "martini:D) replays byte for byte") {
  record_and_replay(
      {"-n", "2", "--model", "martini:D", "--firmware", NICEMU_DIMMNET_IMAGE},
      {NICEMU_AOTF_PINGPONG, "100"});
}

TEST_CASE("replay: a firmware-only run replays from the flash in its "
          "recording, with the image gone") {
  TempDir dir;
  const std::string image = dir.file("pp.img");
  const std::string recording = dir.file("run.nrec");
  fs::copy_file(firmware("net_pingpong.img"), image);
  CommandResult rec = nicemu({"run", "-n", "2", "--firmware", image, "--pcap",
                              dir.file("rec-caps"), "--record", recording});
  REQUIRE(rec.status == 0);
  fs::remove(image);
  CommandResult rep =
      nicemu({"replay", recording, "--pcap", dir.file("rep-caps")});
  INFO(rep);
  REQUIRE(rep.status == 0);
  CHECK(rec.out == rep.out);
  CHECK(whole_summary(rec.err) == whole_summary(rep.err));
  const std::string cable = "link-node0-switch0.p0.pcap";
  REQUIRE(fs::exists(dir.path() / "rec-caps" / cable));
  CHECK(read_text(dir.path() / "rec-caps" / cable) ==
        read_text(dir.path() / "rep-caps" / cable));
}

TEST_CASE("replay: a damaged recording, or a file that is none, is "
          "refused with a clear message") {
  TempDir dir;
  const std::string recording = dir.file("run.nrec");
  CommandResult rec =
      nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--record",
              recording, "--", NICEMU_GAM_PINGPONG});
  REQUIRE(rec.status == 0);
  std::vector<uint8_t> bytes = read_bytes(recording);
  REQUIRE(bytes.size() > 1000);
  SUBCASE("a flipped bit") {
    flip_a_bit_that_matters(bytes);
    write_bytes(recording, bytes);
  }
  SUBCASE("cut short") {
    bytes.resize(bytes.size() / 3);
    write_bytes(recording, bytes);
  }
  SUBCASE("a firmware image") {
    write_bytes(recording, read_bytes(NICEMU_NIAM_IMAGE));
  }
  CommandResult r = nicemu({"replay", recording});
  INFO(r);
  CHECK(r.status == 1);
  CHECK(contains(r.err, "not a nicemu recording, or a damaged one"));
  CHECK_FALSE(contains(r.err, "--- nicemu:")); // nothing ran
}

TEST_CASE("replay: a recording altered to run another way stops at the "
          "first difference and names it") {
  TempDir dir;
  const std::string recording = dir.file("run.nrec");
  // Lost packets that the reliable firmware sends again: another seed
  // loses other packets, and the barriers end at other times.
  CommandResult rec =
      nicemu({"run", "-n", "4", "--firmware", NICEMU_NIAM_RELIABLE_IMAGE,
              "--link-loss", "0.05", "--fault-seed", "7", "--record", recording,
              "--", NICEMU_NIAM_BARRIER, "3"});
  REQUIRE(rec.status == 0);
  std::string data = gunzip(recording);
  const std::string seed = "\"fault_seed\": 7";
  REQUIRE(data.find(seed) != std::string::npos);
  data.replace(data.find(seed), seed.size(), "\"fault_seed\": 8");
  gzip_to(recording, data);
  CommandResult r = nicemu({"replay", recording});
  INFO(r);
  CHECK(r.status == 1);
  CHECK(contains(r.err, "replay diverged from the recording at "));
  CHECK(contains(r.err, "host rank "));
  CHECK(contains(r.err, "the recording was answered at "));
}

TEST_CASE("replay: gdb on a replay stops where it stops on the recorded "
          "run, with the same registers") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  TempDir dir;
  const std::string recording = dir.file("run.nrec");
  const std::vector<std::string> cluster = {"-n", "2", "--firmware",
                                            NICEMU_NIAM_IMAGE};
  std::vector<std::string> record = {"run"};
  record.insert(record.end(), cluster.begin(), cluster.end());
  for (const char *a : {"--record", "", "--", NICEMU_GAM_PINGPONG})
    record.push_back(*a ? a : recording);
  REQUIRE(nicemu(record).status == 0);
  std::string elf = NICEMU_NIAM_IMAGE;
  elf.replace(elf.size() - 4, 4, ".elf");
  // The third transfer a host request starts on node 1, well into the
  // ping-pong: the replay must have fed both hosts' calls that far.
  const std::string script = R"(thread 2
break h_host_send thread 2
continue
continue
continue
info registers
monitor status
delete
continue
)";
  std::vector<std::string> live_args = cluster;
  live_args.push_back("--");
  live_args.push_back(NICEMU_GAM_PINGPONG);
  Debugged live = debug_run(live_args, elf, script);
  Debugged replayed =
      debug_run({recording}, elf, script, {"--gdb", "0"}, false, "replay");
  INFO("live gdb: " << live.gdb);
  INFO("replay gdb: " << replayed.gdb);
  CHECK(live.nicemu.status == 0);
  CHECK(replayed.nicemu.status == 0);
  std::vector<std::string> registers = lines_with(live.gdb.out, "badvaddr");
  REQUIRE(registers.size() == 1);
  CHECK(lines_with(live.gdb.out, "h_host_send").size() >= 3);
  CHECK(live.gdb.out == replayed.gdb.out);
}

TEST_CASE("replay: bench replay --quick --json runs, records and replays "
          "each case, and every replay gives its recorded run's summary") {
  CommandResult r =
      nicemu({"bench", "replay", "--quick", "--json", "--repeats", "1"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  TempDir dir;
  check_bench_schema(dir, r.out, "replay");
  std::vector<std::string> names;
  for (const nlohmann::json &c : j.at("cases")) {
    names.push_back(c.at("name"));
    CHECK(c.at("identical") == true);
    // A recording holds at least the flash the nodes booted, compressed.
    CHECK(c.at("recording_bytes").get<uint64_t>() > 1000);
  }
  CHECK(names ==
        std::vector<std::string>{"gam_pingpong", "fm_pingpong", "barrier_64"});
  // Reverse execution at three checkpoint intervals: fewer checkpoints the
  // longer the interval, and every reverse-stepi answered.
  const nlohmann::json &reverse = j.at("reverse");
  REQUIRE(reverse.size() == 3);
  CHECK(reverse[0].at("checkpoint_every") == "1ms");
  CHECK(reverse[2].at("checkpoint_every") == "100ms");
  CHECK(reverse[0].at("checkpoints").get<int>() >
        reverse[2].at("checkpoints").get<int>());
  CHECK(reverse[2].at("checkpoints").get<int>() >= 1);
  for (const nlohmann::json &r : reverse)
    CHECK(r.at("reverse_stepi_seconds").size() == 3);
  // Checkpoint files: the run resumed from one ends as the full run did.
  const nlohmann::json &files = j.at("checkpoint_files");
  CHECK(files.at("identical") == true);
  CHECK(files.at("files").get<int>() >= 2);
  CHECK(files.at("restore_ms").size() == 1);
}
