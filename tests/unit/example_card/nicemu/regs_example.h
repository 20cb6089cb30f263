/* The register header of the example card family (docs/adding-a-card.md):
 * one device, SUM, a checksum engine that adds up 32-bit words of card
 * memory on a clock of its own. Compiled by firmware and emulator alike,
 * like nicemu/regs.h; a family header uses the sized form of the table:
 *
 *   X(DEVICE, NAME, offset, bits, count, access, description)
 *
 * bits: 8, 16, 32 or 64; count: array elements (1 for one register). */
#ifndef NICEMU_REGS_EXAMPLE_H
#define NICEMU_REGS_EXAMPLE_H

#include "nicemu/regs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The family's windows: X(DEVICE, first 4 KiB page, bytes). Pages 0-8 are
 * the shared devices of nicemu/regs.h; a family takes pages of its own. */
#define NICEMU_EXAMPLE_DEVICES(X) X(SUM, 16, 0x2000)

#define NICEMU_SUM_REGS(X)                                                     \
  X(SUM, ADDR, 0x000, 32, 1, RW, "card address of the first word")             \
  X(SUM, LENGTH, 0x004, 32, 1, RW, "bytes to add up (a multiple of 4)")        \
  X(SUM, CTRL, 0x008, 8, 1, W, "bit 0: start")                                 \
  X(SUM, STATUS, 0x00C, 32, 1, RW, "bit 0 BUSY, bit 1 DONE (write 1: clear)")  \
  X(SUM, RESULT, 0x010, 64, 1, R, "the sum of the last run, 64 bits")          \
  X(SUM, HISTORY, 0x1000, 32, 8, R,                                            \
    "low words of the last 8 sums, newest first")

#define NICEMU_SUM_OFFSET_ENUM(dev, name, off, bits, count, acc, desc)         \
  NICEMU_##dev##_##name = (off),
#define NICEMU_SUM_BASE_ENUM(dev, page, bytes)                                 \
  NICEMU_##dev##_BASE = (int)NICEMU_DEVICE_BASE(page),
enum nicemu_example_register {
  NICEMU_SUM_REGS(NICEMU_SUM_OFFSET_ENUM)
      NICEMU_EXAMPLE_DEVICES(NICEMU_SUM_BASE_ENUM)
};
#undef NICEMU_SUM_OFFSET_ENUM
#undef NICEMU_SUM_BASE_ENUM

#define NICEMU_SUM_START (1u << 0)
#define NICEMU_SUM_BUSY (1u << 0)
#define NICEMU_SUM_DONE (1u << 1)
#define NICEMU_IRQ_SUM (1u << 7) /* interrupt line: a sum is done */
#define NICEMU_CAP_SUM (1u << 16)

#ifdef __cplusplus
}
#endif

#endif /* NICEMU_REGS_EXAMPLE_H */
