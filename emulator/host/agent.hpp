// One host process as the emulator sees it: its channel, the requests it
// makes at its own virtual time (charged their host-bus cost from the
// model), and its registered memory as the NIC's DMA engines see it.
#pragma once

#include "devices/host_memory.hpp"
#include "host/channel.hpp"
#include "nicemu/model.hpp"
#include "sim/scheduler.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nicemu {

class Node;
class HostTape;

// A request kind as observers name it ("WaitWord").
const char *op_name(channel::Op op);

// What the host's own side costs: noticing a change in its own memory. The
// card's windows charge their own bus costs (devices/host_port.hpp).
struct HostCosts {
  Time poll_own_memory = 0;
  Time interrupt = 0; // card -> a host sleeping until it is interrupted
  static HostCosts from(const Model &model);
};

class HostAgent final : public HostMemory, public EventOwner {
public:
  HostAgent(uint32_t rank, uint32_t size, uint64_t arena_bytes,
            Scheduler &scheduler, const Model &model, uint32_t per_node = 1);
  ~HostAgent() override;

  channel::EmulatorEnd &channel() { return *channel_; }
  void attach(Node *node);
  uint32_t rank() const { return rank_; }

  // Picks up a posted request, if any, and schedules it at its time.
  void poll();
  // Hands the process the reply delivered at the time the simulation has
  // just run (deliver_reply), if any: called once every event at that time
  // has run (HostGroup::release_replies).
  void release_reply();
  // Whether polls that match at once come with a lease (on by default;
  // nicemu run --no-leases). Never on a node with several host processes.
  void set_leases(bool on) { leases_ = on; }
  // When the card's core sleeps, how long nothing can wake it: asked with
  // (now, node, rank) when a lease is granted (Simulation::quiet_until).
  // Unset: a lease assumes the core could start a transfer at once.
  using QuietUntil = std::function<Time(Time, uint32_t, uint32_t)>;
  void set_quiet_until(QuietUntil quiet) { quiet_until_ = std::move(quiet); }
  // Records what this host puts into the run, or plays it back instead of
  // a process (host/host_tape.hpp). Null: neither.
  void set_tape(HostTape *tape) { tape_ = tape; }
  // Polls of its own memory this host made: all of them, and those its
  // library answered under a lease (no round trip to the emulator).
  uint64_t polls() const { return polls_; }
  uint64_t leased_polls() const { return leased_polls_; }
  // Whether the host has posted a request that poll() has not taken in.
  bool request_waiting() const;
  // The earliest virtual time at which this host may still act on its own:
  // its clock while it computes; never while it waits for the emulator.
  Time earliest_action() const;
  // The earliest virtual time at which it may still make a card access:
  // its clock while it computes; while it waits, its reply's time (its
  // request's if no reply is scheduled yet); never once it exited.
  Time earliest_access() const;
  bool exited() const { return phase_ == Phase::Exited; }
  // Starting or computing: it may post a request or act on its own.
  bool active() const {
    return phase_ == Phase::Starting || phase_ == Phase::Computing;
  }
  // Told (with the rank) whenever active() or failure() may have changed,
  // so that the group keeps its set of active hosts (HostGroup).
  void set_observer(std::function<void(uint32_t rank)> f) {
    observer_ = std::move(f);
  }
  bool said_exit() const { return said_exit_; }
  int exit_status() const { return exit_status_; }
  // The process is gone (exited or killed): no more requests.
  void process_ended();
  // Tells a waiting host the cluster is stopping.
  void shut_down();
  // Why this host must stop the run (a posted write the card refused), or
  // empty.
  const std::string &failure() const { return failure_; }
  // The library call this host waits in ("WaitEither"), or empty when it
  // is not waiting for the emulator.
  std::string waiting_in() const;

  // Checkpoints (a replay's: no process shares the channel): the agent's
  // place in its calls, what it has scheduled, its channel and memory
  // (host/host_state.cpp).
  void save_state(StateWriter &out) const;
  void load_state(StateReader &in);
  void restore_event(Scheduler &scheduler, const SavedEvent &e) override;

  // HostMemory (bus addresses)
  bool registered(uint64_t addr, size_t len) const override;
  bool read(uint64_t addr, void *out, size_t len) const override;
  bool write(uint64_t addr, const void *in, size_t len) override;

private:
  enum class Phase { Starting, Computing, Busy, Exited };
  // What the agent's events do; each takes its operands from the queue
  // of its kind (the events of one kind run in the order they were
  // scheduled), so that a checkpoint can save them as plain values.
  enum EventKind : uint32_t {
    kRequestEvent = 1,
    kPostedWriteEvent = 2,
    kReplyEvent = 3,
    kDeadlineEvent = 4,
  };
  void run_request();
  void run_posted_write();
  void deliver_reply();
  void deadline_passed(Time deadline);
  void handle(const channel::Request &r);
  // A request stamped past the end of virtual time: BadArgument at once.
  void refuse(const channel::Request &r);
  void take_posted_write();
  // A Read or Write of the card through its host port; the reply is
  // BadArgument where the port refuses it.
  void card_access(const channel::Request &r, Time at);
  // Answers at `t`. `lease_poll`: a poll that matched at once, costing
  // this much; its reply may come with a lease (check_watch).
  void reply_at(Time t, channel::Reply r, Time lease_poll = 0);
  // `at_request`: the watch was just set by a WaitWord request, and a
  // match now may come with a lease.
  void check_watch(bool at_request = false);
  void report_local_polls();
  void watch_deadline(Time deadline);
  bool word_in_arena(uint64_t offset) const;
  uint32_t arena_word(uint64_t offset) const;
  void taped_read(uint64_t offset, size_t len) const;
  channel::Reply immediate(const channel::Request &r);

  uint32_t rank_;
  Scheduler &scheduler_;
  const Model &model_;
  HostCosts costs_;
  std::unique_ptr<channel::EmulatorEnd> channel_;
  Node *node_ = nullptr;
  Phase phase_ = Phase::Starting;
  std::function<void(uint32_t)> observer_;
  void set_phase(Phase phase);
  void fail(std::string why);     // the first failure is kept
  Time clock_ = 0;                // the host's virtual time while it computes
  std::optional<Time> reply_due_; // the scheduled reply, while it waits
  Time request_at_ = 0;           // the time of the request it waits in
  bool said_exit_ = false;
  int exit_status_ = 0;
  std::string failure_;
  bool leases_ = true;
  QuietUntil quiet_until_;
  // A reply delivered and not yet handed to the process (release_reply).
  std::optional<channel::Reply> ready_;
  HostTape *tape_ = nullptr;
  uint32_t per_node_ = 1;
  // The latest lease granted: no write to this host's memory may land
  // before it.
  Time promised_until_ = 0;
  uint64_t polls_ = 0, leased_polls_ = 0;
  // WaitWord in progress.
  struct Watch {
    uint64_t offset;
    uint32_t mask, expected;
    std::optional<uint64_t> other_offset; // WaitEither: the second word
    uint32_t other_expected = 0;
    bool until = false;     // WaitWordUntil: reply.value says matched (0)
    bool interrupt = false; // WaitInterrupt: woken by an interrupt
  };
  std::optional<Watch> watch_;
  std::optional<EventId> deadline_; // WaitWordUntil's timeout event
  // The operands of the scheduled events, by kind, oldest first.
  struct ScheduledRequest {
    channel::Request request;
    Time at = 0;
    bool clock_ok = true;
  };
  struct ScheduledWrite {
    channel::Request write;
    Time at = 0, cost = 0;
  };
  struct ScheduledReply {
    channel::Reply reply;
    Time lease_poll = 0;
  };
  std::deque<ScheduledRequest> requests_;
  std::deque<ScheduledWrite> posted_writes_;
  std::deque<ScheduledReply> replies_;
  // The request being served, for observers.
  const char *call_name_ = "None";
  Time call_start_ = 0;
};

} // namespace nicemu
