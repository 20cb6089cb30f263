// fault_illegal: executes the word 0xFFFFFFFF, which is no MIPS32
// instruction.
// Expect: an illegal-instruction fault reported with the PC in do_illegal;
// no normal exit.

extern "C" __attribute__((noinline)) void do_illegal() {
  asm volatile(".word 0xFFFFFFFF");
}

int main() {
  do_illegal();
  return 0;
}
