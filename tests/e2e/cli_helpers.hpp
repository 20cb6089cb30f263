// Helpers for the end-to-end tests: run the `nicemu` binary as a user would,
// with stdout and stderr captured separately, in a scratch directory of its
// own; find the firmware samples the build made.
#pragma once

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char **environ;

namespace e2e {

namespace fs = std::filesystem;

// A directory of its own for one test, removed with everything in it.
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "nicemu-e2e-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      FAIL("cannot create a temporary directory from " << pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const fs::path &path() const { return path_; }
  std::string file(const std::string &name) const {
    return (path_ / name).string();
  }

private:
  fs::path path_;
};

inline std::string read_text(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline std::vector<uint8_t> read_bytes(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline void write_bytes(const fs::path &path, const std::vector<uint8_t> &b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(b.data()),
            std::streamsize(b.size()));
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

struct CommandResult {
  // The exit code; 128 + N when killed by signal N (a crash, or the
  // time limit below), as a shell reports it.
  int status = -1;
  std::string out, err;
  std::string command; // for failure messages
};

inline std::ostream &operator<<(std::ostream &os, const CommandResult &r) {
  return os << "$ " << r.command << "\n[exit " << r.status << "]\n[stdout]\n"
            << r.out << "[stderr]\n"
            << r.err;
}

// It only keeps a hung emulator from hanging the test run. The longest
// commands (bench niam --loss under ASan) went past 120 s on a 2-core
// machine with a build running beside them.
constexpr auto kCommandTimeout = std::chrono::seconds(300);

// Runs `program args...` with stdin from /dev/null; stdout and stderr go to
// files (not pipes: nothing can block on a full pipe).
inline CommandResult run_command(const std::string &program,
                                 const std::vector<std::string> &args) {
  TempDir scratch;
  const std::string out_path = scratch.file("stdout"),
                    err_path = scratch.file("stderr");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char *> argv;
  CommandResult r;
  r.command = program;
  argv.push_back(const_cast<char *>(program.c_str()));
  for (const std::string &a : args) {
    argv.push_back(const_cast<char *>(a.c_str()));
    r.command += " " + a;
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(),
                       environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE_MESSAGE(rc == 0,
                  "cannot start " << program << ": " << std::strerror(rc));
  const auto deadline = std::chrono::steady_clock::now() + kCommandTimeout;
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &wstatus, 0);
      FAIL_CHECK("timed out after " << kCommandTimeout.count()
                                    << " s: " << r.command);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.status =
      WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

inline CommandResult nicemu(const std::vector<std::string> &args) {
  CommandResult r = run_command(NICEMU_TOOL_PATH, args);
  // In a sanitizer build a report may come with exit code 1, which some
  // tests expect for user errors: look for the report itself.
  CHECK_MESSAGE(r.err.find("Sanitizer") == std::string::npos,
                "sanitizer report:\n"
                    << r);
  CHECK_MESSAGE(r.err.find("runtime error:") == std::string::npos,
                "undefined behaviour:\n"
                    << r);
  return r;
}

// A sample the firmware build made (e.g. "hello.img"). Missing samples fail
// the test: a build without firmware must not pass the e2e suite.
// tshark on PATH (toolchain/setup.sh --deps-only installs it); the test
// fails without it.
inline std::string find_tshark() {
  const char *path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir) / "tshark";
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  FAIL("tshark is not installed (toolchain/setup.sh --deps-only installs "
       "it): the captures cannot be checked");
  return {};
}

inline std::string firmware(const std::string &name) {
  const fs::path path = fs::path(NICEMU_FIRMWARE_DIR) / name;
  REQUIRE_MESSAGE(fs::exists(path), "firmware sample "
                                        << path
                                        << " is missing: build the firmware "
                                           "(the `firmware` target) first");
  return path.string();
}

// A run's summary on stderr up to its wall time: what must not change when
// the run is observed or debugged.
inline std::string run_summary(const std::string &err) {
  size_t at = err.find("--- nicemu:");
  REQUIRE_MESSAGE(at != std::string::npos, "no summary:\n" << err);
  std::string s = err.substr(at);
  return s.substr(0, s.find(", wall time"));
}

// The lines of `text` that contain `needle`.
inline std::vector<std::string> lines_with(const std::string &text,
                                           const std::string &needle) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos)
      found.push_back(line);
  return found;
}

// The lines of `text`, sorted: host processes print concurrently, so runs
// are compared line by line regardless of interleaving.
inline std::vector<std::string> sorted_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

inline bool contains(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}

// How many lines "rank R of N: ok" (R < N) host programs printed: the test
// programs' verdict, one line per rank that found everything right.
inline int count_ok_ranks(const std::string &out, unsigned nodes) {
  int ok = 0;
  std::istringstream lines(out);
  for (std::string l; std::getline(lines, l);) {
    unsigned rank = 0, size = 0;
    char word[16] = {};
    if (std::sscanf(l.c_str(), "rank %u of %u: %15s", &rank, &size, word) ==
            3 &&
        size == nodes && rank < nodes && std::string(word) == "ok")
      ++ok;
  }
  return ok;
}

// The image layout, read independently of nicemu's decoder
// (docs/image-format.md): a 100-byte header, then 24-byte segment entries.
inline uint32_t le32(const std::vector<uint8_t> &b, size_t at) {
  REQUIRE(at + 4 <= b.size());
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 |
         uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}

struct RawSegment {
  uint32_t address, mem_size, flags, offset, size, crc;
};

inline uint32_t raw_entry(const std::vector<uint8_t> &image) {
  return le32(image, 40);
}

inline std::vector<RawSegment> raw_segments(const std::vector<uint8_t> &image) {
  std::vector<RawSegment> segments;
  const uint32_t count = le32(image, 44);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = 100 + 24 * size_t(i);
    segments.push_back({le32(image, at), le32(image, at + 4),
                        le32(image, at + 8), le32(image, at + 12),
                        le32(image, at + 16), le32(image, at + 20)});
  }
  return segments;
}

// The summary `nicemu run` prints on stderr (cmd_run.cpp), for one node:
//   --- nicemu: lanai4 model, 1 node ---
//   node  state      exit   instructions         cycles   slept cycles
//   0     halted        0           1234           1500              0
//   virtual time 45.455 us, wall time 0.321 ms, 3.8 emulated MIPS
struct RunSummary {
  std::string state, exit;
  uint64_t instructions = 0, cycles = 0, slept_cycles = 0;
  double virtual_us = -1, wall_ms = -1, mips = -1;
  // Every summary line, the last one cut before ", wall time": what must
  // be the same on every run.
  std::vector<std::string> deterministic_lines;
};

inline RunSummary parse_summary(const std::string &err) {
  RunSummary s;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line) && line.rfind("--- nicemu:", 0) != 0) {
  }
  REQUIRE_MESSAGE(in, "no run summary on stderr:\n" << err);
  s.deterministic_lines.push_back(line);
  REQUIRE(std::getline(in, line)); // column titles
  s.deterministic_lines.push_back(line);
  REQUIRE(contains(line, "instructions"));
  REQUIRE(contains(line, "slept cycles"));
  REQUIRE(std::getline(in, line)); // node 0
  s.deterministic_lines.push_back(line);
  unsigned node = 99;
  std::istringstream row(line);
  row >> node >> s.state >> s.exit >> s.instructions >> s.cycles >>
      s.slept_cycles;
  REQUIRE_MESSAGE(row, "bad summary row: " << line);
  CHECK(node == 0);
  REQUIRE(std::getline(in, line));
  const size_t wall = line.find(", wall time");
  REQUIRE_MESSAGE(wall != std::string::npos, "bad summary line: " << line);
  s.deterministic_lines.push_back(line.substr(0, wall));
  REQUIRE_MESSAGE(std::sscanf(line.c_str(),
                              "virtual time %lf us, wall time %lf ms, %lf "
                              "emulated MIPS",
                              &s.virtual_us, &s.wall_ms, &s.mips) == 3,
                  "bad summary line: " << line);
  return s;
}

} // namespace e2e
