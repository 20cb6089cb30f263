// End-to-end: under `nicemu run`, sleeping calls pass virtual time, not
// wall time (the clock shim; docs/compatibility.md, "Time"), and a program
// that sleeps between looks at its memory sees its NIC write it.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

using namespace e2e;

namespace {

// The virtual microseconds "WHAT: X us, returned R" reports.
double took_us(const std::string &out, const std::string &what, int *ret) {
  for (const std::string &line : lines_with(out, what + ":")) {
    double us = -1;
    if (std::sscanf(line.c_str() + what.size() + 1, " %lf us, returned %d", &us,
                    ret) == 2)
      return us;
  }
  return -1;
}

} // namespace

TEST_CASE("virtual sleep: sleep, usleep, nanosleep, clock_nanosleep, and "
          "select, poll and epoll_wait with nothing to wait for, pass virtual "
          "time") {
  CommandResult r = nicemu(
      {"run", "--firmware", NICEMU_NIAM_IMAGE, "--", NICEMU_VIRTUAL_SLEEP});
  INFO(r);
  REQUIRE(r.status == 0);
  // Each took what it asked for, plus one clock read (well under 1 us).
  const std::pair<const char *, double> asked[] = {
      {"usleep 250", 250},          {"nanosleep 1500", 1500},
      {"sleep 2000000", 2'000'000}, {"clock_nanosleep 700", 700},
      {"select 300", 300},          {"poll 7000", 7000},
      {"epoll_wait 5000", 5000}};
  for (const auto &[what, us] : asked) {
    CAPTURE(what);
    int ret = -1;
    double took = took_us(r.out, what, &ret);
    CHECK(ret == 0);
    CHECK(took >= us);
    CHECK(took < us + 1);
  }
  // Until a time: from the clock read before it, 900 us on.
  int ret = -1;
  double until = took_us(r.out, "clock_nanosleep until +900", &ret);
  CHECK(ret == 0);
  CHECK(until > 899);
  CHECK(until < 901);
  CHECK(contains(r.out, "nanosleep of a bad time: -1"));
  // Two seconds of sleep in the program: the run's virtual time says so.
  CHECK(contains(r.err, "virtual time 2015"));
}

TEST_CASE("virtual sleep: a program sleeping between looks at its memory "
          "sees its NIC write it") {
  CommandResult r = nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE,
                            "--", NICEMU_VIRTUAL_SLEEP, "wait"});
  INFO(r);
  REQUIRE(r.status == 0);
  double at = 0;
  int looks = 0;
  for (const std::string &line : lines_with(r.out, "woke "))
    std::sscanf(line.c_str(), "woke %lf us after the barrier, after %d looks",
                &at, &looks);
  CHECK(at > 50);    // rank 0 computed 50 us first
  CHECK(at < 1000);  // and the word came soon after
  CHECK(looks > 10); // each look after a 5 us sleep
}
