// The built-in debugger's execution commands and what it says when the run
// stops. A step is GdbTarget's (a branch and its delay slot are one); lines
// come from the DWARF line table; calls are stepped over with a temporary
// (hardware) breakpoint at the return address, taken only by the same node
// with its stack pointer back where it was (not by a recursive call).
#include "debug/debugger_cli.hpp"

#include "debug/disasm.hpp"
#include "gdb/mips_tdesc.hpp"
#include "nicemu/image.hpp"
#include "profile/line_table.hpp"

#include <cstdio>

namespace nicemu {

namespace {

// Instruction steps a line step may take before it gives up.
constexpr uint64_t kStepBudget = 1'000'000;

bool is_step_end(const gdb::StopEvent &e) {
  return e.kind == gdb::StopEvent::Kind::Signal &&
         e.signal == gdb::Signal::Trap;
}

} // namespace

void DebuggerCli::resume_all(gdb::Action self) {
  gdb::ResumePlan plan;
  if (self == gdb::Action::Step)
    plan.threads.push_back({current_, gdb::Action::Step});
  plan.others = gdb::Action::Continue;
  resumed_ = true;
  target_.resume(plan);
}

void DebuggerCli::set_temp(uint32_t addr, uint32_t sp) {
  clear_temp();
  op_.temp = addr;
  op_.temp_sp = sp;
  target_.insert_breakpoint(gdb::BreakKind::Hardware, addr);
}

void DebuggerCli::clear_temp() {
  if (op_.temp)
    target_.remove_breakpoint(gdb::BreakKind::Hardware, op_.temp);
  op_.temp = 0;
}

bool DebuggerCli::cmd_continue() {
  resume_all(gdb::Action::Continue);
  return true;
}

// A command made of steps begins: its count (the first argument, 1
// without) and, for line steps (`by_line`), the line it starts on; with no
// line there, it steps instructions instead (`insn`).
bool DebuggerCli::begin_steps(OpKind kind, bool by_line, OpKind insn,
                              const Args &args, uint64_t budget) {
  op_ = {};
  op_.kind = kind;
  op_.thread = current_;
  op_.count = 1;
  op_.budget = budget;
  if (!args.empty()) {
    auto n = resolve(args[0]);
    if (!n || *n == 0) {
      op_ = {};
      return false;
    }
    op_.count = *n;
  }
  if (by_line) {
    uint32_t pc = reg(gdb::mips::kPc);
    auto line = line_at(pc);
    if (!line) {
      op_.kind = insn; // no source line here: one instruction
    } else {
      op_.line = line->line;
      op_.file = line->file;
      const ImageSymbol *f = function_at(pc);
      op_.func = f ? f->address : 0;
      op_.frame = reg(gdb::mips::kSp);
    }
  }
  return true;
}

bool DebuggerCli::cmd_step(OpKind kind, bool over, const Args &args) {
  if (!begin_steps(kind, kind == OpKind::Line, OpKind::Insn, args, kStepBudget))
    return false;
  op_.over = over;
  return step_again();
}

bool DebuggerCli::step_again() {
  uint32_t pc = reg(gdb::mips::kPc), word = 0;
  op_.last_pc = pc;
  op_.last_call = read_word(pc, word) && mips_is_call(word);
  resume_all(gdb::Action::Step);
  return true;
}

bool DebuggerCli::cmd_finish() {
  std::vector<Frame> f = frames(current_);
  if (f.size() < 2) {
    error("finish: no caller frame found (bt)");
    return false;
  }
  op_ = {};
  op_.kind = OpKind::Finish;
  op_.thread = current_;
  out_ << "run till exit from " << location(f[0].pc) << "\n";
  set_temp(f[1].pc, f[1].sp);
  resume_all(gdb::Action::Continue);
  return true;
}

bool DebuggerCli::cmd_until(const Args &args) {
  if (args.empty()) {
    bool resumed = cmd_step(OpKind::Line, true, args);
    op_.no_back = true;
    return resumed;
  }
  auto addr = resolve(args[0]);
  if (!addr)
    return false;
  op_ = {};
  op_.kind = OpKind::Until;
  op_.thread = current_;
  set_temp(*addr, 0);
  resume_all(gdb::Action::Continue);
  return true;
}

// A stop during an operation: resume again (true) or end it (false).
bool DebuggerCli::advance(const gdb::StopEvent &event) {
  if (op_.kind == OpKind::WatchStep)
    return end_watch_step(event);
  bool mine = event.thread == op_.thread;
  if (event.kind == gdb::StopEvent::Kind::HardwareBreak && op_.temp) {
    uint32_t pc = 0, sp = 0;
    target_.read_register(event.thread, gdb::mips::kPc, pc);
    target_.read_register(event.thread, gdb::mips::kSp, sp);
    if (mine && pc == op_.temp && sp >= op_.temp_sp) {
      clear_temp();
      return arrived();
    }
    resume_all(gdb::Action::Continue); // another node, or a deeper call
    return true;
  }
  if (!is_step_end(event) || !mine || op_.temp)
    return false;
  uint32_t pc = reg(gdb::mips::kPc);
  bool entered = op_.last_call && pc != op_.last_pc + 8;
  if (entered && (op_.over || (op_.kind == OpKind::Line && !line_at(pc)))) {
    set_temp(op_.last_pc + 8, reg(gdb::mips::kSp)); // back from the call
    resume_all(gdb::Action::Continue);
    return true;
  }
  return arrived();
}

// The operation's thread came where a step or a call took it.
bool DebuggerCli::arrived() {
  if (op_.kind == OpKind::Insn)
    return --op_.count > 0 && step_again();
  if (op_.kind != OpKind::Line)
    return false; // finish, until LOCATION: there
  uint32_t pc = reg(gdb::mips::kPc);
  const ImageSymbol *f = function_at(pc);
  uint32_t func = f ? f->address : 0;
  bool returned = reg(gdb::mips::kSp) > op_.frame;
  if (auto line = line_at(pc)) {
    bool elsewhere = func != op_.func || line->file != op_.file || returned;
    bool done = op_.no_back ? elsewhere || line->line > *op_.line
                            : elsewhere || line->line != *op_.line;
    if (done) {
      if (--op_.count == 0)
        return false;
      op_.line = line->line;
      op_.file = line->file;
      op_.func = func;
      op_.frame = reg(gdb::mips::kSp);
    }
  }
  if (--op_.budget == 0) {
    out_ << "gave up after " << kStepBudget
         << " instruction steps without a new source line\n";
    return false;
  }
  return step_again();
}

// A watched access stops before it happens: step over it with the
// watchpoints out, then compare (a write that changes nothing is not shown,
// as in GDB).
bool DebuggerCli::start_watch_step(const gdb::StopEvent &event) {
  clear_temp();
  op_ = {};
  op_.kind = OpKind::WatchStep;
  op_.thread = event.thread;
  op_.watch = event;
  current_ = event.thread;
  for (const Point &p : points_)
    if (p.watch && event.address >= p.addr && event.address - p.addr < p.len) {
      uint8_t b[8] = {};
      target_.read_memory(current_, p.addr, {b, std::min<size_t>(p.len, 8)});
      for (int i = 7; i >= 0; --i)
        op_.old_value = op_.old_value << 8 | b[i];
      break;
    }
  for (const Point &p : points_)
    if (p.watch)
      target_.remove_watchpoint(p.kind, p.addr, p.len);
  resume_all(gdb::Action::Step);
  return true;
}

bool DebuggerCli::end_watch_step(const gdb::StopEvent &event) {
  for (const Point &p : points_)
    if (p.watch)
      target_.insert_watchpoint(p.kind, p.addr, p.len);
  gdb::StopEvent hit = op_.watch;
  uint64_t old_value = op_.old_value;
  op_ = {};
  if (!is_step_end(event) || event.thread != hit.thread)
    return false; // something else stopped the run first
  for (const Point &p : points_) {
    if (!p.watch || hit.address < p.addr || hit.address - p.addr >= p.len)
      continue;
    uint8_t b[8] = {};
    target_.read_memory(hit.thread, p.addr, {b, std::min<size_t>(p.len, 8)});
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i)
      value = value << 8 | b[i];
    if (p.kind == gdb::WatchKind::Write && value == old_value) {
      resume_all(gdb::Action::Continue);
      return true;
    }
    static const char *kNames[] = {"watchpoint", "read watchpoint",
                                   "access watchpoint"};
    out_ << "node" << hit.thread - 1 << ": " << kNames[size_t(p.kind)] << " "
         << p.id << ": " << p.what << "\n";
    if (p.kind == gdb::WatchKind::Read)
      out_ << "Value = " << value << "\n";
    else
      out_ << "Old value = " << old_value << "\nNew value = " << value << "\n";
    break;
  }
  return false;
}

void DebuggerCli::stopped(const gdb::StopEvent &event) {
  if (!started_) {
    started_ = true;
    size_t n = target_.threads().size();
    out_ << "nicemu debug: " << n << " node" << (n == 1 ? "" : "s")
         << " halted at reset (help: the commands)\n";
    print_where(current_);
    serve();
    return;
  }
  if (going_back()) {
    if (keep_going_back(event)) { // could not: said so
      serve();
      return;
    }
    if (op_.kind == OpKind::ToTime) {
      std::string status;
      if (target_.monitor("status", status))
        out_ << status.substr(0, status.find('\n') + 1);
    }
  } else if (event.kind == gdb::StopEvent::Kind::Watch &&
             op_.kind != OpKind::WatchStep) {
    if (start_watch_step(event))
      return;
  } else if (op_.kind != OpKind::None && advance(event)) {
    return;
  }
  clear_temp();
  op_ = {};
  report(event);
  serve();
}

void DebuggerCli::ended(const gdb::StopEvent &event) {
  clear_temp();
  op_ = {};
  ended_ = true;
  out_ << "the run ended: exit code " << unsigned(event.exit_code) << "\n";
  serve();
}

void DebuggerCli::report(const gdb::StopEvent &event) {
  using Kind = gdb::StopEvent::Kind;
  size_t n = target_.threads().size();
  if (event.thread >= 1 && event.thread <= n)
    current_ = event.thread;
  uint32_t pc = reg(gdb::mips::kPc);
  std::string node = "node" + std::to_string(current_ - 1) + ": ";
  if (event.kind == Kind::SoftwareBreak) {
    for (const Point &p : points_)
      if (!p.watch && p.addr == pc) {
        out_ << node << "breakpoint " << p.id << "\n";
        break;
      }
  } else if (event.kind == Kind::Watch) { // gone back to a watched access
    for (const Point &p : points_)
      if (p.watch && event.address >= p.addr &&
          event.address - p.addr < p.len) {
        static const char *kNames[] = {"watchpoint", "read watchpoint",
                                       "access watchpoint"};
        out_ << node << kNames[size_t(p.kind)] << " " << p.id << ": " << p.what
             << " (the access is this instruction's)\n";
        break;
      }
  } else if (event.history_start) {
    out_ << node
         << "no more reverse-execution history (the earliest checkpoint)\n";
  } else if (event.kind == Kind::Signal && event.signal == gdb::Signal::Int) {
    out_ << node << "interrupted\n";
  } else if (event.kind == Kind::Signal && event.signal != gdb::Signal::Trap) {
    out_ << node << "fault (signal " << unsigned(event.signal)
         << "): the run ends when it goes on\n";
  }
  print_where(current_);
}

void DebuggerCli::print_where(gdb::ThreadId thread) {
  gdb::ThreadId keep = current_;
  current_ = thread;
  uint32_t pc = reg(gdb::mips::kPc), word = 0;
  out_ << "node" << thread - 1 << " at " << location(pc) << "\n";
  if (read_word(pc, word))
    out_ << "=> " << disassembly(pc, word) << "\n";
  current_ = keep;
}

} // namespace nicemu
