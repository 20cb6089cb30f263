// End-to-end: the command line as a new user first meets it (issue 25,
// "First contact"), one test case for each rough edge that was found.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

using namespace e2e;

namespace {

// A parser error: exit 1, one "nicemu: error: ..." line that says `what`,
// nothing else.
void check_parse_error(const std::vector<std::string> &args,
                       const std::string &what) {
  CommandResult r = nicemu(args);
  INFO(r);
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "nicemu: error: " + what + "\n");
}

size_t count_lines(const std::string &text) {
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

} // namespace

TEST_CASE("a mistyped command or option is named, with the nearest known "
          "one, in the nicemu: error: style") {
  check_parse_error({"runn"}, "unknown command 'runn'; did you mean 'run'?");
  check_parse_error({"imgae", "x.elf"},
                    "unknown command 'imgae'; did you mean 'image'?");
  check_parse_error({"run", "--firmwre", firmware("hello.img")},
                    "run: unknown option '--firmwre'; did you mean "
                    "'--firmware'?");
  check_parse_error({"run", "--firmware", firmware("hello.img"), "--nodse=2"},
                    "run: unknown option '--nodse'; did you mean '--nodes'?");
  check_parse_error({"bench", "niam", "--quik"},
                    "bench niam: unknown option '--quik'; did you mean "
                    "'--quick'?");
  check_parse_error({"bench", "cpuu"},
                    "bench: unknown command 'cpuu'; did you mean 'cpu'?");
  // Nothing near enough: where to look instead.
  check_parse_error({"frobnicate"},
                    "unknown command 'frobnicate' (nicemu --help)");
  check_parse_error({"regs", "--zzz"},
                    "regs: unknown option '--zzz' (nicemu regs --help)");
  check_parse_error({},
                    "give a command: image, flash, run, replay, debug, bench, "
                    "models, ldscript, regs, plot, partition (nicemu --help)");
  check_parse_error({"run", "-n", "two", "--firmware", firmware("hello.img")},
                    "run: Could not convert: --nodes = two");
  // --help is no error.
  CommandResult help = nicemu({"run", "--help"});
  CHECK(help.status == 0);
  CHECK(contains(help.out, "--firmware"));
}

TEST_CASE("run --firmware and --flash take the model from the image, as "
          "flash does") {
  // dimmnet.img is built for martini; the default model is lanai4.
  const std::string img = NICEMU_DIMMNET_IMAGE;
  CommandResult r = nicemu({"run", "--firmware", img, "--max-time", "10us"});
  INFO(r);
  CHECK(r.status == 124); // --max-time: it booted and ran
  CHECK(contains(r.err, "--- nicemu: martini model, 1 node ---"));
  // A variant of the image's model is the image's model.
  r = nicemu(
      {"run", "--model", "martini:D", "--firmware", img, "--max-time", "10us"});
  CHECK(r.status == 124);
  CHECK(contains(r.err, "--- nicemu: martini:D model"));
  // Another model, named: refused as flash refuses it, in the same words.
  TempDir dir;
  const std::string refusal =
      "nicemu: error: " + img + ": built for model 'martini', not 'lanai4'\n";
  r = nicemu({"run", "--model", "lanai4", "--firmware", img});
  CHECK(r.status == 1);
  CHECK(r.err == refusal);
  r = nicemu(
      {"flash", img, "--flash", dir.file("x.flash"), "--model", "lanai4"});
  CHECK(r.status == 1);
  CHECK(r.err == refusal);
  // A flash file: the image in it names the model.
  const std::string flash = dir.file("martini.flash");
  REQUIRE(nicemu({"flash", img, "--flash", flash}).status == 0);
  r = nicemu({"run", "--flash", flash, "--max-time", "10us"});
  INFO(r);
  CHECK(r.status == 124);
  CHECK(contains(r.err, "--- nicemu: martini model, 1 node ---"));
  // And the debugger, which takes the same options.
  r = nicemu({"debug", "--firmware", img, "--max-time", "10us"});
  CHECK(contains(r.out, "nicemu debug: 1 node halted at reset"));
  CHECK(contains(r.err, "--- nicemu: martini model, 1 node ---"));
}

TEST_CASE("image FW.elf without -o writes FW.img beside it") {
  TempDir dir;
  const std::string elf = dir.file("hello.elf");
  fs::copy_file(firmware("hello.elf"), elf);
  CommandResult r = nicemu({"image", elf});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "packed " + dir.file("hello.img")));
  CHECK(read_bytes(dir.file("hello.img")) == read_bytes(firmware("hello.img")));
  // A file without the .elf suffix: NAME.img.
  fs::copy_file(firmware("hello.elf"), dir.file("fw"));
  REQUIRE(nicemu({"image", dir.file("fw")}).status == 0);
  CHECK(fs::exists(dir.file("fw.img")));
}

TEST_CASE("regs --model shows the registers of that model's card") {
  CommandResult all = nicemu({"regs"});
  REQUIRE(all.status == 0);
  CHECK(contains(all.out, "OTF_STATUS"));
  CHECK(contains(all.out, "HDMA_"));
  CommandResult martini = nicemu({"regs", "--model", "martini"});
  INFO(martini);
  REQUIRE(martini.status == 0);
  CHECK(contains(martini.out,
                 "model martini (board martini): SYS CONSOLE TIMER IRQ OTF"));
  CHECK(contains(martini.out, "0x1f000000 SYS_ID"));
  CHECK(contains(martini.out, "OTF_STATUS"));
  CHECK(!contains(martini.out, "HDMA_"));
  CHECK(!contains(martini.out, "ENGINE_"));
  CommandResult lanai4 = nicemu({"regs", "--model", "lanai4"});
  REQUIRE(lanai4.status == 0);
  CHECK(contains(lanai4.out, "HDMA_"));
  CHECK(contains(lanai4.out, "TX_"));
  CHECK(!contains(lanai4.out, "OTF_"));
  CHECK(!contains(lanai4.out, "DOORBELL_"));
  CommandResult comet = nicemu({"regs", "--model", "comet"});
  CHECK(contains(comet.out, "DOORBELL_"));
  CommandResult bad = nicemu({"regs", "--model", "lanai5"});
  CHECK(bad.status == 1);
  CHECK(contains(bad.err, "nicemu: error: unknown model \"lanai5\""));
}

TEST_CASE("a run of more than 16 nodes prints a condensed summary, every "
          "row with --per-node") {
  const std::vector<std::string> args = {"run",
                                         "-n",
                                         "20",
                                         "--firmware",
                                         firmware("host_echo.img"),
                                         "--",
                                         NICEMU_HOST_ECHO};
  CommandResult r = nicemu(args);
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.err, "--- nicemu: lanai4 model, 20 nodes (condensed; "
                        "--per-node for every node) ---"));
  CHECK(contains(r.err, "slowest (most cycles):\n"));
  CHECK(contains(r.err, "fastest (fewest cycles):\n"));
  CHECK(lines_with(r.err, "total ").size() == 1);
  CHECK(contains(r.err, "states: 20 running\n"));
  CHECK(contains(r.err, "hosts 0-19 (20 of 20): exited with status 0\n"));
  CHECK(lines_with(r.err, "host ").empty());
  CHECK(count_lines(r.err) < 16);
  std::vector<std::string> per_node = args;
  per_node.insert(per_node.begin() + 1, "--per-node");
  CommandResult all = nicemu(per_node);
  INFO(all);
  REQUIRE(all.status == 0);
  CHECK(contains(all.err, "--- nicemu: lanai4 model, 20 nodes ---"));
  CHECK(lines_with(all.err, " running ").size() == 20);
  CHECK(lines_with(all.err, ": exited with status 0").size() == 20);
  CHECK(contains(all.err, "host 19: exited with status 0\n"));
  // The figures are the same either way.
  CHECK(run_summary(r.err).substr(run_summary(r.err).find("virtual time")) ==
        run_summary(all.err).substr(run_summary(all.err).find("virtual time")));
}

TEST_CASE("--tag-output prefixes every line a host prints with its rank") {
  // Plain programs are host programs too: the run ends when they exit.
  CommandResult r =
      nicemu({"run", "-n", "2", "--tag-output", "--firmware",
              firmware("host_echo.img"), "--", "/bin/sh", "-c",
              "echo one $NICEMU_RANK; printf 'two\\nthree'; echo oops >&2"});
  INFO(r);
  REQUIRE(r.status == 0);
  for (const char *rank : {"0", "1"}) {
    const std::string tag = std::string("[1,") + rank + "]";
    CHECK(contains(r.out, tag + "<stdout>:one " + rank + "\n"));
    CHECK(contains(r.out, tag + "<stdout>:two\n"));
    CHECK(contains(r.out, tag + "<stdout>:three\n")); // the unended line
    CHECK(contains(r.err, tag + "<stderr>:oops\n"));
  }
  CHECK(lines_with(r.out, "<stdout>:").size() == 6);
  CHECK(lines_with(r.out, "]<stdout>:").size() == 6);
  // Without it, as the programs wrote it.
  CommandResult plain =
      nicemu({"run", "-n", "1", "--firmware", firmware("host_echo.img"), "--",
              "/bin/sh", "-c", "echo one; echo oops >&2"});
  CHECK(plain.out == "one\n");
  CHECK(contains(plain.err, "oops\n"));
}

// The deadlock of a lone core was fixed before (test_faults.cpp: "a
// one-node deadlock reports the virtual time the core reached"); a lone
// host that waits for a card that halted ends the same way.
TEST_CASE("a one-node run whose host waits for a halted card reports the "
          "virtual time reached") {
  CommandResult r = nicemu(
      {"run", "--firmware", firmware("hello.img"), "--", NICEMU_HOST_ECHO});
  INFO(r);
  CHECK(r.status == 126);
  CHECK(contains(r.err, "nicemu: stopped: every host waits for its NIC"));
  RunSummary s = parse_summary(r.err);
  CHECK(s.state == "halted");
  REQUIRE(s.cycles > 0);
  CHECK(s.virtual_us >= double(s.cycles) / 33.0 - 0.001); // 33 MHz
  CHECK(!contains(r.err, "virtual time 0.000 us"));
}
