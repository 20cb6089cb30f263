// Reverse execution for GDB: bs and bc served by resuming a checkpoint
// (debug/fork_checkpoints.hpp) and running forward, exactly, to the
// instruction wanted. A position is "core n, before its instruction k"
// (k instructions run): the same in every run of the same inputs, however
// the cores' slices interleave.
//
//   bs: the thread's core goes back one step (a branch and its delay slot
//       are one step, as forward): the latest checkpoint before it, then
//       forward to it.
//   bc: the latest breakpoint or watchpoint hit, over all cores, among the
//       instructions run before the present: scan from the latest
//       checkpoint to the present noting hits, then go to the latest; with
//       none, scan the stretch before that checkpoint, and so on; at the
//       oldest checkpoint, stop there ("No more reverse-execution history").
//   go_to_time (the built-in debugger's goto): the latest checkpoint at or
//       before the time, then forward, ignoring points, to the first moment
//       between rounds at or after it.
#include "core/mips_decode.hpp"
#include "debug/gdb_target.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

namespace nicemu {

namespace {

nlohmann::json event_json(const gdb::StopEvent &e) {
  return {{"kind", int(e.kind)},     {"thread", e.thread},
          {"signal", int(e.signal)}, {"watch", int(e.watch)},
          {"address", e.address},    {"history_start", e.history_start}};
}

gdb::StopEvent event_from(const nlohmann::json &j) {
  gdb::StopEvent e;
  e.kind = gdb::StopEvent::Kind(j.at("kind").get<int>());
  e.thread = j.at("thread").get<gdb::ThreadId>();
  e.signal = gdb::Signal(j.at("signal").get<int>());
  e.watch = gdb::WatchKind(j.at("watch").get<int>());
  e.address = j.at("address").get<uint32_t>();
  e.history_start = j.at("history_start").get<bool>();
  return e;
}

gdb::StopEvent history_start(gdb::ThreadId thread) {
  gdb::StopEvent e = gdb::StopEvent::stepped(thread);
  e.history_start = true;
  return e;
}

bool branch_at(Cpu &cpu, uint32_t pc) {
  uint32_t word = 0;
  return cpu.read_memory(pc, &word, 4) &&
         mips::has_delay_slot(mips::decode(word));
}

} // namespace

// ThreadSanitizer keeps a thread of its own, and a forked copy of a
// process with threads is not one it supports: its builds (the threads'
// tests) offer no reverse execution.
#if defined(__SANITIZE_THREAD__)
constexpr bool kCanFork = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kCanFork = false;
#else
constexpr bool kCanFork = true;
#endif
#else
constexpr bool kCanFork = true;
#endif

void GdbTarget::enable_reverse(Time every, std::string refusal) {
  checkpoint_every_ = kCanFork ? every : 0;
  reverse_refusal_ = std::move(refusal);
}

void GdbTarget::session_ended(int exit_code) {
  if (checkpoints_)
    checkpoints_->end(exit_code);
}

uint64_t GdbTarget::position_of(size_t node) const {
  Cpu &cpu = sim_.nodes()[node]->cpu();
  if (in_hook_ && hook_node_ == node)
    return cpu.instructions_before(hook_pc_);
  return cpu.instructions();
}

std::vector<uint64_t> GdbTarget::positions() const {
  std::vector<uint64_t> out(sim_.nodes().size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = position_of(i);
  return out;
}

// The process the shell started is gone (killed): so is the session.
bool GdbTarget::session_lost() {
  if (checkpoints_ && checkpoints_->orphaned())
    killed_ = true;
  return killed_;
}

uint64_t GdbTarget::checkpoint_tag() const {
  return frontend_->session_tag();
}

// Between rounds, with GDB attached: a checkpoint when one is due. In a
// copy resumed later from it, take() returns what GDB asked for.
void GdbTarget::checkpoint_if_due() {
  if (!checkpoint_every_ || !frontend_->can_travel() ||
      !frontend_->attached() || killed_ || stop_requested())
    return;
  if (!checkpoints_) {
    try {
      checkpoints_ = std::make_unique<ForkCheckpoints>(sim_.nodes().size(),
                                                       checkpoint_every_);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "nicemu: no reverse execution: %s\n", e.what());
      checkpoint_every_ = 0;
      return;
    }
  }
  if (rounds_ % 1024 == 0 && session_lost())
    return;
  Time now = sim_.scheduler().now();
  if (!checkpoints_->due(now))
    return;
  std::optional<std::string> request =
      checkpoints_->take({now, positions(), checkpoint_tag()});
  if (request)
    take_request(*request);
}

std::string GdbTarget::checkpoints_text() const {
  if (!checkpoint_every_)
    return "checkpoints: none (reverse execution needs a replay or a run "
           "without host programs, and --checkpoint-every above 0)\n";
  if (!checkpoints_)
    return "checkpoints: none yet (the first is taken when the run "
           "starts)\n";
  ForkCheckpoints::Costs c = checkpoints_->costs();
  char text[320];
  std::snprintf(text, sizeof text,
                "checkpoints: %zu kept, one every %.3f us of virtual time\n"
                "taking one: %.3f ms (the last), %.3f ms (mean of %llu)\n"
                "resuming one: %.3f ms (the last)\n",
                checkpoints_->size(), double(c.interval) / 1e6,
                c.last_take * 1e3,
                c.taken ? c.take_seconds * 1e3 / double(c.taken) : 0.0,
                (unsigned long long)c.taken, c.last_restore * 1e3);
  return text;
}

// Whether going back is refused in this run, and why.
bool GdbTarget::back_refused(std::string &why) {
  if (!can_reverse() || !frontend_->can_travel())
    why = "going back needs a replay or a run without host programs, and "
          "--checkpoint-every above 0";
  else
    why = reverse_refusal_;
  return !why.empty();
}

bool GdbTarget::reverse(bool step, gdb::ThreadId thread, std::string &why) {
  if (back_refused(why)) {
    if (!reverse_refusal_.empty())
      std::fprintf(stderr, "nicemu: cannot go back: %s\n", why.c_str());
    return false;
  }
  if (thread == gdb::kAnyThread || thread == gdb::kAllThreads)
    thread = thread_of(0);
  if (!node_of(thread)) {
    why = "no such thread";
    return false;
  }
  size_t node = thread - 1;
  uint64_t tag = checkpoint_tag();
  // Nothing to go back to: GDB says so and stays where it is.
  auto stay = [&] {
    frontend_->report_now(history_start(thread));
    return true;
  };
  if (!checkpoints_)
    return stay();
  if (step) {
    uint64_t k = position_of(node);
    if (k == 0)
      return stay();
    std::vector<uint64_t> bound(sim_.nodes().size(),
                                std::numeric_limits<uint64_t>::max());
    bound[node] = k >= 2 ? k - 2 : k - 1;
    std::optional<size_t> from = checkpoints_->find(bound, tag);
    if (!from)
      return stay();
    go(*from, {{"mode", "goto"},
               {"node", node},
               {"count", k - 1},
               {"back_step", k >= 2},
               {"event", event_json(gdb::StopEvent::stepped(thread))}});
  }
  bool points =
      !soft_breaks_.empty() || !hard_breaks_.empty() || !watches_.empty();
  if (!points) {
    std::optional<size_t> first = checkpoints_->earliest(tag);
    if (!first)
      return stay();
    go(*first,
       {{"mode", "here"}, {"event", event_json(history_start(thread))}});
  }
  std::vector<uint64_t> bound = positions();
  std::optional<size_t> from = checkpoints_->find(bound, tag);
  if (!from)
    return stay();
  go(*from, {{"mode", "scan"},
             {"bound", bound},
             {"checkpoint", *from},
             {"thread", thread}});
}

bool GdbTarget::back_steps(gdb::ThreadId thread, uint64_t steps,
                           std::string &why) {
  if (!can_reverse() || !frontend_->can_travel() || !reverse_refusal_.empty() ||
      !node_of(thread) || steps == 0) {
    return reverse(true, thread, why); // says why, or takes one step
  }
  size_t node = thread - 1;
  uint64_t k = position_of(node);
  if (!checkpoints_ || k == 0) {
    frontend_->report_now(history_start(thread));
    return true;
  }
  // A step is one instruction or two (a branch and its delay slot): the
  // step `steps` back starts at or after k - 2 * steps.
  std::vector<uint64_t> bound(sim_.nodes().size(),
                              std::numeric_limits<uint64_t>::max());
  bound[node] = k > 2 * steps ? k - 2 * steps : 0;
  std::optional<size_t> from = checkpoints_->find(bound, checkpoint_tag());
  if (!from)
    from = checkpoints_->earliest(checkpoint_tag());
  if (!from) {
    frontend_->report_now(history_start(thread));
    return true;
  }
  go(*from, {{"mode", "steps"},
             {"node", node},
             {"count", k},
             {"nth", steps},
             {"checkpoint", *from},
             {"thread", thread}});
}

bool GdbTarget::go_to_time(Time t, const gdb::StopEvent &event,
                           std::string &why) {
  Time now = sim_.scheduler().now();
  // At `now` the run may stand inside a round (a breakpoint): its start,
  // the moment wanted, is behind.
  if (t > now) { // forward: the firmware's output is new
    if (run_over_) {
      why = "the run has ended (an earlier time goes back)";
      return false;
    }
    travel_ = {};
    travel_.mode = Travel::Mode::ToTime;
    travel_.quiet = false;
    travel_.until = t;
    travel_.event = event;
    update_hooks();
    return true;
  }
  if (back_refused(why))
    return false;
  std::vector<uint64_t> any(sim_.nodes().size(),
                            std::numeric_limits<uint64_t>::max());
  std::optional<size_t> from =
      checkpoints_ ? checkpoints_->find(any, checkpoint_tag(), t + 1)
                   : std::nullopt;
  if (!from) {
    why = checkpoints_ ? "no checkpoint at or before that time"
                       : "the run has not moved since it started";
    return false;
  }
  go(*from, {{"mode", "time"},
             {"until", t},
             {"event", event_json(event)},
             {"shown", positions()}});
}

void GdbTarget::arrive_in_time() {
  Travel done = std::move(travel_);
  travel_ = {};
  update_hooks();
  hold(done.event, done.answer ? &done.note : nullptr);
}

bool GdbTarget::muted(size_t node) const {
  if (travel_.mode == Travel::Mode::None || !travel_.quiet)
    return false;
  return node >= travel_.shown.size() ||
         sim_.nodes()[node]->cpu().instructions() < travel_.shown[node];
}

// Both through a checkpoint, also forward (GDB waits for the command's
// answer, not for a stop): the copy resumed there runs to the moment,
// quietly up to where the firmware's output was shown, and answers.
bool GdbTarget::monitor_goto(const std::string &args, bool call,
                             std::string &output) {
  const char *usage = call ? "goto-call FUNCTION N [NODE]" : "goto TIME";
  std::istringstream in(args);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  auto fail = [&](const std::string &why) {
    output = std::string(call ? "goto-call: " : "goto: ") + why + "\n";
    return false;
  };
  if (words.empty() || words.size() > (call ? 3u : 1u) ||
      (call && words.size() < 2))
    return fail(std::string("usage: monitor ") + usage);
  if (std::string why; back_refused(why))
    return fail(why);
  if (!checkpoints_ || checkpoints_->size() == 0)
    return fail("no checkpoint yet: the first is taken when the run first "
                "moves (stepi or continue)");
  uint64_t tag = checkpoint_tag();
  nlohmann::json request;
  std::optional<size_t> from;
  if (!call) {
    std::optional<uint64_t> t = parse_duration_ps(words[0]);
    if (!t || *t > kTimeEnd)
      return fail("'" + words[0] + "' is not a virtual time (120us, 1.5ms)");
    std::vector<uint64_t> any(sim_.nodes().size(),
                              std::numeric_limits<uint64_t>::max());
    from = checkpoints_->find(any, tag, *t + 1);
    gdb::ThreadId thread = thread_of(in_hook_ ? hook_node_ : 0);
    request = {{"mode", "time"},
               {"until", *t},
               {"event", event_json(gdb::StopEvent::stepped(thread))}};
  } else {
    size_t node = in_hook_ ? hook_node_ : 0;
    char *end = nullptr;
    if (words.size() == 3) {
      node = std::strtoul(words[2].c_str(), &end, 10);
      if (*end || node >= sim_.nodes().size())
        return fail("no node " + words[2]);
    }
    uint64_t nth = std::strtoull(words[1].c_str(), &end, 10);
    if (*end || nth == 0)
      return fail("'" + words[1] + "' is not a count (1 for the first)");
    uint32_t address = 0;
    const Image &image = sim_.nodes()[node]->image();
    if (const ImageSymbol *s = image.find_symbol(words[0]))
      address = s->address;
    else if (uint64_t a = std::strtoull(words[0].c_str(), &end, 0);
             !*end && a <= UINT32_MAX)
      address = uint32_t(a);
    else
      return fail("no function '" + words[0] + "'");
    // Counted from the start of the run: the oldest checkpoint, where no
    // core has run an instruction.
    from = checkpoints_->earliest(tag);
    if (from)
      for (uint64_t e : checkpoints_->info(*from).executed)
        if (e != 0)
          return fail("the start of the run is no longer kept");
    char note[160];
    std::snprintf(note, sizeof note, "node%zu: execution %llu of %s (0x%08x)\n",
                  node, (unsigned long long)nth, words[0].c_str(), address);
    request = {{"mode", "call"},
               {"node", node},
               {"address", address},
               {"nth", nth},
               {"note", note},
               {"event", event_json(gdb::StopEvent::stepped(thread_of(node)))}};
  }
  if (!from)
    return fail("no checkpoint at or before that time");
  request["answer"] = true;
  request["shown"] = positions();
  go(*from, request);
}

void GdbTarget::go(size_t checkpoint, nlohmann::json request) {
  request["session"] = frontend_->save_session();
  checkpoints_->restore(checkpoint, request.dump());
}

// In a copy just resumed from a checkpoint, between rounds. A request
// holds the fields of its mode (the others are absent).
void GdbTarget::take_request(const std::string &text) {
  nlohmann::json j = nlohmann::json::parse(text);
  if (!frontend_->restore_session(j.at("session").get<std::string>()))
    throw Error("reverse execution: a damaged request");
  for (NodeDebug &d : debug_)
    d.step = d.skip_first = false;
  using Mode = Travel::Mode;
  static const std::map<std::string, Mode> kModes = {
      {"here", Mode::None},   {"goto", Mode::Goto}, {"scan", Mode::Scan},
      {"time", Mode::ToTime}, {"call", Mode::Call}, {"steps", Mode::Steps}};
  auto mode = kModes.find(j.at("mode").get<std::string>());
  if (mode == kModes.end())
    throw Error("reverse execution: a damaged request");
  travel_ = {};
  travel_.mode = mode->second;
  travel_.shown = j.value("shown", std::vector<uint64_t>{});
  travel_.answer = j.value("answer", false);
  travel_.note = j.value("note", std::string());
  travel_.node = j.value("node", size_t(0));
  travel_.count = j.value("count", uint64_t(0));
  travel_.back_step = j.value("back_step", false);
  travel_.bound = j.value("bound", std::vector<uint64_t>{});
  travel_.checkpoint = j.value("checkpoint", size_t(0));
  travel_.thread = j.value("thread", gdb::ThreadId(0));
  travel_.until = j.value("until", Time(0));
  travel_.address = j.value("address", uint32_t(0));
  travel_.nth = j.value("nth", uint64_t(0));
  if (j.contains("event"))
    travel_.event = event_from(j.at("event"));
  update_hooks();
  if (travel_.mode == Mode::None) // here: the checkpoint is the place
    hold(travel_.event);
  else if (travel_.mode == Mode::ToTime &&
           sim_.scheduler().now() >= travel_.until)
    arrive_in_time(); // the checkpoint is the moment
}

// Before each instruction of a core with hooks on, while traveling.
void GdbTarget::travel_instruction(size_t node, uint32_t pc) {
  if (travel_.mode == Travel::Mode::ToTime)
    return; // a jump: no point stops it
  if (travel_.mode == Travel::Mode::Steps) {
    if (node != travel_.node)
      return;
    Cpu &cpu = sim_.nodes()[node]->cpu();
    uint64_t at = cpu.instructions_before(pc);
    if (at < travel_.count) {
      if (!cpu.in_delay_slot(pc)) {
        travel_.starts.push_back(at);
        if (travel_.starts.size() > travel_.nth)
          travel_.starts.pop_front();
      }
      return;
    }
    // Back at the present: the oldest start kept is the step wanted (or,
    // with fewer, the first of the run's history).
    Travel done = std::move(travel_);
    travel_ = {};
    gdb::StopEvent event = done.starts.size() == done.nth
                               ? gdb::StopEvent::stepped(done.thread)
                               : history_start(done.thread);
    go(done.checkpoint,
       {{"mode", "goto"},
        {"node", done.node},
        {"count", done.starts.empty() ? uint64_t(0) : done.starts.front()},
        {"back_step", false},
        {"event", event_json(event)}});
  }
  if (travel_.mode == Travel::Mode::Call) {
    if (node != travel_.node || pc != travel_.address ||
        ++travel_.seen < travel_.nth)
      return;
    Travel done = std::move(travel_);
    travel_ = {};
    update_hooks();
    hold_in_hook(node, pc, done.event, &done.note);
    return;
  }
  Cpu &cpu = sim_.nodes()[node]->cpu();
  if (travel_.mode == Travel::Mode::Goto) {
    if (node != travel_.node)
      return;
    uint64_t at = cpu.instructions_before(pc);
    bool branch =
        travel_.back_step && at + 1 == travel_.count && branch_at(cpu, pc);
    if (at < travel_.count && !branch)
      return;
    gdb::StopEvent event = travel_.event;
    travel_ = {};
    update_hooks();
    hold_in_hook(node, pc, event);
    return;
  }
  bool soft = soft_breaks_.count(pc) != 0;
  if (!soft && hard_breaks_.count(pc) == 0)
    return;
  uint64_t at = cpu.instructions_before(pc);
  scan_hit(node, at, at,
           gdb::StopEvent::breakpoint(thread_of(node),
                                      soft ? gdb::BreakKind::Software
                                           : gdb::BreakKind::Hardware));
}

void GdbTarget::scan_hit(size_t node, uint64_t at, uint64_t stop_at,
                         const gdb::StopEvent &event) {
  if (node >= travel_.bound.size() || at >= travel_.bound[node])
    return; // not run before the present (or the stretch's end)
  Hit hit{sim_.nodes()[node]->time(), node, at, stop_at, event};
  if (!travel_.latest || travel_.latest->before(hit))
    travel_.latest = hit;
}

bool GdbTarget::scan_done() const {
  for (size_t i = 0; i < travel_.bound.size(); ++i)
    if (sim_.nodes()[i]->cpu().instructions() < travel_.bound[i])
      return false;
  return true;
}

void GdbTarget::finish_scan() {
  Travel scan = std::move(travel_);
  travel_ = {};
  if (scan.latest)
    go(scan.checkpoint, {{"mode", "goto"},
                         {"node", scan.latest->node},
                         {"count", scan.latest->stop_at},
                         {"back_step", false},
                         {"event", event_json(scan.latest->event)}});
  // None in this stretch: the one before it, up to where this one began.
  ForkCheckpoints::Info start = checkpoints_->info(scan.checkpoint);
  std::optional<size_t> earlier =
      checkpoints_->find(start.executed, start.tag, start.time);
  if (!earlier)
    go(scan.checkpoint,
       {{"mode", "here"}, {"event", event_json(history_start(scan.thread))}});
  go(*earlier, {{"mode", "scan"},
                {"bound", start.executed},
                {"checkpoint", *earlier},
                {"thread", scan.thread}});
}

} // namespace nicemu
