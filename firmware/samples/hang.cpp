// hang: spins forever in spin_forever without touching any device (no
// output, no exit, no watchdog kick).
// Expect: the run never ends by itself; the emulator's run limit or the
// watchdog (if the model enables one) has to stop it, with the PC in
// spin_forever.

extern "C" [[noreturn]] __attribute__((noinline)) void spin_forever() {
  // In assembly, so the compiler can neither remove the loop nor add to it.
  for (;;)
    asm volatile(".set push\n"
                 ".set noreorder\n"
                 "1: b 1b\n"
                 "   nop\n"
                 ".set pop");
}

int main() {
  spin_forever();
}
