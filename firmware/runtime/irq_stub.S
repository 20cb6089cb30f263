# The interrupt stub IRQ_VECTOR points at.
#
# The emulator enters here at a basic-block boundary with IRQ_EPC = the
# interrupted PC, IRQ_CAUSE = PENDING & ENABLE and IRQ_MASTER cleared. No
# register has been saved: the stub saves everything the o32 ABI lets a C++
# function clobber, calls nicemu_irq_dispatch(cause), restores, and returns.
# k0 and k1 are the stub's own (the compiler never allocates them).

#include "regs_asm.h"

        .equ    ARGS, 16                # o32: callee may spill a0-a3 here
        .equ    FRAME, ARGS + 20 * 4    # 18 GPRs + HI + LO; 8-byte multiple

        # A handler section: cycle reports measure every interrupt.
        .section .text.nicemu.handler, "ax", @progbits
        .set    noreorder
        .set    noat
        .align  2
        .globl  nicemu_irq_stub
        .type   nicemu_irq_stub, @function
nicemu_irq_stub:
        # o32 has no red zone below sp, so the interrupted code keeps
        # nothing there and the frame can go right below it.
        addiu   $sp, $sp, -FRAME
        sw      $at, ARGS + 0($sp)
        sw      $v0, ARGS + 4($sp)
        sw      $v1, ARGS + 8($sp)
        sw      $a0, ARGS + 12($sp)
        sw      $a1, ARGS + 16($sp)
        sw      $a2, ARGS + 20($sp)
        sw      $a3, ARGS + 24($sp)
        sw      $t0, ARGS + 28($sp)
        sw      $t1, ARGS + 32($sp)
        sw      $t2, ARGS + 36($sp)
        sw      $t3, ARGS + 40($sp)
        sw      $t4, ARGS + 44($sp)
        sw      $t5, ARGS + 48($sp)
        sw      $t6, ARGS + 52($sp)
        sw      $t7, ARGS + 56($sp)
        sw      $t8, ARGS + 60($sp)
        sw      $t9, ARGS + 64($sp)
        sw      $ra, ARGS + 68($sp)
        mfhi    $k0
        sw      $k0, ARGS + 72($sp)
        mflo    $k0
        sw      $k0, ARGS + 76($sp)

        li      $k1, NICEMU_IRQ_BASE
        lw      $a0, NICEMU_IRQ_CAUSE($k1)
        jal     nicemu_irq_dispatch             # (uint32_t cause)
        nop

        lw      $k0, ARGS + 72($sp)
        mthi    $k0
        lw      $k0, ARGS + 76($sp)
        mtlo    $k0
        lw      $ra, ARGS + 68($sp)
        lw      $t9, ARGS + 64($sp)
        lw      $t8, ARGS + 60($sp)
        lw      $t7, ARGS + 56($sp)
        lw      $t6, ARGS + 52($sp)
        lw      $t5, ARGS + 48($sp)
        lw      $t4, ARGS + 44($sp)
        lw      $t3, ARGS + 40($sp)
        lw      $t2, ARGS + 36($sp)
        lw      $t1, ARGS + 32($sp)
        lw      $t0, ARGS + 28($sp)
        lw      $a3, ARGS + 24($sp)
        lw      $a2, ARGS + 20($sp)
        lw      $a1, ARGS + 16($sp)
        lw      $a0, ARGS + 12($sp)
        lw      $v1, ARGS + 8($sp)
        lw      $v0, ARGS + 4($sp)
        lw      $at, ARGS + 0($sp)
        addiu   $sp, $sp, FRAME

        # Return and re-enable interrupts in one step. k1 = IRQ base + 1, so
        # the store in the jump's delay slot addresses IRQ_MASTER and writes
        # a value with bit 0 set: MASTER = on. The emulator only delivers
        # interrupts at basic-block boundaries, and a jump and its delay slot
        # end the same block, so no interrupt can arrive between turning
        # MASTER on and being back at EPC with every register restored.
        li      $k1, NICEMU_IRQ_BASE
        lw      $k0, NICEMU_IRQ_EPC($k1)
        addiu   $k1, $k1, 1
        jr      $k0
        sw      $k1, (NICEMU_IRQ_MASTER - 1)($k1)
        .size   nicemu_irq_stub, . - nicemu_irq_stub
