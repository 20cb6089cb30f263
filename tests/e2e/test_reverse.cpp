// Reverse debugging (docs/replay.md, "Reverse debugging"): stock
// gdb-multiarch going back on a firmware-only run and on a replay. Every
// state reached going back is compared with the state a forward run stopped
// at the same instruction shows: the thread's registers, memory, and its
// core's instruction and cycle counters (monitor status).
#include "cli_helpers.hpp"
#include "gdb_helpers.hpp"

#include <doctest/doctest.h>

#include <dirent.h>
#include <sstream>

using namespace e2e;

namespace {

std::string elf_of(const std::string &image) {
  return image.substr(0, image.size() - 4) + ".elf";
}

// What a script prints of the stopped thread's state, after a marker.
std::string dump(const std::string &memory) {
  return "echo ==STATE==\\n\ninfo registers\nx/4wx " + memory +
         "\nmonitor status\n";
}

// The states a merged gdb output shows, in order: register rows, memory
// rows and node `node`'s row of monitor status (its pc, instructions,
// cycles). The scheduler's time and the other nodes' rows are left out:
// where the other cores stand when one stops depends on how their slices
// fell, forward or going back.
std::vector<std::string> states(const std::string &out, unsigned node) {
  std::vector<std::string> found;
  const std::string marker = "==STATE==";
  for (size_t at = out.find(marker); at != std::string::npos;) {
    size_t next = out.find(marker, at + marker.size());
    std::istringstream block(out.substr(at, next - at));
    std::string line, state;
    const std::string row = std::to_string(node) + " ";
    while (std::getline(block, line)) {
      bool registers = line.rfind(" R", 0) == 0 || line.rfind("      ", 0) == 0;
      bool memory = line.rfind("0x", 0) == 0 && contains(line, ":\t");
      bool status = line.rfind(row, 0) == 0 && contains(line, "0x");
      if (registers || memory || status)
        state += line + "\n";
    }
    found.push_back(state);
    at = next;
  }
  return found;
}

// The pc in a state's monitor status row.
std::string pc_of(const std::string &state) {
  for (std::istringstream in(state); !in.eof();) {
    std::string line;
    std::getline(in, line);
    std::istringstream words(line);
    std::string node, what, pc;
    words >> node >> what >> pc;
    if (pc.rfind("0x", 0) == 0 && (what == "running" || what == "sleeping"))
      return pc;
  }
  return "";
}

// nicemu processes whose command line holds `marker` (checkpoints left
// behind would show here).
int processes_with(const std::string &marker) {
  int n = 0;
  DIR *proc = opendir("/proc");
  REQUIRE(proc);
  while (dirent *e = readdir(proc)) {
    std::string cmdline =
        read_text(std::string("/proc/") + e->d_name + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    n += contains(cmdline, "nicemu") && contains(cmdline, marker);
  }
  closedir(proc);
  return n;
}

Debugged debug_demo(const std::string &script, const std::string &every) {
  return debug_run(
      {"--firmware", firmware("demo.img"), "--checkpoint-every", every},
      elf_of(firmware("demo.img")), script, {"--gdb", "0"}, true);
}

} // namespace

TEST_CASE("reverse: reverse-stepi across a delay slot in an interrupt "
          "handler gives the forward run's registers, memory and cycles") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  const int kSteps = 6;
  std::string forward = "break on_interrupt\ncontinue\n" + dump("$sp");
  std::string back = "break on_interrupt\ncontinue\n";
  for (int i = 0; i < kSteps; ++i) {
    forward += "stepi\n" + dump("$sp");
    back += "stepi\n";
  }
  back += dump("$sp");
  for (int i = 0; i < kSteps; ++i)
    back += "reverse-stepi\n" + dump("$sp");
  back += "delete\ncontinue\n";
  forward += "delete\ncontinue\n";
  // A checkpoint interval no other test uses: it finds this run's copies.
  const std::string every = "997us";
  Debugged f = debug_demo(forward, every);
  Debugged r = debug_demo(back, every);
  INFO("forward: " << f.gdb);
  INFO("reverse: " << r.gdb);
  std::vector<std::string> fs = states(f.gdb.out, 0), rs = states(r.gdb.out, 0);
  REQUIRE(fs.size() == kSteps + 1);
  REQUIRE(rs.size() == kSteps + 1);
  for (int i = 0; i <= kSteps; ++i) {
    INFO("forward step " << i);
    CHECK(!pc_of(fs[i]).empty());
    CHECK(rs[kSteps - i] == fs[i]);
  }
  // One of the steps is a branch with its delay slot (the handler's first
  // test), so going back crossed one: 8 bytes or a jump in one step.
  bool crossed = false;
  for (int i = 0; i < kSteps; ++i)
    crossed |= std::stoul(pc_of(fs[i + 1]), nullptr, 16) !=
               std::stoul(pc_of(fs[i]), nullptr, 16) + 4;
  CHECK(crossed);
  // Going back and forth changed nothing: the run ends as it does without.
  CommandResult plain = nicemu({"run", "--firmware", firmware("demo.img")});
  CHECK(r.nicemu.status == 0);
  CHECK(r.nicemu.out == plain.out);
  CHECK(run_summary(r.nicemu.err) == run_summary(plain.err));
  CHECK(contains(r.gdb.out, "exited normally"));
  CHECK(processes_with(every) == 0);
}

TEST_CASE("reverse: reverse-continue to a watchpoint on a flag, then "
          "forward again, stops where a forward run stops") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  // ticks counts the timer interrupts: the handler's store changes it.
  Debugged r = debug_demo(R"(break on_interrupt
continue
continue
delete
watch ticks
reverse-continue
)" + dump("&ticks") + "continue\n" +
                              dump("&ticks") + "continue\n" + dump("&ticks") +
                              "delete\ncontinue\n",
                          "1ms");
  INFO("reverse: " << r.gdb);
  CHECK(contains(r.gdb.out, "Old value = 1\nNew value = 0"));
  CHECK(contains(r.gdb.out, "Old value = 0\nNew value = 1"));
  CHECK(contains(r.gdb.out, "Old value = 1\nNew value = 2"));
  std::vector<std::string> rs = states(r.gdb.out, 0);
  REQUIRE(rs.size() == 3);
  // Going back stopped before the store that set ticks to 1; forward, the
  // same store stops first, then the next.
  const std::string store = pc_of(rs[0]);
  REQUIRE(!store.empty());
  Debugged f =
      debug_demo("break *" + store + "\ncontinue\n" + dump("&ticks") +
                     "delete\nwatch ticks\ncontinue\n" + dump("&ticks") +
                     "continue\n" + dump("&ticks") + "delete\ncontinue\n",
                 "1ms");
  INFO("forward: " << f.gdb);
  std::vector<std::string> fs = states(f.gdb.out, 0);
  REQUIRE(fs.size() == 3);
  CHECK(rs[0] == fs[0]);
  CHECK(rs[1] == fs[1]);
  CHECK(rs[2] == fs[2]);
  CHECK(r.nicemu.status == 0);
  CHECK(contains(r.gdb.out, "exited normally"));
}

TEST_CASE("reverse: on a replay of a GAM ping-pong, reverse-continue "
          "goes back hit by hit to the start of history, and forward again") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  TempDir dir;
  const std::string recording = dir.file("run.nrec");
  REQUIRE(nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--record",
                  recording, "--", NICEMU_GAM_PINGPONG})
              .status == 0);
  CommandResult plain = nicemu({"replay", recording});
  REQUIRE(plain.status == 0);
  const std::string state = dump("$sp");
  Debugged d = debug_run(
      {recording, "--checkpoint-every", "500us"}, elf_of(NICEMU_NIAM_IMAGE),
      "thread 2\nbreak h_host_send thread 2\ncontinue\n" + state +
          "continue\n" + state + "continue\nreverse-continue\n" + state +
          "reverse-continue\n" + state + "reverse-continue\ncontinue\n" +
          state + "delete\ncontinue\n",
      {"--gdb", "0"}, true, "replay");
  INFO(d.gdb);
  std::vector<std::string> s = states(d.gdb.out, 1);
  REQUIRE(s.size() == 5);
  CHECK(!pc_of(s[0]).empty());
  CHECK(s[0] != s[1]);
  CHECK(s[2] == s[1]); // back from the third hit: the second
  CHECK(s[3] == s[0]); // then the first
  CHECK(contains(d.gdb.out, "No more reverse-execution history."));
  CHECK(s[4] == s[0]); // forward from the start: the first again
  CHECK(d.nicemu.status == 0);
  CHECK(d.nicemu.out == plain.out);
  CHECK(run_summary(d.nicemu.err) == run_summary(plain.err));
}

TEST_CASE("reverse: monitor goto-call stops at a handler's Nth call as a "
          "forward run does, monitor goto at the same moment from anywhere") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  // A jump, then gdb reads the registers again; the jump's answer (where
  // the run stands) is left out of the states.
  auto jump = [](const std::string &command) {
    return "echo ==JUMP==\\n\nmonitor " + command +
           "\nmaint flush register-cache\n";
  };
  Debugged j =
      debug_demo("break on_interrupt\ncontinue\ncontinue\ncontinue\n" +
                     jump("goto-call on_interrupt 2") + dump("&ticks") +
                     jump("goto-call on_interrupt 1") + dump("&ticks") +
                     jump("goto 300us") + dump("&ticks") + jump("goto 1ms") +
                     jump("goto 300us") + dump("&ticks") +
                     jump("goto-call on_interrupt 3 0") + dump("&ticks") +
                     jump("goto 2s") + "continue\n",
                 "1ms");
  std::string out = j.gdb.out;
  for (size_t at; (at = out.find("==JUMP==")) != std::string::npos;)
    out.erase(at, out.find("==STATE==", at) - at);
  INFO("jumps: " << j.gdb);
  CHECK(contains(j.gdb.out, "node0: execution 2 of on_interrupt"));
  std::vector<std::string> js = states(out, 0);
  REQUIRE(js.size() == 5);
  CHECK(js[3] == js[2]); // 300 us, from 473 us and from 1 ms
  CHECK(js[2] != js[0]);
  // The run ends before 2 s: the answer says so, and continue ends it.
  CHECK(contains(j.gdb.out, "the run ended first"));
  CHECK(contains(j.gdb.out, "exited normally"));
  CHECK(j.nicemu.status == 0);
  Debugged f = debug_demo("break on_interrupt\ncontinue\n" + dump("&ticks") +
                              "continue\n" + dump("&ticks") + "continue\n" +
                              dump("&ticks") + "delete\ncontinue\n",
                          "1ms");
  INFO("forward: " << f.gdb);
  std::vector<std::string> fs = states(f.gdb.out, 0);
  REQUIRE(fs.size() == 3);
  CHECK(js[0] == fs[1]);
  CHECK(js[1] == fs[0]);
  CHECK(js[4] == fs[2]);
  CommandResult plain = nicemu({"run", "--firmware", firmware("demo.img")});
  CHECK(run_summary(j.nicemu.err) == run_summary(plain.err));
  // No checkpoint before the run has moved: an error, and the run goes on.
  Debugged early = debug_demo("monitor goto 100us\ncontinue\n", "1ms");
  CHECK(contains(early.gdb.out, "goto: no checkpoint yet"));
  CHECK(early.nicemu.status == 0);
}

TEST_CASE("reverse: refused with a clear answer where it cannot work") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  TempDir dir;
  // No checkpoints: the stub does not offer reverse execution.
  Debugged none = debug_demo("break main\ncontinue\nreverse-stepi\n"
                             "delete\ncontinue\n",
                             "0");
  INFO(none.gdb);
  CHECK(contains(none.gdb.out, "does not support this command"));
  CHECK(none.nicemu.status == 0);
  // A trace file being written would hold the stretch run again twice.
  Debugged traced = debug_run(
      {"--firmware", firmware("demo.img"), "--trace", dir.file("t.json")},
      elf_of(firmware("demo.img")),
      "break main\ncontinue\nreverse-stepi\ndelete\ncontinue\n", {"--gdb", "0"},
      true);
  INFO(traced.gdb);
  INFO(traced.nicemu);
  CHECK(contains(traced.nicemu.err, "nicemu: cannot go back: not with "
                                    "--trace or --pcap"));
  CHECK(traced.nicemu.status == 0);
  // A run with host programs is not a function of its inputs: no reverse.
  Debugged live = debug_run(
      {"-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--", NICEMU_GAM_PINGPONG},
      elf_of(NICEMU_NIAM_IMAGE),
      "break h_host_send\ncontinue\nreverse-stepi\n"
      "delete\ncontinue\n",
      {"--gdb", "0"}, true);
  INFO(live.gdb);
  CHECK(contains(live.gdb.out, "does not support this command"));
  CHECK(live.nicemu.status == 0);
}
