// DOORBELL: a bank of FIFOs of 32-bit words that the host writes (one
// doorbell write per entry; on `comet`, the physical address of a posted
// descriptor) and the firmware pops through SELECT and POP. A FIFO going from
// empty to non-empty raises NICEMU_IRQ_DOORBELL; the firmware clears
// IRQ_PENDING itself.
//
// A write to a full FIFO is refused (push() returns false) and, as a PCI
// target retries such a write, held by its writer until the firmware pops an
// entry of that FIFO: when_space() tells the writer, at the time of the pop,
// which then pushes again (docs/host-channel.md, "Doorbells").
#pragma once

#include "devices/device.hpp"
#include "nicemu/model.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <vector>

namespace nicemu {

class DoorbellDevice final : public Device {
public:
  // NONEMPTY has one bit per FIFO.
  static constexpr uint32_t kMaxFifos = 32;
  static constexpr uint32_t kMaxDepth = 1u << 16;

  // `fifos` in 1..kMaxFifos, `depth` in 1..kMaxDepth.
  DoorbellDevice(DeviceHost &host, uint32_t fifos, uint32_t depth);
  // The bank [params.doorbell] describes (fifos, depth; entry_bits, if
  // given, must be 32). Throws nicemu::Error naming the model and the key
  // when a value is wrong or missing.
  static std::unique_ptr<DoorbellDevice> from_model(DeviceHost &host,
                                                    const Model &model);
  // The model keys it reads.
  static std::vector<ModelKey> model_keys();

  uint32_t fifos() const { return uint32_t(fifos_.size()); }
  uint32_t depth() const { return depth_; }
  // Entries in FIFO `fifo` (0 for a FIFO that does not exist).
  uint32_t count(uint32_t fifo) const;

  // The host's doorbell write: appends `value` to FIFO `fifo` (< fifos()),
  // rung by the node's process `source` (its place on the node: SOURCE
  // tells the firmware, as a doorbell page mapped to one process would).
  // False, and nothing changes, when the FIFO is full.
  bool push(uint32_t fifo, uint32_t value, uint32_t source = 0);
  // Called with the time of the next pop from FIFO `fifo` that finds no
  // earlier waiter, right after that pop (one waiter per freed entry, in the
  // order they asked): the holder of a refused write pushes it then.
  using SpaceWaiter = std::function<void(Time popped)>;
  void when_space(uint32_t fifo, SpaceWaiter waiter);

  // A host's write waiting for space cannot be saved (it is the host's).
  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;

private:
  uint32_t pop(); // POP: the oldest entry of the selected FIFO, or 0

  struct Entry {
    uint32_t value, source;
  };
  struct Fifo {
    std::deque<Entry> entries;
    std::deque<SpaceWaiter> waiters;
  };

  DeviceHost &host_;
  std::vector<Fifo> fifos_;
  uint32_t depth_;
  uint32_t select_ = 0;
  uint32_t source_ = 0; // of the entry POP took last
};

} // namespace nicemu
