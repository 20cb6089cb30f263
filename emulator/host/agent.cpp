#include "host/agent.hpp"

#include "devices/doorbell.hpp"
#include "nicemu/error.hpp"
#include "nicemu/regs.h"
#include "node/node.hpp"
#include "observe/run_events.hpp"

#include <cstring>

namespace nicemu {

using channel::Op;
using channel::Reply;
using channel::Request;
using channel::Status;

namespace {

// Request kinds as observers name the host's calls.
const char *op_name(Op op) {
  switch (op) {
  case Op::None:
    return "None";
  case Op::Hello:
    return "Hello";
  case Op::PioWrite:
    return "PioWrite";
  case Op::PioRead:
    return "PioRead";
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
  case Op::Doorbell:
    return "Doorbell";
  case Op::WaitWordUntil:
    return "WaitWordUntil";
  }
  return "?";
}

} // namespace

HostCosts HostCosts::from(const Model &model) {
  auto get = [&](const char *key) {
    auto it = model.timing_ps.find(key);
    if (it == model.timing_ps.end())
      throw Error("model " + model.name +
                  " cannot run host programs: [timing] " + key + " is missing");
    return it->second;
  };
  HostCosts costs{get("host.pio_write_word"), get("host.pio_read_word"),
                  get("host.poll_own_memory")};
  // A model without its own figure: a doorbell is one PIO write.
  auto doorbell = model.timing_ps.find("host.doorbell_write");
  costs.doorbell_write =
      doorbell != model.timing_ps.end() ? doorbell->second : costs.pio_write;
  return costs;
}

HostAgent::HostAgent(uint32_t rank, uint32_t size, uint64_t arena_bytes,
                     Scheduler &scheduler, const Model &model)
    : rank_(rank), scheduler_(scheduler), model_(model),
      costs_(HostCosts::from(model)),
      channel_(
          std::make_unique<channel::EmulatorEnd>(rank, size, arena_bytes)) {
  channel_->set_posted_write_cost(costs_.pio_write);
}

HostAgent::~HostAgent() = default;

Time HostAgent::earliest_action() const {
  switch (phase_) {
  case Phase::Starting:
  case Phase::Computing:
    return clock_;
  default:
    return kTimeNever;
  }
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
  take_posted_write();
  // The simulation never passes a computing host's clock, so its request
  // is never in the past.
  Time at = std::max<Time>(r.time, scheduler_.now());
  phase_ = r.op == Op::Exit ? Phase::Exited : Phase::Busy;
  if (r.op == Op::Exit) {
    said_exit_ = true;
    exit_status_ = int(r.a);
    return;
  }
  // Ordered by rank, not by when the request happened to be taken in.
  EventOrigin was = scheduler_.set_origin(EventOrigin::host(rank_));
  scheduler_.schedule(at, "host: request", [this, r, at] {
    Request stamped = r;
    stamped.time = at;
    handle(stamped);
  });
  scheduler_.set_origin(was);
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
  clock_ = std::max(clock_, at + costs_.pio_write);
  EventOrigin was = scheduler_.set_origin(EventOrigin::host(rank_));
  scheduler_.schedule(at, "host: posted write", [this, w, at] {
    if (RunEvents *events = node_ ? node_->events() : nullptr)
      events->host_call(rank_, "PioWrite", at, at + costs_.pio_write);
    if (!pio_write(w) && failure_.empty())
      failure_ = "host rank " + std::to_string(rank_) +
                 ": a posted PIO write to card address " + std::to_string(w.a) +
                 " was refused (not a card register)";
  });
  scheduler_.set_origin(was);
}

bool HostAgent::pio_write(const Request &r) {
  if (!node_ || r.a % 4 || !node_->card_range(r.a, 4))
    return false;
  node_->card_write(r.a, &r.b, 4);
  if (r.a - model_.host_mailbox() < 4096)
    node_->raise_irq(NICEMU_IRQ_HOST); // the mailbox doorbell
  return true;
}

void HostAgent::reply_at(Time t, Reply reply) {
  if (RunEvents *events = node_ ? node_->events() : nullptr)
    events->host_call(rank_, op_name(call_op_), call_start_, t);
  reply.time = t;
  scheduler_.schedule(t, "host: reply", [this, reply] {
    clock_ = reply.time;
    phase_ = Phase::Computing;
    channel_->reply(reply);
  });
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
  call_op_ = r.op;
  call_start_ = now;
  switch (r.op) {
  case Op::PioWrite: {
    Reply rep;
    if (!pio_write(r))
      rep.status = Status::BadArgument;
    return reply_at(now + costs_.pio_write, rep);
  }
  case Op::PioRead: {
    Reply rep;
    if (!node_ || r.a % 4 || !node_->card_read(r.a, &rep.value, 4))
      rep.status = Status::BadArgument;
    return reply_at(now + costs_.pio_read, rep);
  }
  case Op::Advance:
    return reply_at(now + r.arg64, Reply{});
  case Op::WaitWord:
    if (!word_in_arena(r.a))
      return reply_at(now, Reply{Status::BadArgument, 0, 0});
    watch_ = Watch{r.a, r.b, r.c, std::nullopt, 0, false};
    return check_watch();
  case Op::WaitEither:
    if (!word_in_arena(r.a) || !word_in_arena(r.b))
      return reply_at(now, Reply{Status::BadArgument, 0, 0});
    watch_ = Watch{r.a, ~0u, r.c, r.b, uint32_t(r.arg64), false};
    return check_watch();
  case Op::WaitWordUntil:
    if (!word_in_arena(r.a))
      return reply_at(now, Reply{Status::BadArgument, 0, 0});
    watch_ = Watch{r.a, r.b, r.c, std::nullopt, 0, true};
    check_watch();
    // No match yet: the host gives up at the deadline (at once if it has
    // passed; kTimeNever: it waits as long as WaitWord).
    if (watch_ && r.arg64 != kTimeNever)
      watch_deadline(std::max<Time>(r.arg64, now));
    return;
  case Op::Doorbell:
    return ring_doorbell(r);
  default:
    return reply_at(now, immediate(r));
  }
}

// A doorbell write lands in its FIFO at once and costs the host the model's
// doorbell_write. A full FIFO refuses it, as a PCI target retries a write
// it cannot take: the write is held until the firmware pops an entry of
// that FIFO, lands at that pop, and completes no earlier than it would
// have without the retry.
void HostAgent::ring_doorbell(const Request &r) {
  const Time now = r.time;
  DoorbellDevice *bell = node_ ? node_->doorbell() : nullptr;
  if (!bell || r.a >= bell->fifos())
    return reply_at(now, Reply{Status::BadArgument, 0, 0});
  const Time done = now + costs_.doorbell_write;
  if (bell->push(r.a, r.b))
    return reply_at(done, Reply{});
  bell->when_space(
      r.a, [this, bell, fifo = r.a, value = r.b, done](Time popped) {
        if (phase_ == Phase::Exited) // the process is gone: drop its write
          return;
        bell->push(fifo, value); // the pop just freed an entry
        reply_at(std::max(done, popped), Reply{});
      });
}

bool HostAgent::word_in_arena(uint64_t offset) const {
  return offset % 4 == 0 && offset + 4 <= channel_->arena_size();
}

uint32_t HostAgent::arena_word(uint64_t offset) const {
  uint32_t word;
  std::memcpy(&word, channel_->arena() + offset, 4);
  return word;
}

// A waiting host notices a change in its own memory one poll later.
void HostAgent::check_watch() {
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
  watch_.reset();
  if (deadline_) {
    scheduler_.cancel(*deadline_);
    deadline_.reset();
  }
  reply_at(scheduler_.now() + costs_.poll_own_memory,
           Reply{Status::Ok, value, 0, word});
}

// WaitWordUntil: if the word has not matched by `deadline`, the host gives
// up then. After any write landing at the deadline itself (priority 1: the
// other events at that time run first), so a match at the deadline counts.
void HostAgent::watch_deadline(Time deadline) {
  deadline_ = scheduler_.schedule(
      deadline, "host: wait deadline",
      [this, deadline] {
        deadline_.reset();
        if (!watch_ || phase_ == Phase::Exited)
          return;
        uint32_t word = arena_word(watch_->offset);
        watch_.reset();
        reply_at(deadline, Reply{Status::Ok, 1, 0, word});
      },
      1);
}

bool HostAgent::registered(uint64_t addr, size_t len) const {
  return channel_->registered(addr, len);
}

bool HostAgent::read(uint64_t addr, void *out, size_t len) const {
  if (!registered(addr, len))
    return false;
  std::memcpy(out, channel_->arena() + (addr - channel::kArenaBusBase), len);
  return true;
}

bool HostAgent::write(uint64_t addr, const void *in, size_t len) {
  if (!registered(addr, len))
    return false;
  std::memcpy(channel_->arena() + (addr - channel::kArenaBusBase), in, len);
  check_watch();
  return true;
}

std::string HostAgent::waiting_in() const {
  return phase_ == Phase::Busy ? op_name(call_op_) : "";
}

void HostAgent::process_ended() {
  phase_ = Phase::Exited;
}

void HostAgent::shut_down() {
  channel_->shutdown(); // the call in progress, and every later one, fails
  phase_ = Phase::Exited;
}

} // namespace nicemu
