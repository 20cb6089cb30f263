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
  check_parse_error({}, "give a command: image, flash, run, debug, bench, "
                        "models, ldscript, regs, plot (nicemu --help)");
  check_parse_error({"run", "-n", "two", "--firmware", firmware("hello.img")},
                    "run: Could not convert: --nodes = two");
  // --help is no error.
  CommandResult help = nicemu({"run", "--help"});
  CHECK(help.status == 0);
  CHECK(contains(help.out, "--firmware"));
}
