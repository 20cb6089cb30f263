// One rank's part of a cluster spread over ranks (docs/distributed.md,
// "What it will be"): it owns some nodes' cards and keeps the whole
// network. Installed in the rank's Simulation (RankSync) and network
// (CardCalls), it keeps the events of every rank in the order of one
// process (StepOrder) and carries what the cards tell the network to the
// other ranks.
#pragma once

#include "dist/fabric_calls.hpp"
#include "dist/rank_link.hpp"
#include "dist/step_order.hpp"
#include "fabric/fabric.hpp"
#include "sim/rank_sync.hpp"

#include <memory>
#include <vector>

namespace nicemu {

class RankShare : public RankSync, public CardCalls {
public:
  // `owner[n]` is the rank of node n. Call after this rank's cards are
  // attached to `fabric`: the other nodes get stand-ins, never called.
  RankShare(RankLink &link, std::vector<uint32_t> owner, Scheduler &scheduler,
            Fabric &fabric);
  ~RankShare() override;
  RankShare(const RankShare &) = delete;
  RankShare &operator=(const RankShare &) = delete;

  bool owns(uint32_t node) const { return owner_.at(node) == link_.rank(); }

  RankView agree(const RankView &mine) override;
  RankView current() const override;
  void set_view(std::function<RankView()> view) override {
    view_ = std::move(view);
  }
  Time next_event_time() const override;
  void run_until(Time until) override;
  void run_until(Time until, EventOrigin held) override;
  uint32_t rank() const override { return link_.rank(); }
  uint32_t ranks() const override { return link_.ranks(); }

  bool call(uint32_t node, const std::function<bool()> &body) override;

  // What else goes with each agree (the console lines of the round, say):
  // `write` adds this rank's; `read` takes every rank's, in rank order,
  // this rank's included.
  void set_riders(std::function<void(StateWriter &)> write,
                  std::function<void(uint32_t rank, StateReader &)> read) {
    write_rider_ = std::move(write);
    read_rider_ = std::move(read);
  }

  // Messages this rank sent (each to every other rank), collectives
  // included, and a digest of the network events it ran: equal on every
  // rank when the ranks kept one order.
  uint64_t messages() const { return messages_; }
  uint64_t digest() const { return order_.digest(); }

private:
  void step_until(Time until, uint64_t held);
  void tell(bool answer);
  CardReply told(uint32_t from);
  void apply(const std::vector<FabricCall> &calls);

  RankLink &link_;
  std::vector<uint32_t> owner_;
  Scheduler &scheduler_;
  Fabric &fabric_;
  StepOrder order_;
  std::vector<FabricCall> calls_; // this rank's cards', since last told
  std::vector<RankView> views_;   // each rank's, as last told
  std::function<RankView()> view_;
  std::vector<std::unique_ptr<PacketReceiver>> stand_ins_;
  uint64_t messages_ = 0;
  std::function<void(StateWriter &)> write_rider_;
  std::function<void(uint32_t, StateReader &)> read_rider_;
};

} // namespace nicemu
