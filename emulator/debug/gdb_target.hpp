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
#include "gdb/server.hpp"
#include "gdb/stub.hpp"
#include "gdb/target.hpp"
#include "node/simulation.hpp"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
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
  void hold(const gdb::StopEvent &event);
  void hold_in_hook(size_t node, uint32_t pc, const gdb::StopEvent &event);
  void update_hooks();
  std::string status_text();
  std::string set_trace(bool on);
  std::string reset_text();
  // Boots every node again (monitor reset); false with `why` if it cannot.
  bool reset_nodes(std::string &why);

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
  bool interrupt_ = false;
  bool killed_ = false;
  // `monitor reset` while held inside a block: done at its end.
  bool reset_pending_ = false;
  // Held from inside a hook of this node, before the instruction at pc.
  bool in_hook_ = false;
  size_t hook_node_ = 0;
  uint32_t hook_pc_ = 0;
};

} // namespace nicemu
