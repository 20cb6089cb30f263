// End-to-end: every speed-up can be switched off (docs/benchmarks.md,
// "Speed"), and switching it off changes no virtual result. Each scenario
// runs both ways and the two runs must agree byte for byte: what the host
// programs (or the firmware) print (their latencies are virtual), the
// run's summary, the trace, the packet captures and the cycle report.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <thread>

using namespace e2e;

namespace {

// What a run leaves that must not depend on how fast it ran.
struct Observed {
  std::string out, summary, trace, report;
  std::vector<std::pair<std::string, std::string>> captures; // name, bytes
};

Observed observe(const std::vector<std::string> &cluster,
                 const std::vector<std::string> &program,
                 const std::vector<std::string> &switches) {
  TempDir dir;
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), cluster.begin(), cluster.end());
  args.insert(args.end(), switches.begin(), switches.end());
  for (const char *a :
       {"--trace", "t.json", "--pcap", "caps", "--report-json", "report.json"})
    args.push_back(a);
  // The files go into the temporary directory.
  for (std::string &a : args)
    if (a == "t.json" || a == "caps" || a == "report.json")
      a = dir.file(a);
  args.push_back("--");
  args.insert(args.end(), program.begin(), program.end());
  CommandResult r = nicemu(args);
  INFO(r);
  REQUIRE(r.status == 0);
  Observed o{r.out,
             run_summary(r.err),
             read_text(dir.file("t.json")),
             read_text(dir.file("report.json")),
             {}};
  for (const auto &e : fs::directory_iterator(dir.path() / "caps"))
    o.captures.emplace_back(e.path().filename().string(), read_text(e.path()));
  std::sort(o.captures.begin(), o.captures.end());
  REQUIRE_FALSE(o.captures.empty());
  REQUIRE(o.trace.size() > 1000);
  return o;
}

void same_both_ways(const std::vector<std::string> &cluster,
                    const std::vector<std::string> &program,
                    const std::vector<std::string> &switch_off) {
  Observed on = observe(cluster, program, {});
  Observed off = observe(cluster, program, switch_off);
  // Host processes print concurrently: their lines, in any order.
  CHECK(sorted_lines(on.out) == sorted_lines(off.out));
  CHECK(on.summary == off.summary);
  CHECK(on.report == off.report);
  CHECK(on.captures == off.captures);
  // Not CHECK(a == b): a failure would print two traces of megabytes.
  CHECK_MESSAGE(on.trace == off.trace, "the traces differ");
}

} // namespace

TEST_CASE("speed switches: host leases change nothing in an NI-AM run "
          "(GAM ping-pong)") {
  same_both_ways({"-n", "2", "--firmware", NICEMU_NIAM_IMAGE},
                 {NICEMU_GAM_PINGPONG}, {"--no-leases"});
}

TEST_CASE("speed switches: host leases change nothing in a VIA run "
          "(FM ping-pong)") {
  same_both_ways(
      {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE},
      {NICEMU_FM_PINGPONG, "--quick"}, {"--no-leases"});
}

// A lease may last until something could wake the host's sleeping card
// (Simulation::quiet_until). Where the cores' slices end differs between
// these runs; the leases must not.
TEST_CASE("host leases: the same however the slices fell, and longer while "
          "the card sleeps (FM ping-pong)") {
  std::vector<std::string> leases;
  for (const std::vector<std::string> &slicing :
       std::vector<std::vector<std::string>>{
           {"--threads", "1"}, {"--threads", "2"}, {"--no-core-queue"}}) {
    std::vector<std::string> args = {
        "run", "-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE};
    args.insert(args.end(), slicing.begin(), slicing.end());
    args.insert(args.end(), {"--", NICEMU_FM_PINGPONG, "--quick"});
    CommandResult r = nicemu(args);
    INFO(r);
    REQUIRE(r.status == 0);
    std::vector<std::string> line = lines_with(r.err, "host leases: ");
    REQUIRE(line.size() == 1);
    leases.push_back(line[0]);
  }
  CHECK(leases[1] == leases[0]);
  CHECK(leases[2] == leases[0]);
  // "host leases: A of B polls ...": with leases that end at the next DMA
  // start only, A was 75 % of B (75,777 of 100,578); with the sleeping
  // card's, 82 %.
  unsigned long answered = 0, polls = 0;
  REQUIRE(std::sscanf(leases[0].c_str(), "host leases: %lu of %lu", &answered,
                      &polls) == 2);
  CHECK(polls == 100578);
  CHECK(answered * 100 > polls * 80);
}

TEST_CASE("speed switches: host leases change nothing in a VIPL run "
          "(VIPL ping-pong)") {
  same_both_ways(
      {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE},
      {NICEMU_VIPL_PINGPONG, "--quick"}, {"--no-leases"});
}

// ---- Fast-forward of polling loops ------------------------------------------

namespace {

// A run without the profiler (it sees every block, so fast-forward is off
// under --report-json and under a trace of core spans): the trace keeps
// links, DMA and hosts. Returns what it printed and its stderr, whose
// fast-forward line says whether loops were skipped.
std::pair<Observed, std::string>
observe_plain(const std::vector<std::string> &run, bool network,
              int expected_status = 0) {
  TempDir dir;
  std::vector<std::string> args = {"run"};
  if (network) // before the run's own options: it may end with a program
    for (const std::string &a :
         {std::string("--trace"), dir.file("t.json"),
          std::string("--trace-filter"), std::string("link,dma,host"),
          std::string("--pcap"), dir.file("caps")})
      args.push_back(a);
  args.insert(args.end(), run.begin(), run.end());
  CommandResult r = nicemu(args);
  INFO(r);
  REQUIRE(r.status == expected_status);
  Observed o{r.out, run_summary(r.err), "", "", {}};
  if (network) {
    o.trace = read_text(dir.file("t.json"));
    for (const auto &e : fs::directory_iterator(dir.path() / "caps"))
      o.captures.emplace_back(e.path().filename().string(),
                              read_text(e.path()));
    std::sort(o.captures.begin(), o.captures.end());
    REQUIRE_FALSE(o.captures.empty());
    REQUIRE(o.trace.size() > 1000);
  }
  return {o, r.err};
}

// What stderr says before the summary (a fault's report: pc, registers,
// cycle), less the lines sanitizers print with a process id ("==123==...").
std::string before_summary(const std::string &err) {
  std::istringstream in(err.substr(0, err.find("--- nicemu:")));
  std::string kept;
  for (std::string line; std::getline(in, line);)
    if (!(line.size() > 2 && line[0] == '=' && line[1] == '='))
      kept += line + "\n";
  return kept;
}

// Two plain runs that must agree byte for byte: what they printed (host
// processes print concurrently: their lines in any order), the summary,
// the captures and the trace, and what comes before the summary.
void check_same_plain(const Observed &a, const std::string &a_err,
                      const Observed &b, const std::string &b_err, bool hosts) {
  if (hosts)
    CHECK(sorted_lines(a.out) == sorted_lines(b.out));
  else
    CHECK(a.out == b.out);
  CHECK(a.summary == b.summary);
  CHECK(a.captures == b.captures);
  CHECK_MESSAGE(a.trace == b.trace, "the traces differ");
  if (hosts) // their stderr lines too, in any order
    CHECK(sorted_lines(before_summary(a_err)) ==
          sorted_lines(before_summary(b_err)));
  else
    CHECK(before_summary(a_err) == before_summary(b_err));
}

// Both ways; the run with fast-forward must have skipped something, or the
// comparison proves nothing.
void fast_forward_same_both_ways(const std::vector<std::string> &run,
                                 bool network, int expected_status = 0) {
  auto [on, on_err] = observe_plain(run, network, expected_status);
  std::vector<std::string> off_run = run;
  off_run.insert(off_run.begin(), "--no-fast-forward");
  auto [off, off_err] = observe_plain(off_run, network, expected_status);
  CHECK(lines_with(on_err, "fast-forward:").size() == 1);
  CHECK(lines_with(off_err, "fast-forward:").empty());
  check_same_plain(on, on_err, off, off_err, false);
}

} // namespace

TEST_CASE("speed switches: fast-forward changes nothing in firmware that "
          "busy-polls its Rx and Tx engines (net_pingpong on 2 nodes)") {
  fast_forward_same_both_ways(
      {"-n", "2", "--firmware", firmware("net_pingpong.img")}, true);
}

TEST_CASE("speed switches: fast-forward changes nothing in firmware that "
          "polls IRQ_PENDING for a timer (poll_1s)") {
  fast_forward_same_both_ways({"--firmware", firmware("poll_1s.img")}, false);
}

TEST_CASE("speed switches: fast-forward stops a spinning firmware at the "
          "watchdog's cycle, as full emulation does (hang)") {
  fast_forward_same_both_ways(
      {"--watchdog", "100000", "--firmware", firmware("hang.img")}, false, 125);
}

// ---- The core queue
// ---------------------------------------------------------- With it, a round
// runs only the cores that are due; without it, every running core is visited.
// The same cores must run, in the same order.

TEST_CASE("speed switches: the core queue changes nothing in NI-AM "
          "collectives on 16 nodes (barriers and all-reduces)") {
  same_both_ways({"-n", "16", "--firmware", NICEMU_NIAM_IMAGE},
                 {NICEMU_NIAM_BARRIER, "5"}, {"--no-core-queue"});
}

TEST_CASE("speed switches: the core queue changes nothing in a VIA run "
          "(FM ping-pong)") {
  same_both_ways(
      {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE},
      {NICEMU_FM_PINGPONG, "--quick"}, {"--no-core-queue"});
}

TEST_CASE("speed switches: the core queue changes nothing on DIMMnet-1 with "
          "two processes per card (protection)") {
  same_both_ways({"-n", "2", "--model", "martini:D", "--firmware",
                  NICEMU_DIMMNET_IMAGE, "--procs-per-node", "2"},
                 {NICEMU_DIMMNET_CHECKS, "protection"}, {"--no-core-queue"});
}

TEST_CASE("speed switches: the core queue keeps the console order and the "
          "interrupts of independent cores") {
  for (const char *image : {"hello.img", "timer_irq.img", "net_pingpong.img"}) {
    CAPTURE(image);
    std::vector<std::string> run = {"-n", "8", "--firmware", firmware(image)};
    auto [on, on_err] = observe_plain(run, false);
    run.insert(run.begin(), "--no-core-queue");
    auto [off, off_err] = observe_plain(run, false);
    CHECK(on.out == off.out); // every node's lines, in the same order
    CHECK(on.summary == off.summary);
  }
}

// ---- Threads ------------------------------------------------------------
// With --threads N, the slices of a round run on N threads at once. One
// thread and several must give the same run byte for byte; the threaded
// run must say it used them (a profiler or a card that cannot share its
// cores' slices would quietly use one, and prove nothing).

namespace {

// `run` on one thread and on `threads`; the trace leaves out the cores'
// spans (a profiler sees every block: it would take the run back to one
// thread), as observe_plain does.
void threads_same_both_ways(const std::vector<std::string> &run, bool network,
                            const std::string &threads,
                            int expected_status = 0) {
  std::vector<std::string> one = {"--threads", "1"};
  one.insert(one.end(), run.begin(), run.end());
  std::vector<std::string> many = {"--threads", threads};
  many.insert(many.end(), run.begin(), run.end());
  auto [a, a_err] = observe_plain(one, network, expected_status);
  auto [b, b_err] = observe_plain(many, network, expected_status);
  CHECK(lines_with(a_err, " threads").empty());
  CHECK(lines_with(b_err, "emulated MIPS on " + threads + " threads").size() ==
        1);
  bool hosts = std::find(run.begin(), run.end(), "--") != run.end();
  check_same_plain(a, a_err, b, b_err, hosts);
  // The host lines after the summary's wall time are the same too.
  CHECK(lines_with(a_err, "host ") == lines_with(b_err, "host "));
}

} // namespace

TEST_CASE("threads: NI-AM collectives on 16 nodes are the same on 1, 2 and "
          "3 threads") {
  for (const char *threads : {"2", "3"}) {
    CAPTURE(threads);
    threads_same_both_ways({"-n", "16", "--firmware", NICEMU_NIAM_IMAGE, "--",
                            NICEMU_NIAM_BARRIER, "5"},
                           true, threads);
  }
}

TEST_CASE("threads: left to nicemu, a run that tries both ways (one "
          "thread, then the workers) is the same as on one thread") {
  // Neither --threads nor $NICEMU_THREADS: the governor alternates 2 ms
  // windows of each way before it chooses (node/thread_governor.hpp), so
  // a run of 16 nodes' barriers (some 100 ms) has rounds of both.
  const std::vector<std::string> run = {
      "-n", "16", "--firmware", NICEMU_NIAM_IMAGE, "--", NICEMU_NIAM_BARRIER,
      "20"};
  std::vector<std::string> one = {"--threads", "1"};
  one.insert(one.end(), run.begin(), run.end());
  auto [a, a_err] = observe_plain(one, true, 0);
  auto [b, b_err] = observe_plain(run, true, 0);
  if (std::thread::hardware_concurrency() >= 2) {
    CHECK(lines_with(b_err, "nicemu's choice").size() == 1);
  } else {
    MESSAGE("one core here: nicemu chose one thread, nothing to compare");
  }
  check_same_plain(a, a_err, b, b_err, true);
  CHECK(lines_with(a_err, "host ") == lines_with(b_err, "host "));
}

TEST_CASE("threads: NI-AM's reliable mode under loss, corruption and "
          "duplication on 16 nodes is the same on 1 and 2 threads") {
  threads_same_both_ways({"-n", "16", "--firmware", NICEMU_NIAM_RELIABLE_IMAGE,
                          "--link-loss", "0.1", "--link-corrupt", "0.1",
                          "--link-dup", "0.1", "--fault-seed", "11", "--",
                          NICEMU_NIAM_LOSSY, "4"},
                         true, "2");
}

TEST_CASE("threads: VIA runs on comet (FM and VIPL ping-pongs) are the same "
          "on 1 and 2 threads") {
  for (const char *program : {NICEMU_FM_PINGPONG, NICEMU_VIPL_PINGPONG}) {
    CAPTURE(program);
    threads_same_both_ways({"-n", "2", "--model", "comet", "--firmware",
                            NICEMU_VIA_IMAGE, "--", program, "--quick"},
                           true, "2");
  }
}

TEST_CASE("threads: console order, interrupts and faults of independent "
          "cores on 8 nodes are the same on 1 and 3 threads") {
  for (const char *image : {"hello.img", "timer_irq.img", "net_pingpong.img"}) {
    CAPTURE(image);
    threads_same_both_ways({"-n", "8", "--firmware", firmware(image)}, false,
                           "3");
  }
  // Every node faults in the same round; the run reports the same one.
  threads_same_both_ways(
      {"-n", "8", "--firmware", firmware("fault_unaligned.img")}, false, "3",
      125);
  threads_same_both_ways(
      {"-n", "8", "--watchdog", "100000", "--firmware", firmware("hang.img")},
      false, "2", 125);
}

TEST_CASE("threads: a card whose devices cannot share their slices runs on "
          "one thread, and says nothing of threads") {
  CommandResult r =
      nicemu({"run", "--threads", "2", "-n", "2", "--model", "martini:D",
              "--firmware", NICEMU_DIMMNET_IMAGE, "--procs-per-node", "2", "--",
              NICEMU_DIMMNET_CHECKS, "protection"});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(lines_with(r.err, " threads").empty());
}

// A profiler sees every block in order, so a profiled run uses one thread
// whatever --threads says (docs/architecture.md, "Threads").
TEST_CASE("threads: a profiled run (cycle report, cores in the trace) is the "
          "same with --threads 1 and 2") {
  std::vector<std::string> cluster = {"-n", "16", "--firmware",
                                      NICEMU_NIAM_IMAGE};
  std::vector<std::string> program = {NICEMU_NIAM_BARRIER, "3"};
  std::vector<std::string> one = cluster, two = cluster;
  one.insert(one.end(), {"--threads", "1"});
  two.insert(two.end(), {"--threads", "2"});
  Observed a = observe(one, program, {});
  Observed b = observe(two, program, {});
  CHECK(sorted_lines(a.out) == sorted_lines(b.out));
  CHECK(a.summary == b.summary);
  CHECK(a.report == b.report);
  CHECK(a.captures == b.captures);
  CHECK_MESSAGE(a.trace == b.trace, "the traces differ");
}
