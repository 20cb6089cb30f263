// End-to-end: SIGINT and SIGTERM stop `nicemu run` and `nicemu bench`
// cleanly (README, "Exit codes"): exit 130 or 143, the trace still valid
// JSON, every capture whole records, the summary printed, and no host
// process left behind.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <set>

using namespace e2e;

namespace {

// The environment of the processes a test signals: ours, with
// LeakSanitizer off in an AddressSanitizer build. A host process that a
// signal ends while LeakSanitizer checks it at exit leaves LeakSanitizer's
// tracer task behind, a zombie in the process group that no one reaps
// where PID 1 does not (the test would take it for a host nicemu left).
// Leak checks at a normal exit are every other test's.
std::vector<std::string> signalled_environment() {
  std::vector<std::string> env;
  bool asan_set = false;
  for (char **e = environ; *e; ++e) {
    std::string v(*e);
    if (v.rfind("ASAN_OPTIONS=", 0) == 0) {
      v += ":detect_leaks=0";
      asan_set = true;
    }
    env.push_back(std::move(v));
  }
  if (!asan_set)
    env.push_back("ASAN_OPTIONS=detect_leaks=0");
  return env;
}

// nicemu started in a process group of its own (as a shell starts a job),
// stdout and stderr to files, so that a test can signal it mid-run the way
// a terminal's Ctrl-C does (the whole group) or the way kill does (nicemu
// alone).
class Started {
public:
  explicit Started(const std::vector<std::string> &args)
      : out_(dir_.file("stdout")), err_(dir_.file("stderr")) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
                                        POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    std::vector<char *> argv = {const_cast<char *>(NICEMU_TOOL_PATH)};
    for (const std::string &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<std::string> env = signalled_environment();
    std::vector<char *> envp;
    for (std::string &v : env)
      envp.push_back(v.data());
    envp.push_back(nullptr);
    int rc = posix_spawn(&pid_, NICEMU_TOOL_PATH, &actions, &attr, argv.data(),
                         envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    REQUIRE_MESSAGE(rc == 0, "cannot start nicemu: " << std::strerror(rc));
  }
  ~Started() {
    if (status_ < 0) { // a failed test: leave nothing running
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Started(const Started &) = delete;
  Started &operator=(const Started &) = delete;

  pid_t pid() const { return pid_; }
  const TempDir &dir() const { return dir_; }

  // nicemu's children (the host processes), from /proc.
  std::vector<pid_t> children() const {
    std::vector<pid_t> found;
    for (const auto &e : fs::directory_iterator("/proc")) {
      std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos)
        continue;
      std::string stat = read_text(e.path() / "stat");
      size_t close = stat.rfind(')');
      if (close == std::string::npos)
        continue;
      char state = 0;
      int ppid = 0;
      if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 &&
          ppid == pid_)
        found.push_back(pid_t(std::stoi(name)));
    }
    return found;
  }

  // Waits (in wall time, at most `limit`) until `ready` holds; false if
  // it never did or nicemu ended first.
  template <class Ready>
  bool wait_until(Ready ready, std::chrono::milliseconds limit) {
    auto give_up = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < give_up) {
      if (ready())
        return true;
      if (::waitpid(pid_, &raw_status_, WNOHANG) == pid_) {
        status_ = exit_status(raw_status_);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Waits for nicemu to end (at most 60 s) and reads what it wrote.
  CommandResult finish() {
    if (status_ < 0) {
      auto give_up =
          std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (::waitpid(pid_, &raw_status_, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > give_up) {
          FAIL_CHECK("nicemu did not stop within 60 s of the signal");
          ::kill(-pid_, SIGKILL);
          ::waitpid(pid_, &raw_status_, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      status_ = exit_status(raw_status_);
    }
    CommandResult r;
    r.status = status_;
    r.out = read_text(out_);
    r.err = read_text(err_);
    r.command = "nicemu (signalled)";
    return r;
  }

  // Whether nicemu exited (with a status), rather than being killed: a
  // signal's default action would also make 128 + the signal.
  bool exited() const { return status_ >= 0 && WIFEXITED(raw_status_); }

  // Whether any process of nicemu's group (nicemu and its hosts) is left.
  bool group_empty() const { return ::kill(-pid_, 0) < 0 && errno == ESRCH; }

private:
  static int exit_status(int raw) {
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  }

  TempDir dir_;
  std::string out_, err_;
  pid_t pid_ = -1;
  int raw_status_ = 0;
  int status_ = -1;
};

uint32_t le32_at(const std::vector<uint8_t> &b, size_t at) {
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 |
         uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}

// A capture is whole: the pcap global header, then records whose lengths
// add up to the file's size exactly. Returns the number of records.
size_t check_pcap(const fs::path &path) {
  std::vector<uint8_t> b = read_bytes(path);
  REQUIRE_MESSAGE(b.size() >= 24, path << ": no global header");
  uint32_t magic = le32_at(b, 0);
  CHECK_MESSAGE((magic == 0xa1b2c3d4u || magic == 0xa1b23c4du),
                path << ": magic " << std::hex << magic);
  CHECK(le32_at(b, 4) == 0x00040002u); // version 2.4
  size_t at = 24, records = 0, longer_than_sent = 0;
  while (at + 16 <= b.size()) {
    uint32_t incl = le32_at(b, at + 8), orig = le32_at(b, at + 12);
    longer_than_sent += incl > orig;
    at += 16 + size_t(incl);
    ++records;
  }
  CHECK(longer_than_sent == 0);
  CHECK_MESSAGE(at == b.size(), path << ": records end at " << at
                                     << ", the file at " << b.size());
  return records;
}

void check_trace(const std::string &path) {
  std::string text = read_text(path);
  REQUIRE_MESSAGE(nlohmann::json::accept(text),
                  path << " is not valid JSON (" << text.size() << " bytes)");
  nlohmann::json doc = nlohmann::json::parse(text);
  CHECK(doc["traceEvents"].is_array());
}

std::vector<std::string> niam_run(const std::string &trace,
                                  const std::string &caps) {
  return {"run",
          "-n",
          "2",
          "--firmware",
          NICEMU_NIAM_IMAGE,
          "--trace",
          trace,
          "--pcap",
          caps,
          "--report",
          "cycles",
          "--",
          NICEMU_NIAM_BARRIER,
          "100000000"};
}

// A 2-node niam run with hosts, trace, captures and a cycle report,
// signalled once its hosts are well into their barriers.
void check_stopped_cluster(int signal, bool whole_group, int expected) {
  TempDir files;
  const std::string trace = files.file("t.json");
  const std::string caps = files.file("caps");
  Started nicemu(niam_run(trace, caps));
  std::vector<pid_t> hosts;
  REQUIRE_MESSAGE(nicemu.wait_until(
                      [&] {
                        hosts = nicemu.children();
                        return hosts.size() == 2;
                      },
                      std::chrono::seconds(30)),
                  "the host processes never started:\n"
                      << nicemu.finish());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ::kill(whole_group ? -nicemu.pid() : nicemu.pid(), signal);
  CommandResult r = nicemu.finish();
  INFO(r);
  CHECK(r.status == expected);
  CHECK(nicemu.exited());
  CHECK(nicemu.group_empty()); // no host process left behind
  for (pid_t host : hosts)
    CHECK_MESSAGE(!fs::exists("/proc/" + std::to_string(host)),
                  "host process " << host << " is still there");
  CHECK(contains(r.err, signal == SIGINT ? "nicemu: stopped by SIGINT"
                                         : "nicemu: stopped by SIGTERM"));
  CHECK(contains(r.err, "--- nicemu: lanai4 model, 2 nodes ---"));
  CHECK(contains(r.err, "virtual time "));
  CHECK(contains(r.err, "host 0: "));
  CHECK(contains(r.out, "handler cycles")); // the --report
  check_trace(trace);
  size_t files_seen = 0, records = 0;
  for (const auto &e : fs::directory_iterator(caps)) {
    ++files_seen;
    records += check_pcap(e.path());
  }
  CHECK(files_seen == 2);
  CHECK(records > 0);
}

} // namespace

TEST_CASE("Ctrl-C (SIGINT to the whole group) stops a run with hosts "
          "cleanly: exit 130, trace and captures whole, summary, no host "
          "left") {
  check_stopped_cluster(SIGINT, true, 130);
}

TEST_CASE("SIGTERM to nicemu alone stops a run with hosts cleanly: exit "
          "143, the hosts stopped and reaped") {
  check_stopped_cluster(SIGTERM, false, 143);
}

TEST_CASE("SIGINT stops a lone core that spins with nothing scheduled") {
  TempDir files;
  const std::string trace = files.file("t.json");
  Started nicemu({"run", "--firmware", firmware("hang.img"), "--watchdog", "0",
                  "--trace", trace});
  REQUIRE(nicemu.wait_until([&] { return fs::exists(trace); },
                            std::chrono::seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(nicemu.pid(), SIGINT);
  CommandResult r = nicemu.finish();
  INFO(r);
  CHECK(r.status == 130);
  CHECK(nicemu.exited());
  check_trace(trace);
  RunSummary s = parse_summary(r.err);
  CHECK(s.state == "running");
  CHECK(s.cycles > 0);
  CHECK(s.virtual_us > 0);
}

TEST_CASE("run --gdb: SIGTERM while waiting for GDB ends the run (143)") {
  Started nicemu({"run", "--firmware", firmware("hello.img"), "--gdb", "0"});
  const std::string err = nicemu.dir().file("stderr");
  REQUIRE(nicemu.wait_until(
      [&] { return contains(read_text(err), "gdb: listening on"); },
      std::chrono::seconds(30)));
  ::kill(nicemu.pid(), SIGTERM);
  CommandResult r = nicemu.finish();
  INFO(r);
  CHECK(r.status == 143);
  CHECK(nicemu.exited());
  CHECK(contains(r.err, "nicemu: stopped by SIGTERM"));
  CHECK(contains(r.err, "--- nicemu:"));
}

TEST_CASE("Ctrl-C stops a benchmark: exit 130, no figures, no host left") {
  // A benchmark that runs for minutes, so that the signal always finds it
  // running (bench via --quick now ends within 200 ms).
  Started nicemu({"bench", "niam", "--json"});
  REQUIRE(nicemu.wait_until([&] { return !nicemu.children().empty(); },
                            std::chrono::seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(-nicemu.pid(), SIGINT);
  CommandResult r = nicemu.finish();
  INFO(r);
  CHECK(r.status == 130);
  CHECK(nicemu.exited());
  CHECK(r.out.empty()); // half the figures would be wrong figures
  CHECK(contains(r.err, "nicemu: stopped by SIGINT"));
  CHECK(nicemu.group_empty());
}
