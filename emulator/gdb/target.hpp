// What the GDB stub drives: threads, registers, memory, execution,
// breakpoints. The stub knows nothing else of the machine; the emulator
// implements this interface over its nodes (node N is thread N + 1, since the
// protocol reserves 0 for "any thread" and -1 for "all threads").
//
// All-stop model: either every thread is stopped (the debugger holds the
// target, virtual time stands still) or the target runs after resume() until
// it stops again, which the integrator reports with Stub::on_stop().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nicemu::gdb {

using ThreadId = uint32_t;
constexpr ThreadId kAnyThread = 0;           // "0" in the protocol
constexpr ThreadId kAllThreads = 0xffffffff; // "-1" in the protocol

// GDB's own signal numbers (the protocol's, not the host's).
enum class Signal : uint8_t {
  None = 0,
  Int = 2,
  Ill = 4,
  Trap = 5,
  Abrt = 6,
  Emt = 7,
  Fpe = 8,
  Kill = 9,
  Bus = 10,
  Segv = 11,
  Sys = 12,
};

enum class BreakKind : uint8_t { Software, Hardware };
enum class WatchKind : uint8_t { Write, Read, Access };

// The target's answer to a breakpoint or watchpoint request. Unsupported
// makes GDB fall back (e.g. to single-stepping software watchpoints);
// Failed makes the GDB command fail.
enum class PointResult : uint8_t { Done, Unsupported, Failed };

// What one thread does when the debugger resumes the target.
enum class Action : uint8_t { Stay, Continue, Step };

struct ResumePlan {
  struct Entry {
    ThreadId thread;
    Action action;
  };
  std::vector<Entry> threads;   // at most one entry per thread
  Action others = Action::Stay; // every thread not listed

  Action action_for(ThreadId thread) const {
    for (const Entry &e : threads)
      if (e.thread == thread)
        return e.action;
    return others;
  }
};

// Why the target stopped, as the integrator reports it to Stub::on_stop().
struct StopEvent {
  enum class Kind : uint8_t {
    Signal,        // a step ended (Trap), an interrupt (Int), a fault, ...
    SoftwareBreak, // hit a Z0 breakpoint
    HardwareBreak, // hit a Z1 breakpoint
    Watch,         // a Z2/Z3/Z4 watchpoint triggered at `address`
    Exited,        // the run ended with `exit_code`
    Terminated,    // the run ended by `signal`
  };
  Kind kind = Kind::Signal;
  ThreadId thread = kAnyThread; // the thread that stopped; any: the stub picks
  Signal signal = Signal::Trap;
  WatchKind watch = WatchKind::Write;
  uint32_t address = 0;  // Watch: the data address accessed
  uint8_t exit_code = 0; // Exited
  // Going back reached the oldest state the target can go back to (GDB
  // says "No more reverse-execution history").
  bool history_start = false;

  static StopEvent stepped(ThreadId t) { return {Kind::Signal, t}; }
  static StopEvent interrupted(ThreadId t) {
    return {Kind::Signal, t, Signal::Int};
  }
  static StopEvent fault(ThreadId t, Signal s) { return {Kind::Signal, t, s}; }
  static StopEvent breakpoint(ThreadId t, BreakKind k) {
    return {k == BreakKind::Software ? Kind::SoftwareBreak
                                     : Kind::HardwareBreak,
            t};
  }
  static StopEvent watchpoint(ThreadId t, WatchKind k, uint32_t addr) {
    return {Kind::Watch, t, Signal::Trap, k, addr};
  }
  static StopEvent exited(uint8_t code) {
    return {Kind::Exited, kAnyThread, Signal::None, WatchKind::Write, 0, code};
  }
  static StopEvent terminated(Signal s) {
    return {Kind::Terminated, kAnyThread, s};
  }
};

class Target {
public:
  virtual ~Target() = default;

  // Threads in the order `info threads` lists them; never empty.
  virtual std::vector<ThreadId> threads() = 0;
  // A short name ("node3") and a state ("running", "sleeping", "fault")
  // that `info threads` shows.
  virtual std::string thread_name(ThreadId thread) = 0;
  virtual std::string thread_extra(ThreadId /*thread*/) { return {}; }

  // Registers in GDB's MIPS numbering (gdb/mips_tdesc.hpp). Reading false:
  // not available (the FPU of a core without one); writing false: refused.
  // GDB's G packet writes every register back, so writing r0 or a
  // read-only register with its current value should succeed.
  virtual bool read_register(ThreadId thread, unsigned regno,
                             uint32_t &value) = 0;
  virtual bool write_register(ThreadId thread, unsigned regno,
                              uint32_t value) = 0;

  // Memory as `thread`'s core sees it (each node has its own). False if any
  // byte is not accessible; then nothing was written.
  virtual bool read_memory(ThreadId thread, uint32_t addr,
                           std::span<uint8_t> out) = 0;
  virtual bool write_memory(ThreadId thread, uint32_t addr,
                            std::span<const uint8_t> data) = 0;

  // Points apply to every thread: GDB sees one address space. The stub
  // calls insert once per distinct point and remove only for inserted ones.
  virtual PointResult insert_breakpoint(BreakKind kind, uint32_t addr) = 0;
  virtual PointResult remove_breakpoint(BreakKind kind, uint32_t addr) = 0;
  virtual PointResult insert_watchpoint(WatchKind kind, uint32_t addr,
                                        uint32_t len) = 0;
  virtual PointResult remove_watchpoint(WatchKind kind, uint32_t addr,
                                        uint32_t len) = 0;

  // Starts the threads as planned and returns; the integrator calls
  // Stub::on_stop() when the target has stopped (all threads halted), which
  // may happen inside this call (e.g. a step done at once). If several
  // threads stop at once, report one and keep the others for the next
  // resume. GDB single-steps MIPS with temporary breakpoints (Z0 and
  // vCont;c), so Step is rare; `set scheduler-locking step` makes GDB move
  // only the stepped thread.
  virtual void resume(const ResumePlan &plan) = 0;
  // Ctrl-C or a debugger attaching to a running target: stop soon, then
  // report StopEvent::interrupted() (or whatever stopped it first).
  virtual void interrupt() = 0;
  // The debugger leaves: run on freely without it. The stub has removed
  // every point it inserted.
  virtual void detach() = 0;
  // The debugger ends the run.
  virtual void kill() = 0;

  // Reverse execution (bs, bc): whether the target offers it, and going
  // back one step of `thread` (step) or to the latest breakpoint or
  // watchpoint hit before the present (continue). Like resume(), the stop
  // is reported through Stub::on_stop(), perhaps inside this call; false
  // (with `why`) if the target cannot go back now.
  virtual bool can_reverse() { return false; }
  virtual bool reverse(bool step, ThreadId thread, std::string &why) {
    (void)step;
    (void)thread;
    why = "this target cannot go back";
    return false;
  }

  // `monitor COMMAND`: text for GDB to print; false if the command failed
  // or is unknown (the text then says why).
  virtual bool monitor(const std::string &command, std::string &output) {
    output = "no monitor commands\n";
    (void)command;
    return false;
  }
};

} // namespace nicemu::gdb
