#include "debug/gdb_target.hpp"

#include "gdb/mips_tdesc.hpp"
#include "nicemu/regs.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace nicemu {

namespace {

// Slices end at most this far apart while debugging, so that an interrupt
// gets through even when no event is pending. Slices may end at any block
// boundary without changing the run.
constexpr Time kDebugSlice = 100'000'000; // 100 us

constexpr uint32_t kMmioEnd = 0x20000000;

gdb::Signal fault_signal(FaultKind kind) {
  switch (kind) {
  case FaultKind::IllegalInstruction:
  case FaultKind::NoFpu:
    return gdb::Signal::Ill;
  case FaultKind::Break:
    return gdb::Signal::Trap;
  case FaultKind::Syscall:
    return gdb::Signal::Sys;
  case FaultKind::Overflow:
  case FaultKind::Trap:
    return gdb::Signal::Fpe;
  case FaultKind::BusError:
  case FaultKind::UnalignedRead:
  case FaultKind::UnalignedWrite:
  case FaultKind::MisalignedJump:
    return gdb::Signal::Bus;
  case FaultKind::Watchdog:
    return gdb::Signal::Abrt;
  default:
    return gdb::Signal::Segv;
  }
}

bool overlaps(uint32_t a, uint32_t alen, uint32_t b, uint32_t blen) {
  return uint64_t(a) < uint64_t(b) + blen && uint64_t(b) < uint64_t(a) + alen;
}

} // namespace

class GdbTarget::CoreHook final : public CpuDebugger {
public:
  CoreHook(GdbTarget &target, size_t node) : target_(target), node_(node) {}
  void before_instruction(uint32_t pc) override {
    target_.before_instruction(node_, pc);
  }
  void memory_access(uint32_t addr, unsigned size, bool write) override {
    target_.memory_access(node_, addr, size, write);
  }

private:
  GdbTarget &target_;
  size_t node_;
};

// `monitor trace on`: prints each block the node's core enters to stderr,
// then passes it on to the observer it stands in front of (the profiler of
// --report, if any). Observers are passive: tracing changes no cycle.
class GdbTarget::BlockTracer final : public BlockObserver {
public:
  BlockTracer(Node &node, BlockObserver *next) : node_(node), next_(next) {}
  BlockObserver *next() const { return next_; }
  void block_entered(uint32_t addr, uint32_t size, uint64_t start) override {
    std::fprintf(stderr, "trace: node%u cycle %" PRIu64 " pc 0x%08x %s\n",
                 node_.id(), start, addr,
                 node_.image().describe_address(addr).c_str());
    if (next_)
      next_->block_entered(addr, size, start);
  }
  void interrupt_taken(uint32_t epc, uint64_t at) override {
    std::fprintf(stderr,
                 "trace: node%u cycle %" PRIu64
                 " interrupt (returns to 0x%08x)\n",
                 node_.id(), at, epc);
    if (next_)
      next_->interrupt_taken(epc, at);
  }
  void slept(uint64_t cycles) override {
    std::fprintf(stderr, "trace: node%u slept %" PRIu64 " cycles\n", node_.id(),
                 cycles);
    if (next_)
      next_->slept(cycles);
  }

private:
  Node &node_;
  BlockObserver *next_;
};

// GDB: the stub over the server.
class GdbTarget::StubFrontend final : public DebugFrontend {
public:
  StubFrontend(GdbTarget &target, gdb::Server &server)
      : target_(target), server_(server),
        stub_(target, [this](std::string_view b) { server_.send(b); }) {}
  // Waiting for GDB (to connect, resume, or leave), a stop request of the
  // run (SIGINT, SIGTERM) is looked at every kStopCheckMs.
  void stopped(const gdb::StopEvent &event) override {
    stub_.on_stop(event);
    serve();
  }
  void poll() override { gdb::pump(server_, stub_, 0); }
  bool attached() const override { return stub_.has_client(); }
  void answered(const gdb::StopEvent &event,
                const std::string &output) override {
    stub_.answer_command(event, output);
    if (event.kind == gdb::StopEvent::Kind::Exited)
      serve_to_the_end();
    else
      serve();
  }
  void ended(const gdb::StopEvent &event) override {
    stub_.on_stop(event);
    serve_to_the_end();
  }
  bool can_travel() const override { return true; }
  std::string save_session() const override { return stub_.save_session(); }
  bool restore_session(const std::string &s) override {
    return stub_.restore_session(s);
  }
  uint64_t session_tag() const override { return server_.connections(); }
  // A stop that needs no waiting here (the stub is serving a packet).
  void report_now(const gdb::StopEvent &event) override {
    stub_.on_stop(event);
  }
  bool reverse_watch_after_access() const override { return true; }

private:
  // Until GDB resumes the run.
  void serve() {
    while (!stub_.running() && !target_.killed() && !target_.stop_requested() &&
           !target_.session_lost())
      gdb::pump(server_, stub_, kStopCheckMs); // also waits for a connection
  }
  // The run is over: until GDB goes.
  void serve_to_the_end() {
    while (server_.has_client() && !target_.killed() &&
           !target_.stop_requested() && !target_.session_lost())
      gdb::pump(server_, stub_, kStopCheckMs);
  }

  static constexpr int kStopCheckMs = 100;
  GdbTarget &target_;
  gdb::Server &server_;
  gdb::Stub stub_;
};

GdbTarget::GdbTarget(Simulation &sim, gdb::Server &server) : GdbTarget(sim) {
  stub_frontend_ = std::make_unique<StubFrontend>(*this, server);
  frontend_ = stub_frontend_.get();
}

GdbTarget::GdbTarget(Simulation &sim) : sim_(sim) {
  debug_.resize(sim_.nodes().size());
  for (size_t i = 0; i < sim_.nodes().size(); ++i) {
    hooks_.push_back(std::make_unique<CoreHook>(*this, i));
    sim_.nodes()[i]->cpu().set_debugger(hooks_.back().get());
  }
  sim_.set_debugger(this);
}

GdbTarget::~GdbTarget() {
  set_trace(false);
  sim_.set_debugger(nullptr);
  for (auto &n : sim_.nodes()) {
    n->cpu().set_debug_hooks({});
    n->cpu().set_debugger(nullptr);
  }
}

Node *GdbTarget::node_of(gdb::ThreadId thread) {
  if (thread == gdb::kAnyThread || thread == gdb::kAllThreads)
    thread = 1;
  if (thread > sim_.nodes().size())
    return nullptr;
  return sim_.nodes()[thread - 1].get();
}

std::vector<gdb::ThreadId> GdbTarget::threads() {
  std::vector<gdb::ThreadId> out;
  for (size_t i = 0; i < sim_.nodes().size(); ++i)
    out.push_back(thread_of(i));
  return out;
}

std::string GdbTarget::thread_name(gdb::ThreadId thread) {
  Node *n = node_of(thread);
  return n ? "node" + std::to_string(n->id()) : "";
}

std::string GdbTarget::thread_extra(gdb::ThreadId thread) {
  Node *n = node_of(thread);
  return n ? state_name(n->state()) : "";
}

// ---- Registers and memory -------------------------------------------------

bool GdbTarget::read_register(gdb::ThreadId thread, unsigned regno,
                              uint32_t &value) {
  namespace m = gdb::mips;
  Node *n = node_of(thread);
  if (!n)
    return false;
  CpuRegisters r = n->cpu().registers();
  bool here = in_hook_ && n == sim_.nodes()[hook_node_].get();
  if (regno < 32)
    value = r.gpr[regno];
  else if (regno == m::kLo)
    value = r.lo;
  else if (regno == m::kHi)
    value = r.hi;
  else if (regno == m::kPc)
    value = here ? hook_pc_ : r.pc;
  else if (regno == m::kStatus || regno == m::kCause || regno == m::kBadVAddr)
    value = 0; // the core's interrupts and faults are the emulator's
  else
    return false; // no FPU
  return true;
}

bool GdbTarget::write_register(gdb::ThreadId thread, unsigned regno,
                               uint32_t value) {
  namespace m = gdb::mips;
  Node *n = node_of(thread);
  if (!n)
    return false;
  uint32_t old = 0;
  bool readable = read_register(thread, regno, old);
  if (readable && old == value)
    return true; // G writes every register back
  Cpu &cpu = n->cpu();
  bool here = in_hook_ && n == sim_.nodes()[hook_node_].get();
  if (regno >= 1 && regno < 32)
    cpu.write_register(regno, value);
  else if (regno == m::kHi)
    cpu.write_register(32, value);
  else if (regno == m::kLo)
    cpu.write_register(33, value);
  else if (regno == m::kPc && !here)
    cpu.set_pc(value); // at a block boundary: the next block starts there
  else
    return false; // r0, CP0, FPU, or the PC in the middle of a block
  return true;
}

bool GdbTarget::read_memory(gdb::ThreadId thread, uint32_t addr,
                            std::span<uint8_t> out) {
  Node *n = node_of(thread);
  if (!n)
    return false;
  if (n->cpu().read_memory(addr, out.data(), out.size()))
    return true;
  // Device registers: whole 32-bit registers only.
  if (addr < NICEMU_MMIO_BASE || addr >= kMmioEnd || addr % 4 ||
      out.size() % 4 || out.size() > kMmioEnd - addr)
    return false;
  for (size_t i = 0; i < out.size(); i += 4) {
    uint32_t value = 0;
    std::string why;
    if (!n->debug_mmio(addr + uint32_t(i), false, value, why))
      return false;
    for (int b = 0; b < 4; ++b)
      out[i + b] = uint8_t(value >> (8 * b));
  }
  return true;
}

bool GdbTarget::write_memory(gdb::ThreadId thread, uint32_t addr,
                             std::span<const uint8_t> data) {
  Node *n = node_of(thread);
  if (!n)
    return false;
  if (n->card_write(addr, data.data(), uint32_t(data.size())))
    return true;
  if (addr < NICEMU_MMIO_BASE || addr >= kMmioEnd || addr % 4 ||
      data.size() % 4 || data.size() > kMmioEnd - addr)
    return false;
  for (size_t i = 0; i < data.size(); i += 4) {
    uint32_t value = 0;
    for (int b = 0; b < 4; ++b)
      value |= uint32_t(data[i + b]) << (8 * b);
    std::string why;
    if (!n->debug_mmio(addr + uint32_t(i), true, value, why))
      return false;
  }
  return true;
}

// ---- Points -------------------------------------------------------------

gdb::PointResult GdbTarget::insert_breakpoint(gdb::BreakKind kind,
                                              uint32_t addr) {
  if (addr % 4)
    return gdb::PointResult::Failed;
  (kind == gdb::BreakKind::Software ? soft_breaks_ : hard_breaks_).insert(addr);
  return gdb::PointResult::Done;
}

gdb::PointResult GdbTarget::remove_breakpoint(gdb::BreakKind kind,
                                              uint32_t addr) {
  (kind == gdb::BreakKind::Software ? soft_breaks_ : hard_breaks_).erase(addr);
  return gdb::PointResult::Done;
}

gdb::PointResult GdbTarget::insert_watchpoint(gdb::WatchKind kind,
                                              uint32_t addr, uint32_t len) {
  if (len == 0)
    return gdb::PointResult::Failed;
  watches_.insert({kind, addr, len});
  return gdb::PointResult::Done;
}

gdb::PointResult GdbTarget::remove_watchpoint(gdb::WatchKind kind,
                                              uint32_t addr, uint32_t len) {
  watches_.erase({kind, addr, len});
  return gdb::PointResult::Done;
}

// Instruction hooks only where needed: on every core while breakpoints or
// watchpoints exist, else on stepping cores (and on the core going back
// runs to). Wherever they are on, memory hooks cover all of memory and
// memory_access() looks for watched ranges: hooks change only at block
// boundaries, and a watchpoint GDB sets while a core stands in the middle
// of a block (a breakpoint, a step, where going back arrived) must see the
// rest of that block.
void GdbTarget::update_hooks() {
  bool points =
      !soft_breaks_.empty() || !hard_breaks_.empty() || !watches_.empty();
  for (size_t i = 0; i < sim_.nodes().size(); ++i) {
    CpuDebugHooks hooks;
    hooks.instructions = points || debug_[i].step ||
                         ((travel_.mode == Travel::Mode::Goto ||
                           travel_.mode == Travel::Mode::Call ||
                           travel_.mode == Travel::Mode::Steps) &&
                          travel_.node == i);
    if (hooks.instructions)
      hooks.reads = hooks.writes = {{0, UINT32_MAX}};
    sim_.nodes()[i]->cpu().set_debug_hooks(hooks);
  }
}

// ---- Execution ----------------------------------------------------------

void GdbTarget::hold(const gdb::StopEvent &event, const std::string *answer) {
  interrupt_ = false;
  if (answer)
    frontend_->answered(event, *answer + status_text() +
                                   "(gdb shows the registers of before until "
                                   "`maint flush register-cache`)\n");
  else
    frontend_->stopped(event);
}

void GdbTarget::hold_in_hook(size_t node, uint32_t pc,
                             const gdb::StopEvent &event,
                             const std::string *answer) {
  in_hook_ = true;
  hook_node_ = node;
  hook_pc_ = pc;
  hold(event, answer);
  in_hook_ = false;
  if (killed_ || reset_pending_ || stop_requested()) // the slice ends here
    sim_.nodes()[node]->cpu().request_stop();
}

void GdbTarget::between_slices() {
  ++rounds_;
  if (!started_) { // halted at reset until a debugger resumes the run
    started_ = true;
    hold(gdb::StopEvent::stepped(thread_of(0)));
    checkpoint_if_due();
    return;
  }
  if (travel_.mode == Travel::Mode::Scan && scan_done())
    finish_scan(); // goes on in another copy
  if (travel_.mode == Travel::Mode::ToTime &&
      sim_.scheduler().now() >= travel_.until)
    arrive_in_time();
  if (travel_.mode == Travel::Mode::None)
    checkpoint_if_due();
  if (reset_pending_) {
    reset_pending_ = false;
    std::string why;
    if (!reset_nodes(why))
      std::fprintf(stderr, "nicemu: %s\n", why.c_str());
  }
  frontend_->poll();
  if (interrupt_ && !killed_ &&
      (travel_.mode == Travel::Mode::None || !travel_.quiet))
    hold(gdb::StopEvent::interrupted(gdb::kAnyThread));
}

Time GdbTarget::max_slice() const {
  return kDebugSlice;
}

void GdbTarget::resume(const gdb::ResumePlan &plan) {
  if (run_over_) { // after a monitor goto that met the run's end
    frontend_->report_now(end_event_);
    return;
  }
  // Threads GDB keeps still run on all the same: virtual time moves for all
  // cores together (`set scheduler-locking` has no effect).
  for (size_t i = 0; i < debug_.size(); ++i) {
    bool step = plan.action_for(thread_of(i)) == gdb::Action::Step;
    debug_[i].step = step;
    debug_[i].skip_first = step && !(in_hook_ && hook_node_ == i);
  }
  update_hooks();
}

void GdbTarget::before_instruction(size_t node, uint32_t pc) {
  NodeDebug &d = debug_[node];
  d.last_pc = pc;
  if (travel_.mode != Travel::Mode::None) {
    travel_instruction(node, pc);
    return;
  }
  if (d.skip_first) {
    d.skip_first = false;
    return;
  }
  gdb::ThreadId t = thread_of(node);
  if (d.step) {
    if (sim_.nodes()[node]->cpu().in_delay_slot(pc))
      return; // the branch and its delay slot are one step
    d.step = false;
    hold_in_hook(node, pc, gdb::StopEvent::stepped(t));
    return;
  }
  if (soft_breaks_.count(pc))
    hold_in_hook(node, pc,
                 gdb::StopEvent::breakpoint(t, gdb::BreakKind::Software));
  else if (hard_breaks_.count(pc))
    hold_in_hook(node, pc,
                 gdb::StopEvent::breakpoint(t, gdb::BreakKind::Hardware));
}

// Stops before the access happens, at the accessing instruction: GDB's MIPS
// watchpoints are "non-steppable" (it steps over the access itself).
void GdbTarget::memory_access(size_t node, uint32_t addr, unsigned size,
                              bool write) {
  if (travel_.mode == Travel::Mode::Goto ||
      travel_.mode == Travel::Mode::ToTime ||
      travel_.mode == Travel::Mode::Call || travel_.mode == Travel::Mode::Steps)
    return;
  for (const Watch &w : watches_) {
    bool kind_matches = w.kind == gdb::WatchKind::Access ||
                        (w.kind == gdb::WatchKind::Write) == write;
    if (!kind_matches || !overlaps(addr, size, w.addr, w.len))
      continue;
    gdb::StopEvent event = gdb::StopEvent::watchpoint(thread_of(node), w.kind,
                                                      std::max(addr, w.addr));
    if (travel_.mode == Travel::Mode::Scan) {
      // Going back, GDB steps back over the access to see the change
      // (MIPS watchpoints stop before the access): stop after it for GDB.
      uint64_t at =
          sim_.nodes()[node]->cpu().instructions_before(debug_[node].last_pc);
      scan_hit(node, at, at + (frontend_->reverse_watch_after_access() ? 1 : 0),
               event);
      return;
    }
    hold_in_hook(node, debug_[node].last_pc, event);
    return;
  }
}

void GdbTarget::detach() {
  soft_breaks_.clear();
  hard_breaks_.clear();
  watches_.clear();
  for (NodeDebug &d : debug_)
    d.step = d.skip_first = false;
  update_hooks();
}

void GdbTarget::kill() {
  killed_ = true;
}

void GdbTarget::run_ended(const RunResult &result, int exit_code) {
  if (travel_.mode == Travel::Mode::Scan)
    finish_scan(); // goes on in another copy
  bool answer = travel_.answer;
  travel_ = {}; // a Goto past the run's end (cannot be): stop at the end
  run_over_ = true;
  end_event_ = gdb::StopEvent::exited(uint8_t(exit_code));
  if (answer && !killed_ && frontend_->attached()) {
    // A monitor goto past the end: the run ended first.
    frontend_->answered(end_event_, "the run ended first: " + status_text() +
                                        "(continue shows how it ended)\n");
    return;
  }
  if (killed_ || !frontend_->attached())
    return;
  if (result.outcome == RunOutcome::Faulted) {
    for (size_t i = 0; i < sim_.nodes().size(); ++i) {
      Node &n = *sim_.nodes()[i];
      if (n.state() == NodeState::Faulted) {
        hold(gdb::StopEvent::fault(thread_of(i), fault_signal(n.fault().kind)));
        break;
      }
    }
    if (killed_ || !frontend_->attached())
      return;
  }
  frontend_->ended(gdb::StopEvent::exited(uint8_t(exit_code)));
}

// ---- monitor ------------------------------------------------------------

std::string GdbTarget::status_text() {
  char line[160];
  std::snprintf(line, sizeof line, "virtual time %" PRIu64 " ps (%.3f us)\n",
                sim_.scheduler().now(), double(sim_.scheduler().now()) / 1e6);
  std::string out = line;
  std::snprintf(line, sizeof line, "%-5s %-9s %-10s %14s %14s %14s\n", "node",
                "state", "pc", "instructions", "cycles", "slept cycles");
  out += line;
  for (size_t i = 0; i < sim_.nodes().size(); ++i) {
    Node &n = *sim_.nodes()[i];
    uint32_t pc = 0;
    read_register(thread_of(i), gdb::mips::kPc, pc);
    std::snprintf(line, sizeof line,
                  "%-5u %-9s 0x%08x %14" PRIu64 " %14" PRIu64 " %14" PRIu64
                  "\n",
                  n.id(), state_name(n.state()), pc, position_of(i),
                  n.cpu().cycles(), n.sleep_cycles());
    out += line;
  }
  return out;
}

std::string GdbTarget::set_trace(bool on) {
  if (on == !tracers_.empty())
    return on ? "trace: already on\n" : "trace: already off\n";
  if (on) {
    for (auto &n : sim_.nodes()) {
      tracers_.push_back(
          std::make_unique<BlockTracer>(*n, n->block_observer()));
      n->set_block_observer(tracers_.back().get());
    }
    return "trace: on (each block the cores enter goes to nicemu's stderr: "
           "node, cycle, pc, symbol)\n";
  }
  for (size_t i = 0; i < tracers_.size() && i < sim_.nodes().size(); ++i) {
    Node &n = *sim_.nodes()[i];
    // The profiler may have removed every observer already (after the run).
    if (n.block_observer() == tracers_[i].get())
      n.set_block_observer(tracers_[i]->next());
  }
  tracers_.clear();
  std::fflush(stderr);
  return "trace: off\n";
}

bool GdbTarget::reset_nodes(std::string &why) {
  try {
    for (auto &n : sim_.nodes())
      n->reset();
  } catch (const std::exception &e) {
    why = e.what();
    return false;
  }
  for (NodeDebug &d : debug_)
    d.skip_first = false;
  std::fprintf(stderr, "nicemu: reset at virtual time %" PRIu64 " ps\n",
               sim_.scheduler().now());
  return true;
}

std::string GdbTarget::reset_text() {
  if (sim_.nodes().size() != 1)
    return "reset: only a one-node run can be reset (restart nicemu run)\n";
  Node &n = *sim_.nodes().front();
  if (n.finished())
    return std::string("reset: the node has ") + state_name(n.state()) +
           " (restart nicemu run)\n";
  if (n.fabric() || n.host_memory())
    return "reset: only a node without a network or a host can be reset "
           "(restart nicemu run)\n";
  BlockObserver *observer = n.block_observer();
  if (!tracers_.empty())
    observer = tracers_.front()->next();
  if (observer)
    return "reset: not while the cycle profiler runs (--report, --trace "
           "with core events): its profile would mix two boots\n";
  return "";
}

bool GdbTarget::monitor(const std::string &command, std::string &output) {
  std::string cmd = command;
  while (!cmd.empty() && cmd.back() == ' ')
    cmd.pop_back();
  if (cmd == "help" || cmd.empty()) {
    output = "monitor commands:\n"
             "  status        virtual time; per node: state, pc, "
             "instructions, cycles\n"
             "  time          the same\n"
             "  reset         boot the node again from its flash (one-node "
             "runs without\n"
             "                network or host); virtual time goes on\n"
             "  trace on|off  print each block the cores enter (node, cycle, "
             "pc,\n"
             "                symbol) on nicemu's stderr; no cycle changes\n"
             "  checkpoints   reverse execution's checkpoints: how many, "
             "their\n"
             "                interval, what taking and resuming one cost\n"
             "  goto TIME     the run to the first moment between rounds at "
             "or after\n"
             "                virtual time TIME (120us, 1.5ms), back or "
             "forward\n"
             "  goto-call FUNCTION N [NODE]\n"
             "                to the Nth execution of FUNCTION (a name or "
             "an address)\n"
             "                by NODE's core (default: the stopped one)\n"
             "                after a goto: maint flush register-cache\n";
    return true;
  }
  if (cmd == "status" || cmd == "time" || cmd == "cycles" || cmd == "nodes") {
    output = status_text();
    return true;
  }
  if (cmd == "trace on" || cmd == "trace off") {
    output = set_trace(cmd == "trace on");
    return true;
  }
  if (cmd == "checkpoints") {
    output = checkpoints_text();
    return true;
  }
  if (cmd.rfind("goto ", 0) == 0)
    return monitor_goto(cmd.substr(5), false, output);
  if (cmd.rfind("goto-call ", 0) == 0)
    return monitor_goto(cmd.substr(10), true, output);
  if (cmd == "trace") {
    output = tracers_.empty() ? "trace: off\n" : "trace: on\n";
    return true;
  }
  if (cmd == "reset") {
    output = reset_text();
    if (!output.empty())
      return false;
    const char *note =
        "virtual time does not go back: the core restarts at the present "
        "virtual time and its cycle counter goes on\n";
    if (in_hook_) { // the PC cannot move inside a block
      reset_pending_ = true;
      output = "reset: node0 boots again from its flash at the end of the "
               "current block, when the run resumes; " +
               std::string(note);
      return true;
    }
    std::string why;
    if (!reset_nodes(why)) {
      output = why + "\n";
      return false;
    }
    output = "reset: node0 booted again from its flash; " + std::string(note);
    return true;
  }
  output = "unknown monitor command '" + cmd + "' (monitor help)\n";
  return false;
}

} // namespace nicemu
