#include "devices/irq.hpp"

#include "nicemu/regs.h"

namespace nicemu {

uint32_t IrqController::read(uint32_t offset) {
  switch (offset) {
  case NICEMU_IRQ_PENDING:
    return pending_;
  case NICEMU_IRQ_ENABLE:
    return enable_;
  case NICEMU_IRQ_MASTER:
    return master_ ? 1 : 0;
  case NICEMU_IRQ_EPC:
    return epc_;
  case NICEMU_IRQ_VECTOR:
    return vector_;
  case NICEMU_IRQ_CAUSE:
    return cause_;
  default:
    return 0;
  }
}

void IrqController::write(uint32_t offset, uint32_t value) {
  switch (offset) {
  case NICEMU_IRQ_PENDING:
    pending_ &= ~value;
    break;
  case NICEMU_IRQ_ENABLE:
    enable_ = value;
    break;
  case NICEMU_IRQ_MASTER:
    master_ = (value & 1) != 0;
    break;
  case NICEMU_IRQ_VECTOR:
    vector_ = value;
    break;
  case NICEMU_IRQ_RAISE:
    pending_ |= value;
    break;
  default:
    return;
  }
  host_.irq_state_changed();
}

void IrqController::raise(uint32_t lines) {
  pending_ |= lines;
  host_.irq_state_changed();
}

} // namespace nicemu
