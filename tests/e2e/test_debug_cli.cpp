// nicemu debug -x SCRIPT: the built-in debugger on the scenario of
// test_gdb.cpp (break in a handler, step across a delay slot, a watchpoint,
// switching nodes, a device register), and runs with breakpoints, steps and
// watchpoints counting exactly the cycles of runs without.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <fstream>

using namespace e2e;

namespace {

CommandResult debug_script(const std::vector<std::string> &args,
                           const std::string &script) {
  TempDir dir;
  std::string path = dir.file("script.txt");
  std::ofstream(path) << script;
  std::vector<std::string> all = {"debug", "-x", path};
  all.insert(all.end(), args.begin(), args.end());
  return nicemu(all);
}

// Console lines of the firmware only: what the run printed.
std::string console(const std::string &out) {
  std::istringstream in(out);
  std::string text;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("[node", 0) == 0)
      text += line + "\n";
  return text;
}

} // namespace

TEST_CASE("debug -x: break, step across a delay slot, nodes, device "
          "registers, handlers, the run is unchanged") {
  std::vector<std::string> args = {"-n", "2", "--firmware",
                                   firmware("demo.img")};
  std::vector<std::string> run_args = {"run"};
  run_args.insert(run_args.end(), args.begin(), args.end());
  CommandResult plain = nicemu(run_args);
  REQUIRE(plain.status == 0);
  CommandResult d = debug_script(args, R"(info nodes
break checksum
continue
bt
next
next
stepi
stepi
stepi
stepi
stepi
stepi
stepi
stepi
regs pc
node 1
info nodes
x/2wx 0x1F000000
time
cycles
info handlers
disas
delete
break on_interrupt
continue
regs a0
finish
delete
continue
)");
  INFO(d.out);
  INFO(d.err);
  CHECK(contains(d.out, "* node0"));
  CHECK(contains(d.out, "  node1"));
  CHECK(contains(d.out, "node0: breakpoint 1\nnode0 at 0x"));
  CHECK(contains(d.out, "checksum(unsigned char const*, unsigned int)> at "
                        "demo.cpp:19"));
  CHECK(contains(d.out, "#1  0x"));
  CHECK(contains(d.out, "<main()+"));
  CHECK(contains(d.out, "[switching to node1]"));
  CHECK(contains(d.out, "0x1f000000:\t0x4e494345\t0x00000001"));
  CHECK(contains(d.out, "virtual time"));
  CHECK(contains(d.out, "nicemu_irq_dispatch"));
  CHECK(contains(d.out, "=> 0x"));
  CHECK(contains(d.out, "node0: breakpoint 2\nnode0 at 0x"));
  CHECK(contains(d.out, "on_interrupt(unsigned int)>"));
  CHECK(contains(d.out, "run till exit from"));
  CHECK(contains(d.out, "the run ended: exit code 0"));
  CHECK(!contains(d.out, "error:"));
  CHECK(d.status == 0);
  CHECK(run_summary(d.err) == run_summary(plain.err));
  CHECK(console(d.out) == plain.out);
}

TEST_CASE("debug -x: a step over a delay slot is one step") {
  // 0x000004ac..: the checksum loop's branch and its delay slot are one
  // step, so a step never stops in a delay slot (a branch's next address).
  CommandResult d = debug_script({"--firmware", firmware("demo.img")},
                                 "break checksum\ncontinue\nstepi 40\n"
                                 "x/1i $pc-4\nquit\n");
  INFO(d.out);
  CHECK(d.status == 0);
  std::string prev = d.out.substr(d.out.rfind("(nicemu) x/1i"));
  CHECK(!contains(prev, ":\tb")); // the instruction before is no branch
  CHECK(!contains(prev, ":\tj"));
}

TEST_CASE("debug -x: a watchpoint stops where the variable changes") {
  CommandResult plain = nicemu({"run", "--firmware", firmware("demo.img")});
  CommandResult d = debug_script({"--firmware", firmware("demo.img")},
                                 R"(break main
continue
watch ticks
continue
continue
delete
continue
)");
  INFO(d.out);
  CHECK(contains(d.out, "watchpoint 2: ticks (0x"));
  CHECK(contains(d.out, "node0: watchpoint 2: ticks\nOld value = 0\n"
                        "New value = 1\n"));
  CHECK(contains(d.out, "Old value = 1\nNew value = 2\n"));
  CHECK(contains(d.out, "demo.cpp:32"));
  CHECK(d.status == 0);
  CHECK(run_summary(d.err) == run_summary(plain.err));
}

TEST_CASE("debug -x: source lines, until, errors") {
  CommandResult d = debug_script({"--firmware", firmware("demo.img")},
                                 R"(break demo.cpp:53
continue
step
until
bogus
break no_such_function
x/4wx 0xF0000000
quit
)");
  INFO(d.out);
  CHECK(contains(d.out, "breakpoint 1 at 0x"));
  CHECK(contains(d.out, "at demo.cpp:53"));
  CHECK(contains(d.out, "error: unknown command 'bogus'"));
  CHECK(contains(d.out, "error: no symbol 'no_such_function'"));
  CHECK(contains(d.out, "error: cannot read"));
  CHECK(contains(d.out, "end of commands") == false);
  CHECK(d.status == 1); // commands failed in a script
  CommandResult quiet = debug_script({"--firmware", firmware("demo.img")},
                                     "break main\ncontinue\n");
  CHECK(contains(quiet.out, "end of commands: killing the run"));
  CHECK(quiet.status == 0);
}

TEST_CASE("debug -x: print, info args and info locals read the DWARF") {
  // variables.cpp: globals of many types, and combine(6, 7, &shape).
  CommandResult d = debug_script({"--firmware", firmware("variables.img")},
                                 R"(info locals
break combine
continue
info args
print left
print/x right
print *s
print s->name
print s->corners[1]
print s->corners[1].y
print shape.flags
print shape.color
print label
print grid
print grid[1][2]
print grid[1]
print zeros
print handler
print &shape
print $a0
print nosuch
print shape.nosuch
print left[2]
print (grid
next
info locals
delete
continue
)");
  INFO(d.out);
  INFO(d.err);
  CHECK(contains(d.out, "(nicemu) info locals\nerror: no function with debug "
                        "information at 0x00000000\n"));
  CHECK(contains(d.out, "(nicemu) info args\nleft = 6\nright = 7\ns = 0x"));
  CHECK(contains(d.out, "left = 6\n"));
  CHECK(contains(d.out, "right = 0x7\n"));
  CHECK(contains(d.out, "*s = {name = 0x"));
  CHECK(contains(d.out, " \"square\", corners = {{x = -3, y = 4}, {x = 10, "
                        "y = -20}}, color = Blue, flags = {ready = 1, mode = "
                        "5, count = 300}, filled = true}\n"));
  CHECK(contains(d.out, "s->corners[1] = {x = 10, y = -20}\n"));
  CHECK(contains(d.out, "s->corners[1].y = -20\n"));
  CHECK(contains(d.out, "shape.flags = {ready = 1, mode = 5, count = 300}\n"));
  CHECK(contains(d.out, "shape.color = Blue\n"));
  CHECK(contains(d.out, "label = \"hi\", '\\000' <repeats 13 times>\n"));
  CHECK(contains(d.out, "grid = {{1, 2, 3}, {4, 5, 6}}\n"));
  CHECK(contains(d.out, "grid[1][2] = 6\n"));
  CHECK(contains(d.out, "grid[1] = {4, 5, 6}\n"));
  CHECK(contains(d.out, "zeros = {0 <repeats 40 times>}\n"));
  CHECK(contains(d.out, "handler = 0x"));
  CHECK(contains(d.out, " <variables::combine(int, int, "
                        "variables::Shape const*)>\n"));
  CHECK(contains(d.out, "&shape = 0x"));
  CHECK(contains(d.out, "$a0 = 0x00000006\n"));
  CHECK(contains(d.out, "error: no symbol \"nosuch\" in current context\n"));
  CHECK(contains(d.out, "error: there is no member named nosuch\n"));
  CHECK(contains(d.out, "error: cannot subscript something that is not an "
                        "array or a pointer\n"));
  CHECK(contains(d.out, "error: cannot read '(grid'"));
  CHECK(contains(d.out, "(nicemu) info locals\ntotal = "));
  CHECK(contains(d.out, "[node0] variables: 42"));
  CHECK(contains(d.out, "the run ended: exit code 0"));
  CHECK(d.status == 1); // the commands that failed, on purpose
}

// docs/firmware.md and docs/debugging.md: the firmware build keeps frame
// pointers, and the DWARF frame base is $fp.
TEST_CASE("debug -x: firmware functions set up a frame pointer") {
  CommandResult d = debug_script({"--firmware", firmware("demo.img")},
                                 "disas main\ndisas checksum\nquit\n");
  INFO(d.out);
  CHECK(d.status == 0);
  const std::string main_fn = d.out.substr(d.out.find("(nicemu) disas main"));
  const std::string leaf = d.out.substr(d.out.find("(nicemu) disas checksum"));
  CHECK(contains(main_fn.substr(0, main_fn.find("(nicemu) disas checksum")),
                 "move $fp, $sp"));
  CHECK(contains(leaf, "move $fp, $sp")); // a leaf function too
}

// The values the example of docs/debugging.md shows in its comments.
TEST_CASE("debug -x: the variables of the docs' example") {
  CommandResult d =
      debug_script({"-n", "2", "--firmware", firmware("demo.img")},
                   R"(break checksum
continue
info args
next
next
next
info locals
print/x sum
print tick_cycles
quit
)");
  INFO(d.out);
  CHECK(contains(d.out, "(nicemu) info args\ndata = <optimized out>\nn = "
                        "256\n"));
  CHECK(contains(d.out, "(nicemu) info locals\ni = 2\nsum = 264\n"));
  CHECK(contains(d.out, "sum = 0x108\n"));
  CHECK(contains(d.out, "tick_cycles = {0, 0, 0, 0, 0}\n"));
  CHECK(d.status == 0);
}
