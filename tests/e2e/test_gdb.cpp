// nicemu run --gdb: stock gdb-multiarch in batch mode against a running
// emulated cluster (docs/debugging.md), and runs with breakpoints, steps
// and watchpoints counting exactly the cycles of runs without.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <spawn.h>
#include <sys/wait.h>

using namespace e2e;

namespace {

const char *kGdb = "/usr/bin/gdb-multiarch";

struct Debugged {
  CommandResult gdb, nicemu;
};

// Starts `nicemu run --gdb 0 ARGS`, learns its port from stderr, runs gdb
// with `script` on `elf`, then waits for nicemu to end.
Debugged debug_run(const std::vector<std::string> &args, const std::string &elf,
                   const std::string &script) {
  TempDir dir;
  std::string out = dir.file("nicemu.out"), err = dir.file("nicemu.err");
  std::vector<std::string> all = {NICEMU_TOOL_PATH, "run", "--gdb", "0"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (auto &a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  std::string port;
  const std::string tag = "gdb: listening on 127.0.0.1:";
  for (int i = 0; i < 1000 && port.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::string text = read_text(err);
    size_t at = text.find(tag);
    size_t eol = at == std::string::npos ? at : text.find('\n', at);
    if (eol != std::string::npos)
      port = text.substr(at + tag.size(), eol - at - tag.size());
  }
  if (port.empty())
    ::kill(pid, SIGKILL);
  REQUIRE_MESSAGE(!port.empty(), "nicemu did not say its port");
  std::string script_path = dir.file("script.gdb");
  std::ofstream(script_path) << "set pagination off\nset confirm off\n"
                             << "target remote :" << port << "\n"
                             << script;
  Debugged d;
  d.gdb = run_command(kGdb, {"-batch", "-nx", "-x", script_path, elf});
  int status = 0;
  for (int i = 0; i < 6000 && ::waitpid(pid, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL_CHECK("nicemu did not end after gdb left");
  }
  d.nicemu.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  d.nicemu.out = read_text(out);
  d.nicemu.err = read_text(err);
  return d;
}

std::string demo_elf() {
  std::string img = firmware("demo.img");
  return img.substr(0, img.size() - 4) + ".elf";
}

} // namespace

TEST_CASE("gdb: break, step across a delay slot, locals, threads, device "
          "registers; the run is unchanged") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  CommandResult plain =
      nicemu({"run", "-n", "2", "--firmware", firmware("demo.img")});
  REQUIRE(plain.status == 0);
  Debugged d = debug_run({"-n", "2", "--firmware", firmware("demo.img")},
                         demo_elf(), R"(info threads
break checksum
continue
bt
next
next
print sum
print i
stepi
stepi
stepi
stepi
stepi
stepi
stepi
stepi
stepi
stepi
info registers pc
thread 2
info threads
x/2wx 0x1F000000
monitor status
delete
break on_interrupt
continue
print cause
delete
continue
)");
  INFO(d.gdb);
  INFO(d.nicemu);
  CHECK(contains(d.gdb.out, "\"node0\""));
  CHECK(contains(d.gdb.out, "\"node1\""));
  CHECK(contains(d.gdb.out, "Breakpoint 1, (anonymous namespace)::checksum"));
  CHECK(contains(d.gdb.out, "in main () at"));
  CHECK(contains(d.gdb.out, "$1 = "));
  CHECK(contains(d.gdb.out, "$2 = "));
  CHECK(contains(d.gdb.out, "[Switching to thread 2"));
  CHECK(contains(d.gdb.out, "0x1f000000:\t0x4e494345"));
  CHECK(contains(d.gdb.err, "virtual time")); // monitor output: stderr
  CHECK(contains(d.gdb.out, "on_interrupt (cause="));
  CHECK(contains(d.gdb.out, "exited normally"));
  CHECK(d.nicemu.status == 0);
  CHECK(run_summary(d.nicemu.err) == run_summary(plain.err));
  CHECK(d.nicemu.out == plain.out);
}

TEST_CASE("gdb: a watchpoint stops where the variable changes") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  CommandResult plain = nicemu({"run", "--firmware", firmware("demo.img")});
  Debugged d = debug_run({"--firmware", firmware("demo.img")}, demo_elf(),
                         R"(break main
continue
watch ticks
continue
continue
delete
continue
)");
  INFO(d.gdb);
  CHECK(contains(d.gdb.out, "Hardware watchpoint 2: ticks"));
  CHECK(contains(d.gdb.out, "Old value = 0"));
  CHECK(contains(d.gdb.out, "New value = 1"));
  CHECK(contains(d.gdb.out, "New value = 2"));
  CHECK(run_summary(d.nicemu.err) == run_summary(plain.err));
}
