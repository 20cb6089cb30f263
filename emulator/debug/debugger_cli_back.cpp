// The built-in debugger going back: rstepi, rstep, rcontinue and goto.
//
// Each step back is one GdbTarget::reverse: the copy of the run that takes
// the step over resumes from a checkpoint, receives this session (points,
// the command under way, where the input stands) and runs forward to the
// step's instruction, where stopped() goes on with the command. So a
// command of several steps back (rstepi 5, rstep) hops from copy to copy,
// each carrying what is left to do.
#include "debug/debugger_cli.hpp"

#include "gdb/mips_tdesc.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "profile/line_table.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace nicemu {

namespace {

// Steps back a line step may take before it gives up (each one resumes a
// checkpoint: tens of milliseconds).
constexpr uint64_t kBackBudget = 500;

bool is_step_end(const gdb::StopEvent &e) {
  return e.kind == gdb::StopEvent::Kind::Signal &&
         e.signal == gdb::Signal::Trap && !e.history_start;
}

} // namespace

bool DebuggerCli::cmd_back(OpKind kind, const Args &args) {
  if (!begin_steps(kind, kind == OpKind::BackLine, OpKind::BackInsn,
                   kind == OpKind::BackPoint ? Args() : args, kBackBudget))
    return false;
  if (op_.kind == OpKind::BackInsn && op_.count > 1 && options_.back_steps) {
    // All at once: the copy that arrives has one step (this one) left.
    uint64_t steps = op_.count;
    op_.count = 1;
    std::string why;
    out_ << std::flush;
    if (!options_.back_steps(op_.thread, steps, why)) {
      op_ = {};
      error("cannot go back: " + why);
    }
    return false;
  }
  back_again();
  return false; // not resumed here: in the copy that goes back, if any
}

// One step back (or back to the latest point). Returns only if it could
// not go: the history ran out (reported) or going back is refused.
bool DebuggerCli::back_again() {
  std::string why;
  out_ << std::flush;
  if (!target_.reverse(op_.kind != OpKind::BackPoint, op_.thread, why)) {
    op_ = {};
    error("cannot go back: " + why);
  }
  return true;
}

bool DebuggerCli::cmd_goto(const Args &args) {
  if (args.size() != 1) {
    error("goto TIME (virtual time, e.g. 120us, 1.5ms)");
    return false;
  }
  std::optional<uint64_t> t = parse_duration_ps(args[0]);
  if (!t) {
    error("goto: '" + args[0] + "' is not a time (e.g. 120us, 1.5ms)");
    return false;
  }
  if (!options_.go_to_time) {
    error("goto: not in this run");
    return false;
  }
  op_ = {};
  op_.kind = OpKind::ToTime;
  op_.thread = current_;
  op_.until = *t;
  out_ << std::flush;
  std::string why;
  if (!options_.go_to_time(*t, gdb::StopEvent::stepped(current_), why)) {
    op_ = {};
    error("goto: " + why);
    return false;
  }
  resume_all(gdb::Action::Continue); // forward (back never returns here)
  return true;
}

// Whether the store at the PC would change what watch point `p` covers
// (sb, sh, sw; any other instruction counts as a change).
bool DebuggerCli::store_changes(const Point &p) {
  uint32_t pc = reg(gdb::mips::kPc), word = 0;
  if (!read_word(pc, word))
    return true;
  uint32_t op = word >> 26;
  unsigned size = op == 0x28 ? 1 : op == 0x29 ? 2 : op == 0x2b ? 4 : 0;
  if (size == 0)
    return true;
  uint32_t addr = reg((word >> 21) & 31) + uint32_t(int16_t(word & 0xffff));
  uint32_t value = reg((word >> 16) & 31);
  for (unsigned i = 0; i < size; ++i) { // little-endian, as the cores
    uint32_t a = addr + i;
    if (a < p.addr || a - p.addr >= p.len)
      continue;
    uint8_t now = 0;
    if (!target_.read_memory(current_, a, {&now, 1}) ||
        now != uint8_t(value >> (8 * i)))
      return true;
  }
  return false;
}

// A stop while going back: another step back (true: that one could not be
// taken, and said so), or there (false: report the stop).
bool DebuggerCli::keep_going_back(const gdb::StopEvent &event) {
  if (op_.kind == OpKind::BackPoint &&
      event.kind == gdb::StopEvent::Kind::Watch) {
    // As forward: a write that changes nothing is not shown.
    current_ = event.thread;
    for (const Point &p : points_)
      if (p.watch && p.kind == gdb::WatchKind::Write &&
          event.address >= p.addr && event.address - p.addr < p.len)
        return !store_changes(p) && back_again();
    return false;
  }
  if (op_.kind == OpKind::ToTime || op_.kind == OpKind::BackPoint ||
      !is_step_end(event))
    return false;
  if (options_.interrupt && *options_.interrupt) { // Ctrl-C
    *options_.interrupt = 0;
    out_ << "interrupted going back\n";
    return false;
  }
  if (op_.kind == OpKind::BackInsn)
    return --op_.count > 0 && back_again();
  // rstep: back out of the line it started on, then to the first
  // instruction of the line it came to (as GDB's reverse-step); code with
  // no line of its own is passed through.
  uint32_t pc = reg(gdb::mips::kPc);
  auto line = line_at(pc);
  const ImageSymbol *f = function_at(pc);
  uint32_t func = f ? f->address : 0;
  bool same = !line || (func == op_.func && line->file == op_.file &&
                        op_.line == line->line);
  if (!same) {
    auto before = line_at(pc - 4);
    bool line_start = !before || before->file != line->file ||
                      before->line != line->line || function_at(pc - 4) != f;
    if (line_start) {
      if (--op_.count == 0)
        return false;
      op_.line = line->line;
      op_.file = line->file;
      op_.func = func;
    }
  }
  if (--op_.budget == 0) {
    out_ << "gave up after " << kBackBudget
         << " steps back without reaching the start of a line\n";
    return false;
  }
  return back_again();
}

// Going back found nothing before: the command ends here.
void DebuggerCli::report_now(const gdb::StopEvent &event) {
  op_ = {};
  report(event);
}

// ---- The session a resumed copy takes over ------------------------------

std::string DebuggerCli::save_session() const {
  nlohmann::json points = nlohmann::json::array();
  for (const Point &p : points_)
    points.push_back({{"id", p.id},
                      {"watch", p.watch},
                      {"kind", int(p.kind)},
                      {"addr", p.addr},
                      {"len", p.len},
                      {"what", p.what}});
  nlohmann::json op = {{"kind", int(op_.kind)},
                       {"thread", op_.thread},
                       {"count", op_.count},
                       {"file", op_.file},
                       {"line", op_.line.value_or(0)},
                       {"has_line", bool(op_.line)},
                       {"func", op_.func},
                       {"budget", op_.budget},
                       {"until", op_.until}};
  nlohmann::json j = {{"current", current_},
                      {"next_point", next_point_},
                      {"errors", errors_},
                      {"points", points},
                      {"op", op},
                      {"input", ""}};
  if (options_.save_input)
    j["input"] = options_.save_input();
  return j.dump();
}

bool DebuggerCli::restore_session(const std::string &saved) {
  nlohmann::json j = nlohmann::json::parse(saved, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return false;
  try {
    // This copy's points are those of its past: bring the target in line.
    clear_temp();
    for (const Point &p : points_)
      if (p.watch)
        target_.remove_watchpoint(p.kind, p.addr, p.len);
      else
        target_.remove_breakpoint(gdb::BreakKind::Software, p.addr);
    points_.clear();
    for (const auto &e : j.at("points")) {
      Point p;
      p.id = e.at("id").get<int>();
      p.watch = e.at("watch").get<bool>();
      p.kind = gdb::WatchKind(e.at("kind").get<int>());
      p.addr = e.at("addr").get<uint32_t>();
      p.len = e.at("len").get<uint32_t>();
      p.what = e.at("what").get<std::string>();
      if (p.watch)
        target_.insert_watchpoint(p.kind, p.addr, p.len);
      else
        target_.insert_breakpoint(gdb::BreakKind::Software, p.addr);
      points_.push_back(p);
    }
    const auto &op = j.at("op");
    op_ = {};
    op_.kind = OpKind(op.at("kind").get<int>());
    op_.thread = op.at("thread").get<gdb::ThreadId>();
    op_.count = op.at("count").get<unsigned>();
    op_.file = op.at("file").get<std::string>();
    if (op.at("has_line").get<bool>())
      op_.line = op.at("line").get<uint32_t>();
    op_.func = op.at("func").get<uint32_t>();
    op_.budget = op.at("budget").get<uint64_t>();
    op_.until = op.at("until").get<Time>();
    current_ = j.at("current").get<gdb::ThreadId>();
    next_point_ = j.at("next_point").get<int>();
    errors_ = j.at("errors").get<int>();
    if (options_.restore_input)
      options_.restore_input(j.at("input").get<std::string>());
  } catch (const nlohmann::json::exception &) {
    return false;
  }
  started_ = true;
  ended_ = quit_ = killed_ = false;
  return true;
}

} // namespace nicemu
