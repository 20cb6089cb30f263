// fault_break: executes a `break` instruction (what a firmware assertion or
// __builtin_trap compiles to).
// Expect: a breakpoint fault reported with the PC in do_break; no normal
// exit.

extern "C" __attribute__((noinline)) void do_break() {
  asm volatile("break");
}

int main() {
  do_break();
  return 0;
}
