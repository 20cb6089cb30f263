#include "host/agent.hpp"

#include "host/host_tape.hpp"

#include "nicemu/error.hpp"
#include "node/node.hpp"
#include "observe/run_events.hpp"

#include <cstring>

namespace nicemu {

static_assert(channel::kTimeEnd == kTimeEnd,
              "host and emulator agree on the end of virtual time");

using channel::Op;
using channel::Reply;
using channel::Request;
using channel::Status;

// Request kinds as observers name the host's calls (a card access is named
// by the window it reaches: "PioWrite", "Doorbell").
const char *op_name(Op op) {
  switch (op) {
  case Op::None:
    return "None";
  case Op::Hello:
    return "Hello";
  case Op::Write:
    return "Write";
  case Op::Read:
    return "Read";
  case Op::WaitWord:
    return "WaitWord";
  case Op::Advance:
    return "Advance";
  case Op::Register:
    return "Register";
  case Op::Deregister:
    return "Deregister";
  case Op::Exit:
    return "Exit";
  case Op::WaitEither:
    return "WaitEither";
  case Op::WaitWordUntil:
    return "WaitWordUntil";
  case Op::WriteBlock:
    return "WriteBlock";
  case Op::ReadBlock:
    return "ReadBlock";
  case Op::WaitInterrupt:
    return "WaitInterrupt";
  }
  return "?";
}

HostCosts HostCosts::from(const Model &model) {
  auto it = model.timing_ps.find("host.poll_own_memory");
  if (it == model.timing_ps.end())
    throw Error("model " + model.name +
                " cannot run host programs: [timing] host.poll_own_memory is "
                "missing");
  HostCosts costs{it->second};
  // Models without a figure for it wake a sleeping host as a poll would.
  auto irq = model.timing_ps.find("host.interrupt");
  costs.interrupt =
      irq == model.timing_ps.end() ? costs.poll_own_memory : irq->second;
  return costs;
}

HostAgent::HostAgent(uint32_t rank, uint32_t size, uint64_t arena_bytes,
                     Scheduler &scheduler, const Model &model,
                     uint32_t per_node)
    : rank_(rank), scheduler_(scheduler), model_(model),
      costs_(HostCosts::from(model)),
      channel_(std::make_unique<channel::EmulatorEnd>(rank, size, arena_bytes,
                                                      per_node)),
      per_node_(per_node) {
  scheduler_.add_owner(host_event_owner(rank_), this);
}

// The host charges itself a posted write's cost: the board's figure for
// the writes its host library posts (PCI: a PIO write; DIMMnet: a store).
void HostAgent::attach(Node *node) {
  node_ = node;
  channel_->set_posted_write_cost(node->host_port().posted_write_cost());
}

HostAgent::~HostAgent() {
  scheduler_.remove_owner(host_event_owner(rank_), this);
}

Time HostAgent::earliest_action() const {
  switch (phase_) {
  case Phase::Starting:
  case Phase::Computing:
    return clock_;
  default:
    return kTimeNever;
  }
}

Time HostAgent::earliest_access() const {
  switch (phase_) {
  case Phase::Starting:
  case Phase::Computing:
    return clock_;
  case Phase::Busy:
    return reply_due_ ? *reply_due_ : request_at_;
  case Phase::Exited:
    break;
  }
  return kTimeNever;
}

void HostAgent::poll() {
  if (phase_ == Phase::Exited)
    return;
  // A request stays posted until it is answered: take it in once. A posted
  // write is taken in with the request that follows it (which is what wakes
  // the emulator): until then the simulation waits at the host's clock
  // anyway. The request is looked at first, so a posted write made before
  // it is always there by then.
  Request r;
  if (phase_ == Phase::Busy || !channel_->pending(r))
    return;
  if (tape_ && !tape_->playing())
    tape_->took_request(rank_, channel_->control(), r);
  report_local_polls();
  take_posted_write();
  // The host answers polls under its lease only until it acts: a card
  // woken by this request (or by the posted write) may write sooner.
  promised_until_ = std::min(promised_until_, Time(r.time));
  // The simulation never passes a computing host's clock, so its request
  // is never in the past. A clock past the end of virtual time (only a host
  // that writes its control block has one) is refused at the present, and
  // the host's clock comes back to it.
  const bool clock_ok = r.time <= kTimeEnd;
  Time at =
      clock_ok ? std::max<Time>(r.time, scheduler_.now()) : scheduler_.now();
  set_phase(r.op == Op::Exit ? Phase::Exited : Phase::Busy);
  request_at_ = at;
  if (r.op == Op::Exit) {
    said_exit_ = true;
    exit_status_ = int(r.a);
    return;
  }
  // Ordered by rank, not by when the request happened to be taken in.
  EventOrigin was = scheduler_.set_origin(EventOrigin::host(rank_));
  requests_.push_back({r, at, clock_ok});
  scheduler_.schedule(at, "host: request", [this] { run_request(); }, 0,
                      {host_event_owner(rank_), kRequestEvent});
  scheduler_.set_origin(was);
}

void HostAgent::run_request() {
  ScheduledRequest s = requests_.front();
  requests_.pop_front();
  Request stamped = s.request;
  stamped.time = s.at;
  if (!s.clock_ok)
    return refuse(stamped);
  handle(stamped);
}

bool HostAgent::request_waiting() const {
  Request r;
  return phase_ != Phase::Busy && phase_ != Phase::Exited &&
         channel_->pending(r);
}

// The polls the host answered by itself under its lease, told to the
// observers as if the emulator had answered them (the trace is the same
// with leases on or off). Their times lie between the lease's reply and
// this request, where the simulation has not gone yet. The host writes the
// list: a broken one only loses trace entries.
void HostAgent::report_local_polls() {
  channel::ControlBlock &cb = channel_->control();
  uint32_t n = std::min(cb.local_polls, channel::kMaxLocalPolls);
  cb.local_polls = 0;
  polls_ += n;
  leased_polls_ += n;
  RunEvents *events = node_ ? node_->events() : nullptr;
  if (!events)
    return;
  for (uint32_t i = 0; i < n; ++i) {
    Time start = cb.local_poll_start[i];
    if (start < clock_ || start > kTimeEnd - costs_.poll_own_memory)
      continue;
    events->host_call(node_->node_id(), op_name(Op::WaitWord), start,
                      start + costs_.poll_own_memory);
  }
}

// Refused at once with no time charged: the host's clock stays where the
// request found it.
void HostAgent::refuse(const Request &r) {
  call_name_ = op_name(r.op);
  call_start_ = r.time;
  reply_at(r.time, Reply{Status::BadArgument, 0, 0});
}

// A posted PIO write runs at the host's time, like a waited-for one, and
// the host computes on from the write's cost later (it already moved its
// own clock). Only the host library's mailbox writes are posted, so a
// refused one means a broken host: the run stops with the reason.
void HostAgent::take_posted_write() {
  Request w;
  if (!channel_->take_posted(w))
    return;
  Time at = std::max<Time>(w.time, scheduler_.now());
  if (w.time > kTimeEnd) { // only a host that writes its control block
    fail("host rank " + std::to_string(rank_) +
         ": a posted PIO write is stamped past the end of virtual "
         "time (its control block was overwritten)");
    return;
  }
  Time cost = node_ ? node_->host_port().posted_write_cost(w.a) : 0;
  clock_ = std::max(clock_, at + cost);
  promised_until_ = std::min(promised_until_, Time(w.time)); // as in poll()
  EventOrigin was = scheduler_.set_origin(EventOrigin::host(rank_));
  posted_writes_.push_back({w, at, cost});
  scheduler_.schedule(at, "host: posted write", [this] { run_posted_write(); },
                      0, {host_event_owner(rank_), kPostedWriteEvent});
  scheduler_.set_origin(was);
}

void HostAgent::run_posted_write() {
  const ScheduledWrite s = posted_writes_.front();
  posted_writes_.pop_front();
  const Request &w = s.write;
  const char *name =
      node_ ? node_->host_port().call_name(w.a, true) : op_name(Op::Write);
  if (RunEvents *events = node_ ? node_->events() : nullptr)
    events->host_call(node_ ? node_->node_id() : rank_, name, s.at,
                      s.at + s.cost);
  // The window may keep it past this call (a store held for a credit).
  auto refused = [this, address = w.a](const HostBusResult &result) {
    if (!result.ok)
      fail("host rank " + std::to_string(rank_) +
           ": a posted PIO write to card address " + std::to_string(address) +
           " was refused (" + result.why + ")");
    return true;
  };
  if (!node_) {
    refused({false, 0, s.at, "no card"});
    return;
  }
  HostPort::Serving serving(node_->host_port(), rank_);
  node_->host_port().write(w.a, w.b, w.arg64, s.at, refused);
}

void HostAgent::reply_at(Time t, Reply reply, Time lease_poll) {
  if (RunEvents *events = node_ ? node_->events() : nullptr)
    events->host_call(node_ ? node_->node_id() : rank_, call_name_, call_start_,
                      t);
  reply.time = t;
  reply_due_ = t;
  replies_.push_back({reply, lease_poll});
  scheduler_.schedule(t, "host: reply", [this] { deliver_reply(); }, 0,
                      {host_event_owner(rank_), kReplyEvent});
}

void HostAgent::deliver_reply() {
  auto [reply, lease_poll] = replies_.front();
  replies_.pop_front();
  // The lease is taken when the reply is due: every event before it has
  // run, and a transfer a core started since the request is in flight. A
  // core asleep since then starts nothing before something wakes it.
  if (lease_poll) {
    Time start = quiet_until_ && node_->asleep_since(reply.time)
                     ? quiet_until_(reply.time, node_->node_id(), rank_)
                     : reply.time;
    Time stable = node_->earliest_host_write(reply.time, start);
    if (stable > reply.time + lease_poll) {
      reply.stable_until = stable;
      reply.data = lease_poll;
      promised_until_ = std::max(promised_until_, stable);
    }
  }
  reply_due_.reset();
  // A host whose process has ended (in the middle of this call) gets no
  // reply: it must not come back to life as a computing host that the
  // simulation would then wait for.
  if (phase_ == Phase::Exited)
    return;
  clock_ = reply.time;
  set_phase(Phase::Computing);
  ready_ = reply;
}

// The process reads its own memory directly, in wall time, as soon as it
// has its reply. So the reply waits until the simulation has run every
// event at its time (but the hosts' own requests, which come after it):
// a device writing host memory at that very time has written it, whether
// the process wakes in a microsecond or a second.
void HostAgent::release_reply() {
  if (!ready_)
    return;
  Reply reply = *ready_;
  ready_.reset();
  if (phase_ == Phase::Exited)
    return;
  if (tape_)
    tape_->replied(rank_, reply);
  channel_->reply(reply);
}

Reply HostAgent::immediate(const Request &r) {
  Reply rep;
  switch (r.op) {
  case Op::Hello:
    rep.value = model_.host_mailbox();
    break;
  case Op::Register:
    rep.status = channel_->add_region(r.a, r.b);
    break;
  case Op::Deregister:
    rep.status = channel_->remove_region(r.a);
    break;
  default:
    rep.status = Status::BadArgument;
  }
  return rep;
}

void HostAgent::handle(const Request &r) {
  const Time now = r.time;
  call_name_ = op_name(r.op);
  call_start_ = now;
  switch (r.op) {
  case Op::Write:
  case Op::Read:
  case Op::WriteBlock:
  case Op::ReadBlock:
    return card_access(r, now);
  case Op::Advance:
    // Past the end of virtual time: refused, the clock stays.
    if (r.arg64 > kTimeEnd - std::min(now, kTimeEnd))
      return reply_at(now, Reply{Status::BadArgument, 0, 0});
    return reply_at(now + r.arg64, Reply{});
  case Op::WaitWord:
  case Op::WaitInterrupt:
    if (!word_in_arena(r.a))
      return reply_at(now, Reply{Status::BadArgument, 0, 0});
    watch_ =
        Watch{r.a, r.b, r.c, std::nullopt, 0, false, r.op == Op::WaitInterrupt};
    polls_ += r.op == Op::WaitWord;
    return check_watch(r.op == Op::WaitWord);
  case Op::WaitEither:
    if (!word_in_arena(r.a) || !word_in_arena(r.b))
      return reply_at(now, Reply{Status::BadArgument, 0, 0});
    watch_ = Watch{r.a,
                   ~0u,
                   r.c,
                   r.b,
                   uint32_t(r.arg64),
                   false,
                   bool((r.arg64 >> 32) & 1)};
    return check_watch();
  case Op::WaitWordUntil:
    // kTimeNever: no deadline; any other deadline past the end is refused.
    if (!word_in_arena(r.a) || (r.arg64 > kTimeEnd && r.arg64 != kTimeNever))
      return reply_at(now, Reply{Status::BadArgument, 0, 0});
    watch_ = Watch{r.a, r.b, r.c, std::nullopt, 0, true};
    check_watch();
    // No match yet: the host gives up at the deadline (at once if it has
    // passed; kTimeNever: it waits as long as WaitWord).
    if (watch_ && r.arg64 != kTimeNever)
      watch_deadline(std::max<Time>(r.arg64, now));
    return;
  default:
    return reply_at(now, immediate(r));
  }
}

// The card answers through its host port, at once or (a held write) later;
// a host gone by then gets no reply and its held write is dropped.
void HostAgent::card_access(const Request &r, Time at) {
  const bool write = r.op == Op::Write;
  auto reply = [this](const HostBusResult &result) {
    if (phase_ == Phase::Exited)
      return false;
    Reply rep;
    rep.status = result.ok ? Status::Ok : Status::BadArgument;
    rep.value = uint32_t(result.value);
    rep.data = result.value;
    rep.stable_until = result.stable_until;
    reply_at(result.done, rep);
    return true;
  };
  const unsigned size = r.b;
  if (node_ && (r.op == Op::WriteBlock || r.op == Op::ReadBlock)) {
    HostPort &port = node_->host_port();
    HostPort::Serving serving(port, rank_);
    const bool block_write = r.op == Op::WriteBlock;
    call_name_ = port.call_name(r.a, block_write);
    if (size == 0 || size > 4096 ||
        uint64_t(r.c) + size > channel_->arena_size())
      return (void)reply(
          {false, 0, at, "a burst is 1-4096 bytes of the arena"});
    uint8_t *arena = channel_->arena() + r.c;
    if (block_write && tape_) // the host waits: its data stays as it is
      tape_->arena_read(rank_, at, r.c, arena, size);
    if (block_write)
      port.write_block(r.a, std::span<const uint8_t>(arena, size), at, reply);
    else
      port.read_block(r.a, std::span<uint8_t>(arena, size), at, reply);
    return;
  }
  if (!node_ || (size != 1 && size != 2 && size != 4 && size != 8)) {
    reply({false, 0, at, "no card, or not a 1, 2, 4 or 8-byte access"});
    return;
  }
  HostPort &port = node_->host_port();
  HostPort::Serving serving(port, rank_);
  call_name_ = port.call_name(r.a, write);
  if (write)
    port.write(r.a, size, r.arg64, at, reply);
  else
    port.read(r.a, size, at, reply);
}

bool HostAgent::word_in_arena(uint64_t offset) const {
  return offset % 4 == 0 && offset + 4 <= channel_->arena_size();
}

uint32_t HostAgent::arena_word(uint64_t offset) const {
  uint32_t word;
  taped_read(offset, 4);
  std::memcpy(&word, channel_->arena() + offset, 4);
  return word;
}

// A waiting host notices a change in its own memory one poll later.
//
// Host leases: a poll that matches at once (most often an empty poll, mask
// 0) tells the host when its memory can next change: the earliest time
// any device of its card could write host memory (Node::earliest_host_write).
// Until then the host library answers polls of its own memory by itself,
// each charged one poll, exactly as the emulator would have answered them,
// and saves a round trip each.
void HostAgent::check_watch(bool at_request) {
  if (!watch_)
    return;
  uint32_t word = arena_word(watch_->offset);
  uint32_t value;
  if ((word & watch_->mask) == watch_->expected)
    value = watch_->other_offset || watch_->until ? 0 : word;
  else if (watch_->other_offset &&
           arena_word(*watch_->other_offset) == watch_->other_expected)
    value = 1;
  else
    return;
  Time notice = watch_->interrupt ? costs_.interrupt : costs_.poll_own_memory;
  watch_.reset();
  if (deadline_) {
    scheduler_.cancel(*deadline_);
    deadline_.reset();
  }
  reply_at(scheduler_.now() + notice, Reply{Status::Ok, value, 0, word},
           at_request && leases_ && per_node_ == 1 && node_ ? notice : 0);
}

// WaitWordUntil: if the word has not matched by `deadline`, the host gives
// up then. After any write landing at the deadline itself (priority 1: the
// other events at that time run first), so a match at the deadline counts.
void HostAgent::watch_deadline(Time deadline) {
  deadline_ =
      scheduler_.schedule(deadline, "host: wait deadline",
                          [this, deadline] { deadline_passed(deadline); }, 1,
                          {host_event_owner(rank_), kDeadlineEvent, deadline});
}

void HostAgent::deadline_passed(Time deadline) {
  deadline_.reset();
  if (!watch_ || phase_ == Phase::Exited)
    return;
  uint32_t word = arena_word(watch_->offset);
  watch_.reset();
  reply_at(deadline, Reply{Status::Ok, 1, 0, word});
}

bool HostAgent::registered(uint64_t addr, size_t len) const {
  return channel_->registered(addr, len);
}

bool HostAgent::read(uint64_t addr, void *out, size_t len) const {
  if (!registered(addr, len))
    return false;
  taped_read(addr - channel_->bus_base(), len);
  std::memcpy(out, channel_->arena() + (addr - channel_->bus_base()), len);
  return true;
}

// Before the emulator reads host memory: a recording keeps the bytes, a
// replay puts the recorded ones there (the host that wrote them is not
// running).
void HostAgent::taped_read(uint64_t offset, size_t len) const {
  if (tape_)
    tape_->arena_read(rank_, scheduler_.now(), offset,
                      channel_->arena() + offset, len);
}

bool HostAgent::write(uint64_t addr, const void *in, size_t len) {
  if (!registered(addr, len))
    return false;
  // The process has its reply and computes: it may be reading this very
  // memory now, in wall time (release_reply). Never expected; the run
  // stops instead of giving a result that depends on wall time.
  if (phase_ == Phase::Computing && !ready_)
    fail("internal error: a device wrote the memory of host rank " +
         std::to_string(rank_) + " at " + std::to_string(scheduler_.now()) +
         " ps while the host computed from " + std::to_string(clock_) +
         " ps: what it read depends on wall time; please report it");
  // A device wrote before the time its card promised: the host may have
  // answered a poll from memory that was already stale. Never expected
  // either.
  if (scheduler_.now() < promised_until_)
    fail("internal error: the card of host rank " + std::to_string(rank_) +
         " wrote host memory at " + std::to_string(scheduler_.now()) +
         " ps, before the time it promised (" +
         std::to_string(promised_until_) +
         " ps); rerun with --no-leases, and please report it");
  std::memcpy(channel_->arena() + (addr - channel_->bus_base()), in, len);
  check_watch();
  return true;
}

std::string HostAgent::waiting_in() const {
  return phase_ == Phase::Busy ? call_name_ : "";
}

// Whatever it waited for no longer matters: its memory may still be written
// (the arena is the emulator's), but no reply is due.
void HostAgent::process_ended() {
  set_phase(Phase::Exited);
  ready_.reset();
  watch_.reset();
  if (deadline_) {
    scheduler_.cancel(*deadline_);
    deadline_.reset();
  }
}

void HostAgent::set_phase(Phase phase) {
  phase_ = phase;
  if (observer_)
    observer_(rank_);
}

void HostAgent::fail(std::string why) {
  if (!failure_.empty())
    return;
  failure_ = std::move(why);
  if (observer_)
    observer_(rank_);
}

void HostAgent::shut_down() {
  channel_->shutdown(); // the call in progress, and every later one, fails
  set_phase(Phase::Exited);
}

} // namespace nicemu
