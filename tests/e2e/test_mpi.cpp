// End-to-end: nicemu's MPI (docs/mpi.md) on the uzura card. The C test
// programs tests/e2e/programs/mpi_*.c are built against nicemu::mpi as a
// user builds them; each checks its results on every rank and prints
// "rank R of N: ok". The benchmark-like programs (mpi_latency,
// mpi_bandwidth, mpi_onesided) are checked for plausible, deterministic
// figures; one is compiled here with nicemu-mpicc.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace e2e;

namespace {

std::string program(const std::string &name) {
  return std::string(NICEMU_MPI_PROGRAMS) + "/" + name + "_prog";
}

CommandResult mpirun(unsigned n, const std::string &exe,
                     const std::vector<std::string> &args = {}) {
  std::vector<std::string> command{
      "run",   "-n",         std::to_string(n),  "--model",
      "uzura", "--firmware", NICEMU_UZURA_IMAGE, "--",
      exe};
  command.insert(command.end(), args.begin(), args.end());
  return nicemu(command);
}

void check_all_ok(const CommandResult &r, unsigned n) {
  INFO(r);
  CHECK(r.status == 0);
  CHECK(!contains(r.out, "FAILED"));
  CHECK(count_ok_ranks(r.out, n) == int(n));
}

// "<bytes> <figure>" lines of a benchmark's output, by size.
std::map<long, double> figures(const std::string &out) {
  std::map<long, double> f;
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    long bytes = 0;
    double v = 0;
    if (l.empty() || l[0] == '#' ||
        std::sscanf(l.c_str(), "%ld %lf", &bytes, &v) != 2)
      continue;
    f[bytes] = v;
  }
  return f;
}

} // namespace

TEST_CASE("mpi: point to point on 2, 3 and 4 ranks: matching, order, "
          "statuses, truncation, the eager limit, many requests, probes") {
  for (unsigned n : {2u, 3u, 4u})
    check_all_ok(mpirun(n, program("mpi_p2p")), n);
}

TEST_CASE("mpi: point to point with other eager limits (NICEMU_MPI_EAGER_"
          "LIMIT): everything rendezvous, one card message, just above") {
  for (const char *limit : {"1", "4064", "4065"})
    check_all_ok(mpirun(2, program("mpi_p2p"), {"--eager", limit}), 2);
}

TEST_CASE("mpi: point to point with a small arrival ring (NICEMU_MPI_"
          "ARRIVALS): messages wait for credits, none is lost") {
  check_all_ok(mpirun(4, program("mpi_p2p"), {"--arrivals", "64"}), 4);
}

TEST_CASE("mpi: every notification mode of the card (NICEMU_UZURA_IN, "
          "NICEMU_UZURA_OUT): the same results, the latency each mode costs") {
  auto latency = [] {
    CommandResult r = mpirun(2, program("mpi_latency"),
                             {"-m", "64:64", "-i", "10", "-x", "2"});
    INFO(r);
    REQUIRE(r.status == 0);
    return figures(r.out)[64];
  };
  double memory = latency();
  std::map<std::string, double> seen;
  for (auto [in, out] : {std::pair{"doorbell", "interrupt"},
                         {"doorbell", "register"},
                         {"card-polls", "memory"}}) {
    CAPTURE(in);
    CAPTURE(out);
    setenv("NICEMU_UZURA_IN", in, 1);
    setenv("NICEMU_UZURA_OUT", out, 1);
    check_all_ok(mpirun(2, program("mpi_p2p")), 2);
    check_all_ok(mpirun(2, program("mpi_rma")), 2);
    seen[std::string(in) + "/" + out] = latency();
    unsetenv("NICEMU_UZURA_IN");
    unsetenv("NICEMU_UZURA_OUT");
  }
  MESSAGE("64-byte MPI latency: memory "
          << memory << " us, interrupt " << seen["doorbell/interrupt"]
          << ", register " << seen["doorbell/register"] << ", card polls "
          << seen["card-polls/memory"]);
  // An interrupt (4.99 us) costs more than a poll of the program's memory
  // (0.18 us) or of a card register (0.91 us), on both sides.
  CHECK(seen["doorbell/interrupt"] > memory + 4);
  CHECK(seen["doorbell/register"] > memory);
  CHECK(seen["doorbell/register"] < seen["doorbell/interrupt"]);
  CHECK(seen["card-polls/memory"] != memory);
}

TEST_CASE("mpi: collectives, communicators and groups on 2, 3 and 4 ranks") {
  for (unsigned n : {2u, 3u, 4u})
    check_all_ok(mpirun(n, program("mpi_coll")), n);
  // More communicators than context ids, created and freed in turn.
  check_all_ok(mpirun(2, program("mpi_coll"), {"--communicators", "2100"}), 2);
}

TEST_CASE("mpi: datatypes: vector, hvector, a transposed matrix as one "
          "type, against a reference pack") {
  for (unsigned n : {2u, 3u})
    check_all_ok(mpirun(n, program("mpi_types")), n);
}

TEST_CASE("mpi: one-sided: three kinds of window, every synchronisation, "
          "exclusive locks, a target in MPI_Barrier, errors") {
  for (unsigned n : {2u, 3u})
    check_all_ok(mpirun(n, program("mpi_rma")), n);
  // Shared locks granted by the target too.
  check_all_ok(mpirun(3, program("mpi_rma"), {"--locks", "strict"}), 3);
}

TEST_CASE("mpi: bad arguments return their error codes under "
          "MPI_ERRORS_RETURN, the environment calls") {
  for (unsigned n : {2u, 3u})
    check_all_ok(mpirun(n, program("mpi_errors")), n);
}

TEST_CASE("mpi: MPI_Abort and fatal errors stop the run with a message") {
  CommandResult abort = mpirun(3, program("mpi_errors"), {"abort"});
  INFO(abort);
  CHECK(abort.status == 7);
  CHECK(contains(abort.err, "rank 1: MPI_Abort(MPI_COMM_WORLD, 7)"));
  CHECK(!contains(abort.out, "still running"));

  CommandResult fatal = mpirun(2, program("mpi_errors"), {"fatal"});
  INFO(fatal);
  CHECK(fatal.status == 1);
  CHECK(contains(fatal.err, "rank 1: MPI_Send: MPI_ERR_RANK: rank 99 is not "
                            "in the communicator (size 2)"));
  CHECK(!contains(fatal.out, "still running"));

  CommandResult early = mpirun(2, program("mpi_errors"), {"early"});
  INFO(early);
  CHECK(early.status == 1);
  CHECK(contains(early.err, "MPI_Comm_rank: MPI_ERR_OTHER: called before "
                            "MPI_Init"));
}

TEST_CASE("mpi: MPI_Init outside nicemu run says how to run the program") {
  CommandResult r = run_command(program("mpi_errors"), {"init"});
  INFO(r);
  CHECK(r.status == 1);
  CHECK(contains(r.err, "MPI_Init: MPI_ERR_OTHER: not started by nicemu run"));
}

TEST_CASE("mpi: nicemu-mpicc builds a program as mpicc does, -show says "
          "how") {
  TempDir dir;
  CommandResult show = run_command(NICEMU_MPICC, {"-show", "x.c", "-o", "x"});
  INFO(show);
  REQUIRE(show.status == 0);
  CHECK(contains(show.out, "/nicemu/mpi "));
  CHECK(contains(show.out, " x.c -o x "));
  CHECK(contains(show.out, "-lnicemu_host -lstdc++ -lm -lpthread"));
  CommandResult compile_only =
      run_command(NICEMU_MPICC, {"--showme", "-c", "x.c"});
  CHECK(!contains(compile_only.out, "-lnicemu_host"));
  CHECK(run_command(NICEMU_MPICC, {"--showme:compile"}).out.find("-I") == 0);
  std::string mpicxx = NICEMU_MPICC; // .../nicemu-mpicc -> nicemu-mpicxx
  mpicxx.replace(mpicxx.size() - 2, 2, "cxx");
  CommandResult cxx = run_command(mpicxx, {"-show", "y.cpp"});
  CHECK(contains(cxx.out, "/nicemu/mpi "));
  CHECK(contains(cxx.out, " y.cpp "));

  std::string exe = dir.file("latency");
  CommandResult build =
      run_command(NICEMU_MPICC, {"-O2", "-Wall", "-Werror",
                                 std::string(NICEMU_SOURCE_DIR) +
                                     "/tests/e2e/programs/mpi_latency.c",
                                 "-o", exe});
  INFO(build);
  REQUIRE(build.status == 0);
  CommandResult run = mpirun(2, exe, {"-m", "0:64", "-i", "5", "-x", "1"});
  INFO(run);
  CHECK(run.status == 0);
  CHECK(figures(run.out).size() == 8);
}

TEST_CASE("mpi: ping-pong latency and bandwidth: plausible, deterministic "
          "figures") {
  CommandResult lat = mpirun(2, program("mpi_latency"),
                             {"-m", "0:32768", "-i", "10", "-x", "2"});
  INFO(lat);
  REQUIRE(lat.status == 0);
  std::map<long, double> l = figures(lat.out);
  REQUIRE(l.size() == 17);
  MESSAGE("MPI latency: 0 B " << l[0] << " us, 8 KiB " << l[8192]
                              << " us, 32 KiB " << l[32768] << " us");
  // A doorbell, two DMAs, two MACs and a poll at least; about the card's
  // own round trip (docs/uzura.md) at most.
  CHECK(l[0] > 0.78 + 0.76 + 1.56 + 0.18);
  CHECK(l[0] < 12);
  CHECK(l[32768] > l[1024]);
  // Deterministic: the same figures again.
  CHECK(mpirun(2, program("mpi_latency"),
               {"-m", "0:32768", "-i", "10", "-x", "2"})
            .out == lat.out);

  for (const char *both : {"", "-B"}) {
    std::vector<std::string> args{"-m", "1:65536", "-i", "4",
                                  "-x", "1",       "-W", "16"};
    if (*both)
      args.push_back(both);
    CommandResult bw = mpirun(2, program("mpi_bandwidth"), args);
    INFO(bw);
    REQUIRE(bw.status == 0);
    std::map<long, double> b = figures(bw.out);
    REQUIRE(b.size() == 17);
    MESSAGE("MPI bandwidth" << both << ": 1 B " << b[1] << " MB/s, 64 KiB "
                            << b[65536] << " MB/s");
    // One way, the PCI-X bus bounds it (4 KB in 4.02 us); both ways, the
    // two buses.
    CHECK(b[65536] > 500);
    CHECK(b[65536] < (*both ? 2 : 1) * 4096 / 4.02);
  }
}

TEST_CASE("mpi: one-sided latency and bandwidth with every window and "
          "synchronisation") {
  for (const char *op : {"put", "get"})
    for (const char *win : {"create", "allocate", "dynamic"})
      for (const char *sync :
           {"fence", "pscw", "lock", "flush", "flush_local", "lock_all"}) {
        CommandResult r = mpirun(2, program("mpi_onesided"),
                                 {"-o", op, "-w", win, "-s", sync, "-m", "1:64",
                                  "-i", "3", "-x", "1"});
        INFO(r);
        CHECK(r.status == 0);
        std::map<long, double> f = figures(r.out);
        CHECK(f.size() == 7);
        // An RDMA round trip: more than the card's one-way latency.
        CHECK(f[8] > 5);
        CHECK(f[8] < 60);
      }
  CommandResult bw =
      mpirun(2, program("mpi_onesided"),
             {"-W", "16", "-m", "1:65536", "-i", "3", "-x", "1"});
  INFO(bw);
  REQUIRE(bw.status == 0);
  std::map<long, double> f = figures(bw.out);
  MESSAGE("MPI_Put bandwidth, 64 KiB: " << f[65536] << " MB/s");
  CHECK(f[65536] > 500);
  CHECK(f[65536] < 4096 / 4.02);
}
