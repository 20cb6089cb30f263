/* nicemu/regs.h for the assembly sources of the runtime.
 *
 * regs.h declares C enums, which the assembler cannot read, so it is
 * included inside an assembler block that is never assembled: only its
 * preprocessor tables survive, and from them this file defines the same
 * names as assembler symbols (NICEMU_IRQ_BASE, NICEMU_IRQ_EPC, ...).
 *
 * regs.h writes the MMIO base and window size with C's 'u' suffix, which the
 * assembler rejects; they are restated here, and irq.cpp checks at compile
 * time that they match. */
#ifndef NICEMU_REGS_ASM_H
#define NICEMU_REGS_ASM_H

#define NICEMU_ASM_MMIO_BASE 0x1F000000
#define NICEMU_ASM_DEVICE_WINDOW 0x1000

#ifdef __ASSEMBLER__
.if 0
#include "nicemu/regs.h"
    .endif

#define NICEMU_ASM_REG(dev, name, offset, access, desc)                        \
  .equ NICEMU_##dev##_##name, offset;
#define NICEMU_ASM_DEVICE(dev, index)                                          \
  .equ NICEMU_##dev##_BASE,                                                    \
      NICEMU_ASM_MMIO_BASE + (index)*NICEMU_ASM_DEVICE_WINDOW;

    NICEMU_ALL_REGS(NICEMU_ASM_REG) NICEMU_DEVICES(NICEMU_ASM_DEVICE)

#undef NICEMU_ASM_REG
#undef NICEMU_ASM_DEVICE
#endif /* __ASSEMBLER__ */

#endif
