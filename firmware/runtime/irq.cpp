// Interrupt handler registration and the C++ side of the interrupt stub.
#include "nicemu/fw.hpp"
#include "regs_asm.h"

// irq_stub.S restates these (see regs_asm.h).
static_assert(NICEMU_ASM_MMIO_BASE == NICEMU_MMIO_BASE);
static_assert(NICEMU_ASM_DEVICE_WINDOW == NICEMU_DEVICE_WINDOW);

namespace {
nicemu::fw::IrqHandler installed_handler;
}

// Called by nicemu_irq_stub with IRQ_MASTER off.
extern "C" NICEMU_HANDLER void nicemu_irq_dispatch(uint32_t cause) {
  if (installed_handler) {
    installed_handler(cause);
    return;
  }
  // Nobody to clear these lines: mask them, or they would fire forever.
  nicemu::fw::irq_disable(cause);
}

namespace nicemu::fw {

void irq_handler(IrqHandler handler) {
  installed_handler = handler;
  reg(NICEMU_IRQ_BASE, NICEMU_IRQ_VECTOR) =
      reinterpret_cast<uintptr_t>(&nicemu_irq_stub);
}

} // namespace nicemu::fw
