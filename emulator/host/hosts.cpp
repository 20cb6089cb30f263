#include "host/hosts.hpp"

#include "nicemu/error.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace nicemu {

HostGroup::HostGroup(uint32_t nodes, Scheduler &scheduler, const Model &model,
                     HostOptions options)
    : options_(options), model_(model), statuses_(nodes, -1) {
  for (uint32_t r = 0; r < nodes; ++r)
    agents_.push_back(std::make_unique<HostAgent>(r, nodes, options.arena_bytes,
                                                  scheduler, model));
}

HostGroup::~HostGroup() {
  stop();
}

namespace {

// Set by SIGCHLD: some host process changed state, reap before trusting the
// run's view of who is alive. Checking a flag keeps waitpid calls off the
// run loop's hot path.
volatile sig_atomic_t child_event = 1;
int child_wake_fd = -1;

void on_sigchld(int) {
  child_event = 1;
  if (child_wake_fd >= 0) {
    char byte = 1;
    (void)!write(child_wake_fd, &byte, 1); // wakes HostGroup::wait
  }
}

// The preloaded clock shim: next to an installed nicemu, else the build's.
std::string clock_shim_path() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    std::string installed = std::string(exe);
    installed = installed.substr(0, installed.rfind('/')) +
                "/../lib/nicemu/libnicemu_clock.so";
    if (access(installed.c_str(), R_OK) == 0)
      return installed;
  }
#ifdef NICEMU_CLOCK_SHIM
  return NICEMU_CLOCK_SHIM;
#else
  return "";
#endif
}

// Environment additions for every rank, made before forking.
std::vector<std::string> shared_environment(const Model &model) {
  std::vector<std::string> env;
  if (auto it = model.timing_ps.find("host.clock_read");
      it != model.timing_ps.end())
    env.push_back("NICEMU_CLOCK_COST_PS=" + std::to_string(it->second));
  std::string shim = clock_shim_path();
  if (!shim.empty() && access(shim.c_str(), R_OK) == 0) {
    const char *old = std::getenv("LD_PRELOAD");
    env.push_back("LD_PRELOAD=" + shim + (old ? std::string(":") + old : ""));
    // An AddressSanitizer build of the program must accept the shim first.
    const char *asan = std::getenv("ASAN_OPTIONS");
    env.push_back(std::string("ASAN_OPTIONS=") + (asan ? asan : "") +
                  (asan ? ":" : "") + "verify_asan_link_order=0");
  }
  return env;
}

// In the child, between fork and exec (the emulator is single-threaded).
[[noreturn]] void exec_rank(const std::vector<char *> &argv,
                            std::vector<std::string> &env, int channel_fd,
                            int wake_fd, int stdout_fd, uint32_t rank,
                            uint32_t size) {
  // First: stdout_fd may be 3 or 4, which the channel and wake pipe take.
  if (stdout_fd >= 0)
    dup2(stdout_fd, 1);
  // The channel on fd 3, the wake pipe on fd 4; nothing else leaks in.
  int c = dup(channel_fd), w = dup(wake_fd);
  dup2(c, 3);
  dup2(w, 4);
  close_range(5, ~0u, 0);
  char vars[4][40];
  std::strcpy(vars[0], "NICEMU_CHANNEL_FD=3");
  std::strcpy(vars[1], "NICEMU_WAKE_FD=4");
  std::snprintf(vars[2], sizeof vars[2], "NICEMU_RANK=%u", rank);
  std::snprintf(vars[3], sizeof vars[3], "NICEMU_SIZE=%u", size);
  for (auto &v : vars)
    putenv(v);
  for (auto &e : env)
    putenv(e.data());
  execvp(argv[0], argv.data());
  const char msg[] = "nicemu: cannot start the host program\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(127);
}

std::string describe_status(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "ended (status " + std::to_string(status) + ")";
}

} // namespace

void HostGroup::launch(const std::vector<std::string> &argv) {
  if (argv.empty())
    throw Error("run: no host program after --");
  child_wake_fd = wake_.write_fd;
  struct sigaction sa {};
  sa.sa_handler = on_sigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);
  std::vector<char *> args;
  for (const auto &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env = shared_environment(model_);
  std::fflush(nullptr);
  for (uint32_t r = 0; r < agents_.size(); ++r) {
    pid_t pid = fork();
    if (pid < 0)
      throw Error(std::string("run: cannot start host processes: ") +
                  std::strerror(errno));
    if (pid == 0)
      exec_rank(args, env, agents_[r]->channel().fd(), wake_.write_fd,
                options_.stdout_fd, r, uint32_t(agents_.size()));
    pids_.push_back(pid);
  }
}

void HostGroup::note_end(uint32_t rank, int status) {
  statuses_[rank] = status;
  agents_[rank]->process_ended();
  bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!clean && failure_.empty())
    failure_ = "host rank " + std::to_string(rank) + " (" +
               std::to_string(pids_[rank]) + ") " + describe_status(status);
}

void HostGroup::reap(bool block) {
  if (!block && !child_event)
    return;
  child_event = 0;
  for (uint32_t r = 0; r < pids_.size(); ++r) {
    if (statuses_[r] != -1)
      continue;
    int status = 0;
    pid_t got = waitpid(pids_[r], &status, block ? 0 : WNOHANG);
    if (got == pids_[r])
      note_end(r, status);
  }
}

void HostGroup::poll() {
  for (auto &a : agents_)
    a->poll();
  reap(false);
}

Time HostGroup::earliest_action() const {
  Time t = kTimeNever;
  for (const auto &a : agents_)
    t = std::min(t, a->earliest_action());
  return t;
}

// A host that computes for a long time holds the run: say so, once, and
// give up after the timeout instead of hanging.
void HostGroup::wait() {
  auto start = std::chrono::steady_clock::now();
  while (!wake_.wait(100)) {
    reap(false);
    if (!failure_.empty() || finished())
      return;
    auto waited = std::chrono::steady_clock::now() - start;
    if (waited > std::chrono::milliseconds(options_.host_timeout_ms)) {
      failure_ = "no host made a library call for " +
                 std::to_string(options_.host_timeout_ms / 1000) +
                 " s of wall time (a host is computing, or stuck)";
      return;
    }
  }
}

bool HostGroup::finished() const {
  return std::all_of(agents_.begin(), agents_.end(),
                     [](const auto &a) { return a->exited(); });
}

// Hosts that said they exit are left to finish (and flush their output);
// the others are told the cluster stops and, if they linger, terminated.
void HostGroup::stop() {
  for (auto &a : agents_)
    if (!a->said_exit())
      a->shut_down();
  for (uint32_t r = 0; r < pids_.size(); ++r)
    if (statuses_[r] == -1 && !agents_[r]->said_exit())
      kill(pids_[r], SIGTERM);
  reap(true);
  child_wake_fd = -1; // the pipe closes with this group
}

std::vector<std::string> HostGroup::outcomes() const {
  std::vector<std::string> out;
  for (int s : statuses_)
    out.push_back(s == -1 ? "still running" : describe_status(s));
  return out;
}

int HostGroup::exit_code() const {
  for (int s : statuses_) {
    if (s == -1)
      continue;
    if (WIFSIGNALED(s))
      return 128 + WTERMSIG(s);
    if (WIFEXITED(s) && WEXITSTATUS(s) != 0)
      return WEXITSTATUS(s);
  }
  return 0;
}

} // namespace nicemu
