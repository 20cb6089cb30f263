#include "dist/rank_share.hpp"

#include "nicemu/error.hpp"

#include <algorithm>

namespace nicemu {

namespace {

// Where another rank's card is plugged in: the network's calls into it go
// to its owner (RankShare::call), never here.
class StandIn : public PacketReceiver {
public:
  explicit StandIn(uint32_t node) : node_(node) {}
  bool accept_head(const Packet &, Time) override { fail(); }
  void packet_arrived(Packet, Time) override { fail(); }

private:
  [[noreturn]] void fail() const {
    throw Error("internal error: the network called node " +
                std::to_string(node_) + " on a rank that does not own it");
  }
  uint32_t node_;
};

void write_view(StateWriter &out, const RankView &v) {
  for (uint64_t word :
       {uint64_t(v.first_core), uint64_t(v.first_node), uint64_t(v.second_core),
        v.nodes, v.finished, uint64_t(v.faulted_node), uint64_t(v.faulted_time),
        uint64_t(v.latest_node), uint64_t(v.stop), uint64_t(v.host_action),
        uint64_t(v.hosts_done), uint64_t(v.halts)})
    out.u64(word);
  out.str(v.host_failure);
}

RankView read_view(StateReader &in) {
  RankView v;
  v.first_core = in.u64();
  v.first_node = uint32_t(in.u64());
  v.second_core = in.u64();
  v.nodes = in.u64();
  v.finished = in.u64();
  v.faulted_node = uint32_t(in.u64());
  v.faulted_time = in.u64();
  v.latest_node = in.u64();
  v.stop = in.u64() != 0;
  v.host_action = in.u64();
  v.hosts_done = in.u64() != 0;
  v.halts = in.u64() != 0;
  v.host_failure = in.str(1 << 16);
  return v;
}

// The cluster's view from the ranks'.
RankView combine(const std::vector<RankView> &views) {
  RankView all;
  for (const RankView &v : views) {
    // The two earliest cores of all: the earliest first, then the earliest
    // of the others' firsts and its own rank's second.
    if (std::pair(v.first_core, v.first_node) <
        std::pair(all.first_core, all.first_node)) {
      all.second_core = std::min(all.first_core, v.second_core);
      all.first_core = v.first_core;
      all.first_node = v.first_node;
    } else {
      all.second_core = std::min(all.second_core, v.first_core);
    }
    all.nodes += v.nodes;
    all.finished += v.finished;
    if (v.faulted_node < all.faulted_node) {
      all.faulted_node = v.faulted_node;
      all.faulted_time = v.faulted_time;
    }
    all.latest_node = std::max(all.latest_node, v.latest_node);
    all.stop = all.stop || v.stop;
    all.host_action = std::min(all.host_action, v.host_action);
    all.hosts_done = all.hosts_done && v.hosts_done;
    if (all.host_failure.empty())
      all.host_failure = v.host_failure;
    all.halts = all.halts || v.halts;
  }
  return all;
}

} // namespace

RankShare::RankShare(RankLink &link, std::vector<uint32_t> owner,
                     Scheduler &scheduler, Fabric &fabric)
    : link_(link), owner_(std::move(owner)), scheduler_(scheduler),
      fabric_(fabric), order_(link.ranks()), views_(link.ranks()) {
  if (owner_.size() != fabric.topology().nodes)
    throw Error("ranks: " + std::to_string(owner_.size()) +
                " nodes shared out, but the network has " +
                std::to_string(fabric.topology().nodes));
  for (uint32_t n = 0; n < owner_.size(); ++n) {
    if (owner_[n] >= link.ranks())
      throw Error("ranks: node " + std::to_string(n) + " is on rank " +
                  std::to_string(owner_[n]) + ", and the run has " +
                  std::to_string(link.ranks()));
    if (!owns(n)) {
      stand_ins_.push_back(std::make_unique<StandIn>(n));
      fabric.attach(n, stand_ins_.back().get());
    }
  }
  fabric.set_call_log([this](const FabricCall &c) { calls_.push_back(c); });
  fabric.set_card_calls(this);
}

RankShare::~RankShare() {
  fabric_.set_card_calls(nullptr);
  fabric_.set_call_log(nullptr);
  for (uint32_t n = 0; n < owner_.size(); ++n)
    if (!owns(n))
      fabric_.attach(n, nullptr);
}

// The others' calls: posted with their keys, so that every copy of the
// network runs them where the owner's does. A sender's on_sent runs on its
// owner; here the owner's word stands in for it (call).
void RankShare::apply(const std::vector<FabricCall> &calls) {
  for (const FabricCall &c : calls)
    fabric_.apply_call(c, [](Time) {});
}

void RankShare::tell(bool answer) {
  CardReply reply{answer, std::exchange(calls_, {}),
                  StepOrder::own_next(scheduler_)};
  order_.told(rank(), reply.next);
  StateWriter out;
  write_reply(out, reply);
  views_[rank()] = view_ ? view_() : RankView{};
  write_view(out, views_[rank()]);
  link_.tell_others(out.data());
  ++messages_;
}

CardReply RankShare::told(uint32_t from) {
  std::vector<uint8_t> bytes = link_.receive(from);
  StateReader in(bytes, "rank " + std::to_string(from) + "'s word");
  CardReply reply = read_reply(in);
  views_[from] = read_view(in);
  if (!in.done())
    in.fail("bytes after the view");
  apply(reply.calls);
  order_.told(from, reply.next);
  return reply;
}

bool RankShare::call(uint32_t node, const std::function<bool()> &body) {
  if (!owns(node))
    return told(owner_[node]).answer;
  bool answer = body();
  tell(answer);
  return answer;
}

RankView RankShare::agree(const RankView &mine) {
  StateWriter out;
  write_view(out, mine);
  write_reply(out, CardReply{false, std::exchange(calls_, {}),
                             StepOrder::own_next(scheduler_)});
  if (write_rider_)
    write_rider_(out);
  std::vector<std::vector<uint8_t>> all = link_.exchange(out.data());
  ++messages_;
  for (uint32_t r = 0; r < all.size(); ++r) {
    StateReader in(all[r], "rank " + std::to_string(r) + "'s figures");
    views_[r] = read_view(in);
    CardReply reply = read_reply(in);
    if (read_rider_)
      read_rider_(r, in);
    if (!in.done())
      in.fail("bytes after the figures");
    if (r != rank())
      apply(reply.calls);
    order_.told(r, reply.next);
  }
  return combine(views_);
}

RankView RankShare::current() const {
  return combine(views_);
}

Time RankShare::next_event_time() const {
  // This rank's scheduler holds the network's events and its own cards'.
  Time t = scheduler_.next_time();
  for (uint32_t r = 0; r < ranks(); ++r)
    if (r != rank() && order_.next_card(r))
      t = std::min(t, order_.next_card(r)->when);
  return t;
}

// One event a step, chosen alike on every rank (StepOrder): the network's
// on every rank, a card's on its owner, which tells the others what it
// did. Stops before the first event past `until` (or at `until` from
// origin `held` on).
void RankShare::step_until(Time until, uint64_t held) {
  for (;;) {
    StepOrder::Step step = order_.next(scheduler_);
    if (step.kind == StepOrder::Step::Done)
      break;
    EventKey key = step.kind == StepOrder::Step::Network
                       ? EventKey::of(step.network)
                       : *order_.next_card(step.rank);
    if (key.when > until || (key.when == until && key.origin >= held))
      break;
    if (step.kind == StepOrder::Step::Card && step.rank != rank()) {
      told(step.rank);
      continue;
    }
    SavedEvent top;
    if (!scheduler_.peek(top) || EventKey::of(top) != key)
      throw Error("internal error: rank " + std::to_string(rank()) +
                  " is out of step with the others (its next event is not "
                  "the one the cluster runs next)");
    if (step.kind == StepOrder::Step::Network) {
      order_.ran(step.network);
      scheduler_.run_next();
    } else {
      scheduler_.run_next();
      tell(false);
    }
  }
}

void RankShare::run_until(Time until) {
  step_until(until, UINT64_MAX);
  scheduler_.run_until(until); // only moves its clock: nothing is left
}

void RankShare::run_until(Time until, EventOrigin held) {
  step_until(until, held.id);
  scheduler_.run_until(until, held);
}

} // namespace nicemu
