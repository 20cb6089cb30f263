// fault_bad_register: a store to NICEMU_SYS_BASE + 0xFF0, inside the SYS
// device's window but not one of its registers.
// Expect: a bad-register fault naming the SYS device and offset 0xff0, with
// the PC in do_bad_register_store; no normal exit.
#include "nicemu/fw.hpp"

extern "C" __attribute__((noinline)) void do_bad_register_store() {
  nicemu::fw::reg(NICEMU_SYS_BASE, 0xFF0) = 1;
}

int main() {
  do_bad_register_store();
  return 0;
}
