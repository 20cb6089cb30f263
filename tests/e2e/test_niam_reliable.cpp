// End-to-end: NI-AM's reliable mode (the niam_reliable image) over links
// that lose, corrupt and duplicate packets (issue 24). The host program
// tests/e2e/programs/niam_lossy.cpp checks on every rank that barriers,
// reductions, bcopy, bcopy_notify, forwarded pulls and host messages all
// complete once, in order, with the right data; here we check every rank
// said so, and read the NICs' counters of the reliable mode to see that
// the faults were met and dealt with the way the mode claims.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

using namespace e2e;

namespace {

struct Counters {
  long resent = 0, duplicates = 0, out_of_order = 0, lost_peers = 0,
       untracked = 0, bad = 0, no_room = 0;
};

struct LossyRun {
  CommandResult result;
  int ok_ranks = 0;
  Counters total; // summed over the ranks
  int counter_lines = 0;
};

LossyRun lossy_run(const std::string &image, unsigned nodes,
                   std::vector<std::string> faults, unsigned rounds = 12) {
  std::vector<std::string> args = {"run", "-n", std::to_string(nodes),
                                   "--firmware", image};
  args.insert(args.end(), faults.begin(), faults.end());
  args.insert(args.end(), {"--", NICEMU_NIAM_LOSSY, std::to_string(rounds)});
  LossyRun run;
  run.result = nicemu(args);
  run.ok_ranks = count_ok_ranks(run.result.out, nodes);
  std::istringstream lines(run.result.out);
  for (std::string l; std::getline(lines, l);) {
    unsigned rank = 0;
    Counters c;
    if (std::sscanf(l.c_str(),
                    "rank %u: resent %ld duplicates %ld out-of-order %ld "
                    "lost-peers %ld untracked %ld bad %ld no-room %ld",
                    &rank, &c.resent, &c.duplicates, &c.out_of_order,
                    &c.lost_peers, &c.untracked, &c.bad, &c.no_room) == 8) {
      ++run.counter_lines;
      run.total.resent += c.resent;
      run.total.duplicates += c.duplicates;
      run.total.out_of_order += c.out_of_order;
      run.total.lost_peers += c.lost_peers;
      run.total.untracked += c.untracked;
      run.total.bad += c.bad;
      run.total.no_room += c.no_room;
    }
  }
  return run;
}

// Every rank completed everything, nothing was given up or sent without a
// copy kept.
void check_all_ok(const LossyRun &run, unsigned nodes) {
  INFO(run.result);
  REQUIRE(run.result.status == 0);
  CHECK(run.ok_ranks == int(nodes));
  CHECK(run.counter_lines == int(nodes));
  CHECK(run.total.lost_peers == 0);
  CHECK(run.total.untracked == 0);
}

long faults_line(const std::string &err, const char *what) {
  // "injected faults: C corrupted, L lost, D duplicated"
  long c = -1, l = -1, d = -1;
  if (size_t at = err.find("injected faults: "); at != std::string::npos)
    std::sscanf(err.c_str() + at,
                "injected faults: %ld corrupted, %ld lost, %ld duplicated", &c,
                &l, &d);
  std::string w = what;
  return w == "corrupted" ? c : w == "lost" ? l : d;
}

} // namespace

TEST_CASE("NI-AM reliable mode: on good links nothing is sent twice") {
  LossyRun run = lossy_run(NICEMU_NIAM_RELIABLE_IMAGE, 4, {});
  check_all_ok(run, 4);
  CHECK(run.total.resent == 0);
  CHECK(run.total.duplicates == 0);
  CHECK(run.total.out_of_order == 0);
  CHECK(run.total.bad == 0);
}

TEST_CASE("NI-AM reliable mode: everything completes once at 1 % loss") {
  LossyRun run = lossy_run(NICEMU_NIAM_RELIABLE_IMAGE, 4,
                           {"--link-loss", "0.01", "--fault-seed", "7"});
  check_all_ok(run, 4);
  CHECK(faults_line(run.result.err, "lost") > 0);
  CHECK(run.total.resent > 0); // the losses were repaired by resending
}

TEST_CASE("NI-AM reliable mode: everything completes once at 10 % loss, on "
          "8 nodes") {
  LossyRun run = lossy_run(NICEMU_NIAM_RELIABLE_IMAGE, 8,
                           {"--link-loss", "0.1", "--fault-seed", "3"});
  check_all_ok(run, 8);
  CHECK(faults_line(run.result.err, "lost") > 100);
  CHECK(run.total.resent > 100);
  // Go-back-N: packets behind a lost one are dropped and come again.
  CHECK(run.total.out_of_order > 0);
}

TEST_CASE("NI-AM reliable mode: everything completes once at 1 % and 10 % "
          "corruption") {
  for (const char *rate : {"0.01", "0.1"}) {
    CAPTURE(rate);
    LossyRun run = lossy_run(NICEMU_NIAM_RELIABLE_IMAGE, 4,
                             {"--link-corrupt", rate, "--fault-seed", "5"});
    check_all_ok(run, 4);
    // Each damaged packet is counted bad (its CRC) and sent again.
    long corrupted = faults_line(run.result.err, "corrupted");
    CHECK(corrupted > 0);
    CHECK(run.total.bad > 0);
    CHECK(run.total.bad <= corrupted);
    CHECK(run.total.resent > 0);
  }
}

TEST_CASE("NI-AM reliable mode: duplicated packets run once") {
  LossyRun run = lossy_run(NICEMU_NIAM_RELIABLE_IMAGE, 4,
                           {"--link-dup", "0.1", "--fault-seed", "2"});
  check_all_ok(run, 4);
  long copies = faults_line(run.result.err, "duplicated");
  CHECK(copies > 0);
  // Every copy that arrived after its original was dropped as a duplicate
  // (some may have overtaken nothing and arrived while their original was
  // being resent: all the same, none ran twice, or the program would say).
  CHECK(run.total.duplicates > 0);
  CHECK(run.total.duplicates <= copies + run.total.resent);
}

TEST_CASE("NI-AM reliable mode: loss, corruption and duplication at once, "
          "on 16 nodes (two-level network), the same twice") {
  std::vector<std::string> faults = {
      "--link-loss", "0.1", "--link-corrupt", "0.1",
      "--link-dup",  "0.1", "--fault-seed",   "11"};
  LossyRun run = lossy_run(NICEMU_NIAM_RELIABLE_IMAGE, 16, faults, 6);
  check_all_ok(run, 16);
  CHECK(run.total.resent > 0);
  CHECK(run.total.duplicates > 0);
  LossyRun again = lossy_run(NICEMU_NIAM_RELIABLE_IMAGE, 16, faults, 6);
  CHECK(sorted_lines(again.result.out) == sorted_lines(run.result.out));
  CHECK(run_summary(again.result.err) == run_summary(run.result.err));
}

TEST_CASE("NI-AM: the lean image does not survive loss, which is why the "
          "reliable one exists") {
  LossyRun run = lossy_run(NICEMU_NIAM_IMAGE, 4,
                           {"--link-loss", "0.01", "--fault-seed", "7"});
  INFO(run.result);
  CHECK(run.result.status != 0);
  CHECK(run.ok_ranks < 4);
}

TEST_CASE("NI-AM reliable mode: a peer that never answers is given up, and "
          "the run stops as a deadlock instead of retrying for ever") {
  LossyRun run =
      lossy_run(NICEMU_NIAM_RELIABLE_IMAGE, 2, {"--link-loss", "1"}, 1);
  INFO(run.result);
  CHECK(run.result.status == 126);
  CHECK(contains(run.result.err, "no NIC has anything left to do"));
  // Sixteen timeouts from 0.5 ms, doubling up to 16 ms: about 190 ms of
  // virtual time, then nothing is armed any more.
  double virtual_us = -1;
  if (size_t at = run.result.err.find("virtual time "); at != std::string::npos)
    std::sscanf(run.result.err.c_str() + at, "virtual time %lf us",
                &virtual_us);
  CHECK(virtual_us > 150'000);
  CHECK(virtual_us < 400'000);
}
