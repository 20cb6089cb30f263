// End-to-end: checkpoint files (nicemu run --checkpoint-dir, nicemu replay
// --from; docs/replay.md, "Checkpoint files"). A run resumed from any of
// its checkpoints must end exactly as the uninterrupted run did: the same
// summary (every node's state, exit code, instructions, cycles and slept
// cycles, the virtual time), the same exit status, and the console lines
// that came after the checkpoint. Taking checkpoints changes nothing, and
// the same run makes the same files. Damaged files and runs that cannot be
// saved yet are refused with a message, not a crash.
#include "cli_helpers.hpp"
#include "gzip_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

using namespace e2e;

namespace {

struct Scenario {
  const char *name;
  std::vector<std::string> run; // nicemu run's options
  const char *every;            // --checkpoint-every
};

std::vector<Scenario> scenarios() {
  return {
      // lanai4: packets between two NICs, polling loops fast-forwarded.
      {"net_pingpong",
       {"-n", "2", "--firmware", firmware("net_pingpong.img")},
       "40us"},
      // lanai4: three nodes through one switch, packets in flight and heads
      // waiting at every checkpoint.
      {"link_check",
       {"-n", "3", "--firmware", firmware("link_check.img")},
       "100us"},
      // lanai4: timer interrupts and a sleeping core.
      {"timer_irq",
       {"-n", "2", "--firmware", firmware("timer_irq.img")},
       "30us"},
      // lanai4: the demo's DMA, timers and sleeps.
      {"demo", {"-n", "2", "--firmware", firmware("demo.img")}, "200us"},
      // comet: the VIA firmware's doorbells, host DMA and Ethernet engines,
      // polling with no host, cut by --max-time.
      {"comet via",
       {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE,
        "--max-time", "1ms"},
       "150us"},
      // martini (DIMMnet-1): the firmware polling its OTF engine, no host.
      {"martini dimmnet",
       {"-n", "2", "--model", "martini", "--firmware", NICEMU_DIMMNET_IMAGE,
        "--max-time", "500us"},
       "100us"},
      // uzura: the firmware starting, then asleep with nothing to wake it
      // (a deadlock at 103 us, exit 126).
      {"uzura alone",
       {"-n", "2", "--model", "uzura", "--firmware", NICEMU_UZURA_IMAGE},
       "20us"},
  };
}

std::vector<std::string> with(std::vector<std::string> args,
                              const std::vector<std::string> &more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::vector<fs::path> checkpoints_in(const fs::path &dir) {
  std::vector<fs::path> files;
  for (const auto &e : fs::directory_iterator(dir))
    files.push_back(e.path());
  std::sort(files.begin(), files.end()); // the names sort by time
  return files;
}

bool ends_with(const std::string &text, const std::string &end) {
  return text.size() >= end.size() &&
         text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// A replay's stderr less what may differ between a replay and the same
// replay resumed: the wall time, the resume line, the checkpoints taken.
std::string replay_ending(const std::string &err) {
  std::istringstream in(err);
  std::string line, out;
  while (std::getline(in, line))
    if (!contains(line, "wall time") && !contains(line, "nicemu: resumed at") &&
        line.rfind("checkpoints: ", 0) != 0)
      out += line + "\n";
  return out;
}

// Replays of host programs: the recorded run, and how often to save it.
struct Recorded {
  const char *name;
  std::vector<std::string> run; // nicemu run's options and program
  const char *every;
};

std::vector<Recorded> recorded_scenarios() {
  return {
      // NI-AM (lanai4): GAM requests and replies, host leases.
      {"gam_pingpong",
       {"-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--", NICEMU_GAM_PINGPONG},
       "1500us"},
      // NI-AM collectives on four nodes.
      {"niam_barrier",
       {"-n", "4", "--firmware", NICEMU_NIAM_IMAGE, "--", NICEMU_NIAM_BARRIER,
        "3"},
       "1ms"},
      // VIA/FM (comet): doorbells, descriptors, host DMA.
      {"fm_pingpong",
       {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE, "--",
        NICEMU_FM_PINGPONG, "--quick"},
       "3ms"},
      // VIPL over a lossy network: waits with deadlines (VipRecvWait with a
      // timeout) pending at the checkpoints, fault injection's generators.
      {"vipl_loss",
       {"-n", "2", "--model", "comet", "--firmware", NICEMU_VIA_IMAGE,
        "--link-loss", "0.05", "--link-corrupt", "0.05", "--", NICEMU_VIPL_LOSS,
        "unreliable"},
       "12ms"},
      // DIMMnet-1 (martini): AOTF stores through the HTLB to the other
      // card's LLCM, polled by the host.
      {"aotf_pingpong",
       {"-n", "2", "--model", "martini", "--firmware", NICEMU_DIMMNET_IMAGE,
        "--", NICEMU_AOTF_PINGPONG},
       "310us"}, // four of its eight files hold an LLCM write on its way
      // DIMMnet-1: PUSH and PULL between LLCM and the SO-DIMM banks.
      {"dimmnet rdma",
       {"-n", "2", "--model", "martini:D", "--firmware", NICEMU_DIMMNET_IMAGE,
        "--", NICEMU_DIMMNET_CHECKS, "rdma"},
       "150us"},
      // DIMMnet-1: packets for the core, queued and taken by the firmware.
      {"dimmnet commands",
       {"-n", "2", "--model", "martini:D", "--firmware", NICEMU_DIMMNET_IMAGE,
        "--", NICEMU_DIMMNET_CHECKS, "commands"},
       "150us"},
      // DIMMnet-1: stores held for a credit (those moments are put off).
      {"dimmnet credits",
       {"-n", "2", "--model", "martini:D", "--firmware", NICEMU_DIMMNET_IMAGE,
        "--", NICEMU_DIMMNET_CHECKS, "credits"},
       "290us"},
      // UZURA: doorbells, command fetches, eager messages into the host's
      // ring, acknowledgements.
      {"uzura messages",
       {"-n", "2", "--model", "uzura", "--firmware", NICEMU_UZURA_IMAGE, "--",
        NICEMU_UZURA_BASIC, "messages"},
       "70us"},
      // UZURA: typed RDMA writes and reads, DMAs in flight at most files.
      {"uzura types",
       {"-n", "2", "--model", "uzura", "--firmware", NICEMU_UZURA_IMAGE, "--",
        NICEMU_UZURA_BASIC, "types"},
       "150us"},
  };
}

} // namespace

TEST_CASE("checkpoint files: a run resumed from any of its checkpoints ends "
          "as the uninterrupted run did, on every card") {
  for (const Scenario &s : scenarios()) {
    const std::string name = s.name;
    CAPTURE(name);
    TempDir dir;
    CommandResult full = nicemu(with({"run"}, s.run));
    REQUIRE_MESSAGE(contains(full.err, "--- nicemu:"), full);
    CommandResult taking =
        nicemu(with(with({"run"}, s.run), {"--checkpoint-dir", dir.file("ck"),
                                           "--checkpoint-every", s.every}));
    INFO(taking);
    // Taking checkpoints changes nothing.
    CHECK(taking.status == full.status);
    CHECK(taking.out == full.out);
    CHECK(run_summary(taking.err) == run_summary(full.err));
    std::vector<fs::path> files = checkpoints_in(dir.path() / "ck");
    REQUIRE(files.size() >= 3);
    for (const fs::path &file : files) {
      CAPTURE(file.filename().string());
      CommandResult resumed = nicemu({"replay", "--from", file.string()});
      INFO(resumed);
      CHECK(resumed.status == full.status);
      CHECK(run_summary(resumed.err) == run_summary(full.err));
      // The console lines after the checkpoint, and only those.
      CHECK(ends_with(full.out, resumed.out));
      CHECK(resumed.out.size() < full.out.size() + 1);
    }
    // The last one came after every line but the last node's last ones:
    // a resumed run that printed everything again would fail above.
    CommandResult first = nicemu({"replay", "--from", files.front().string()});
    CommandResult last = nicemu({"replay", "--from", files.back().string()});
    CHECK(last.out.size() <= first.out.size());
  }
}

TEST_CASE("checkpoint files: the same run makes the same files") {
  TempDir dir;
  const std::vector<std::string> run = {"run",
                                        "-n",
                                        "2",
                                        "--firmware",
                                        firmware("net_pingpong.img"),
                                        "--checkpoint-every",
                                        "50us"};
  REQUIRE(nicemu(with(run, {"--checkpoint-dir", dir.file("a")})).status == 0);
  REQUIRE(nicemu(with(run, {"--checkpoint-dir", dir.file("b")})).status == 0);
  std::vector<fs::path> a = checkpoints_in(dir.path() / "a"),
                        b = checkpoints_in(dir.path() / "b");
  REQUIRE(a.size() >= 3);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].filename() == b[i].filename());
    CHECK(read_bytes(a[i]) == read_bytes(b[i]));
  }
  // Checkpoints are apart: each holds another moment of the run.
  CHECK(read_bytes(a[0]) != read_bytes(a[1]));
}

TEST_CASE("checkpoint files: a replay of host programs resumed from any of "
          "its checkpoints ends as the whole replay did") {
  bool deadline_saved = false, reply_saved = false, otf_packet_saved = false,
       uzura_dma_saved = false, put_off = false;
  for (const Recorded &s : recorded_scenarios()) {
    const std::string name = s.name;
    CAPTURE(name);
    TempDir dir;
    const std::string rec = dir.file("run.nrec");
    CommandResult recorded = nicemu(with({"run", "--record", rec}, s.run));
    REQUIRE_MESSAGE(recorded.status == 0, recorded);
    CommandResult whole = nicemu({"replay", rec});
    REQUIRE_MESSAGE(whole.status == 0, whole);
    CommandResult taking =
        nicemu({"replay", rec, "--checkpoint-dir", dir.file("ck"),
                "--checkpoint-every", s.every});
    INFO(taking);
    // Taking checkpoints changes nothing.
    CHECK(taking.status == 0);
    CHECK(replay_ending(taking.err) == replay_ending(whole.err));
    CHECK(contains(taking.err, "checkpoints: "));
    put_off |= contains(taking.err, "a host's store waits for an OTF credit");
    std::vector<fs::path> files = checkpoints_in(dir.path() / "ck");
    REQUIRE(files.size() >= 3);
    for (const fs::path &file : files) {
      CAPTURE(file.filename().string());
      CommandResult resumed = nicemu({"replay", rec, "--from", file.string()});
      INFO(resumed);
      CHECK(resumed.status == 0);
      CHECK(contains(resumed.err, "nicemu: resumed at "));
      // Every node's counts, the virtual time, each host's end and the
      // leases' counts: as the whole replay's.
      CHECK(replay_ending(resumed.err) == replay_ending(whole.err));
      const std::string state = gunzip(file.string());
      deadline_saved |= contains(state, "host: wait deadline");
      reply_saved |= contains(state, "host: reply");
      otf_packet_saved |= contains(state, "otf: llcm write") ||
                          contains(state, "otf: rdma write");
      uzura_dma_saved |= contains(state, "uzura: dma");
    }
  }
  // The hosts' pending events were among what the files saved, and so
  // were packets on their way into a DIMMnet-1 card's memory; a moment
  // that could not be saved was put off.
  CHECK(deadline_saved);
  CHECK(reply_saved);
  CHECK(otf_packet_saved);
  CHECK(uzura_dma_saved);
  CHECK(put_off);
}

TEST_CASE("checkpoint files: a resumed replay takes the same later "
          "checkpoints as the whole replay") {
  TempDir dir;
  const std::string rec = dir.file("run.nrec");
  REQUIRE(nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--record",
                  rec, "--", NICEMU_GAM_PINGPONG})
              .status == 0);
  const std::vector<std::string> every = {"--checkpoint-every", "1ms"};
  REQUIRE(
      nicemu(with({"replay", rec, "--checkpoint-dir", dir.file("a")}, every))
          .status == 0);
  REQUIRE(
      nicemu(with({"replay", rec, "--checkpoint-dir", dir.file("b")}, every))
          .status == 0);
  std::vector<fs::path> a = checkpoints_in(dir.path() / "a"),
                        b = checkpoints_in(dir.path() / "b");
  REQUIRE(a.size() >= 5);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(read_bytes(a[i]) == read_bytes(b[i]));
  // Resumed from the third, it writes the fourth and later ones again.
  REQUIRE(nicemu(with({"replay", rec, "--from", a[2].string(),
                       "--checkpoint-dir", dir.file("c")},
                      every))
              .status == 0);
  std::vector<fs::path> c = checkpoints_in(dir.path() / "c");
  REQUIRE(c.size() == a.size() - 3);
  for (size_t i = 0; i < c.size(); ++i) {
    CHECK(c[i].filename() == a[i + 3].filename());
    CHECK(read_bytes(c[i]) == read_bytes(a[i + 3]));
  }
}

TEST_CASE("checkpoint files: a replay's checkpoint resumes with its own "
          "recording only") {
  TempDir dir;
  const std::string gam = dir.file("gam.nrec");
  REQUIRE(nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE, "--record",
                  gam, "--", NICEMU_GAM_PINGPONG})
              .status == 0);
  REQUIRE(nicemu({"replay", gam, "--checkpoint-dir", dir.file("ck"),
                  "--checkpoint-every", "2ms"})
              .status == 0);
  const std::string file = checkpoints_in(dir.path() / "ck").front().string();
  CommandResult r;
  std::string expected;
  SUBCASE("without it") {
    r = nicemu({"replay", "--from", file});
    expected = "resumes with their recording: nicemu replay RECORDING --from";
  }
  SUBCASE("with another") {
    // Made here only: each subcase runs the lines above again.
    const std::string fm = dir.file("fm.nrec");
    REQUIRE(nicemu({"run", "-n", "2", "--model", "comet", "--firmware",
                    NICEMU_VIA_IMAGE, "--record", fm, "--", NICEMU_FM_PINGPONG,
                    "--quick"})
                .status == 0);
    r = nicemu({"replay", fm, "--from", file});
    expected = "was not taken in a replay of " + fm;
  }
  SUBCASE("a checkpoint of firmware alone, with a recording") {
    REQUIRE(nicemu({"run", "--firmware", firmware("timer_irq.img"),
                    "--checkpoint-dir", dir.file("fw"), "--checkpoint-every",
                    "10us"})
                .status == 0);
    r = nicemu({"replay", gam, "--from",
                checkpoints_in(dir.path() / "fw").front().string()});
    expected = "not a checkpoint of a replay of host programs";
  }
  INFO(r);
  CHECK(r.status == 1);
  CHECK(contains(r.err, expected));
  CHECK(!contains(r.err, "--- nicemu:")); // nothing ran
}

TEST_CASE("checkpoint files: a damaged file, or one that is none, is refused "
          "with a clear message") {
  TempDir dir;
  REQUIRE(nicemu({"run", "-n", "2", "--firmware", firmware("net_pingpong.img"),
                  "--checkpoint-dir", dir.file("ck"), "--checkpoint-every",
                  "100us"})
              .status == 0);
  const fs::path file = checkpoints_in(dir.path() / "ck").front();
  std::vector<uint8_t> bytes = read_bytes(file);
  const std::string bad = dir.file("bad.nck");
  std::string expected = "not a nicemu checkpoint, or a damaged one";
  SUBCASE("a flipped bit") {
    flip_a_bit_that_matters(bytes);
    write_bytes(bad, bytes);
  }
  SUBCASE("cut short") {
    bytes.resize(bytes.size() / 2);
    write_bytes(bad, bytes);
  }
  SUBCASE("a firmware image") {
    fs::copy_file(firmware("hello.img"), bad);
  }
  SUBCASE("a recording") {
    REQUIRE(
        nicemu({"run", "--firmware", firmware("hello.img"), "--record", bad})
            .status == 0);
  }
  SUBCASE("no such file") {
    expected = "cannot read";
  }
  CommandResult r = nicemu({"replay", "--from", bad});
  INFO(r);
  CHECK(r.status == 1);
  CHECK(contains(r.err, "nicemu: error: " + bad + ": "));
  CHECK(contains(r.err, expected));
  CHECK(!contains(r.err, "--- nicemu:")); // nothing ran
}

TEST_CASE("checkpoint files: what cannot be saved is refused before the "
          "run, naming it") {
  TempDir dir;
  SUBCASE("host programs") {
    CommandResult r =
        nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_IMAGE,
                "--checkpoint-dir", dir.file("ck"), "--", NICEMU_GAM_PINGPONG});
    INFO(r);
    CHECK(r.status == 1);
    CHECK(contains(r.err, "a run with host programs cannot be saved in "
                          "checkpoint files"));
    CHECK(contains(r.err, "nicemu replay REC --checkpoint-dir DIR"));
  }
  SUBCASE("no interval") {
    CommandResult r =
        nicemu({"run", "--firmware", firmware("hello.img"), "--checkpoint-dir",
                dir.file("ck"), "--checkpoint-every", "0"});
    CHECK(r.status == 1);
    CHECK(contains(r.err, "--checkpoint-dir needs --checkpoint-every"));
  }
  CHECK(!fs::exists(dir.path() / "ck"));
}
