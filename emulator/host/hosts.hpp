// The host processes of a run: one per node, started like mpirun starts
// ranks, each with its channel; the run waits for them and stops cleanly
// when one fails.
#pragma once

#include "host/agent.hpp"
#include "host/channel.hpp"
#include "host/node_memory.hpp"
#include "host/tagged_output.hpp"
#include "node/simulation.hpp"

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace nicemu {

struct HostOptions {
  uint64_t arena_bytes = 64ull << 20; // registered-memory arena per host
  int host_timeout_ms = 60'000; // a host computing this long holds the run
  // When >= 0, the hosts' stdout goes here instead of the emulator's, so a
  // caller (the benchmarks) can read what they print. Not closed by us.
  int stdout_fd = -1;
  // Every line a host prints, prefixed by its rank (host/tagged_output.hpp;
  // not with stdout_fd).
  bool tag_output = false;
  // Host leases (HostAgent::check_watch): polls of a host's own memory
  // answered by its library while nothing can change there. Same virtual
  // results either way; off only to check a surprising result.
  bool leases = true;
};

class HostGroup final : public ExternalActor, public HostPeers {
public:
  // `per_node` processes on each of `nodes` nodes: rank r drives node
  // r / per_node.
  HostGroup(uint32_t nodes, Scheduler &scheduler, const Model &model,
            HostOptions options, uint32_t per_node = 1);
  ~HostGroup() override;

  HostAgent &agent(uint32_t rank) { return *agents_[rank]; }
  // Host memory as node `node`'s card sees it: its process's, or, with
  // several processes per node, each one's in its own bus window.
  HostMemory &node_memory(uint32_t node);
  const HostAgent &agent(uint32_t rank) const { return *agents_[rank]; }
  uint32_t ranks() const { return uint32_t(agents_.size()); }
  // Starts `argv` once per rank. Throws nicemu::Error if it cannot.
  // `here` (one MPI rank's share of a spread run, by node; empty: all):
  // only the hosts of those nodes start; the others' agents count as
  // ended, and their rank of the run tells how they went.
  void launch(const std::vector<std::string> &argv,
              const std::vector<bool> &here = {});
  // Records what the hosts put into the run (before launch), or plays a
  // recording back with no host process (instead of launch). The tape must
  // outlive the group. Throws nicemu::Error if a recording to play has
  // another rank count.
  void record(HostTape &tape);
  void replay(HostTape &tape);
  // Stops what is still running (after the run ended), reaps every process.
  void stop();
  // wait() returns early once this is requested (null: nothing to honour).
  void set_stop_request(const StopRequest *stop) { stop_request_ = stop; }
  // Per rank: "exited with status 0", "killed by signal 11 (...)".
  std::vector<std::string> outcomes() const;
  // 0 if every host exited 0, else the status (or 128+signal) of the host
  // whose failure stopped the run, or of the first failing rank.
  int exit_code() const;

  void poll() override;
  Time earliest_action() const override;
  // Hands out the replies delivered at the time just run
  // (HostAgent::release_reply).
  void events_ran() override;
  // HostPeers
  Time earliest_action_except(uint32_t rank) const override;
  Time earliest_action_on(uint32_t node, uint32_t except) const override;
  void wait() override;
  // Whether some host posted a request not taken in yet.
  bool request_waiting() const;
  static constexpr int kWaitYields = 200;
  // How long wait() watches for a request between two yields, when the
  // hosts are few enough (spin_between_yields_).
  static constexpr std::chrono::nanoseconds kSpinBetweenYields{3000};
  bool finished() const override;
  std::string failure() const override { return failure_; }
  bool failing() const override { return agent_failed_ || !failure_.empty(); }
  std::string describe_stall() const override;
  // What host `rank` stands at when nothing can move ("waiting in
  // WaitWord", "exited with status 3"); empty: nothing to say.
  std::string stall_of(uint32_t rank) const;
  // Such words by host rank, grouped: "hosts 0-1, 3: waiting in
  // WaitEither; host 2: exited with status 0".
  static std::string describe_stall(const std::vector<std::string> &stalls);
  // Checkpoints: only of a replay (no process runs; host/host_state.cpp).
  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;

private:
  void reap(bool block);
  // Playing: posts each host's next recorded request, ends the processes
  // whose recording ends, and takes a divergence as the run's failure.
  void play();
  void note_end(uint32_t rank, int status);
  // Calls f(agent) for each active host (HostAgent::active) in rank
  // order: the round's polls cost the hosts that may post, not all.
  template <class F> void for_each_active(F f) const;
  void agent_changed(uint32_t rank);

  std::vector<std::unique_ptr<NodeHostMemory>> node_memories_;
  HostOptions options_;
  const Model &model_;
  channel::WakePipe wake_;
  std::vector<std::unique_ptr<HostAgent>> agents_;
  std::vector<uint64_t> active_bits_; // bit r: agents_[r]->active()
  std::vector<uint8_t> exited_;       // agents_[r]->exited(), as last told
  size_t exited_count_ = 0;
  bool spin_between_yields_ = false; // few hosts: wait() spins between yields
  bool agent_failed_ = false;        // some agent's failure() is set
  uint32_t per_node_ = 1;
  std::vector<pid_t> pids_;
  std::vector<int> statuses_; // waitpid status, -1 while running
  // The call a host was in when its process ended by itself, else "".
  std::vector<std::string> ended_in_;
  std::string failure_;
  int failed_status_ = -1; // the wait status of the host that stopped the run
  const StopRequest *stop_request_ = nullptr;
  std::unique_ptr<TaggedOutput> tagged_; // --tag-output
  HostTape *tape_ = nullptr;             // record() or replay()
  bool stopping_ = false;                // in stop()
};

} // namespace nicemu
