// End-to-end: the examples for the uzura card run as README.md and
// docs/uzura.md say (`nicemu run -n 2 --model uzura --firmware uzura.img`):
// examples/mpi-pingpong, examples/uzura-transpose and examples/mpi-onesided.
// Each checks its data itself and exits 1 when a value is wrong; here we
// check what they print: the values they found right, and figures the card
// can give.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace e2e;

namespace {

CommandResult run_example(const std::string &exe,
                          const std::vector<std::string> &args = {}) {
  std::vector<std::string> command{
      "run", "-n", "2", "--model", "uzura", "--firmware", NICEMU_UZURA_IMAGE,
      "--",  exe};
  command.insert(command.end(), args.begin(), args.end());
  return nicemu(command);
}

struct RoundTrip {
  double rtt_us = 0, one_way_us = 0;
};

// mpi_pingpong's lines "<bytes> <round trip us> <one way us>", by size.
std::map<long, RoundTrip> round_trips(const std::string &out) {
  std::map<long, RoundTrip> f;
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    long bytes = 0;
    RoundTrip t;
    if (!l.empty() && l[0] != '#' &&
        std::sscanf(l.c_str(), "%ld %lf %lf", &bytes, &t.rtt_us,
                    &t.one_way_us) == 3)
      f[bytes] = t;
  }
  return f;
}

} // namespace

TEST_CASE("examples: mpi_pingpong (C99 on mpi.h): every echo right, round "
          "trips the card can give") {
  CommandResult r = run_example(NICEMU_MPI_PINGPONG, {"20"});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "mpi_pingpong: every echo checked, ok"));
  CHECK(!contains(r.out, "FAILED"));
  std::map<long, RoundTrip> t = round_trips(r.out);
  REQUIRE(t.size() == 9); // 1 B to 64 KiB, by fours
  for (const auto &[bytes, f] : t) {
    CHECK(f.rtt_us > 0);
    CHECK(f.one_way_us == doctest::Approx(f.rtt_us / 2).epsilon(0.001));
  }
  // Both ways: doorbells, command and data DMAs, MACs, arrival DMAs, polls.
  MESSAGE("64-byte round trip " << t[64].rtt_us << " us");
  CHECK(t[64].rtt_us > 2 * (0.78 + 0.76 + 1.56 + 0.18));
  CHECK(t[64].rtt_us < 100);
  // 64 KiB cannot cross the source PCI-X bus faster than 4 KB in 4.02 us.
  CHECK(t[65536].one_way_us > 16 * 4.02);
  CHECK(t[65536].rtt_us > t[4096].rtt_us);
  CHECK(t[4096].rtt_us > t[1].rtt_us);
}

TEST_CASE("examples: uzura_transpose: a 100 x 100 matrix transposed by one "
          "typed RDMA write, every element in place") {
  CommandResult r = run_example(NICEMU_UZURA_TRANSPOSE);
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out,
                 "rank 1: 10000 of 10000 elements in their transposed places"));
  double us = 0;
  size_t at = r.out.find("rank 0: 100x100 floats");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(r.out.c_str() + at,
                      "rank 0: 100x100 floats (40000 bytes) transposed by "
                      "one typed RDMA write: %lf us",
                      &us) == 1);
  MESSAGE("transpose by one typed write: " << us << " us");
  // 40 KB over the source bus (about 40 us), and 10000 pieces of 4 bytes
  // at the target, each two PCI-X clocks more than its bytes.
  CHECK(us > 40000 / 1019.0 + 10000 * 0.015);
  CHECK(us < 1000);
}

TEST_CASE("examples: mpi_onesided (C99 on mpi.h): put and get with fence "
          "and with lock/unlock, every value right") {
  CommandResult r = run_example(NICEMU_MPI_ONESIDED, {"500"});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(!contains(r.out, "FAILED"));
  CHECK(count_ok_ranks(r.out, 2) == 2);
  for (const char *rank : {"rank 0: ", "rank 1: "}) {
    CHECK(contains(r.out, std::string(rank) + "fence: my window after the "
                                              "peer's put: 500 of 500 values "
                                              "right"));
    CHECK(contains(r.out, std::string(rank) + "fence: what I got back (my "
                                              "own put): 500 of 500 values "
                                              "right"));
  }
  CHECK(contains(r.out, "rank 0: lock: what I got back: 500 of 500 values "
                        "right"));
  CHECK(contains(r.out, "rank 1: lock: my window after rank 0's put: 500 of "
                        "500 values right"));
}
