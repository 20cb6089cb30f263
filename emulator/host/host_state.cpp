// The host side of a replay in a checkpoint file (docs/replay.md,
// "Checkpoint files"): how far each host's recording has been played, each
// agent's place in its calls and the events it has scheduled, its channel's
// control block and its memory. A run with live host processes cannot be
// saved: their state is in processes the emulator does not own.
#include "host/agent.hpp"
#include "host/channel.hpp"
#include "host/host_tape.hpp"
#include "host/hosts.hpp"

#include "nicemu/error.hpp"
#include "sim/state_archive.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace nicemu {

namespace {

constexpr size_t kPage = 4096;

template <class R, class A> void request_fields(R &r, A &a) {
  a.fields(r.op, r.a, r.b, r.c, r.arg64, r.time);
}
template <class R, class A> void reply_fields(R &r, A &a) {
  a.fields(r.status, r.value, r.time, r.word, r.data, r.stable_until);
}

bool all_zero(const uint8_t *p, size_t n) {
  return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}

// The arena's pages that hold anything: only pages ever touched are
// resident (the replay's arena is private anonymous memory), so the others
// are not read at all.
std::vector<uint64_t> used_pages(uint8_t *arena, uint64_t size) {
  const uint64_t pages = (size + kPage - 1) / kPage;
  std::vector<unsigned char> resident(pages, 1);
  if (pages && mincore(arena, size, resident.data()) != 0)
    std::fill(resident.begin(), resident.end(), 1);
  std::vector<uint64_t> used;
  for (uint64_t p = 0; p < pages; ++p)
    if ((resident[p] & 1) &&
        !all_zero(arena + p * kPage,
                  std::min<uint64_t>(kPage, size - p * kPage)))
      used.push_back(p);
  return used;
}

// A call's name as traces show it, kept for as long as the program runs
// (names are string literals; one read from a checkpoint is kept here).
const char *interned(const std::string &name) {
  static std::set<std::string> names;
  return names.insert(name).first->c_str();
}

} // namespace

namespace channel {

void EmulatorEnd::save_state(StateWriter &out) const {
  if (fd_ >= 0)
    throw Error("checkpoint: host rank " + std::to_string(control_->rank) +
                " is a live process; only replays of host programs can be "
                "saved");
  const ControlBlock &cb = *control_;
  out.section("channel");
  out.fields(answered_seq_, cb.state.load(), cb.reply_seq.load(),
             cb.request_seq, cb.host_time.load(), cb.shutdown.load(),
             cb.posted_seq.load(), cb.posted_taken.load(), cb.posted_write_ps,
             cb.local_polls);
  request_fields(cb.request, out);
  reply_fields(cb.reply, out);
  request_fields(cb.posted, out);
  for (const Region &r : cb.regions)
    out.fields(r.offset, r.length);
  for (uint64_t t : cb.local_poll_start)
    out.u64(t);
  std::vector<uint64_t> pages = used_pages(base_ + arena_offset_, arena_size_);
  out.pods(pages);
  for (uint64_t p : pages)
    out.raw(base_ + arena_offset_ + p * kPage,
            std::min<uint64_t>(kPage, arena_size_ - p * kPage));
}

void EmulatorEnd::load_state(StateReader &in) {
  if (fd_ >= 0)
    in.fail("a live host process's channel cannot be restored");
  ControlBlock &cb = *control_;
  in.section("channel");
  uint32_t state = 0, reply_seq = 0, shutdown = 0, posted_seq = 0,
           posted_taken = 0;
  uint64_t host_time = 0;
  in.fields(answered_seq_, state, reply_seq, cb.request_seq, host_time,
            shutdown, posted_seq, posted_taken, cb.posted_write_ps,
            cb.local_polls);
  if (state > uint32_t(HostState::Exited))
    in.fail("a host channel in state " + std::to_string(state));
  cb.state.store(state);
  cb.reply_seq.store(reply_seq);
  cb.host_time.store(host_time);
  cb.shutdown.store(shutdown);
  cb.posted_seq.store(posted_seq);
  cb.posted_taken.store(posted_taken);
  request_fields(cb.request, in);
  reply_fields(cb.reply, in);
  request_fields(cb.posted, in);
  for (Region &r : cb.regions)
    in.fields(r.offset, r.length);
  for (uint64_t &t : cb.local_poll_start)
    t = in.u64();
  uint8_t *arena = base_ + arena_offset_;
  const uint64_t pages = (arena_size_ + kPage - 1) / kPage;
  std::vector<uint64_t> saved = in.pods<uint64_t>(pages);
  for (uint64_t p : used_pages(arena, arena_size_))
    std::memset(arena + p * kPage, 0,
                std::min<uint64_t>(kPage, arena_size_ - p * kPage));
  for (uint64_t p : saved) {
    if (p >= pages)
      in.fail("a host memory page past the end of the arena");
    in.raw(arena + p * kPage,
           std::min<uint64_t>(kPage, arena_size_ - p * kPage));
  }
}

} // namespace channel

void HostTape::save_state(StateWriter &out) const {
  if (!playing())
    throw Error("checkpoint: a run with live host programs cannot be saved; "
                "its replay can (nicemu replay REC --checkpoint-dir)");
  out.section("recording");
  out.fields(identity_, uint64_t(tapes_.size()), next_frame_out_, divergence_);
  for (const RankTape &t : tapes_)
    out.fields(uint64_t(t.next_action), uint64_t(t.next_reply),
               uint64_t(t.next_read));
}

void HostTape::load_state(StateReader &in) {
  in.section("recording");
  uint64_t identity = 0, ranks = 0, next_frame_out = 0;
  in.fields(identity, ranks, next_frame_out, divergence_);
  if (identity != identity_)
    in.fail("it was taken in a replay of another recording");
  if (ranks != tapes_.size() || next_frame_out > frames_out_.size())
    in.fail("it does not fit its recording");
  next_frame_out_ = size_t(next_frame_out);
  for (RankTape &t : tapes_) {
    uint64_t action = 0, reply = 0, read = 0;
    in.fields(action, reply, read);
    if (action > t.actions.size() || reply > t.replies.size() ||
        read > t.reads.size())
      in.fail("it does not fit its recording");
    t.next_action = size_t(action);
    t.next_reply = size_t(reply);
    t.next_read = size_t(read);
  }
}

namespace {

template <class W, class A> void watch_fields(W &w, A &a) {
  a.fields(w.offset, w.mask, w.expected, w.other_offset, w.other_expected,
           w.until, w.interrupt);
}

// The agent's scheduled operands, queue by queue: `fields(item, archive)`
// lists an item's fields for both directions.
constexpr auto request_item = [](auto &s, auto &a) {
  request_fields(s.request, a);
  a.fields(s.at, s.clock_ok);
};
constexpr auto write_item = [](auto &s, auto &a) {
  request_fields(s.write, a);
  a.fields(s.at, s.cost);
};
constexpr auto reply_item = [](auto &s, auto &a) {
  reply_fields(s.reply, a);
  a.fields(s.lease_poll);
};

template <class Q, class F>
void save_queue(StateWriter &out, const Q &q, F fields) {
  out.u64(q.size());
  for (const auto &item : q)
    fields(item, out);
}

template <class Q, class F> void load_queue(StateReader &in, Q &q, F fields) {
  q.clear();
  for (uint64_t n = in.count(in.left()); n--;) {
    typename Q::value_type item{};
    fields(item, in);
    q.push_back(item);
  }
}

} // namespace

void HostAgent::save_state(StateWriter &out) const {
  out.section("host " + std::to_string(rank_));
  out.fields(uint8_t(phase_), clock_, reply_due_, request_at_, said_exit_,
             exit_status_, failure_, promised_until_, polls_, leased_polls_,
             std::string(call_name_), call_start_);
  out.flag(watch_.has_value());
  if (watch_)
    watch_fields(*watch_, out);
  save_queue(out, requests_, request_item);
  save_queue(out, posted_writes_, write_item);
  save_queue(out, replies_, reply_item);
  channel_->save_state(out);
}

void HostAgent::load_state(StateReader &in) {
  in.section("host " + std::to_string(rank_));
  uint8_t phase = 0;
  std::string call;
  in.fields(phase, clock_, reply_due_, request_at_, said_exit_, exit_status_,
            failure_, promised_until_, polls_, leased_polls_, call,
            call_start_);
  if (phase > uint8_t(Phase::Exited))
    in.fail("host " + std::to_string(rank_) + " in phase " +
            std::to_string(phase));
  phase_ = Phase(phase);
  call_name_ = interned(call);
  watch_.reset();
  if (in.flag()) {
    Watch w{};
    watch_fields(w, in);
    // The words it watches are read from the arena at every change.
    if (!word_in_arena(w.offset) ||
        (w.other_offset && !word_in_arena(*w.other_offset)))
      in.fail("host " + std::to_string(rank_) +
              " watches a word outside its memory");
    watch_ = w;
  }
  // The events are made again after this (Scheduler::load): the deadline's
  // sets deadline_.
  deadline_.reset();
  load_queue(in, requests_, request_item);
  load_queue(in, posted_writes_, write_item);
  load_queue(in, replies_, reply_item);
  channel_->load_state(in);
}

void HostAgent::restore_event(Scheduler &scheduler, const SavedEvent &e) {
  // Each kind's operands wait in its queue; an event with none would run
  // on nothing.
  auto queued = [&](size_t n) {
    if (n == 0)
      throw Error("checkpoint: host rank " + std::to_string(rank_) +
                  " has an event (" + e.name + ") with nothing to do");
  };
  switch (e.tag.kind) {
  case kRequestEvent:
    queued(requests_.size());
    scheduler.restore(e, "host: request", [this] { run_request(); });
    return;
  case kPostedWriteEvent:
    queued(posted_writes_.size());
    scheduler.restore(e, "host: posted write", [this] { run_posted_write(); });
    return;
  case kReplyEvent:
    queued(replies_.size());
    scheduler.restore(e, "host: reply", [this] { deliver_reply(); });
    return;
  case kDeadlineEvent: {
    const Time deadline = e.tag.a;
    deadline_ = scheduler.restore(e, "host: wait deadline", [this, deadline] {
      deadline_passed(deadline);
    });
    return;
  }
  }
  throw Error("checkpoint: host rank " + std::to_string(rank_) +
              " has an event of unknown kind " + std::to_string(e.tag.kind));
}

void HostGroup::save_state(StateWriter &out) const {
  if (!tape_ || !tape_->playing())
    throw Error("checkpoint: a run with live host programs cannot be saved; "
                "its replay can (nicemu run --record, then nicemu replay REC "
                "--checkpoint-dir)");
  out.section("hosts");
  out.u64(agents_.size());
  tape_->save_state(out);
  out.fields(statuses_, failure_, failed_status_);
  for (const std::string &call : ended_in_)
    out.str(call);
  for (const auto &a : agents_)
    a->save_state(out);
}

void HostGroup::load_state(StateReader &in) {
  in.section("hosts");
  if (in.u64() != agents_.size())
    in.fail("it holds another number of host ranks");
  if (!tape_ || !tape_->playing())
    in.fail("a checkpoint with host programs resumes in a replay of their "
            "recording only");
  tape_->load_state(in);
  std::vector<int> statuses;
  in.fields(statuses, failure_, failed_status_);
  if (statuses.size() != agents_.size())
    in.fail("it holds another number of host ranks");
  statuses_ = std::move(statuses);
  if (failed_status_ < -1 || failed_status_ > 0xffff ||
      (failed_status_ != -1 && failure_.empty()))
    in.fail("a host's failure without its reason");
  for (std::string &call : ended_in_)
    call = in.str();
  for (auto &a : agents_)
    a->load_state(in);
  // A host the group saw end has an agent that knows it (note_end).
  for (uint32_t r = 0; r < agents_.size(); ++r)
    if (statuses_[r] != -1 &&
        (statuses_[r] < 0 || statuses_[r] > 0xffff || !agents_[r]->exited()))
      in.fail("host rank " + std::to_string(r) +
              " ended with a status its agent does not agree with");
  agent_failed_ = false;
  for (uint32_t r = 0; r < agents_.size(); ++r)
    agent_changed(r);
}

} // namespace nicemu
