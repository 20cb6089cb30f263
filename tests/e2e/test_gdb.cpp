// nicemu run --gdb: stock gdb-multiarch in batch mode against a running
// emulated cluster (docs/debugging.md), and runs with breakpoints, steps
// and watchpoints counting exactly the cycles of runs without.
#include "cli_helpers.hpp"
#include "gdb_helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fstream>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>

using namespace e2e;

namespace {

// A bare remote-protocol client: what gdb sends, byte for byte.
class RspClient {
public:
  explicit RspClient(const std::string &port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(std::stoi(port)));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    timeval tv{20, 0}; // no reply in 20 s: fail, never hang
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RspClient() { ::close(fd_); }
  RspClient(const RspClient &) = delete;
  RspClient &operator=(const RspClient &) = delete;

  void send_raw(const std::string &bytes) {
    REQUIRE(::write(fd_, bytes.data(), bytes.size()) == ssize_t(bytes.size()));
  }
  void send(const std::string &body) {
    unsigned sum = 0;
    for (unsigned char c : body)
      sum += c;
    char tail[4];
    std::snprintf(tail, sizeof tail, "#%02x", sum & 0xff);
    send_raw("$" + body + tail);
  }
  // The next packet's body (acks skipped, acknowledged); "" on timeout.
  std::string reply() {
    std::string body;
    char c;
    while (::read(fd_, &c, 1) == 1 && c != '$') {
    }
    while (::read(fd_, &c, 1) == 1 && c != '#')
      body += c;
    char sum[2];
    if (::read(fd_, sum, 2) != 2)
      return "";
    send_raw("+");
    return body;
  }
  std::string ask(const std::string &body) {
    send(body);
    return reply();
  }

private:
  int fd_ = -1;
};

std::string elf_of(const std::string &sample) {
  std::string img = firmware(sample + ".img");
  return img.substr(0, img.size() - 4) + ".elf";
}

std::string demo_elf() {
  return elf_of("demo");
}

// A TCP port on 127.0.0.1 free right now.
std::string free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0);
  ::close(fd);
  return std::to_string(ntohs(a.sin_port));
}

} // namespace

TEST_CASE("gdb: break, step across a delay slot, locals, threads, device "
          "registers (the run is unchanged)") {
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

TEST_CASE("gdb: Ctrl-C stops a spinning core, detach lets it run, a new "
          "debugger can attach, kill ends the run") {
  TempDir dir;
  // hang spins forever without a device access: only an interrupt stops it.
  GdbServer server = start_server(
      {"--firmware", firmware("hang.img"), "--watchdog", "0"}, dir);
  {
    RspClient gdb(server.port);
    CHECK(gdb.ask("?").rfind("T05", 0) == 0); // halted at reset
    gdb.send("c");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    gdb.send_raw("\x03");
    std::string stop = gdb.reply();
    CHECK(stop.rfind("T02", 0) == 0); // SIGINT
    std::string pc = gdb.ask("p25");  // register 37: pc
    CHECK(pc.size() == 8);
    CHECK(pc != "00000000");
    CHECK(gdb.ask("D") == "OK");
  }
  // Detached, the core runs on; a new debugger stops it again.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    RspClient gdb(server.port);
    std::string stop = gdb.ask("?");
    CHECK((stop.rfind("T02", 0) == 0 || stop.rfind("T05", 0) == 0));
    std::string monitor;
    for (char c : std::string("status")) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", unsigned(c));
      monitor += hex;
    }
    gdb.send("qRcmd," + monitor);
    std::string output; // O packets (hex text), then OK
    std::string packet = gdb.reply();
    for (int i = 0; i < 100 && packet != "OK" && packet.rfind("O", 0) == 0;
         ++i) {
      for (size_t at = 1; at + 1 < packet.size(); at += 2)
        output += char(std::stoi(packet.substr(at, 2), nullptr, 16));
      packet = gdb.reply();
    }
    CHECK(packet == "OK");
    CHECK(contains(output, "virtual time"));
    gdb.send("k");
  }
  CHECK(server.wait(30) == 1);
  CHECK(contains(read_text(server.err), "--- nicemu:"));
}

TEST_CASE("gdb: monitor trace on prints the blocks the core enters and off "
          "stops (the run is unchanged)") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  CommandResult plain = nicemu({"run", "--firmware", firmware("demo.img")});
  REQUIRE(plain.status == 0);
  Debugged d = debug_run({"--firmware", firmware("demo.img")}, demo_elf(),
                         R"(break main
continue
monitor trace on
break checksum
continue
stepi
monitor trace off
delete
continue
)");
  INFO(d.gdb);
  INFO(d.nicemu);
  CHECK(contains(d.gdb.err, "trace: on"));
  CHECK(contains(d.gdb.err, "trace: off"));
  CHECK(contains(d.nicemu.err, "trace: node0 cycle "));
  CHECK(contains(d.nicemu.err, "checksum("));
  // Nothing traced after `trace off`: the timer interrupts come later.
  CHECK(!contains(d.nicemu.err, "on_interrupt"));
  CHECK(contains(d.gdb.out, "exited normally"));
  CHECK(run_summary(d.nicemu.err) == run_summary(plain.err));
  CHECK(d.nicemu.out == plain.out);
}

TEST_CASE("gdb: monitor reset boots the node again and it stops at the same "
          "breakpoint") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  Debugged d = debug_run({"--firmware", firmware("demo.img")}, demo_elf(),
                         R"(break checksum
continue
monitor reset
continue
print $pc
delete
continue
)");
  INFO(d.gdb);
  INFO(d.nicemu);
  CHECK(contains(d.gdb.err, "reset: node0 boots again from its flash"));
  CHECK(contains(d.gdb.err, "virtual time does not go back"));
  const std::string hit = "Breakpoint 1, (anonymous namespace)::checksum";
  size_t first = d.gdb.out.find(hit);
  REQUIRE(first != std::string::npos);
  CHECK(d.gdb.out.find(hit, first + 1) != std::string::npos);
  CHECK(contains(d.gdb.out, "<(anonymous namespace)::checksum("));
  CHECK(contains(d.gdb.out, "exited normally"));
  CHECK(contains(d.nicemu.err, "nicemu: reset at virtual time"));
  // The banner twice: once per boot.
  const std::string banner = "nicemu demo firmware: node 0 of 1";
  size_t once = d.nicemu.out.find(banner);
  REQUIRE(once != std::string::npos);
  CHECK(d.nicemu.out.find(banner, once + 1) != std::string::npos);
  CHECK(d.nicemu.status == 0);
}

TEST_CASE("gdb: --gdb-listen on a given port and a struct printed") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  std::string port = free_port();
  // ctors: `configured` is a global struct its constructor sets to 42.
  Debugged d = debug_run({"--firmware", firmware("ctors.img")}, elf_of("ctors"),
                         R"(break main
continue
print configured
print configured.value
ptype configured
continue
)",
                         {"--gdb-listen", "127.0.0.1:" + port});
  INFO(d.gdb);
  INFO(d.nicemu);
  CHECK(contains(d.nicemu.err, "gdb: listening on 127.0.0.1:" + port));
  CHECK(contains(d.gdb.out, "$1 = {value = 42}"));
  CHECK(contains(d.gdb.out, "$2 = 42"));
  CHECK(contains(d.gdb.out, "uint32_t value;"));
  CHECK(contains(d.gdb.out, "exited normally"));
  CHECK(contains(d.nicemu.out, "ctors ok"));
  CHECK(d.nicemu.status == 0);
}

TEST_CASE("gdb: step goes into a function and next over a line") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  CommandResult plain = nicemu({"run", "--firmware", firmware("demo.img")});
  Debugged d = debug_run({"--firmware", firmware("demo.img")}, demo_elf(),
                         R"(break main
continue
next
next
step
bt
finish
next
delete
continue
)");
  INFO(d.gdb);
  INFO(d.nicemu);
  // step: into fw::printf, called from main's line 44.
  CHECK(contains(d.gdb.out, "nicemu::fw::printf (format_text="));
  CHECK(contains(d.gdb.out, "printf.cpp:"));
  CHECK(contains(d.gdb.out, "#1  0x"));
  CHECK(contains(d.gdb.out, " in main () at "));
  // finish: back in main with printf's result (the banner's length).
  CHECK(contains(d.gdb.out, "Value returned is $1 = 53"));
  // next: over the rest of line 44, to the loop after it.
  CHECK(contains(d.gdb.out, "packet[i] = uint8_t(i * 7 + 1);"));
  CHECK(contains(d.gdb.out, "exited normally"));
  CHECK(run_summary(d.nicemu.err) == run_summary(plain.err));
  CHECK(d.nicemu.out == plain.out);
}

// Regression: after `target remote`, GDB said "0x00000000 in
// nicemu::fw::exit (code=0)": the debug information of functions the link
// dropped pointed at address 0, where _start is.
TEST_CASE("gdb: at reset the PC is in _start, not in a function the link "
          "dropped") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  for (const char *sample : {"demo", "hello", "ctors"}) {
    CAPTURE(sample);
    Debugged d = debug_run(
        {"--firmware", firmware(std::string(sample) + ".img")}, elf_of(sample),
        "bt\ninfo symbol $pc\nkill\n", {"--gdb", "0"}, true);
    INFO(d.gdb);
    CHECK(contains(d.gdb.out, "_start () at "));
    CHECK(contains(d.gdb.out, "#0  _start () at "));
    CHECK(!contains(d.gdb.out, "0x00000000 in "));
    CHECK(!contains(d.gdb.out, "nicemu::fw::exit"));
    CHECK(!contains(d.gdb.out, "cannot find the start"));
  }
}

namespace {

// The ```json blocks of a document, parsed (VS Code allows comments).
std::vector<nlohmann::json> json_blocks(const fs::path &doc) {
  std::istringstream in(read_text(doc));
  std::vector<nlohmann::json> blocks;
  std::string block;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside && line == "```json") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      blocks.push_back(nlohmann::json::parse(block, nullptr, true, true));
    } else if (inside) {
      block += line + "\n";
    }
  }
  return blocks;
}

// "${workspaceFolder}/build/firmware/samples/demo.img": the test's build.
std::string workspace_file(const std::string &path) {
  const std::string samples = "${workspaceFolder}/build/firmware/samples/";
  REQUIRE_MESSAGE(path.rfind(samples, 0) == 0, path);
  return firmware(path.substr(samples.size()));
}

} // namespace

TEST_CASE("docs/vscode.md: the task and launch configuration work as the "
          "C/C++ extension uses them") {
  REQUIRE_MESSAGE(fs::exists(kGdb),
                  "gdb-multiarch is not installed (toolchain/setup.sh)");
  std::vector<nlohmann::json> blocks =
      json_blocks(fs::path(NICEMU_SOURCE_DIR) / "docs/vscode.md");
  REQUIRE(blocks.size() == 2);
  const nlohmann::json task = blocks[0].at("tasks").at(0);
  const nlohmann::json launch = blocks[1].at("configurations").at(0);
  CHECK(launch.at("preLaunchTask") == task.at("label"));
  CHECK(launch.at("type") == "cppdbg");
  CHECK(launch.at("MIMode") == "gdb");
  CHECK(launch.at("miDebuggerPath") == kGdb);
  CHECK(std::string(task.at("command")).rfind("/build/emulator/nicemu") !=
        std::string::npos);
  // The task's arguments, with the test's files and any free port.
  std::vector<std::string> args;
  std::string port;
  const auto &task_args = task.at("args");
  REQUIRE(task_args.at(0) == "run");
  for (size_t i = 1; i < task_args.size(); ++i) {
    std::string a = task_args[i];
    if (a == "--gdb")
      port = task_args.at(++i);
    else
      args.push_back(a.find("${workspaceFolder}") == 0 ? workspace_file(a) : a);
  }
  CHECK(launch.at("miDebuggerServerAddress") == "localhost:" + port);
  TempDir dir;
  GdbServer server = start_server(args, dir);
  // VS Code starts the debugger once the task prints endsPattern.
  // The pattern is "^" and literal text (no std::regex: g++ 12 warns
  // falsely at -O1, which fails the ASan build): a line starting with it.
  std::string ends =
      task.at("problemMatcher").at("background").at("endsPattern");
  REQUIRE(ends.size() > 1);
  REQUIRE(ends[0] == '^');
  REQUIRE(ends.find_first_of("\\.*+?()[]{}|$", 1) == std::string::npos);
  std::string err = read_text(server.err);
  CHECK((err.rfind(ends.substr(1), 0) == 0 ||
         err.find("\n" + ends.substr(1)) != std::string::npos));
  // What the extension sends: setupCommands (MI as it is, the others
  // through the console), the program, the connection, a breakpoint,
  // continue; then the locals when stopped; then on to the end.
  std::string mi;
  for (const auto &c : launch.at("setupCommands")) {
    std::string text = c.at("text");
    mi += text[0] == '-' ? text + "\n"
                         : "-interpreter-exec console \"" + text + "\"\n";
  }
  mi += "-file-exec-and-symbols " + workspace_file(launch.at("program")) +
        "\n-target-select remote localhost:" + server.port +
        "\n-break-insert -f demo.cpp:22\n-exec-continue\n"
        "-stack-list-variables --simple-values\n-thread-info\n"
        "-break-delete\n-exec-continue\n-gdb-exit\n";
  const std::string commands = dir.file("commands.mi");
  std::ofstream(commands) << mi;
  CommandResult gdb = run_command(
      "/bin/sh",
      {"-c", std::string(kGdb) + " --interpreter=mi2 -nx < " + commands});
  INFO(gdb);
  CHECK(gdb.status == 0);
  CHECK(contains(gdb.out, "^connected"));
  CHECK(contains(gdb.out, "*stopped,reason=\"breakpoint-hit\""));
  CHECK(contains(gdb.out, "func=\"(anonymous namespace)::checksum\""));
  CHECK(contains(gdb.out, "{name=\"sum\",type=\"uint32_t\",value=\"0\"}"));
  CHECK(contains(gdb.out, "name=\"node1\""));
  CHECK(contains(gdb.out, "*stopped,reason=\"exited-normally\""));
  CHECK(server.wait(60) == 0);
}
