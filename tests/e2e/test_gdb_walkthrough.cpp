// The walkthrough of docs/debugging.md, run as written: the `nicemu run`
// and gdb-multiarch commands of its "Step by step" block, then every
// `(gdb)` command in one GDB script, and every other line of the block
// must be printed by GDB in that order ("..." stands for any text). The
// docs cannot drift from what nicemu and GDB do.
#include "cli_helpers.hpp"
#include "gdb_helpers.hpp"

#include <doctest/doctest.h>

#include <fstream>

using namespace e2e;

namespace {

struct Walkthrough {
  std::vector<std::string> nicemu_args; // after `nicemu`
  std::string elf;                      // gdb-multiarch's file
  std::vector<std::string> commands;    // (gdb) lines, comments cut
  std::vector<std::string> expected;    // what GDB prints, in order
};

std::string trimmed(std::string s) {
  size_t end = s.find_last_not_of(" \t");
  return end == std::string::npos ? "" : s.substr(0, end + 1);
}

std::vector<std::string> words(const std::string &text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

// A path of the README's build tree (build/...) in the test's build tree.
std::string in_build(const std::string &path) {
  const std::string samples = "build/firmware/samples/";
  REQUIRE_MESSAGE(path.rfind(samples, 0) == 0,
                  "the walkthrough's files are under " << samples);
  return firmware(path.substr(samples.size()));
}

// The block between the walkthrough markers of docs/debugging.md.
Walkthrough read_walkthrough() {
  std::ifstream doc(fs::path(NICEMU_SOURCE_DIR) / "docs/debugging.md");
  REQUIRE(doc.good());
  Walkthrough w;
  bool inside = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("<!-- walkthrough begin", 0) == 0) {
      inside = true;
      continue;
    }
    if (line.rfind("<!-- walkthrough end", 0) == 0)
      break;
    if (!inside || line.rfind("    ", 0) != 0)
      continue;
    line = trimmed(line.substr(4));
    if (line.rfind("$ nicemu ", 0) == 0) {
      w.nicemu_args = words(line.substr(9));
    } else if (line.rfind("$ gdb-multiarch ", 0) == 0) {
      w.elf = in_build(words(line.substr(16)).at(0));
    } else if (line.rfind("(gdb) ", 0) == 0) {
      w.commands.push_back(trimmed(line.substr(6, line.find('#') - 6)));
    } else if (!line.empty()) {
      w.expected.push_back(line);
    }
  }
  REQUIRE_MESSAGE(!w.commands.empty(), "no walkthrough in docs/debugging.md");
  return w;
}

// Whether `line` is `pattern`, where "..." in the pattern stands for any
// text; tabs count as one space (GDB puts one after a line number).
bool matches(std::string line, const std::string &pattern) {
  std::replace(line.begin(), line.end(), '\t', ' ');
  line = trimmed(line);
  std::vector<std::string> pieces;
  for (size_t at = 0;;) {
    size_t dots = pattern.find("...", at);
    pieces.push_back(pattern.substr(at, dots - at));
    if (dots == std::string::npos)
      break;
    at = dots + 3;
  }
  if (line.rfind(pieces.front(), 0) != 0)
    return false;
  size_t at = pieces.front().size();
  for (size_t i = 1; i < pieces.size(); ++i) {
    size_t found = i + 1 == pieces.size() ? line.rfind(pieces[i])
                                          : line.find(pieces[i], at);
    if (found == std::string::npos || found < at)
      return false;
    at = found + pieces[i].size();
  }
  return at == line.size();
}

} // namespace

TEST_CASE("docs/debugging.md: the walkthrough does what it says") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  Walkthrough w = read_walkthrough();
  // nicemu run ... --firmware build/... --gdb PORT: the test's image, and
  // any free port (debug_run: --gdb 0).
  REQUIRE(w.nicemu_args.at(0) == "run");
  std::vector<std::string> args;
  for (size_t i = 1; i < w.nicemu_args.size(); ++i) {
    const std::string &a = w.nicemu_args[i];
    if (a == "--gdb")
      ++i;
    else
      args.push_back(w.nicemu_args[i - 1] == "--firmware" ? in_build(a) : a);
  }
  std::string script;
  for (const std::string &c : w.commands)
    script += c + "\n";
  Debugged d = debug_run(args, w.elf, script, {"--gdb", "0"}, true);
  INFO(d.gdb);
  INFO(d.nicemu);
  std::istringstream lines(d.gdb.out);
  std::string line;
  for (const std::string &expected : w.expected) {
    bool found = false;
    while (!found && std::getline(lines, line))
      found = matches(line, expected);
    CHECK_MESSAGE(found, "GDB did not print, in this order: " << expected);
    if (!found)
      break;
  }
  CHECK(d.nicemu.status == 0);
}
