#include "host/hosts.hpp"

#include "host/host_tape.hpp"

#include "sim/live_bits.hpp"
#include "sim/text_file.hpp"

extern char **environ; // POSIX: the process environment

#include "nicemu/error.hpp"
#include "nicemu/spin_wait.hpp"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace nicemu {

HostGroup::HostGroup(uint32_t nodes, Scheduler &scheduler, const Model &model,
                     HostOptions options, uint32_t per_node)
    : options_(options), model_(model), per_node_(per_node),
      statuses_(nodes * per_node, -1), ended_in_(nodes * per_node) {
  for (uint32_t r = 0; r < nodes * per_node; ++r) {
    agents_.push_back(std::make_unique<HostAgent>(
        r, nodes * per_node, options.arena_bytes, scheduler, model, per_node));
    agents_.back()->set_leases(options.leases);
    agents_.back()->set_observer(
        [this](uint32_t rank) { agent_changed(rank); });
  }
  if (per_node > 1)
    for (uint32_t n = 0; n < nodes; ++n) {
      std::vector<HostMemory *> processes;
      for (uint32_t p = 0; p < per_node; ++p)
        processes.push_back(agents_[n * per_node + p].get());
      node_memories_.push_back(
          std::make_unique<NodeHostMemory>(std::move(processes)));
    }
  active_bits_.assign((agents_.size() + 63) / 64, 0);
  exited_.assign(agents_.size(), 0);
  for (uint32_t r = 0; r < agents_.size(); ++r)
    agent_changed(r);
  spin_between_yields_ = few_enough_to_yield(uint32_t(agents_.size()));
}

HostMemory &HostGroup::node_memory(uint32_t node) {
  if (per_node_ == 1)
    return *agents_[node];
  return *node_memories_[node];
}

void HostGroup::agent_changed(uint32_t rank) {
  const uint64_t bit = uint64_t(1) << (rank % 64);
  if (agents_[rank]->active())
    active_bits_[rank / 64] |= bit;
  else
    active_bits_[rank / 64] &= ~bit;
  if (!agents_[rank]->failure().empty())
    agent_failed_ = true;
  const uint8_t exited = agents_[rank]->exited();
  exited_count_ += exited - exited_[rank];
  exited_[rank] = exited;
}

template <class F> void HostGroup::for_each_active(F f) const {
  for_each_live_bit(active_bits_, [&](size_t r) { f(*agents_[r]); });
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

// How long stopped hosts get to exit before SIGKILL.
constexpr std::chrono::seconds kStopGrace{3};

void on_sigchld(int) {
  int saved = errno; // the interrupted code may be about to read it
  child_event = 1;
  if (child_wake_fd >= 0) {
    char byte = 1;
    (void)!write(child_wake_fd, &byte, 1); // wakes HostGroup::wait
  }
  errno = saved;
}

// The preloaded clock shim: $NICEMU_CLOCK_SHIM if set (empty: none), else
// where it is installed next to nicemu, <exe>/../lib/nicemu (the build tree
// has the same layout around build/emulator/nicemu).
std::string clock_shim_path() {
  if (const char *path = std::getenv("NICEMU_CLOCK_SHIM"))
    return path;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return "";
  exe[n] = 0;
  std::string dir(exe);
  dir.erase(dir.rfind('/'));
  return dir + "/../lib/nicemu/libnicemu_clock.so";
}

// Environment additions for every rank.
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

// What an MPI launcher (Open MPI's mpirun and PMIx, MPICH's Hydra, Slurm's
// PMI) puts into the environment of the nicemu it starts as ranks
// (docs/distributed.md), and the shell's "_" (the command's path). They
// are the emulator's, not the host programs': a host is no rank of the
// job that runs nicemu, and a host's environment is the same whether one
// nicemu or many run the cluster. The environment's size moves the
// stack, and so the addresses a host program sends in its messages.
bool launchers_variable(const std::string &name) {
  static const char *const kPrefixes[] = {"OMPI_", "PMIX_",  "OPAL_", "ORTE_",
                                          "PMI_",  "HYDRA_", "MPIR_", "SLURM_"};
  for (const char *p : kPrefixes)
    if (name.starts_with(p))
      return true;
  return name == "_" || name == "IPATH_NO_BACKTRACE" ||
         name == "HFI_NO_BACKTRACE";
}

// The environment of rank `rank`: the emulator's, plus what the host library
// needs to find its channel (fd 3), wake pipe (fd 4), rank and size.
std::vector<std::string> rank_environment(const std::vector<std::string> &env,
                                          uint32_t rank, uint32_t size) {
  std::vector<std::string> all = {"NICEMU_CHANNEL_FD=3", "NICEMU_WAKE_FD=4",
                                  "NICEMU_RANK=" + std::to_string(rank),
                                  "NICEMU_SIZE=" + std::to_string(size)};
  all.insert(all.end(), env.begin(), env.end());
  auto name_of = [](const std::string &v) { return v.substr(0, v.find('=')); };
  for (char **e = environ; *e; ++e) {
    std::string v(*e);
    bool replaced = std::any_of(all.begin(), all.end(), [&](const auto &a) {
      return name_of(a) == name_of(v);
    });
    if (!replaced && !launchers_variable(name_of(v)))
      all.push_back(std::move(v));
  }
  return all;
}

// Host programs run without address-space randomisation, as programs of
// the 1990s did: every rank of one executable has its globals, heap and
// code at the same addresses, so a pointer one rank sends another (a GAM
// handler argument) names the same variable there, and pointers a program
// prints are the same in every run. The persona is inherited by the
// programs this process starts from now on; it cannot change this one.
void without_aslr() {
  static const bool done = [] {
    int persona = personality(0xffffffff);
    if (persona != -1 && !(persona & ADDR_NO_RANDOMIZE))
      personality(static_cast<unsigned long>(persona) | ADDR_NO_RANDOMIZE);
    return true;
  }();
  (void)done;
}

// posix_spawn, not fork: the emulator of a large run holds gigabytes, and
// fork would copy its page tables once per rank (most of the start-up time
// of a 1024-node run). The channel and wake pipe go to fds 3 and 4; nothing
// else leaks in.
struct RankFds {
  int channel, wake, out = -1, err = -1; // out, err: -1 to inherit ours
};

pid_t spawn_rank(const std::vector<char *> &argv,
                 const std::vector<std::string> &env, RankFds fds,
                 uint32_t rank, uint32_t size) {
  without_aslr();
  // Copies far above 3 and 4 first: the output, channel or wake fds may be
  // 3 or 4 themselves (stdout and stderr are placed before 3 and 4).
  int c = fcntl(fds.channel, F_DUPFD_CLOEXEC, 100);
  int w = fcntl(fds.wake, F_DUPFD_CLOEXEC, 100);
  if (c < 0 || w < 0) {
    int err = errno;
    if (c >= 0)
      close(c);
    throw Error(std::string("run: cannot start host processes: ") +
                std::strerror(err));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (fds.out >= 0)
    posix_spawn_file_actions_adddup2(&actions, fds.out, 1);
  if (fds.err >= 0)
    posix_spawn_file_actions_adddup2(&actions, fds.err, 2);
  posix_spawn_file_actions_adddup2(&actions, c, 3);
  posix_spawn_file_actions_adddup2(&actions, w, 4);
  posix_spawn_file_actions_addclosefrom_np(&actions, 5);
  std::vector<std::string> vars = rank_environment(env, rank, size);
  std::vector<char *> envp;
  for (auto &v : vars)
    envp.push_back(v.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int err =
      posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(c);
  close(w);
  if (err != 0)
    throw Error(std::string("run: cannot start the host program '") + argv[0] +
                "': " + std::strerror(err));
  return pid;
}

// "3", "0, 2-7": ranks in increasing order, runs shortened.
std::string rank_list(const std::vector<uint32_t> &ranks) {
  return number_ranges(ranks, ", ");
}

// "host 3", "hosts 0, 2-7".
std::string hosts_named(const std::vector<uint32_t> &ranks) {
  return (ranks.size() == 1 ? "host " : "hosts ") + rank_list(ranks);
}

// 1500 -> "1.5 s".
std::string format_seconds(int ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", ms / 1000.0);
  return text;
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

void HostGroup::launch(const std::vector<std::string> &argv,
                       const std::vector<bool> &here) {
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
  const uint32_t size = uint32_t(agents_.size());
  if (options_.tag_output && options_.stdout_fd < 0)
    tagged_ = std::make_unique<TaggedOutput>(size);
  for (uint32_t r = 0; r < size; ++r) {
    if (!here.empty() && !here[r / per_node_]) {
      pids_.push_back(0);
      statuses_[r] = 0;
      agents_[r]->process_ended();
      if (tagged_) // its pipes end now: nobody writes them
        tagged_->started(r);
      continue;
    }
    RankFds fds{agents_[r]->channel().fd(), wake_.write_fd, options_.stdout_fd};
    if (tagged_) {
      fds.out = tagged_->stdout_fd(r);
      fds.err = tagged_->stderr_fd(r);
    }
    pids_.push_back(spawn_rank(args, env, fds, r, size));
    if (tape_)
      tape_->set_pid(r, int(pids_.back()));
    if (tagged_)
      tagged_->started(r);
  }
  if (tagged_)
    tagged_->start();
}

void HostGroup::record(HostTape &tape) {
  tape_ = &tape;
  tape.set_ranks(ranks(), per_node_);
  for (auto &a : agents_)
    a->set_tape(&tape);
}

void HostGroup::replay(HostTape &tape) {
  if (tape.ranks() != ranks())
    throw Error("replay: the recording has " + std::to_string(tape.ranks()) +
                " host ranks, the run " + std::to_string(ranks()));
  tape_ = &tape;
  for (auto &a : agents_) {
    a->set_tape(&tape);
    a->channel().make_private(); // no process shares it
  }
  play();
}

// A process whose recording ended while the run went on ended by itself
// then (its exit, or a crash); one that the end of the recorded run
// stopped is ended by stop(), as it was then.
void HostGroup::play() {
  for (uint32_t r = 0; r < agents_.size(); ++r) {
    if (statuses_[r] != -1)
      continue;
    HostAgent &a = *agents_[r];
    tape_->feed(r, a.channel().control());
    a.poll();
    int status = -1;
    if (tape_->ended(r, status) && tape_->ended_by_itself(r) &&
        (tape_->ended_in_call(r) || a.waiting_in().empty()))
      note_end(r, status);
  }
  if (failure_.empty() && !tape_->divergence().empty())
    failure_ = tape_->divergence();
}

void HostGroup::note_end(uint32_t rank, int status) {
  if (tape_ && !tape_->playing())
    tape_->process_ended(rank, status, !stopping_,
                         !agents_[rank]->waiting_in().empty());
  statuses_[rank] = status;
  ended_in_[rank] = agents_[rank]->waiting_in();
  agents_[rank]->process_ended();
  bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!clean && failure_.empty()) {
    failed_status_ = status;
    failure_ = "host rank " + std::to_string(rank) + " (" +
               std::to_string(rank < pids_.size() ? int(pids_[rank])
                              : tape_             ? tape_->pid(rank)
                                                  : 0) +
               ") " + describe_status(status);
  }
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

// Only an active host can post a request (HostAgent::poll). A failure is
// taken from the first failed host in rank order, as a scan that checks
// each host after its poll would find it.
void HostGroup::poll() {
  if (tape_ && tape_->playing())
    play();
  for_each_active([](HostAgent &a) { a.poll(); });
  if (agent_failed_ && failure_.empty())
    for (const auto &a : agents_)
      if (!a->failure().empty()) {
        failure_ = a->failure();
        break;
      }
  reap(false);
}

// A host that has its reply is computing, so active.
void HostGroup::events_ran() {
  for_each_active([](HostAgent &a) { a.release_reply(); });
}

Time HostGroup::earliest_action_except(uint32_t rank) const {
  Time t = kTimeNever;
  for (const auto &a : agents_)
    if (a->rank() != rank)
      t = std::min(t, a->earliest_access());
  return t;
}

Time HostGroup::earliest_action_on(uint32_t node, uint32_t except) const {
  Time t = kTimeNever;
  for (uint32_t r = node * per_node_;
       r < (node + 1) * per_node_ && r < agents_.size(); ++r)
    if (r != except)
      t = std::min(t, agents_[r]->earliest_access());
  return t;
}

Time HostGroup::earliest_action() const {
  Time t = kTimeNever; // only active hosts act on their own
  for_each_active(
      [&t](const HostAgent &a) { t = std::min(t, a.earliest_action()); });
  return t;
}

// A host that computes for a long time holds the run: say so, once, and
// give up after the timeout instead of hanging. A stop request ends the
// wait too (within 100 ms): the run loop then stops.
void HostGroup::wait() {
  // Played hosts never keep the run waiting: the run needs a host whose
  // recording has nothing more, so it went another way than recorded.
  if (tape_ && tape_->playing()) {
    for (uint32_t r = 0; r < agents_.size() && failure_.empty(); ++r)
      if (statuses_[r] == -1 && agents_[r]->active() &&
          agents_[r]->earliest_action() == earliest_action())
        failure_ = "replay diverged from the recording: the run waits for "
                   "host rank " +
                   std::to_string(r) +
                   ", whose recording has nothing more (the recorded run "
                   "ended before it acted again)";
    return;
  }
  // A host usually posts its next request within microseconds: yielding the
  // core meanwhile (often to that host) is far cheaper than sleeping and
  // being woken (see hostlib/src/host_end.cpp, kYields). Between yields,
  // while the hosts are few, watch for the request a few microseconds: a
  // yield with nothing else to run still costs a system call (1.2 us on
  // the machines of 2026-11, more under some hypervisors) that a host
  // answering at once would not need (docs/benchmarks.md, "Speed").
  for (int i = 0; i < kWaitYields; ++i) {
    if (request_waiting() || child_event)
      return;
    if (spin_between_yields_) {
      auto until = std::chrono::steady_clock::now() + kSpinBetweenYields;
      do
        for (int k = 0; k < 8; ++k) {
          if (request_waiting() || child_event)
            return;
          cpu_relax();
        }
      while (std::chrono::steady_clock::now() < until);
    }
    sched_yield();
  }
  // Flag, then look again: a host posts, then looks at the flag (both
  // seq_cst), so either this sees its request or it writes the wake byte.
  auto sleeping = [this](bool on) {
    for (auto &a : agents_)
      a->channel().set_emulator_sleeping(on);
  };
  sleeping(true);
  struct Awake {
    decltype(sleeping) &set;
    ~Awake() { set(false); }
  } awake{sleeping};
  if (request_waiting())
    return;
  auto start = std::chrono::steady_clock::now();
  while (!wake_.wait(100)) {
    reap(false);
    if (!failure_.empty() || finished() ||
        (stop_request_ && stop_request_->requested()))
      return;
    auto waited = std::chrono::steady_clock::now() - start;
    if (waited > std::chrono::milliseconds(options_.host_timeout_ms)) {
      // The hosts the run waits for: those whose clock is the earliest.
      std::vector<uint32_t> holding;
      for (uint32_t r = 0; r < agents_.size(); ++r)
        if (agents_[r]->earliest_action() == earliest_action())
          holding.push_back(r);
      failure_ = hosts_named(holding) + " made no library call for " +
                 format_seconds(options_.host_timeout_ms) +
                 " of wall time (computing, or stuck; --host-timeout)";
      return;
    }
  }
}

bool HostGroup::request_waiting() const {
  bool waiting = false; // only active hosts post
  for_each_active([&waiting](const HostAgent &a) {
    waiting = waiting || a.request_waiting();
  });
  return waiting;
}

// Ranks with the same state are listed together, so that the one host that
// left early stands out among a thousand that wait.
std::string HostGroup::stall_of(uint32_t r) const {
  if (r < statuses_.size() && statuses_[r] != -1)
    return describe_status(statuses_[r]);
  if (std::string call = agents_.at(r)->waiting_in(); !call.empty())
    return "waiting in " + call;
  if (agents_[r]->said_exit())
    return "exiting";
  return "";
}

std::string HostGroup::describe_stall() const {
  std::vector<std::string> stalls;
  for (uint32_t r = 0; r < agents_.size(); ++r)
    stalls.push_back(stall_of(r));
  return describe_stall(stalls);
}

std::string HostGroup::describe_stall(const std::vector<std::string> &stalls) {
  std::vector<std::pair<std::string, std::vector<uint32_t>>> groups;
  for (uint32_t r = 0; r < stalls.size(); ++r) {
    const std::string &what = stalls[r];
    if (what.empty())
      continue;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto &x) { return x.first == what; });
    if (g == groups.end())
      groups.push_back({what, {r}});
    else
      g->second.push_back(r);
  }
  std::string out;
  for (const auto &[what, ranks] : groups) {
    if (!out.empty())
      out += "; ";
    out += hosts_named(ranks);
    out += ": ";
    out += what;
  }
  return out;
}

bool HostGroup::finished() const {
  return exited_count_ == agents_.size();
}

// Hosts that said they exit are left to finish (and flush their output);
// the others are told the cluster stops and, if they linger, terminated.
// A host that ignores SIGTERM, or hangs on its way out, is killed after a
// grace period: stopping must not hang the emulator.
void HostGroup::stop() {
  stopping_ = true;
  // As the recorded run's end left them; a host whose recording goes on
  // stays "not replayed to its end" (outcomes).
  if (tape_ && tape_->playing()) {
    for (uint32_t r = 0; r < agents_.size(); ++r) {
      int status = -1;
      if (statuses_[r] == -1 && tape_->ended(r, status))
        note_end(r, status == -1 ? SIGKILL : status);
    }
    return;
  }
  for (auto &a : agents_)
    if (!a->said_exit())
      a->shut_down();
  for (uint32_t r = 0; r < pids_.size(); ++r)
    if (statuses_[r] == -1 && !agents_[r]->said_exit())
      kill(pids_[r], SIGTERM);
  auto give_up = std::chrono::steady_clock::now() + kStopGrace;
  auto running = [this] {
    return std::count(statuses_.begin(), statuses_.end(), -1) > 0;
  };
  for (;;) {
    child_event = 1; // look at every process, signal or not
    reap(false);
    if (!running() || std::chrono::steady_clock::now() >= give_up)
      break;
    usleep(10'000);
  }
  for (uint32_t r = 0; r < pids_.size(); ++r)
    if (statuses_[r] == -1)
      kill(pids_[r], SIGKILL);
  reap(true);
  if (tagged_)
    tagged_->finish(); // every host has ended: the rest of their lines
  child_wake_fd = -1;  // the pipe closes with this group
}

std::vector<std::string> HostGroup::outcomes() const {
  std::vector<std::string> out;
  for (uint32_t r = 0; r < statuses_.size(); ++r) {
    const int s = statuses_[r];
    if (s == -1) {
      out.push_back(tape_ && tape_->playing() ? "not replayed to its end"
                                              : "still running");
      continue;
    }
    out.push_back(describe_status(s));
    // A clean exit in the middle of a call skipped the library's exit
    // (_exit, or another thread's exit): say so, or nothing would.
    if (WIFEXITED(s) && WEXITSTATUS(s) == 0 && !ended_in_[r].empty())
      out.back() += ", in the middle of " + ended_in_[r] +
                    " (without the host library's exit)";
  }
  return out;
}

namespace {

int status_code(int s) {
  if (WIFSIGNALED(s))
    return 128 + WTERMSIG(s);
  if (WIFEXITED(s))
    return WEXITSTATUS(s);
  return 0;
}

} // namespace

// The host that failed first stopped the others: they may have failed in
// turn (their calls fail once the run stops), but its status is the run's
// (an MPI program's MPI_Abort code, say).
int HostGroup::exit_code() const {
  if (failed_status_ != -1)
    return status_code(failed_status_);
  for (int s : statuses_)
    if (s != -1 && status_code(s) != 0)
      return status_code(s);
  return 0;
}

} // namespace nicemu
