// `nicemu run --gdb`: the GDB stub's Target over a run's nodes, and the run
// loop's debugger.
//
// Node i is GDB thread i + 1. The run starts halted at reset. A breakpoint,
// a step or a watchpoint stops the core from inside its Unicorn hook: this
// class then serves GDB right there (blocking), while every other core
// stands at a block boundary between its slices, so all of virtual time
// stands still. Continuing just returns from the hook: no block or slice is
// ever split, so a run with breakpoints and steps counts exactly the cycles
// of one without. An interrupt (Ctrl-C) stops the run between slices.
//
// Steps treat a branch and its delay slot as one instruction. A breakpoint
// on a delay slot stops in the delay slot (GDB itself moves its breakpoints
// to the branch). Breakpoints and watchpoints apply to every node.
#pragma once

#include "core/cpu.hpp"
#include "debug/fork_checkpoints.hpp"
#include "gdb/server.hpp"
#include "gdb/stub.hpp"
#include "gdb/target.hpp"
#include "node/simulation.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace nicemu {

// Who the user talks to while the run is held: GDB through the stub over a
// gdb::Server, or the built-in debugger (debug/debugger_cli.hpp).
class DebugFrontend {
public:
  virtual ~DebugFrontend() = default;
  // The run stopped for `event`: serve the user (blocking; virtual time
  // stands still) until the target is resumed or killed.
  virtual void stopped(const gdb::StopEvent &event) = 0;
  // While the run goes on, between slices: look for input, never block.
  virtual void poll() {}
  // Whether a user is there to be told how the run ended.
  virtual bool attached() const = 0;
  // The run ended (an Exited event): serve the user until they leave.
  virtual void ended(const gdb::StopEvent &event) = 0;

  // Reverse execution (gdb_reverse.cpp): a front-end that can hand its
  // session (its points, the command under way...) to the copy of the run
  // resumed from a checkpoint, which then serves the user.
  virtual bool can_travel() const { return false; }
  virtual std::string save_session() const { return {}; }
  virtual bool restore_session(const std::string &) { return false; }
  // Which checkpoints this session may resume: those taken under the same
  // tag (GDB: the same connection).
  virtual uint64_t session_tag() const { return 0; }
  // Going back found nothing to go to, while a command is being served:
  // say so now, without waiting for the user.
  virtual void report_now(const gdb::StopEvent &) {}
  // Going back to a watched access stops after it (GDB then steps back
  // over it itself), or else at the accessing instruction.
  virtual bool reverse_watch_after_access() const { return false; }
  // In a copy resumed for a command that moved the run (GDB's monitor
  // goto): the run stands at `event`; answer that command with `output`,
  // then serve the user as stopped() does.
  virtual void answered(const gdb::StopEvent &event, const std::string &) {
    stopped(event);
  }
};

class GdbTarget final : public gdb::Target, public RunDebugger {
public:
  // Serves GDB on `server` for the nodes of `sim` (all added already).
  GdbTarget(Simulation &sim, gdb::Server &server);
  // Serves `frontend` (set before the run starts) instead.
  explicit GdbTarget(Simulation &sim);
  void set_frontend(DebugFrontend &frontend) { frontend_ = &frontend; }
  ~GdbTarget() override;
  GdbTarget(const GdbTarget &) = delete;
  GdbTarget &operator=(const GdbTarget &) = delete;

  // After the run: tells a connected debugger how it ended (a fault first
  // stops at the faulting node, to look at), then serves it until it goes.
  void run_ended(const RunResult &result, int exit_code);

  // Reverse execution for GDB (docs/replay.md, "Reverse debugging"), on a
  // run that is a function of its inputs (a replay, or firmware with no
  // host program): a checkpoint every `every` of virtual time while GDB is
  // attached (debug/fork_checkpoints.hpp). A non-empty `refusal` says why
  // going back is refused in this run.
  void enable_reverse(Time every, std::string refusal);
  // The command is about to exit with `exit_code`: with checkpoints, the
  // process the shell started exits with it.
  void session_ended(int exit_code);
  // Running again from a checkpoint to where the debugger goes back to:
  // what node `node`'s firmware prints there was shown the first time.
  bool muted(size_t node) const;
  // Moves the whole run to the first moment between rounds at or after
  // virtual time `t`, ignoring breakpoints: forward if `t` is later than
  // now (the next resume stops there), else back through a checkpoint
  // (the copy resumed there stops at `t`: this call does not return). `event`
  // is the stop to report there. False with `why` if it cannot.
  bool go_to_time(Time t, const gdb::StopEvent &event, std::string &why);
  // Back `steps` steps of `thread`'s core at once (as many reverse steps,
  // in two runs from a checkpoint instead of `steps`): does not return,
  // except with `why` if it cannot.
  bool back_steps(gdb::ThreadId thread, uint64_t steps, std::string &why);

  // gdb::Target
  std::vector<gdb::ThreadId> threads() override;
  std::string thread_name(gdb::ThreadId thread) override;
  std::string thread_extra(gdb::ThreadId thread) override;
  bool read_register(gdb::ThreadId thread, unsigned regno,
                     uint32_t &value) override;
  bool write_register(gdb::ThreadId thread, unsigned regno,
                      uint32_t value) override;
  bool read_memory(gdb::ThreadId thread, uint32_t addr,
                   std::span<uint8_t> out) override;
  bool write_memory(gdb::ThreadId thread, uint32_t addr,
                    std::span<const uint8_t> data) override;
  gdb::PointResult insert_breakpoint(gdb::BreakKind kind,
                                     uint32_t addr) override;
  gdb::PointResult remove_breakpoint(gdb::BreakKind kind,
                                     uint32_t addr) override;
  gdb::PointResult insert_watchpoint(gdb::WatchKind kind, uint32_t addr,
                                     uint32_t len) override;
  gdb::PointResult remove_watchpoint(gdb::WatchKind kind, uint32_t addr,
                                     uint32_t len) override;
  void resume(const gdb::ResumePlan &plan) override;
  void interrupt() override { interrupt_ = true; }
  void detach() override;
  void kill() override;
  bool monitor(const std::string &command, std::string &output) override;
  bool can_reverse() override { return checkpoint_every_ != 0; }
  bool reverse(bool step, gdb::ThreadId thread, std::string &why) override;

  // RunDebugger
  void between_slices() override;
  bool killed() const override { return killed_; }
  // The run was asked to stop from outside (Simulation::set_stop_request).
  bool stop_requested() const { return sim_.stop_requested(); }
  Time max_slice() const override;

  // For the cores' hooks (one CpuDebugger per node forwards here).
  void before_instruction(size_t node, uint32_t pc);
  void memory_access(size_t node, uint32_t addr, unsigned size, bool write);

private:
  class CoreHook;
  class StubFrontend;
  class BlockTracer;
  struct Watch {
    gdb::WatchKind kind;
    uint32_t addr, len;
    auto operator<=>(const Watch &) const = default;
  };
  // A breakpoint or watchpoint met while scanning for reverse-continue;
  // the latest is the one to go to. Ordered by the core's virtual time, as
  // the cores run in parallel (the interleaving of their slices is not a
  // fact of the run).
  struct Hit {
    Time time = 0;
    size_t node = 0;
    uint64_t at = 0;      // instructions the core had run before it
    uint64_t stop_at = 0; // where to stop: after the access (watchpoints)
    gdb::StopEvent event;
    bool before(const Hit &o) const {
      return std::tie(time, node, at) < std::tie(o.time, o.node, o.at);
    }
  };
  // Going back: a copy of the process resumed from a checkpoint runs
  // forward, quietly, to an instruction of one core (Goto), through a
  // stretch of the run noting the points it meets (Scan), to a virtual
  // time (ToTime, also forward and then not quiet), to a core's Nth
  // execution of an address (Call), or through a stretch noting where a
  // core's last steps began (Steps).
  struct Travel {
    enum class Mode : uint8_t { None, Goto, Scan, ToTime, Call, Steps };
    Mode mode = Mode::None;
    bool quiet = true;           // the firmware's output was shown before...
    std::vector<uint64_t> shown; // ... up to these positions (empty: all)
    bool answer = false;         // arriving answers a monitor command...
    std::string note;            // ... with this first
    Time until = 0;              // ToTime: the time
    uint32_t address = 0;        // Call: the address (on core `node`)
    uint64_t nth = 0, seen = 0;  // Call: which execution; those met
    std::deque<uint64_t> starts; // Steps: the last `nth` steps' positions
    size_t node = 0;             // Goto: the core
    uint64_t count = 0;          // Goto: stop before its instruction `count`
    bool back_step = false;      // Goto: or one earlier, at a branch (the
                                 // delay slot and its branch are one step)
    gdb::StopEvent event;        // Goto, ToTime: the stop to report there
    std::vector<uint64_t> bound; // Scan: points before these positions
    size_t checkpoint = 0;       // Scan: the checkpoint it started from
    gdb::ThreadId thread = 0;    // Scan: the thread GDB reverses
    std::optional<Hit> latest;   // Scan: the latest point met
  };
  struct NodeDebug {
    bool step = false;       // stop before the next instruction
    bool skip_first = false; // ... after the one at the PC (resumed at a
                             // block boundary, not from inside a hook)
    uint32_t last_pc = 0;    // of the instruction running (watchpoints)
  };

  Node *node_of(gdb::ThreadId thread);
  static gdb::ThreadId thread_of(size_t node) {
    return gdb::ThreadId(node + 1);
  }
  // Stops the run for the debugger and serves it until it resumes.
  // With `answer`, the stop answers a monitor command that moved the run
  // (`answer`, then where the run stands).
  void hold(const gdb::StopEvent &event, const std::string *answer = nullptr);
  void hold_in_hook(size_t node, uint32_t pc, const gdb::StopEvent &event,
                    const std::string *answer = nullptr);
  void update_hooks();
  std::string status_text();
  std::string set_trace(bool on);
  std::string reset_text();
  // Boots every node again (monitor reset); false with `why` if it cannot.
  bool reset_nodes(std::string &why);

  // Reverse execution (gdb_reverse.cpp).
  bool back_refused(std::string &why);
  uint64_t position_of(size_t node) const;
  std::vector<uint64_t> positions() const;
  uint64_t checkpoint_tag() const;
  // A copy whose first process was killed: the run ends (killed()).
  bool session_lost();
  std::string checkpoints_text() const;
  void checkpoint_if_due();
  void take_request(const std::string &request);
  [[noreturn]] void go(size_t checkpoint, nlohmann::json request);
  void travel_instruction(size_t node, uint32_t pc);
  void arrive_in_time();
  // monitor goto TIME, monitor goto-call FUNCTION N [NODE].
  bool monitor_goto(const std::string &args, bool call, std::string &output);
  void scan_hit(size_t node, uint64_t at, uint64_t stop_at,
                const gdb::StopEvent &event);
  bool scan_done() const;
  void finish_scan();

  Simulation &sim_;
  std::unique_ptr<StubFrontend> stub_frontend_; // --gdb
  DebugFrontend *frontend_ = nullptr;
  std::vector<std::unique_ptr<CoreHook>> hooks_;
  // `monitor trace on`: one per node, chained before any profiler.
  std::vector<std::unique_ptr<BlockTracer>> tracers_;
  std::vector<NodeDebug> debug_;
  std::set<uint32_t> soft_breaks_, hard_breaks_;
  std::set<Watch> watches_;
  bool started_ = false;
  bool run_over_ = false; // run_ended() came
  gdb::StopEvent end_event_;
  bool interrupt_ = false;
  bool killed_ = false;
  // `monitor reset` while held inside a block: done at its end.
  bool reset_pending_ = false;
  // Held from inside a hook of this node, before the instruction at pc.
  bool in_hook_ = false;
  size_t hook_node_ = 0;
  uint32_t hook_pc_ = 0;
  // Reverse execution.
  Time checkpoint_every_ = 0; // 0: not offered
  std::string reverse_refusal_;
  std::unique_ptr<ForkCheckpoints> checkpoints_;
  uint64_t rounds_ = 0;
  Travel travel_;
};

} // namespace nicemu
