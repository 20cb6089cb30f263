// End-to-end: host programs on emulated clusters. Each rank is a process
// linked with the host library; it drives its NIC by PIO into the mailbox,
// and the NIC answers with host DMA into the process's own memory.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

using namespace e2e;

namespace {

std::vector<std::string> echo_run(const std::string &nodes) {
  return {"run",
          "-n",
          nodes,
          "--firmware",
          firmware("host_echo.img"),
          "--",
          NICEMU_HOST_ECHO};
}

} // namespace

TEST_CASE("host programs drive their NICs: PIO in, DMA back, virtual time") {
  CommandResult r = nicemu(echo_run("2"));
  INFO(r);
  REQUIRE(r.status == 0);
  std::istringstream lines(r.out);
  int ranks = 0;
  for (std::string l; std::getline(lines, l);) {
    unsigned rank = 0, size = 0;
    double first = 0, last = 0;
    if (std::sscanf(l.c_str(),
                    "rank %u of %u: 10 echoes, first %lf us, last %lf us",
                    &rank, &size, &first, &last) != 4)
      continue;
    ++ranks;
    CHECK(size == 2);
    // Four PIO writes of 0.51 us, two host DMAs of 16 words (1.32 + 16 x
    // 0.0316 us in, 0.85 + 16 x 0.0321 us out), a one-word DMA, the
    // host's poll of its own memory (0.25 us), and the firmware's work at
    // 33 MHz (programming three DMAs, adding 1 to 16 words): 11.3 us here.
    CHECK(last > 2.04 + 1.83 + 1.36 + 0.88 + 0.25);
    CHECK(last < 20.0);
  }
  CHECK(ranks == 2);
  CHECK(contains(r.err, "host 0: exited with status 0"));
  CHECK(contains(r.err, "host 1: exited with status 0"));
}

TEST_CASE("host programs: the same run twice gives the same virtual times") {
  CommandResult a = nicemu(echo_run("2"));
  CommandResult b = nicemu(echo_run("2"));
  REQUIRE(a.status == 0);
  CHECK(sorted_lines(a.out) == sorted_lines(b.out));
}

TEST_CASE("a host program that crashes stops the cluster with a message") {
  CommandResult r =
      nicemu({"run", "-n", "2", "--firmware", firmware("host_echo.img"), "--",
              "sh", "-c", "kill -SEGV $$"});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.err, "killed by signal 11"));
}

TEST_CASE("a host that leaves early is named when the others are stuck") {
  // Rank 2 exits before its first barrier: the other ranks wait in it for
  // good, and the message says who left and who waits.
  CommandResult r =
      nicemu({"run", "-n", "4", "--firmware", NICEMU_NIAM_IMAGE, "--", "sh",
              "-c", "[ \"$NICEMU_RANK\" = 2 ] && exit 0; exec \"$0\" 3",
              NICEMU_NIAM_BARRIER});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.err, "every host waits for its NIC and no NIC has "
                        "anything left to do (hosts 0-1, 3: waiting in "));
  CHECK(contains(r.err, "host 2: exited with status 0)"));
}

TEST_CASE("a host stuck in computation past --host-timeout is killed") {
  // Rank 1 never calls the library and ignores SIGTERM: the run stops after
  // the timeout, names it, and kills it after the grace period.
  CommandResult r = nicemu(
      {"run", "-n", "2", "--host-timeout", "0.5", "--firmware",
       NICEMU_NIAM_IMAGE, "--", "sh", "-c",
       "[ \"$NICEMU_RANK\" = 1 ] && { trap '' TERM; while :; do :; done; }; "
       "exec \"$0\" 3",
       NICEMU_NIAM_BARRIER});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.err, "host 1 made no library call for 0.5 s of wall "
                        "time (computing, or stuck; --host-timeout)"));
  CHECK(contains(r.err, "host 1: was killed by signal 9"));
}

TEST_CASE("a NIC that faults while hosts run fails the run") {
  CommandResult r =
      nicemu({"run", "-n", "2", "--firmware", firmware("fault_illegal.img"),
              "--", NICEMU_NIAM_BARRIER, "3"});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.err, "node 0: firmware fault: illegal instruction"));
  // The hosts were stopped, not left behind: each has an outcome line.
  CHECK(contains(r.err, "host 0: "));
  CHECK(contains(r.err, "host 1: "));
  CHECK_FALSE(contains(r.err, "still running"));
}

TEST_CASE("a host program that cannot be started is a clear error") {
  CommandResult r =
      nicemu({"run", "-n", "2", "--firmware", firmware("host_echo.img"), "--",
              "/nonexistent/nicemu-host-program"});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.err, "cannot start the host program "
                        "'/nonexistent/nicemu-host-program'"));
  CHECK(contains(r.err, "No such file or directory"));
}

TEST_CASE("a program not linked with the host library just runs and exits") {
  CommandResult r = nicemu({"run", "-n", "2", "--firmware",
                            firmware("host_echo.img"), "--", "true"});
  INFO(r);
  CHECK(r.status == 0);
}

TEST_CASE("host programs read virtual time from clock_gettime and friends") {
  CommandResult r =
      nicemu({"run", "-n", "1", "-q", "--firmware", firmware("host_echo.img"),
              "--", NICEMU_CLOCK_READER});
  INFO(r);
  REQUIRE(r.status == 0);
  // lanai4 charges 50 ns per clock read, and the program does nothing else:
  // read 1 sees 50 ns, read 1000 sees 50000 ns, read 1001 (steady_clock)
  // 50050 ns; gettimeofday (read 1002) counts from 2000-01-01.
  CHECK(r.out == "monotonic first 50 ns, after 1000 reads 50000 ns\n"
                 "steady_clock 50050 ns\n"
                 "gettimeofday 946684800 s 50 us\n");
  // Outside nicemu the same program sees the real clocks.
  CommandResult plain = run_command(NICEMU_CLOCK_READER, {});
  CHECK(plain.out != r.out);
}
