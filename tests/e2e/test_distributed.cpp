// End-to-end: clusters and MPI ranks (docs/distributed.md). `nicemu
// partition` shows and checks how nodes are shared out among ranks; `nicemu
// run` started by mpirun as several ranks says that it cannot spread a
// cluster over them yet, once, and every rank stops, instead of each rank
// running (and printing) the whole cluster.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

using namespace e2e;

namespace {

// `mpirun --oversubscribe -n RANKS` around `nicemu ARGS` (Open MPI, from
// Debian's openmpi-bin; toolchain/setup.sh installs it). As root (CI), Open
// MPI wants to be told that is meant.
CommandResult mpirun(unsigned ranks, const std::vector<std::string> &args) {
  std::vector<std::string> all = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                  "mpirun",
                                  "--oversubscribe",
                                  "-n",
                                  std::to_string(ranks),
                                  NICEMU_TOOL_PATH};
  all.insert(all.end(), args.begin(), args.end());
  return run_command("/usr/bin/env", all);
}

size_t count(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("partition: nicemu partition shows each rank's nodes and the cut, "
          "and writes a file it reads back") {
  CommandResult r = nicemu({"partition", "-n", "1024", "--ranks", "2"});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "partition (from the topology): 1024 nodes on 2 "
                        "ranks\n"));
  CHECK(contains(r.out, "  rank 0: 490 nodes (0-489)\n"));
  CHECK(contains(r.out, "  rank 1: 534 nodes (490-1023)\n"));
  CHECK(contains(r.out, "  4 cables between ranks, of 1195\n"));

  TempDir dir;
  const std::string file = dir.file("split.txt");
  CommandResult w =
      nicemu({"partition", "-n", "64", "--ranks", "3", "-o", file});
  INFO(w);
  REQUIRE(w.status == 0);
  CHECK(read_text(file) == "# nicemu partition: <rank>: <nodes>\n"
                           "0: 0-20\n"
                           "1: 21-41\n"
                           "2: 42-63\n");
  CommandResult back =
      nicemu({"partition", "-n", "64", "--ranks", "3", "--partition", file});
  INFO(back);
  REQUIRE(back.status == 0);
  // The same shares and cut, from the file.
  CHECK(contains(back.out, "partition (from " + file + "): 64 nodes on 3"));
  CHECK(back.out.substr(back.out.find('\n')) == w.out.substr(w.out.find('\n')));
}

TEST_CASE("partition: a wrong partition file or rank count is refused with "
          "what is wrong") {
  TempDir dir;
  const std::string file = dir.file("bad.txt");
  write_bytes(file, {'0', ':', ' ', '0', '-', '3', '\n', '1', ':', ' ', '3',
                     '-', '7', '\n'});
  CommandResult r =
      nicemu({"partition", "-n", "8", "--ranks", "2", "--partition", file});
  INFO(r);
  CHECK(r.status == 1);
  CHECK(contains(r.err, file + ":2: node 3 is on rank 0 already"));
  CommandResult few = nicemu({"partition", "-n", "2", "--ranks", "3"});
  INFO(few);
  CHECK(few.status == 1);
  CHECK(contains(few.err, "each rank needs at least one node"));
  CommandResult missing = nicemu(
      {"partition", "-n", "8", "--ranks", "2", "--partition", dir.file("no")});
  INFO(missing);
  CHECK(missing.status == 1);
  CHECK(contains(missing.err, "cannot read partition file"));
}

TEST_CASE("mpirun: nicemu run on several ranks stops every rank with one "
          "message, on one rank it runs") {
  CommandResult r =
      mpirun(2, {"run", "-n", "4", "--firmware", firmware("net_pingpong.img")});
  INFO(r);
  CHECK(r.status == 2);
  // Said once (by rank 0), with the way on.
  CHECK(count(r.err, "cannot be spread over several ranks yet") == 1);
  CHECK(contains(r.err, "nicemu partition -n 4 --ranks 2"));
  // No rank ran the cluster.
  CHECK_FALSE(contains(r.out + r.err, "one-way"));
  CHECK_FALSE(contains(r.out + r.err, "--- nicemu:"));

  CommandResult one =
      mpirun(1, {"run", "-n", "2", "--firmware", firmware("net_pingpong.img")});
  INFO(one);
  CHECK(one.status == 0);
  CHECK(contains(one.out, "one-way"));
}
