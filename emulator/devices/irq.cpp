#include "devices/irq.hpp"

#include "nicemu/regs.h"
#include "sim/state_archive.hpp"

namespace nicemu {

IrqController::IrqController(DeviceHost &host)
    : Device(RegisterLayout::of("IRQ")), host_(host) {
  auto changed = [this] { host_.irq_state_changed(); };
  registers()
      .write_one_to_clear(NICEMU_IRQ_PENDING, pending_, ~0u, changed)
      .bind(NICEMU_IRQ_ENABLE, enable_, changed)
      .on_read(NICEMU_IRQ_MASTER, [this] { return master_; })
      .on_write(NICEMU_IRQ_MASTER,
                [this](uint64_t v) {
                  master_ = uint32_t(v) & 1;
                  host_.irq_state_changed();
                })
      .on_read(NICEMU_IRQ_EPC, [this] { return epc_; })
      .bind(NICEMU_IRQ_VECTOR, vector_, changed)
      .on_read(NICEMU_IRQ_CAUSE, [this] { return cause_; })
      .on_write(NICEMU_IRQ_RAISE,
                [this](uint64_t v) {
                  pending_ |= uint32_t(v);
                  host_.irq_state_changed();
                })
      .stable_read(NICEMU_IRQ_MASTER)
      .stable_read(NICEMU_IRQ_EPC)
      .stable_read(NICEMU_IRQ_CAUSE);
}

void IrqController::save_state(StateWriter &out) const {
  out.section("irq");
  fields(*this, out);
}

void IrqController::load_state(StateReader &in) {
  in.section("irq");
  fields(*this, in);
}

void IrqController::raise(uint32_t lines) {
  pending_ |= lines;
  host_.irq_state_changed();
}

} // namespace nicemu
