// profile_handlers: handlers whose cycles can be counted by hand, for the
// cycle report tests (tests/e2e/test_profile.cpp).
//
// On lanai4 (load_use 1, mul 11, taken_branch 0):
//   synth_fixed: 10 instructions + 11 (mult) + 1 (load-use)  = 22 cycles
//   synth_loop(n): 2 (beqz, nop) + 3 per turn + 2 (jr, nop) = 4 + 3n cycles
// main calls synth_fixed 100 times and synth_loop(n) for n = 0..99, calls
// `scale` (not a handler: measured with --measure) 7 times, then takes 5
// timer interrupts (on_tick is a handler, and so is the runtime's stub) while
// sleeping in between.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

extern "C" void synth_fixed();
extern "C" void synth_loop(uint32_t n);

asm(R"(
        .section .text.nicemu.handler, "ax", @progbits
        .set    noreorder
        .globl  synth_fixed
        .type   synth_fixed, @function
synth_fixed:
        addiu   $t0, $zero, 1
        addiu   $t0, $t0, 1
        addiu   $t0, $t0, 1
        addiu   $t0, $t0, 1
        addiu   $t0, $t0, 1
        mult    $t0, $t0
        lw      $t1, 0($sp)
        addu    $t2, $t1, $t1
        jr      $ra
        nop
        .size   synth_fixed, . - synth_fixed

        .globl  synth_loop
        .type   synth_loop, @function
synth_loop:
        beqz    $a0, 2f
        nop
1:      addiu   $a0, $a0, -1
        bnez    $a0, 1b
        nop
2:      jr      $ra
        nop
        .size   synth_loop, . - synth_loop
        .set    reorder
        .text
)");

namespace {

volatile uint32_t ticks;
volatile uint32_t sink;

NICEMU_HANDLER void on_tick(uint32_t cause) {
  if (cause & NICEMU_IRQ_TIMER) {
    fw::irq_clear(NICEMU_IRQ_TIMER);
    ticks = ticks + 1;
  }
}

__attribute__((noinline)) uint32_t scale(uint32_t x) {
  return x * 3 + sink;
}

// Called through volatile pointers, so the compiler keeps every call.
void (*volatile fixed)() = synth_fixed;
void (*volatile loop)(uint32_t) = synth_loop;

} // namespace

int main() {
  for (uint32_t i = 0; i < 100; ++i)
    fixed();
  for (uint32_t n = 0; n < 100; ++n)
    loop(n);
  uint32_t sum = 0;
  for (uint32_t i = 0; i < 7; ++i)
    sum += scale(i);
  fw::irq_handler(on_tick);
  fw::timer_start(fw::cycles() + 2000, 2000);
  fw::irq_enable(NICEMU_IRQ_TIMER);
  fw::irq_master(true);
  while (ticks < 5)
    fw::sleep();
  fw::timer_stop();
  fw::irq_master(false);
  fw::printf("sum %u ticks %u\n", static_cast<unsigned>(sum),
             static_cast<unsigned>(ticks));
  return 0;
}
