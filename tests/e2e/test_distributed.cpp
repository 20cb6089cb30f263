// End-to-end: clusters and MPI ranks (docs/distributed.md). `nicemu
// partition` shows and checks how nodes are shared out among ranks; `nicemu
// run` started by mpirun as several ranks spreads one cluster over them and
// prints what one process prints; what it cannot take yet is refused once.
#include "bench_checks.hpp"
#include "cli_helpers.hpp"

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

using namespace e2e;

namespace {

// `mpirun --oversubscribe -n RANKS` around `nicemu ARGS` (Open MPI, from
// Debian's openmpi-bin; toolchain/setup.sh installs it). As root (CI), Open
// MPI wants to be told that is meant.
CommandResult mpirun(unsigned ranks, const std::vector<std::string> &args) {
  // Open MPI keeps memory past MPI_Finalize, which LeakSanitizer (the
  // sanitizer preset) would report as nicemu's.
  std::vector<std::string> all = {"OMPI_ALLOW_RUN_AS_ROOT=1",
                                  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                  "ASAN_OPTIONS=detect_leaks=0",
                                  "mpirun",
                                  "--oversubscribe",
                                  "-n",
                                  std::to_string(ranks),
                                  NICEMU_TOOL_PATH};
  all.insert(all.end(), args.begin(), args.end());
  return run_command("/usr/bin/env", all);
}

// `nicemu ARGS` in one process, with the environment mpirun() gives the
// ranks (the host programs inherit it, and its size moves their stacks:
// the addresses a UZURA program sends are on them).
CommandResult nicemu_as_ranks_are(const std::vector<std::string> &args) {
  std::vector<std::string> all = {"ASAN_OPTIONS=detect_leaks=0",
                                  NICEMU_TOOL_PATH};
  all.insert(all.end(), args.begin(), args.end());
  return run_command("/usr/bin/env", all);
}

void write_file(const std::string &path, const std::string &text) {
  std::ofstream(path) << text;
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

// stderr without what a spread run adds or cannot give alike: the
// partition, the wall time, the ranks' line, and mpirun's own report of a
// rank's nonzero exit (a block framed by lines of dashes).
std::string comparable(const std::string &err) {
  std::string out;
  size_t at = 0;
  while (at < err.size()) {
    size_t end = err.find('\n', at);
    end = end == std::string::npos ? err.size() : end + 1;
    std::string line = err.substr(at, end - at);
    at = end;
    if (line.starts_with("----------"))
      break;
    // ASan's one-line warnings (one per process) are not the run's.
    if (line.starts_with("==") ||
        line.starts_with("nicemu: one cluster over") ||
        line.starts_with("  rank ") || contains(line, " between ranks, of ") ||
        contains(line, "wall time") || line.starts_with("ranks: "))
      continue;
    out += line;
  }
  // Host processes' pids differ from run to run: "host rank 3 (PID)".
  for (size_t at = out.find("host rank "); at != std::string::npos;
       at = out.find("host rank ", at + 1)) {
    size_t open = out.find(" (", at + 10), close = out.find(')', open);
    if (open != std::string::npos && close != std::string::npos)
      out.replace(open + 2, close - open - 2, "pid");
  }
  return out;
}

TEST_CASE("mpirun: one cluster spread over 2 and 4 ranks prints what one "
          "process prints, and ends the same way") {
  TempDir dir;
  // Node 0 and node 1 (the samples' pair) on different ranks.
  const std::string two = dir.file("two.txt"), four = dir.file("four.txt");
  write_file(two, "0: 0,2,4,6\n1: 1,3,5,7\n");
  write_file(four, "0: 0,4\n1: 1,5\n2: 2,6\n3: 3,7\n");
  for (const char *image :
       {"net_pingpong.img", "link_check.img", "fault_illegal.img"}) {
    CAPTURE(image);
    std::vector<std::string> args = {"run", "-n", "8", "--firmware",
                                     firmware(image)};
    CommandResult one = nicemu(args);
    INFO(one);
    for (const auto &partition : {std::pair{2u, two}, std::pair{4u, four}}) {
      const unsigned ranks = partition.first;
      const std::string &file = partition.second;
      CAPTURE(ranks);
      std::vector<std::string> spread = args;
      spread.insert(spread.end(), {"--partition", file});
      CommandResult r = mpirun(ranks, spread);
      INFO(r);
      CHECK(r.status == one.status);
      CHECK(r.out == one.out);
      CHECK(comparable(r.err) == comparable(one.err));
      CHECK(contains(r.err, "nicemu: one cluster over " +
                                std::to_string(ranks) + " MPI ranks"));
      CHECK(count(r.err, "--- nicemu:") == 1); // rank 0's summary alone
    }
  }
  // The figures are there to compare: the samples print and fault.
  CHECK(contains(
      nicemu({"run", "-n", "8", "--firmware", firmware("net_pingpong.img")})
          .out,
      "one-way"));
}

TEST_CASE("mpirun: what a spread run cannot take yet, and a wrong partition, "
          "stop every rank with one message") {
  TempDir dir;
  const std::string recording = dir.file("run.rec");
  CommandResult r =
      mpirun(2, {"run", "-n", "2", "--firmware", firmware("net_pingpong.img"),
                 "--record", recording, "--", "/bin/true"});
  INFO(r);
  CHECK(r.status == 2);
  CHECK(count(r.err, "cannot take --record yet") == 1);
  CHECK_FALSE(contains(r.out + r.err, "--- nicemu:"));
  CHECK_FALSE(fs::exists(recording));

  const std::string bad = dir.file("bad.txt");
  write_file(bad, "0: 0-3\n1: 3-7\n");
  CommandResult p =
      mpirun(2, {"run", "-n", "8", "--firmware", firmware("net_pingpong.img"),
                 "--partition", bad});
  INFO(p);
  CHECK(p.status == 1);
  CHECK(count(p.err, bad + ":2: node 3 is on rank 0 already") == 1);
  CHECK_FALSE(contains(p.out + p.err, "--- nicemu:"));

  CommandResult alone =
      nicemu({"run", "-n", "2", "--firmware", firmware("net_pingpong.img"),
              "--partition", bad});
  CHECK(alone.status == 1);
  CHECK(contains(alone.err, "this run is one process"));

  CommandResult one =
      mpirun(1, {"run", "-n", "2", "--firmware", firmware("net_pingpong.img")});
  INFO(one);
  CHECK(one.status == 0);
  CHECK(contains(one.out, "one-way"));
  CHECK_FALSE(contains(one.err, "MPI ranks"));
}

namespace {

// The lines of `text` that start with `prefix`, in order; every line,
// sorted, for "".
std::vector<std::string> lines_of(const std::string &text,
                                  const std::string &prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix))
      out.push_back(line);
  if (prefix.empty())
    std::sort(out.begin(), out.end());
  return out;
}

// What a run writes besides its output: a trace, captures, a cycle report.
enum Files : unsigned {
  kNoFiles = 0,
  kTrace = 1,
  kPcap = 2,
  kReports = 4,
  kAllFiles = kTrace | kPcap | kReports,
};

// The options that write `files` into `dir`.
std::vector<std::string> file_options(unsigned files, const fs::path &dir) {
  std::vector<std::string> o;
  if (files & kTrace)
    o.insert(o.end(), {"--trace", (dir / "trace.json").string()});
  if (files & kPcap)
    o.insert(o.end(), {"--pcap", (dir / "pcap").string()});
  if (files & kReports)
    o.insert(o.end(), {"--report", "cycles,hotspots", "--report-json",
                       (dir / "report.json").string()});
  return o;
}

// Every file under `dir`, by its path below it, with its bytes.
std::map<std::string, std::string> files_under(const fs::path &dir) {
  std::map<std::string, std::string> all;
  if (fs::exists(dir))
    for (const auto &e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file())
        all[fs::relative(e.path(), dir).string()] = read_text(e.path());
  return all;
}

// `nicemu run ARGS` in one process, then spread by mpirun over each
// partition of `files` (ranks, file): the same stdout, the same stderr (what
// comparable() keeps), the same exit status, and the same bytes in each of
// the `files` asked for (--trace, --pcap, --report-json).
void check_spread_like_one(
    const std::vector<std::string> &args,
    const std::vector<std::pair<unsigned, std::string>> &partitions,
    unsigned files = kNoFiles) {
  TempDir dir;
  // The options go before the program's "--".
  auto with = [](std::vector<std::string> a,
                 const std::vector<std::string> &options) {
    a.insert(std::find(a.begin(), a.end(), "--"), options.begin(),
             options.end());
    return a;
  };
  const fs::path one_files = dir.file("one");
  fs::create_directories(one_files);
  CommandResult one =
      nicemu_as_ranks_are(with(args, file_options(files, one_files)));
  INFO(one);
  const std::map<std::string, std::string> written = files_under(one_files);
  CHECK(written.empty() == (files == kNoFiles));
  for (const auto &partition : partitions) {
    const unsigned ranks = partition.first;
    const std::string &file = partition.second;
    CAPTURE(ranks);
    const fs::path spread_files = dir.file("spread" + std::to_string(ranks));
    fs::create_directories(spread_files);
    std::vector<std::string> options = file_options(files, spread_files);
    options.insert(options.end(), {"--partition", file});
    CommandResult r = mpirun(ranks, with(args, options));
    INFO(r);
    CHECK(r.status == one.status);
    // The host programs write their own stdout, in the order their lines
    // come in wall time, in one process too: the same lines; the cards'
    // console lines in the same order.
    CHECK(lines_of(r.out, "") == lines_of(one.out, ""));
    CHECK(lines_of(r.out, "[node") == lines_of(one.out, "[node"));
    CHECK(comparable(r.err) == comparable(one.err));
    const std::map<std::string, std::string> spread_written =
        files_under(spread_files);
    CHECK(spread_written.size() == written.size());
    for (const auto &entry : written) {
      const std::string &name = entry.first, &bytes = entry.second;
      CAPTURE(name);
      auto it = spread_written.find(name);
      REQUIRE(it != spread_written.end());
      // Compared as a flag: a trace's megabytes would flood the log.
      const bool same = it->second == bytes;
      CHECK(same);
    }
  }
}

} // namespace

TEST_CASE("mpirun: NI-AM barriers and bcopy with their host programs, spread "
          "over 2 and 4 ranks, give what one process gives") {
  TempDir dir;
  const std::string two = dir.file("two.txt"), four = dir.file("four.txt");
  write_file(two, "0: 0,2,4,6\n1: 1,3,5,7\n");
  write_file(four, "0: 0,4\n1: 1,5\n2: 2,6\n3: 3,7\n");
  // With a trace, captures and cycle reports: the same bytes.
  check_spread_like_one({"run", "-n", "8", "--firmware", NICEMU_NIAM_IMAGE,
                         "--", NICEMU_NIAM_BARRIER, "3"},
                        {{2, two}, {4, four}}, kAllFiles);
  const std::string pair = dir.file("pair.txt");
  write_file(pair, "0: 0\n1: 1\n");
  check_spread_like_one({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE,
                         "--", NICEMU_NIAM_BCOPY},
                        {{2, pair}});
  // The hosts' lines tagged with their ranks, as mpirun --tag-output
  // tags its ranks' (each rank of nicemu tags its own hosts').
  check_spread_like_one({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE,
                         "--tag-output", "--", NICEMU_GAM_PINGPONG},
                        {{2, pair}});
}

TEST_CASE("mpirun: VIA over Ethernet (comet), spread over 2 ranks, gives "
          "what one process gives") {
  TempDir dir;
  const std::string pair = dir.file("pair.txt");
  write_file(pair, "0: 0\n1: 1\n");
  check_spread_like_one({"run", "-n", "2", "--model", "comet", "--firmware",
                         NICEMU_VIA_IMAGE, "--", NICEMU_VIPL_PINGPONG,
                         "--quick"},
                        {{2, pair}}, kTrace | kPcap);
  // FM over IP on the same card gives what one process gives too (tried by
  // hand, trace and captures included, docs/distributed.md); left out
  // here for CI's time: under the sanitizers it took a minute.
}

TEST_CASE("mpirun: DIMMnet-1's on-the-fly stores and UZURA's typed RDMA, "
          "spread over 2 ranks, give what one process gives") {
  TempDir dir;
  const std::string pair = dir.file("pair.txt");
  write_file(pair, "0: 0\n1: 1\n");
  check_spread_like_one({"run", "-n", "2", "--model", "uzura", "--firmware",
                         NICEMU_UZURA_IMAGE, "--", NICEMU_UZURA_TRANSPOSE},
                        {{2, pair}}, kAllFiles);
  // Not the trace: a DIMMnet-1 host answers some LLCM loads from its cache
  // in one process, which a spread run cannot promise (docs/distributed.md)
  // and asks the card instead; the trace shows those loads as host calls.
  check_spread_like_one({"run", "-n", "2", "--model", "martini:D", "--firmware",
                         NICEMU_DIMMNET_IMAGE, "--", NICEMU_AOTF_PINGPONG,
                         "50"},
                        {{2, pair}}, kPcap | kReports);
  // Two host processes share each card (--procs-per-node): each rank
  // starts its nodes' processes.
  check_spread_like_one({"run", "-n", "2", "--model", "martini:D",
                         "--procs-per-node", "2", "--firmware",
                         NICEMU_DIMMNET_IMAGE, "--", NICEMU_DIMMNET_CHECKS,
                         "protection"},
                        {{2, pair}});
}

namespace {

// Four NI-AM barrier hosts, one of which (`host`) exits with `status`
// before its first barrier: in one process, then over 2 ranks (nodes 0-1
// on rank 0, 2-3 on rank 1).
std::pair<CommandResult, CommandResult> one_host_leaves(unsigned host,
                                                        int status) {
  TempDir dir;
  const std::string two = dir.file("two.txt");
  write_file(two, "0: 0,1\n1: 2,3\n");
  const std::string script = "[ \"$NICEMU_RANK\" = " + std::to_string(host) +
                             " ] && exit " + std::to_string(status) +
                             "; exec " + NICEMU_NIAM_BARRIER + " 3";
  std::vector<std::string> args = {
      "run", "-n",      "4",  "--firmware", NICEMU_NIAM_IMAGE,
      "--",  "/bin/sh", "-c", script};
  CommandResult one = nicemu(args);
  args.insert(args.begin() + 5, {"--partition", two});
  return {one, mpirun(2, args)};
}

} // namespace

TEST_CASE("mpirun: a host that fails on rank 1 stops every rank, said once, "
          "as in one process") {
  // Host 3 (on rank 1) exits with 3 at once; the others wait in a barrier.
  const auto runs = one_host_leaves(3, 3);
  const CommandResult &one = runs.first, &r = runs.second;
  INFO(one);
  INFO(r);
  REQUIRE(one.status == 3);
  CHECK(r.status == 3);
  // How far the other hosts got before they were stopped is wall time's
  // doing (in one process too); the failure and how it is told are not.
  for (const CommandResult *run : {&one, &r}) {
    CHECK(count(comparable(run->err),
                "nicemu: stopped: host rank 3 (pid) exited with status 3\n") ==
          1);
    CHECK(count(run->err, "host 3: exited with status 3\n") == 1);
    CHECK(count(run->err, "--- nicemu:") == 1);
  }
}

TEST_CASE("mpirun: a deadlock names every rank's hosts, as one process "
          "does") {
  // Host 2 (rank 1) leaves before its first barrier; hosts 0, 1 and 3 wait
  // in it for good.
  const auto runs = one_host_leaves(2, 0);
  const CommandResult &one = runs.first, &r = runs.second;
  INFO(one);
  INFO(r);
  CHECK(r.status == one.status);
  const std::string stopped =
      "nicemu: stopped: every host waits for its NIC and no NIC has "
      "anything left to do (hosts 0-1, 3: waiting in WaitEither; host 2: "
      "exited with status 0)\n";
  CHECK(count(one.err, stopped) == 1);
  CHECK(count(r.err, stopped) == 1);
}

TEST_CASE("bench scale: one process and two ranks give the same virtual "
          "time, and the figures have their documented shape") {
  // Open MPI keeps memory past MPI_Finalize (see mpirun() above): no leak
  // checks for the ranks the bench starts.
  CommandResult r = run_command(
      "/usr/bin/env",
      {"ASAN_OPTIONS=detect_leaks=0", NICEMU_TOOL_PATH, "bench", "scale",
       "--nodes", "8", "--ranks", "1,2", "--barriers", "2", "--json"});
  INFO(r);
  REQUIRE(r.status == 0);
  TempDir dir;
  check_bench_schema(dir, r.out, "scale");
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.at("cases").size() == 2);
  const nlohmann::json &one = j["cases"][0], &two = j["cases"][1];
  REQUIRE(one.at("ok") == true);
  REQUIRE(two.at("ok") == true);
  CHECK(one.at("ranks") == 1);
  CHECK(two.at("ranks") == 2);
  CHECK(one.at("virtual_us") == two.at("virtual_us"));
  CHECK(one.at("virtual_us").get<double>() > 0);
  CHECK(one.at("messages") == 0);
  CHECK(two.at("messages").get<uint64_t>() > 0);
  CHECK(one.at("wall").at("efficiency") == 1.0);
}

TEST_CASE("mpirun: host programs see the environment one process gives "
          "them, not the launcher's") {
  TempDir dir;
  const std::string pair = dir.file("pair.txt");
  write_file(pair, "0: 0\n1: 1\n");
  // mpirun's variables are the ranks of nicemu's job: a host that saw them
  // would take itself for one (and its environment's size moves its stack).
  check_spread_like_one(
      {"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--", "/bin/sh", "-c",
       "echo \"host $NICEMU_RANK: ${OMPI_COMM_WORLD_RANK:-no} "
       "${PMIX_RANK:-no} ${OMPI_COMM_WORLD_SIZE:-no}\""},
      {{2, pair}});
  CommandResult one =
      nicemu({"run", "-n", "1", "--firmware", NICEMU_NIAM_IMAGE, "--",
              "/bin/sh", "-c", "echo \"${OMPI_COMM_WORLD_RANK:-no}\""});
  CHECK(one.out == "no\n");
}

TEST_CASE("mpirun: a card that faults under its host program stops every "
          "rank where one process stops, with the same report") {
  TempDir dir;
  const std::string two = dir.file("two.txt");
  write_file(two, "0: 0,1\n1: 2,3\n");
  // Node 3 (rank 1) boots an image that faults at once; its host and the
  // others run the NI-AM checks.
  std::vector<std::string> args = {"run",
                                   "-n",
                                   "4",
                                   "--firmware",
                                   NICEMU_NIAM_IMAGE,
                                   "--node-firmware",
                                   "3=" + firmware("fault_illegal.img"),
                                   "--partition",
                                   two,
                                   "--",
                                   NICEMU_NIAM_BARRIER,
                                   "5"};
  CommandResult r = mpirun(2, args);
  args.erase(args.begin() + 7, args.begin() + 9); // no --partition alone
  CommandResult one = nicemu(args);
  INFO(one);
  INFO(r);
  CHECK(one.status == 125);
  CHECK(r.status == one.status);
  // Everything but how the stopped hosts ended and what they said as they
  // were stopped (wall time's doing).
  auto without_hosts = [](const std::string &err) {
    std::string out;
    std::istringstream in(comparable(err));
    // nicemu's own lines: its messages, the fault report, the summary
    // (the hosts' dying words may come mixed byte by byte, and a host
    // stopped in the middle of one leaves it without its line's end).
    for (std::string line; std::getline(in, line);) {
      if (size_t at = line.find("nicemu: "); at != std::string::npos)
        line.erase(0, at);
      if (line.starts_with("nicemu: ") || line.starts_with("---") ||
          line.starts_with("node ") ||
          (!line.empty() && std::isdigit(uint8_t(line[0]))) ||
          (line.starts_with("  ") && !contains(line, "what():")))
        out += line + "\n";
    }
    return out;
  };
  CHECK(without_hosts(r.err) == without_hosts(one.err));
  CHECK(contains(r.err, "node 3"));
}
