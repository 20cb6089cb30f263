// Stock gdb-multiarch against `nicemu run --gdb` in the background, for
// the end-to-end tests of the GDB stub (test_gdb.cpp) and of the
// walkthrough in docs/debugging.md (test_gdb_walkthrough.cpp).
#pragma once

#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <fstream>

namespace e2e {

inline const char *kGdb = "/usr/bin/gdb-multiarch";

struct Debugged {
  CommandResult gdb, nicemu;
};

// `nicemu run --gdb 0 ARGS` in the background, its output in files.
struct GdbServer {
  pid_t pid = 0;
  std::string port, out, err;

  // Waits (at most `seconds`) for nicemu to end; returns its exit code, or
  // kills it and returns -1.
  int wait(int seconds) {
    int status = 0;
    for (int i = 0; i < seconds * 100 && ::waitpid(pid, &status, WNOHANG) == 0;
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::waitpid(pid, &status, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }
};

// Starts nicemu and learns its port from stderr.
// `listen`: how nicemu is told where to listen (it says its port).
// `command`: run, or replay (args then start with the recording).
inline GdbServer
start_server(const std::vector<std::string> &args, const TempDir &dir,
             const std::vector<std::string> &listen = {"--gdb", "0"},
             const std::string &command = "run") {
  GdbServer server;
  server.out = dir.file("nicemu.out");
  server.err = dir.file("nicemu.err");
  std::vector<std::string> all = {NICEMU_TOOL_PATH, command};
  all.insert(all.end(), listen.begin(), listen.end());
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (auto &a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, server.out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, server.err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(posix_spawn(&server.pid, argv[0], &fa, nullptr, argv.data(),
                      environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  const std::string tag = "gdb: listening on 127.0.0.1:";
  for (int i = 0; i < 1000 && server.port.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::string text = read_text(server.err);
    size_t at = text.find(tag);
    size_t eol = at == std::string::npos ? at : text.find('\n', at);
    if (eol != std::string::npos)
      server.port = text.substr(at + tag.size(), eol - at - tag.size());
  }
  if (server.port.empty())
    ::kill(server.pid, SIGKILL);
  REQUIRE_MESSAGE(!server.port.empty(), "nicemu did not say its port");
  return server;
}

// Starts `nicemu run --gdb 0 ARGS`, runs gdb with `script` on `elf`, then
// waits for nicemu to end. `merged`: GDB's stderr into its stdout.
inline Debugged
debug_run(const std::vector<std::string> &args, const std::string &elf,
          const std::string &script,
          const std::vector<std::string> &listen = {"--gdb", "0"},
          bool merged = false, const std::string &command = "run") {
  TempDir dir;
  GdbServer server = start_server(args, dir, listen, command);
  std::string script_path = dir.file("script.gdb");
  std::ofstream(script_path) << "set pagination off\nset confirm off\n"
                             << "target remote :" << server.port << "\n"
                             << script;
  Debugged d;
  if (merged) // one stream, as on a terminal (monitor output is stderr)
    d.gdb =
        run_command("/bin/sh", {"-c", std::string(kGdb) + " -batch -nx -x " +
                                          script_path + " " + elf + " 2>&1"});
  else
    d.gdb = run_command(kGdb, {"-batch", "-nx", "-x", script_path, elf});
  d.nicemu.status = server.wait(60);
  CHECK_MESSAGE(d.nicemu.status != -1, "nicemu did not end after gdb left");
  d.nicemu.out = read_text(server.out);
  d.nicemu.err = read_text(server.err);
  return d;
}

} // namespace e2e
