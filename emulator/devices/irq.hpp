// IRQ: the interrupt controller. Lines latch into PENDING; PENDING & ENABLE
// wakes a sleeping core and, with MASTER set, interrupts it at the next block
// boundary (the node does the vectoring, see Node::take_interrupt).
#pragma once

#include "devices/device.hpp"

namespace nicemu {

class IrqController final : public Device {
public:
  explicit IrqController(DeviceHost &host);

  void raise(uint32_t lines);
  uint32_t active() const { return pending_ & enable_; }
  bool should_interrupt() const { return (master_ & 1) && active() != 0; }
  uint32_t vector() const { return vector_; }
  // Entry into the interrupt stub: remember where, mask further interrupts.
  void enter(uint32_t epc) {
    epc_ = epc;
    cause_ = active();
    master_ = 0;
  }

  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;

private:
  template <class Self, class Archive> static void fields(Self &s, Archive &a) {
    a.fields(s.pending_, s.enable_, s.epc_, s.vector_, s.cause_, s.master_);
  }
  DeviceHost &host_;
  uint32_t pending_ = 0, enable_ = 0, epc_ = 0, vector_ = 0, cause_ = 0;
  uint32_t master_ = 0; // bit 0
};

} // namespace nicemu
