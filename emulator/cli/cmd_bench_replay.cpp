// nicemu bench replay [--json] [--quick] [--repeats N]: what recording
// costs a run and what replaying it costs, as a user runs them: `nicemu
// run`, `nicemu run --record` and `nicemu replay`, each a process of its
// own, the three in turn for each repetition; then reverse execution on a
// replay under a debugger, at several checkpoint intervals: what the
// checkpoints cost and how long a reverse-stepi takes (docs/benchmarks.md,
// "Replay").
#include "bench/shipped_files.hpp"
#include "cli/bench_json.hpp"
#include "commands.hpp"
#include "nicemu/error.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

extern char **environ; // POSIX: the process environment

namespace nicemu::cli {

namespace {

namespace fs = std::filesystem;

struct ReplayBenchOptions {
  std::string firmware_dir, programs_dir;
  bool quick = false;
  int repeats = 3;
};

struct ReplayCase {
  std::string name;
  std::vector<std::string> run;     // nicemu run's options
  std::vector<std::string> program; // after --
  // Wall seconds of each repetition.
  std::vector<double> plain, record, replay;
  uint64_t recording_bytes = 0;
  bool identical = true; // every replay's summary equals its recording's
  std::string command() const {
    std::string c = "nicemu run";
    for (const std::string &a : run)
      c += " " + fs::path(a).filename().string();
    c += " --";
    for (const std::string &a : program)
      c += " " + fs::path(a).filename().string();
    return c;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A scratch directory, gone with it.
struct Scratch {
  std::string path;
  Scratch() {
    std::string pattern =
        (fs::temp_directory_path() / "nicemu-bench-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw Error("bench replay: cannot create a temporary directory");
    path = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

std::string read_all(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts this nicemu with `args`, its output into `out` and `err`, in a
// process group of its own if `own_group`; returns its pid.
pid_t spawn_nicemu(const std::vector<std::string> &args, const std::string &out,
                   const std::string &err, bool own_group = false) {
  std::vector<std::string> all = {"/proc/self/exe"};
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
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (own_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  pid_t pid = -1;
  int e = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (e != 0)
    throw Error("bench replay: cannot start nicemu " + args[0]);
  return pid;
}

// Runs this nicemu with `args`, its output into `out` and `err`; returns
// the wall seconds it took. Throws unless it exits 0.
double timed_nicemu(const std::vector<std::string> &args,
                    const std::string &out, const std::string &err) {
  auto start = std::chrono::steady_clock::now();
  pid_t pid = spawn_nicemu(args, out, err);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("bench replay: nicemu " + args[0] + " failed:\n" +
                read_all(err));
  return seconds;
}

// The summary less its wall time: what a replay must give again.
std::string summary(const std::string &err) {
  size_t at = err.find("--- nicemu:");
  if (at == std::string::npos)
    return "";
  std::istringstream in(err.substr(at));
  std::string kept;
  for (std::string line; std::getline(in, line);)
    kept += line.substr(0, line.find(", wall time")) + "\n";
  return kept;
}

std::vector<ReplayCase> plan(const ReplayBenchOptions &o) {
  const std::string fw = o.firmware_dir + "/", bin = o.programs_dir + "/";
  auto make = [](std::string name, std::vector<std::string> run,
                 std::vector<std::string> program) {
    ReplayCase c;
    c.name = std::move(name);
    c.run = std::move(run);
    c.program = std::move(program);
    return c;
  };
  std::vector<ReplayCase> cases = {
      make("gam_pingpong", {"-n", "2", "--firmware", fw + "niam.img"},
           {bin + "gam_pingpong"}),
      make("fm_pingpong",
           {"-n", "2", "--model", "comet", "--firmware", fw + "via.img"},
           {bin + "fm_pingpong"}),
      make("barrier_64", {"-n", "64", "--firmware", fw + "niam.img"},
           {bin + "niam_bench_barrier", o.quick ? "20" : "100"})};
  if (o.quick)
    cases[1].program.push_back("--quick");
  for (const ReplayCase &c : cases) {
    for (const std::string &a : c.run)
      if (a.find('/') != std::string::npos && !fs::exists(a))
        throw Error("bench replay: " + a +
                    " not found (build the firmware, or give --firmware-dir)");
    if (!fs::exists(c.program[0]))
      throw Error("bench replay: " + c.program[0] +
                  " not found (build the examples, or give --programs-dir)");
  }
  return cases;
}

void run_case(ReplayCase &c, int repeats) {
  Scratch dir;
  const std::string out = dir.path + "/out", err = dir.path + "/err",
                    rec = dir.path + "/run.nrec";
  auto with = [&c](std::vector<std::string> extra) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), c.run.begin(), c.run.end());
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.insert(args.end(), c.program.begin(), c.program.end());
    return args;
  };
  for (int i = 0; i < repeats; ++i) {
    c.plain.push_back(timed_nicemu(with({}), out, err));
    c.record.push_back(timed_nicemu(with({"--record", rec}), out, err));
    const std::string recorded = summary(read_all(err));
    c.recording_bytes = fs::file_size(rec);
    c.replay.push_back(timed_nicemu({"replay", rec}, out, err));
    c.identical =
        c.identical && !recorded.empty() && summary(read_all(err)) == recorded;
  }
}

// ---- Reverse execution -----------------------------------------------------

// A bare client of the GDB remote protocol: what the figures need.
class RspClient {
public:
  explicit RspClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 ||
        ::connect(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0)
      throw Error("bench replay: cannot connect to nicemu's GDB port");
    timeval tv{120, 0}; // a reply in two minutes, or the figure fails
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1; // as gdb: small packets, each answered before the next
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RspClient() { ::close(fd_); }
  RspClient(const RspClient &) = delete;
  RspClient &operator=(const RspClient &) = delete;

  void send_raw(const std::string &bytes) {
    if (::write(fd_, bytes.data(), bytes.size()) != ssize_t(bytes.size()))
      throw Error("bench replay: the GDB connection broke");
  }
  void send(const std::string &body) {
    unsigned sum = 0;
    for (unsigned char c : body)
      sum += c;
    char tail[4];
    std::snprintf(tail, sizeof tail, "#%02x", sum & 0xff);
    send_raw("$" + body + tail);
  }
  // The next packet's body (acknowledged).
  std::string reply() {
    std::string body;
    char c = 0;
    while (read_byte(c) && c != '$') {
    }
    while (read_byte(c) && c != '#')
      body += c;
    char sum[2];
    if (!read_byte(sum[0]) || !read_byte(sum[1]))
      throw Error("bench replay: no reply from nicemu's GDB stub");
    send_raw("+");
    return body;
  }
  // A stop reply, skipping console output (O packets).
  std::string stop() {
    for (;;) {
      std::string r = reply();
      if (r.empty() || r[0] != 'O' || r == "OK")
        return r;
    }
  }
  // `monitor COMMAND`: its text.
  std::string monitor(const std::string &command) {
    static const char *kHex = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : command)
      hex += std::string{kHex[c >> 4], kHex[c & 15]};
    send("qRcmd," + hex);
    std::string text;
    for (std::string r = reply(); r != "OK" && r.size() > 1 && r[0] == 'O';
         r = reply())
      for (size_t i = 1; i + 1 < r.size(); i += 2)
        text += char(std::stoi(r.substr(i, 2), nullptr, 16));
    return text;
  }

private:
  bool read_byte(char &c) { return ::read(fd_, &c, 1) == 1; }
  int fd_ = -1;
};

struct ReverseFigures {
  std::string interval;
  double stop_us = 0;                // where the reverse-steps started
  size_t checkpoints = 0;            // kept at that point
  double take_ms = 0;                // mean time to take one
  double restore_ms = 0;             // the last resume of one
  double memory_mib = 0;             // Pss of every copy together
  std::vector<double> reverse_stepi; // wall seconds each
};

// A number after `key` in `text` (0 if absent).
double number_after(const std::string &text, const std::string &key) {
  size_t at = text.find(key);
  return at == std::string::npos ? 0
                                 : std::atof(text.c_str() + at + key.size());
}

// The proportional memory of every process in group `pgid`, in MiB.
double group_memory_mib(pid_t pgid) {
  double kib = 0;
  DIR *proc = opendir("/proc");
  if (!proc)
    return 0;
  while (dirent *e = readdir(proc)) {
    std::string stat = read_all(std::string("/proc/") + e->d_name + "/stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    long ppid = 0, group = 0;
    fields >> state >> ppid >> group;
    if (group == pgid)
      kib += number_after(
          read_all(std::string("/proc/") + e->d_name + "/smaps_rollup"),
          "Pss:");
  }
  closedir(proc);
  return kib / 1024;
}

// nicemu replay REC --gdb 0 --checkpoint-every INTERVAL, driven over the
// remote protocol: run to `stop_us` of virtual time (interrupting every few
// milliseconds of wall time), then reverse-stepi `steps` times.
ReverseFigures reverse_figures(const std::string &recording,
                               const std::string &interval, double stop_us,
                               int steps, const std::string &scratch) {
  ReverseFigures f;
  f.interval = interval;
  const std::string err = scratch + "/gdb.err", out = scratch + "/gdb.out";
  // A group of its own: its checkpoints are counted, and killed with it.
  pid_t pid = spawn_nicemu(
      {"replay", recording, "-q", "--gdb", "0", "--checkpoint-every", interval},
      out, err, true);
  auto finish = [pid] {
    ::kill(-pid, SIGKILL); // the process and its checkpoints
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  };
  try {
    const std::string tag = "gdb: listening on 127.0.0.1:";
    uint16_t port = 0;
    for (int i = 0; i < 2000 && !port; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::string text = read_all(err);
      if (size_t at = text.find(tag);
          at != std::string::npos && text.find('\n', at) != text.npos)
        port = uint16_t(std::atoi(text.c_str() + at + tag.size()));
    }
    if (!port)
      throw Error("bench replay: nicemu replay --gdb did not say its port");
    RspClient gdb(port);
    gdb.send("?");
    gdb.reply();
    double now_us = 0;
    while (now_us < stop_us) {
      gdb.send("vCont;c");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gdb.send_raw("\x03");
      std::string stop = gdb.stop();
      if (stop.empty() || stop[0] != 'T')
        throw Error("bench replay: the replay stopped with '" + stop +
                    "' before " + std::to_string(stop_us) +
                    " us of virtual time");
      now_us = number_after(gdb.monitor("status"), "(");
    }
    f.stop_us = now_us;
    for (int i = 0; i < steps; ++i) {
      auto start = std::chrono::steady_clock::now();
      gdb.send("bs");
      std::string stop = gdb.stop();
      f.reverse_stepi.push_back(std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count());
      if (stop.empty() || stop[0] != 'T')
        throw Error("bench replay: reverse-stepi got '" + stop + "'");
    }
    std::string text = gdb.monitor("checkpoints");
    f.checkpoints = size_t(number_after(text, "checkpoints: "));
    f.take_ms = number_after(text, "(the last), ");
    f.restore_ms = number_after(text, "resuming one: ");
    f.memory_mib = group_memory_mib(pid);
    gdb.send("k");
  } catch (...) {
    finish();
    throw;
  }
  finish();
  return f;
}

// Records `c` once and measures reverse execution on its replay at each
// interval, from 80 % of the way through the run.
std::vector<ReverseFigures> reverse_bench(const ReplayCase &c, bool quick) {
  Scratch dir;
  const std::string rec = dir.path + "/run.nrec", out = dir.path + "/out",
                    err = dir.path + "/err";
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), c.run.begin(), c.run.end());
  for (const char *a : {"--record", "", "--"})
    args.push_back(*a ? a : rec);
  args.insert(args.end(), c.program.begin(), c.program.end());
  timed_nicemu(args, out, err);
  double end_us = number_after(read_all(err), "virtual time ");
  std::vector<ReverseFigures> figures;
  for (const char *interval : {"1ms", "10ms", "100ms"})
    figures.push_back(
        reverse_figures(rec, interval, 0.8 * end_us, quick ? 3 : 5, dir.path));
  return figures;
}

// Checkpoint files of a run of firmware alone (nicemu run --checkpoint-dir,
// nicemu replay --from): their size, the time to take one (from the run's
// own report), and the time to put one in place and to run on from it.
struct FileFigures {
  std::string command;
  size_t files = 0;
  double kib = 0;
  std::vector<double> take_ms, restore_ms, resumed_seconds, run_seconds;
  bool identical = true; // every resumed run's summary is the full run's
};

FileFigures file_bench(const std::string &firmware_dir, int repeats) {
  Scratch dir;
  const std::vector<std::string> run = {"run", "-n", "64", "--firmware",
                                        firmware_dir + "/link_check.img"};
  FileFigures f;
  f.command = "nicemu run -n 64 --firmware link_check.img --checkpoint-every "
              "100us --checkpoint-dir DIR; nicemu replay --from DIR/<the "
              "middle one>";
  const std::string out = dir.path + "/out", err = dir.path + "/err";
  for (int i = 0; i < repeats; ++i) {
    const std::string ck = dir.path + "/ck" + std::to_string(i);
    std::vector<std::string> args = run;
    for (const std::string &a :
         {std::string("--checkpoint-dir"), ck,
          std::string("--checkpoint-every"), std::string("100us")})
      args.push_back(a);
    f.run_seconds.push_back(timed_nicemu(args, out, err));
    std::string full = read_all(err);
    const size_t at = full.find("\ncheckpoints: ");
    if (at == std::string::npos)
      throw Error("bench replay: the run did not report its checkpoints");
    const std::string report = full.substr(at);
    full.resize(at + 1); // the rest as a run without checkpoints shows it
    f.files = size_t(number_after(report, "checkpoints: "));
    f.kib = number_after(report, "(");
    f.take_ms.push_back(number_after(report, "KiB, "));
    std::vector<std::string> files;
    for (const auto &e : fs::directory_iterator(ck))
      files.push_back(e.path().string());
    if (files.empty())
      throw Error("bench replay: the run left no checkpoint");
    std::sort(files.begin(), files.end());
    f.resumed_seconds.push_back(
        timed_nicemu({"replay", "--from", files[files.size() / 2]}, out, err));
    const std::string resumed = read_all(err);
    f.restore_ms.push_back(number_after(resumed, "put in place in "));
    f.identical = f.identical && summary(resumed) == summary(full) &&
                  !summary(full).empty();
  }
  return f;
}

void print_files(const FileFigures &f) {
  auto cell = [](const std::vector<double> &v, const char *format) {
    char text[64];
    std::snprintf(text, sizeof text, format, median(v),
                  *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()));
    return std::string(text);
  };
  std::printf("\ncheckpoint files (%s)\n\n", f.command.c_str());
  std::printf("%5s %8s %-22s %-22s %-22s %-22s %9s\n", "files", "KiB each",
              "take ms", "restore ms", "run s", "resumed run s", "identical");
  std::printf("%5zu %8.1f %-22s %-22s %-22s %-22s %9s\n", f.files, f.kib,
              cell(f.take_ms, "%.2f [%.2f-%.2f]").c_str(),
              cell(f.restore_ms, "%.2f [%.2f-%.2f]").c_str(),
              cell(f.run_seconds, "%.3f [%.3f-%.3f]").c_str(),
              cell(f.resumed_seconds, "%.3f [%.3f-%.3f]").c_str(),
              f.identical ? "yes" : "NO");
}

void print_reverse(const std::vector<ReverseFigures> &figures,
                   const ReplayCase &c) {
  std::printf("\nreverse execution on the replay of %s (nicemu replay --gdb; "
              "reverse-stepi from the first stop past 80%% of the run)\n\n",
              c.name.c_str());
  std::printf("%-9s %10s %11s %9s %10s %10s %-26s\n", "interval", "stop us",
              "checkpoints", "take ms", "resume ms", "memory MiB",
              "reverse-stepi ms");
  for (const ReverseFigures &f : figures) {
    std::vector<double> ms;
    for (double s : f.reverse_stepi)
      ms.push_back(s * 1e3);
    char cell[64];
    std::snprintf(cell, sizeof cell, "%.1f [%.1f-%.1f]", median(ms),
                  *std::min_element(ms.begin(), ms.end()),
                  *std::max_element(ms.begin(), ms.end()));
    std::printf("%-9s %10.1f %11zu %9.2f %10.2f %10.1f %-26s\n",
                f.interval.c_str(), f.stop_us, f.checkpoints, f.take_ms,
                f.restore_ms, f.memory_mib, cell);
  }
}

void print_table(const std::vector<ReplayCase> &cases, bool quick,
                 int repeats) {
  std::printf("nicemu bench replay%s (each run a nicemu process, as a user "
              "starts it; wall seconds: median [min-max] of %d)\n\n",
              quick ? " --quick" : "", repeats);
  std::printf("%-13s %-22s %-22s %9s %-22s %8s %10s %9s\n", "case", "run s",
              "run --record s", "overhead", "replay s", "replay/", "recording",
              "identical");
  std::printf("%-13s %-22s %-22s %9s %-22s %8s %10s %9s\n", "", "", "", "", "",
              "record", "KiB", "");
  auto cell = [](const std::vector<double> &v) {
    char text[64];
    std::snprintf(text, sizeof text, "%.3f [%.3f-%.3f]", median(v),
                  *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()));
    return std::string(text);
  };
  for (const ReplayCase &c : cases)
    std::printf("%-13s %-22s %-22s %8.1f%% %-22s %8.2f %10.1f %9s\n",
                c.name.c_str(), cell(c.plain).c_str(), cell(c.record).c_str(),
                100 * (median(c.record) / median(c.plain) - 1),
                cell(c.replay).c_str(), median(c.replay) / median(c.record),
                double(c.recording_bytes) / 1024, c.identical ? "yes" : "NO");
  std::printf("\n");
  for (const ReplayCase &c : cases)
    std::printf("%-13s %s\n", c.name.c_str(), c.command().c_str());
}

nlohmann::json to_json(const std::vector<ReplayCase> &cases,
                       const std::vector<ReverseFigures> &reverse,
                       const FileFigures &files, bool quick, int repeats) {
  nlohmann::json j = bench_json("replay");
  j["checkpoint_files"] = {{"command", files.command},
                           {"files", files.files},
                           {"kib_each", files.kib},
                           {"take_ms", files.take_ms},
                           {"restore_ms", files.restore_ms},
                           {"run_seconds", files.run_seconds},
                           {"resumed_seconds", files.resumed_seconds},
                           {"identical", files.identical}};
  j["reverse"] = nlohmann::json::array();
  for (const ReverseFigures &f : reverse)
    j["reverse"].push_back({{"case", cases[1].name},
                            {"checkpoint_every", f.interval},
                            {"stop_us", f.stop_us},
                            {"checkpoints", f.checkpoints},
                            {"take_ms", f.take_ms},
                            {"resume_ms", f.restore_ms},
                            {"memory_mib", f.memory_mib},
                            {"reverse_stepi_seconds", f.reverse_stepi}});
  j["quick"] = quick;
  j["repeats"] = repeats;
  j["cases"] = nlohmann::json::array();
  for (const ReplayCase &c : cases)
    j["cases"].push_back(
        {{"name", c.name},
         {"command", c.command()},
         {"wall",
          {{"run_seconds", c.plain},
           {"record_seconds", c.record},
           {"replay_seconds", c.replay},
           {"record_overhead", median(c.record) / median(c.plain) - 1},
           {"replay_over_record", median(c.replay) / median(c.record)}}},
         {"recording_bytes", c.recording_bytes},
         {"identical", c.identical}});
  return j;
}

} // namespace

void add_replay_bench(CLI::App &bench) {
  auto opts = std::make_shared<ReplayBenchOptions>();
  auto json = std::make_shared<bool>(false);
  CLI::App *cmd = bench.add_subcommand(
      "replay", "What --record costs a run and what nicemu replay costs, "
                "against the plain run: GAM and FM ping-pongs, a 64-node "
                "barrier loop; the recordings' sizes");
  cmd->add_flag("--json", *json,
                "print the figures as JSON (see docs/benchmarks.md)");
  cmd->add_flag("--quick", opts->quick,
                "FM ping-pong --quick, 20 barriers instead of 100");
  cmd->add_option("--repeats", opts->repeats,
                  "repetitions of each case (run, record, replay in turn)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--firmware-dir", opts->firmware_dir,
                  "directory with niam.img and via.img");
  cmd->add_option("--programs-dir", opts->programs_dir,
                  "directory with gam_pingpong, fm_pingpong and "
                  "niam_bench_barrier");
  cmd->callback([opts, json] {
    if (opts->firmware_dir.empty())
      opts->firmware_dir = shipped_firmware_dir();
    if (opts->programs_dir.empty())
      opts->programs_dir = shipped_programs_dir();
    std::vector<ReplayCase> cases = plan(*opts);
    for (ReplayCase &c : cases)
      run_case(c, opts->repeats);
    // Reverse execution: on the FM ping-pong's replay, the longest in
    // virtual time.
    std::vector<ReverseFigures> reverse = reverse_bench(cases[1], opts->quick);
    FileFigures files = file_bench(opts->firmware_dir, opts->repeats);
    if (*json) {
      std::cout
          << to_json(cases, reverse, files, opts->quick, opts->repeats).dump(2)
          << "\n";
    } else {
      print_table(cases, opts->quick, opts->repeats);
      print_reverse(reverse, cases[1]);
      print_files(files);
    }
    bool identical = files.identical && std::all_of(cases.begin(), cases.end(),
                                                    [](const ReplayCase &c) {
                                                      return c.identical;
                                                    });
    if (!identical)
      throw Error("bench replay: a replay's summary differs from its "
                  "recorded run's");
  });
}

} // namespace nicemu::cli
