// End-to-end: fault containment (issue 23, section 3; docs/reliability.md).
// Each failure stops the run or lets it go on cleanly, with a report and the
// exit code the README documents ("Exit codes"), and nothing hangs
// (run_command's time limit). The cases tested elsewhere are named in
// docs/reliability.md: the watchdog (test_faults.cpp) and SIGINT/SIGTERM
// (test_stop_signals.cpp).
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

using namespace e2e;

namespace {

// The niam firmware on 2 nodes with a mode of the reliability program.
CommandResult niam_attack(const std::vector<std::string> &mode) {
  std::vector<std::string> args = {"run",
                                   "-n",
                                   "2",
                                   "--firmware",
                                   NICEMU_NIAM_IMAGE,
                                   "--",
                                   NICEMU_RELIABILITY_PROG};
  args.insert(args.end(), mode.begin(), mode.end());
  return nicemu(args);
}

} // namespace

TEST_CASE("fault containment: a firmware that overwrites its own code runs "
          "the new bytes, and faults cleanly on garbage") {
  CommandResult r = nicemu({"run", "--firmware", firmware("self_modify.img")});
  INFO(r);
  CHECK(r.status == 125);
  CHECK(r.out == "[node0] patched() returned 1\n"
                 "[node0] after the patch: 2\n");
  CHECK(lines_with(r.err, "nicemu: node 0: firmware fault: ").size() == 1);
  CHECK(contains(r.err, "nicemu: node 0: firmware fault: illegal instruction"));
  CHECK(contains(r.err, "not an instruction: 0xffffffff"));
  const auto pc = lines_with(r.err, "  pc ");
  REQUIRE(!pc.empty());
  CHECK(contains(pc[0], "patched"));
  CHECK(parse_summary(r.err).state == "faulted");
}

TEST_CASE("fault containment: a corrupted flash file is refused at boot") {
  TempDir dir;
  const std::string flash = dir.file("node0.flash");
  CommandResult made =
      nicemu({"flash", firmware("hello.img"), "--flash", flash});
  REQUIRE(made.status == 0);
  const std::vector<uint8_t> good = read_bytes(flash);
  const std::vector<uint8_t> image = read_bytes(firmware("hello.img"));
  const auto segments = raw_segments(image);
  REQUIRE(!segments.empty());
  struct Damage {
    const char *what;
    size_t at;
    std::vector<std::string> words;
  };
  const RawSegment &text = segments[0];
  const std::vector<Damage> damages = {
      {"a byte of code",
       text.offset + text.size / 2,
       {"segment 0", "corrupted", "CRC-32"}},
      {"the entry point", 40, {"corrupted", "image CRC-32"}},
      {"the magic", 0, {"not a nicemu firmware image", "NICEMUFW"}},
  };
  for (const Damage &d : damages) {
    SUBCASE(d.what) {
      std::vector<uint8_t> bytes = good;
      bytes.at(d.at) ^= d.at == 0 ? 0xFF : 0x10;
      write_bytes(flash, bytes);
      CommandResult r = nicemu({"run", "--flash", flash});
      INFO(r);
      CHECK(r.status == 1);
      CHECK(r.err.rfind("nicemu: error: " + flash +
                            ": boot: refusing the image in flash: ",
                        0) == 0);
      CHECK(lines_with(r.err, "nicemu: error: ").size() == 1);
      for (const std::string &w : d.words)
        CHECK_MESSAGE(contains(r.err, w), "the error does not say " << w);
      CHECK(!contains(r.err, "--- nicemu:")); // nothing ran
      CHECK(r.out.empty());
    }
  }
}

TEST_CASE("fault containment: a host that dies while a DMA into its memory "
          "is in flight stops the run, naming it and its signal") {
  struct How {
    const char *how;
    int signal;
    const char *name;
  };
  for (const How &h : {How{"abort", 6, "Aborted"}, How{"kill", 9, "Killed"}}) {
    SUBCASE(h.how) {
      CommandResult r = niam_attack({"crash-mid-dma", h.how});
      INFO(r);
      CHECK(r.status == 128 + h.signal);
      // It died with part of the transfer in its memory, the rest coming.
      CHECK(contains(r.out,
                     " of 65536 bytes landed; dying by " + std::string(h.how)));
      CHECK(!contains(r.out, "the whole transfer landed first"));
      const std::string report =
          " was killed by signal " + std::to_string(h.signal) + " (" + h.name;
      const auto stopped = lines_with(r.err, "nicemu: stopped: ");
      REQUIRE(stopped.size() == 1);
      CHECK(contains(stopped[0], "host rank 0 ("));
      CHECK(contains(stopped[0], report));
      CHECK(contains(r.err, "host 0: was killed by signal " +
                                std::to_string(h.signal)));
      CHECK(contains(r.err, "host 1: "));
      CHECK(!contains(r.err, "still running"));
    }
  }
}

TEST_CASE("fault containment: a host that closes its channel and exits "
          "in the middle of a request does not hold the run") {
  CommandResult r = niam_attack({"leave-mid-request"});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "rank 1: leaving in the middle of wait_word, "
                        "without the library's exit\n"));
  CHECK(!contains(r.out, "rank 1: the wait ended"));
  CHECK(contains(r.out, "rank 0: the copy into rank 1's memory ended, 0 "
                        "refused\n"));
  // Nothing waited for it: no --host-timeout, no deadlock.
  CHECK(!contains(r.err, "nicemu: stopped"));
  CHECK(contains(r.err, "host 0: exited with status 0\n"));
  CHECK(contains(r.err, "host 1: exited with status 0, in the middle of "
                        "WaitEither (without the host library's exit)\n"));
}
