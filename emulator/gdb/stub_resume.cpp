// Execution and points: c, s, C, S, vCont, Z, z, D, k.
#include "gdb/mips_tdesc.hpp"
#include "gdb/stub.hpp"
#include "gdb/stub_util.hpp"

#include <algorithm>

namespace nicemu::gdb {

namespace {

std::string point_reply(PointResult r) {
  switch (r) {
  case PointResult::Done:
    return kOk;
  case PointResult::Unsupported:
    return ""; // GDB falls back, e.g. to software watchpoints
  case PointResult::Failed:
    break;
  }
  return kRefused;
}

// One vCont action: "c", "s", "Csig" or "Ssig", then ":thread" or nothing
// (all threads). Signals are parsed and dropped: the cores have none.
bool parse_vcont_action(std::string_view item, Action &action,
                        ThreadId &thread) {
  std::string_view what = item, tid;
  bool has_thread = split(item, ':', what, tid);
  if (what.empty())
    return false;
  char a = what[0];
  bool with_signal = a == 'C' || a == 'S';
  uint64_t signal = 0;
  if (with_signal ? !parse_hex(what.substr(1), signal) : what.size() != 1)
    return false;
  if (a != 'c' && a != 's' && !with_signal)
    return false; // t and r are not offered by vCont?
  action = (a == 's' || a == 'S') ? Action::Step : Action::Continue;
  thread = kAllThreads;
  return !has_thread || parse_thread_id(tid, thread);
}

} // namespace

Stub::Reply Stub::resume_legacy(char command, std::string_view args) {
  std::string_view where = args;
  if (command == 'C' || command == 'S') {
    std::string_view sig;
    if (!split(args, ';', sig, where)) {
      sig = args;
      where = {};
    }
    uint64_t ignored = 0; // the cores have no signals to deliver
    if (!parse_hex(sig, ignored))
      return kMalformed;
  }
  bool step = command == 's' || command == 'S';
  bool one = thread_exists(continue_); // Hc named a thread: only it moves
  ThreadId thread = one ? continue_ : current_thread();
  if (!where.empty()) {
    uint32_t pc = 0;
    if (!parse_address(where, pc))
      return kMalformed;
    if (!target_.write_register(thread, mips::kPc, pc))
      return kRefused;
  }
  ResumePlan plan;
  if (step || one)
    plan.threads.push_back({thread, step ? Action::Step : Action::Continue});
  plan.others = one ? Action::Stay : Action::Continue;
  return resume(plan);
}

Stub::Reply Stub::resume_vcont(std::string_view actions) {
  ResumePlan plan;
  bool any = false;
  while (!actions.empty()) {
    if (actions[0] != ';')
      return kMalformed;
    actions.remove_prefix(1);
    std::string_view item = actions.substr(0, actions.find(';'));
    actions.remove_prefix(item.size());
    Action action = Action::Stay;
    ThreadId thread = kAllThreads;
    if (!parse_vcont_action(item, action, thread))
      return kMalformed;
    any = true;
    if (thread == kAllThreads) {
      plan.others = action; // the leftmost match wins: later items are moot
      break;
    }
    if (thread == kAnyThread)
      thread = current_thread();
    else if (!thread_exists(thread))
      return kNoThread;
    bool listed = std::any_of(plan.threads.begin(), plan.threads.end(),
                              [&](auto &e) { return e.thread == thread; });
    if (!listed)
      plan.threads.push_back({thread, action});
  }
  if (!any)
    return kMalformed;
  return resume(plan);
}

Stub::Reply Stub::resume(const ResumePlan &plan) {
  if (running_)
    return kMalformed; // GDB resumes only a stopped target
  running_ = true;
  waiting_ = true;
  target_.resume(plan); // may call on_stop() before returning
  return std::nullopt;
}

// bs, bc: the thread is Hc's, else the one that stopped last.
Stub::Reply Stub::reverse(bool step) {
  if (!target_.can_reverse())
    return ""; // not supported (not offered in qSupported either)
  if (running_)
    return kMalformed;
  ThreadId thread = thread_exists(continue_) ? continue_ : current_thread();
  running_ = true;
  waiting_ = true;
  std::string why;
  if (!target_.reverse(step, thread, why)) {
    running_ = waiting_ = false;
    return kRefused;
  }
  return std::nullopt; // the stop reply comes from on_stop()
}

std::string Stub::save_session() const {
  std::string s = std::string(ack_mode_ ? "a" : "-") +
                  (gdb_swbreak_ ? "s" : "-") + (gdb_hwbreak_ ? "h" : "-") +
                  " " + hex_number(general_) + " " + hex_number(continue_) +
                  " " + hex_number(current_);
  for (const Point &p : points_)
    s += std::string(" ") + p.type + "," + hex_number(p.addr) + "," +
         hex_number(p.len);
  return s;
}

bool Stub::restore_session(std::string_view saved) {
  std::vector<std::string_view> items;
  while (!saved.empty()) {
    size_t space = saved.find(' ');
    items.push_back(saved.substr(0, space));
    saved.remove_prefix(space == saved.npos ? saved.size() : space + 1);
  }
  if (items.size() < 4 || items[0].size() != 3)
    return false;
  uint64_t general = 0, cont = 0, current = 0;
  if (!parse_hex(items[1], general) || !parse_hex(items[2], cont) ||
      !parse_hex(items[3], current))
    return false;
  std::set<Point> points;
  for (size_t i = 4; i < items.size(); ++i) {
    std::string_view type, rest, addr, len;
    uint64_t a = 0, l = 0;
    if (!split(items[i], ',', type, rest) || !split(rest, ',', addr, len) ||
        type.size() != 1 || type[0] < '0' || type[0] > '4' ||
        !parse_hex(addr, a) || !parse_hex(len, l) || a > 0xffffffffu ||
        l > 0xffffffffu)
      return false;
    points.insert({type[0], uint32_t(a), uint32_t(l)});
  }
  // The target's points are those of this copy's past: bring them in line.
  for (auto it = points_.begin(); it != points_.end();)
    if (points.count(*it) == 0) {
      remove_point(*it);
      it = points_.erase(it);
    } else {
      ++it;
    }
  for (const Point &p : points)
    if (points_.count(p) == 0) {
      PointResult r =
          p.type <= '1'
              ? target_.insert_breakpoint(p.type == '0' ? BreakKind::Software
                                                        : BreakKind::Hardware,
                                          p.addr)
              : target_.insert_watchpoint(WatchKind(p.type - '2'), p.addr,
                                          p.len);
      if (r == PointResult::Done)
        points_.insert(p);
    }
  ack_mode_ = items[0][0] == 'a';
  gdb_swbreak_ = items[0][1] == 's';
  gdb_hwbreak_ = items[0][2] == 'h';
  general_ = ThreadId(general);
  continue_ = ThreadId(cont);
  current_ = ThreadId(current);
  reader_.reset();
  last_sent_.clear();
  client_ = true;
  running_ = waiting_ = true;
  return true;
}

Stub::Reply Stub::point(bool insert, std::string_view args) {
  std::string_view type, rest, addr_field, len_field;
  args = args.substr(0, args.find(';')); // conditions: not offered
  if (!split(args, ',', type, rest) || !split(rest, ',', addr_field, len_field))
    return kMalformed;
  if (type.size() != 1 || type[0] < '0' || type[0] > '4')
    return ""; // unknown kinds of points are unsupported, not errors
  uint32_t addr = 0;
  uint64_t len = 0;
  if (!parse_address(addr_field, addr) || !parse_hex(len_field, len) ||
      len > kAddressSpace - addr)
    return kMalformed;
  // A breakpoint's length is only its instruction's kind: Z0,a,4 and
  // Z0,a,2 are one breakpoint to the target, inserted once.
  Point p{type[0], addr, type[0] <= '1' ? 0u : uint32_t(len)};
  bool known = points_.count(p) != 0;
  if (!insert) {
    if (!known)
      return kOk; // removing twice is not an error
    PointResult r = remove_point(p);
    if (r != PointResult::Failed)
      points_.erase(p);
    return point_reply(r);
  }
  if (known)
    return kOk; // GDB may insert again: the target sees it once
  if (points_.size() >= kMaxPoints)
    return kRefused;
  PointResult r =
      p.type <= '1'
          ? target_.insert_breakpoint(
                p.type == '0' ? BreakKind::Software : BreakKind::Hardware, addr)
          : target_.insert_watchpoint(WatchKind(p.type - '2'), addr, p.len);
  if (r == PointResult::Done)
    points_.insert(p);
  return point_reply(r);
}

PointResult Stub::remove_point(const Point &p) {
  if (p.type <= '1')
    return target_.remove_breakpoint(
        p.type == '0' ? BreakKind::Software : BreakKind::Hardware, p.addr);
  return target_.remove_watchpoint(WatchKind(p.type - '2'), p.addr, p.len);
}

void Stub::remove_all_points() {
  for (const Point &p : points_)
    remove_point(p);
  points_.clear();
}

Stub::Reply Stub::detach() {
  remove_all_points();
  target_.detach();
  waiting_ = false;
  bool ended = last_stop_ && (last_stop_->kind == StopEvent::Kind::Exited ||
                              last_stop_->kind == StopEvent::Kind::Terminated);
  running_ = !ended;
  return kOk;
}

Stub::Reply Stub::kill() {
  points_.clear(); // the run ends with them
  target_.kill();
  running_ = waiting_ = false;
  last_stop_ = StopEvent::terminated(Signal::Kill);
  return std::nullopt; // 'k' has no reply
}

} // namespace nicemu::gdb
