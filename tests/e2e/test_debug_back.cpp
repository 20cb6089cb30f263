// nicemu debug going back: rstepi, rstep, rcontinue and goto TIME, each
// arriving in the state a forward run has at the same place (registers,
// the core's pc, instructions and cycles, the virtual time), on the demo
// firmware's timer interrupt handler.
#include "cli_helpers.hpp"
#include "gzip_helpers.hpp"

#include <doctest/doctest.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>

using namespace e2e;

namespace {

// Checkpoint intervals no other test uses, one per test case (they run at
// once): they find a test's copies.
const std::string kEvery[] = {"991us", "992us", "993us",
                              "994us", "995us", "996us"};

struct Answer {
  std::string command, output;
};

// What each command of a `-x` script printed (the debugger echoes every
// line it reads as "(nicemu) LINE").
std::vector<Answer> answers(const std::string &out) {
  std::vector<Answer> list;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("(nicemu) ", 0) == 0)
      list.push_back({line.substr(9), ""});
    else if (!list.empty() && line.rfind("[node", 0) != 0)
      list.back().output += line + "\n";
  }
  return list;
}

// The outputs of every `state` in the script: registers and the cores'
// status (time, pc, instructions, cycles).
const std::string kState = "regs\ncycles\n";

std::vector<std::string> states(const std::string &out) {
  std::vector<std::string> list;
  std::vector<Answer> a = answers(out);
  for (size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i].command == "regs" && a[i + 1].command == "cycles")
      list.push_back(a[i].output + a[i + 1].output);
  return list;
}

CommandResult debug_demo(int test, const std::string &script, int nodes = 1) {
  TempDir dir;
  std::string path = dir.file("script.txt");
  std::ofstream(path) << script;
  return nicemu({"debug", "-x", path, "-n", std::to_string(nodes), "--firmware",
                 firmware("demo.img"), "--checkpoint-every", kEvery[test]});
}

std::string summary(const std::string &err) {
  return err.substr(0, err.find("wall time"));
}

int copies_left(int test) {
  int n = 0;
  DIR *proc = opendir("/proc");
  REQUIRE(proc);
  while (dirent *e = readdir(proc)) {
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    n += contains(cmdline, "nicemu debug") && contains(cmdline, kEvery[test]);
  }
  closedir(proc);
  return n;
}

} // namespace

TEST_CASE("debug going back: rstepi across a delay slot gives the forward "
          "run's registers and cycles at every step") {
  const int kSteps = 6;
  std::string forward = "break on_interrupt\ncontinue\ncontinue\n" + kState;
  std::string back = "break on_interrupt\ncontinue\ncontinue\n";
  for (int i = 0; i < kSteps; ++i) {
    forward += "stepi\n" + kState;
    back += "stepi\n";
  }
  back += kState;
  for (int i = 0; i < kSteps; ++i)
    back += "rstepi\n" + kState;
  // Back several steps at once, then forward over them again.
  back += "stepi 6\nrstepi 6\n" + kState + "stepi 6\nrstepi 2\n" + kState +
          "delete\ncontinue\n";
  forward += "delete\ncontinue\n";
  CommandResult f = debug_demo(0, forward, 2), b = debug_demo(0, back, 2);
  INFO("forward: " << f.out);
  INFO("back: " << b.out << b.err);
  REQUIRE(f.status == 0);
  REQUIRE(b.status == 0);
  std::vector<std::string> fs = states(f.out), bs = states(b.out);
  REQUIRE(fs.size() == kSteps + 1);
  REQUIRE(bs.size() == kSteps + 3);
  for (int i = 0; i <= kSteps; ++i) {
    INFO("forward step " << i);
    CHECK(contains(fs[i], "instructions"));
    CHECK(bs[kSteps - i] == fs[i]);
  }
  CHECK(bs[kSteps + 1] == fs[0]); // stepi 6, rstepi 6 (at once): the same
  CHECK(bs[kSteps + 2] == fs[4]); // stepi 6, rstepi 2: 4 steps on
  // The handler's first test is a branch with a delay slot: one step.
  CHECK(contains(b.out, "beqz $at"));
  // The run ends as it does without going back.
  CommandResult plain =
      nicemu({"run", "-n", "2", "--firmware", firmware("demo.img")});
  CHECK(summary(b.err) == summary(plain.err));
  CHECK(copies_left(0) == 0);
}

TEST_CASE("debug going back: rcontinue to a watchpoint stops at the store, "
          "where a breakpoint on it stops a forward run") {
  CommandResult b = debug_demo(1, "break on_interrupt\ncontinue\ncontinue\n"
                                  "continue\ndelete\nwatch ticks\nrcontinue\n"
                                  "p ticks\n" +
                                      kState + "rcontinue\np ticks\n" + kState +
                                      "stepi\np ticks\nrcontinue\np ticks\n" +
                                      kState + "rcontinue\ndelete\ncontinue\n");
  INFO("back: " << b.out << b.err);
  REQUIRE(b.status == 0);
  std::vector<Answer> a = answers(b.out);
  std::vector<std::string> values;
  for (const Answer &x : a)
    if (x.command == "p ticks")
      values.push_back(x.output);
  // Going back from the third interrupt: the stores of 1 -> 2 and 0 -> 1;
  // a step over the second makes ticks 1, and going back finds it again;
  // before it, only the start-up's zeroing of ticks, which changes
  // nothing (not shown, as forward): the start of the run.
  REQUIRE(values.size() == 4);
  CHECK(values[0] == "ticks = 1\n");
  CHECK(values[1] == "ticks = 0\n");
  CHECK(values[2] == "ticks = 1\n");
  CHECK(values[3] == "ticks = 0\n");
  CHECK(contains(b.out, "watchpoint 2: ticks (the access is this "
                        "instruction's)"));
  CHECK(contains(b.out, "no more reverse-execution history"));
  // The store's address, from where going back stopped.
  std::vector<std::string> bs = states(b.out);
  REQUIRE(bs.size() == 3);
  CHECK(bs[2] == bs[1]);
  std::string pc = bs[0].substr(bs[0].find("pc   0x") + 5, 10);
  REQUIRE(pc.rfind("0x", 0) == 0);
  // Forward: a breakpoint on that store; its second and first hits.
  CommandResult f =
      debug_demo(1, "break *" + pc + "\ncontinue\n" + kState + "continue\n" +
                        kState + "delete\ncontinue\n");
  INFO("forward: " << f.out);
  std::vector<std::string> fs = states(f.out);
  REQUIRE(fs.size() == 2);
  CHECK(bs[0] == fs[1]);
  CHECK(bs[1] == fs[0]);
  CHECK(copies_left(1) == 0);
}

TEST_CASE("debug going back: goto TIME, back and forth, arrives in the same "
          "state, and rstep goes back by source lines") {
  CommandResult b =
      debug_demo(2, "goto 400us\n" + kState + "goto 1ms\ngoto 400us\n" +
                        kState + "goto 120us\ngoto 400us\n" + kState +
                        "break on_interrupt\ncontinue\nnext\nnext\n"
                        "rstep\nrstep\n" +
                        kState + "goto 0us\ntime\n" + "delete\ncontinue\n");
  INFO(b.out << b.err);
  REQUIRE(b.status == 0);
  std::vector<std::string> bs = states(b.out);
  REQUIRE(bs.size() == 4);
  CHECK(contains(bs[0], "virtual time"));
  CHECK(bs[1] == bs[0]); // back from 1 ms
  CHECK(bs[2] == bs[0]); // forward from 120 us
  // The first moment between rounds at or after 400 us.
  std::vector<Answer> a = answers(b.out);
  for (const Answer &x : a)
    if (x.command == "time")
      CHECK(x.output == "virtual time 0 ps (0.000 us)\n");
  // rstep twice after next twice: back where the breakpoint stopped (in
  // the interrupt after 400 us).
  CommandResult f = debug_demo(2, "goto 400us\nbreak on_interrupt\ncontinue\n" +
                                      kState + "delete\ncontinue\n");
  std::vector<std::string> fs = states(f.out);
  REQUIRE(fs.size() == 1);
  CHECK(bs[3] == fs[0]);
  CHECK(copies_left(2) == 0);
}

TEST_CASE("debug going back: commands on standard input, and refusals") {
  // Not a script: the copies read on from the same pipe.
  TempDir dir;
  std::string path = dir.file("commands.txt");
  std::ofstream(path) << "break on_interrupt\ncontinue\nstepi\nstepi\n"
                         "rstepi\nrstepi\ncontinue\nrcontinue\ncycles\n"
                         "delete\ncontinue\n";
  CommandResult piped = run_command(
      "/bin/sh", {"-c", std::string(NICEMU_TOOL_PATH) + " debug -n 1 " +
                            "--firmware " + firmware("demo.img") +
                            " --checkpoint-every " + kEvery[3] + " < " + path});
  INFO(piped.out << piped.err);
  CHECK(piped.status == 0);
  CHECK(contains(piped.out, "the run ended: exit code 0"));
  std::vector<Answer> a = answers(piped.out);
  REQUIRE(a.size() == 11);
  CHECK(a[7].command == "rcontinue");
  CHECK(contains(a[7].output, "node0: breakpoint 1"));
  // Going back needs checkpoints, and a run without host programs.
  CommandResult off = nicemu({"debug", "-x", path, "--firmware",
                              firmware("demo.img"), "--checkpoint-every", "0"});
  CHECK(contains(off.out, "error: cannot go back: going back needs a replay "
                          "or a run without host programs"));
  CHECK(off.status == 1); // debugger commands failed
  CommandResult bad = nicemu({"debug", "--firmware", firmware("demo.img"),
                              "--checkpoint-every", "soon"});
  CHECK(bad.status != 0);
  CHECK(contains(bad.err, "--checkpoint-every 'soon' is not a duration"));
  CHECK(copies_left(3) == 0);
}

namespace {

// A GAM ping-pong recorded on two nodes, and its plain replay.
struct Recorded {
  TempDir dir;
  std::string path = dir.file("run.nrec");
  CommandResult replay;
};

void record_gam_pingpong(Recorded &r) {
  REQUIRE(nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--record",
                  r.path, "--", NICEMU_GAM_PINGPONG})
              .status == 0);
  r.replay = nicemu({"replay", r.path});
  REQUIRE(r.replay.status == 0);
}

CommandResult debug_replay(int test, const std::string &recording,
                           const std::string &script) {
  TempDir dir;
  std::string path = dir.file("script.txt");
  std::ofstream(path) << script;
  return nicemu({"debug", "--replay", recording, "-x", path,
                 "--checkpoint-every", kEvery[test]});
}

// The summary and the hosts' ends, without the wall time.
std::string ending(const std::string &err) {
  std::string out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (!contains(line, "wall time"))
      out += line + "\n";
  return out.substr(out.find("--- nicemu:"));
}

} // namespace

TEST_CASE("debug going back on a replay of host programs: rstepi and "
          "rcontinue give the forward run's registers and cycles") {
  Recorded rec;
  record_gam_pingpong(rec);
  const int kSteps = 4;
  std::string forward =
      "break h_host_send\ncontinue\n" + kState + "continue\n" + kState;
  std::string back = "break h_host_send\ncontinue\ncontinue\n";
  for (int i = 0; i < kSteps; ++i) {
    forward += "stepi\n" + kState;
    back += "stepi\n";
  }
  back += kState;
  for (int i = 0; i < kSteps; ++i)
    back += "rstepi\n" + kState;
  back += "rcontinue\n" + kState + "goto 0us\ntime\ndelete\ncontinue\n";
  forward += "delete\ncontinue\n";
  CommandResult f = debug_replay(4, rec.path, forward),
                b = debug_replay(4, rec.path, back);
  INFO("forward: " << f.out << f.err);
  INFO("back: " << b.out << b.err);
  REQUIRE(f.status == 0);
  REQUIRE(b.status == 0);
  std::vector<std::string> fs = states(f.out), bs = states(b.out);
  REQUIRE(fs.size() == kSteps + 2);
  REQUIRE(bs.size() == kSteps + 2);
  CHECK(contains(fs[0], "h_host_send"));
  CHECK(fs[0] != fs[1]); // the second hit is another moment
  for (int i = 0; i <= kSteps; ++i) {
    INFO("forward step " << i);
    CHECK(bs[kSteps - i] == fs[1 + i]);
  }
  CHECK(bs[kSteps + 1] == fs[0]); // rcontinue: back to the first hit
  bool at_start = false;
  for (const Answer &x : answers(b.out))
    at_start |=
        x.command == "time" && x.output == "virtual time 0 ps (0.000 us)\n";
  CHECK(at_start);
  // Both end as the replay does: its summary, each host's end.
  CHECK(contains(b.out, "the run ended: exit code 0"));
  CHECK(ending(b.err) == ending(rec.replay.err));
  CHECK(ending(f.err) == ending(rec.replay.err));
  CHECK(contains(ending(b.err), "host 1: exited with status 0"));
  CHECK(copies_left(4) == 0);
}

TEST_CASE("debug on a replay: a recording that runs another way is named, "
          "and the run's options are the recording's") {
  TempDir dir;
  const std::string recording = dir.file("run.nrec");
  REQUIRE(nicemu({"run", "-n", "4", "--firmware", NICEMU_NIAM_RELIABLE_IMAGE,
                  "--link-loss", "0.05", "--fault-seed", "7", "--record",
                  recording, "--", NICEMU_NIAM_BARRIER, "3"})
              .status == 0);
  // Another seed loses other packets: the barriers end at other times.
  std::string data = gunzip(recording);
  const std::string seed = "\"fault_seed\": 7";
  REQUIRE(data.find(seed) != std::string::npos);
  data.replace(data.find(seed), seed.size(), "\"fault_seed\": 8");
  gzip_to(recording, data);
  CommandResult r = debug_replay(5, recording, "continue\n");
  INFO(r.out << r.err);
  CHECK(r.status == 1);
  CHECK(contains(r.err, "replay diverged from the recording at "));
  CHECK(contains(r.err, "host rank "));
  CHECK(copies_left(5) == 0);
  for (const std::vector<std::string> &extra :
       {std::vector<std::string>{"-n", "2"},
        {"--firmware", NICEMU_NIAM_IMAGE},
        {"--link-loss", "0.1"},
        {"--", NICEMU_GAM_PINGPONG}}) {
    std::vector<std::string> args = {"debug", "--replay", recording};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult refused = nicemu(args);
    INFO(refused.err);
    CHECK(refused.status == 1);
    CHECK(contains(refused.err, "is the recording's: the replay runs as it "
                                "was recorded"));
    CHECK_FALSE(contains(refused.err, "--- nicemu:")); // nothing ran
  }
}
