// fault_unmapped: a store to 0x40000000, where the card has no memory and no
// device.
// Expect: an unmapped-access fault reported with the PC in
// do_unmapped_store and the address 0x40000000; no normal exit.
#include "nicemu/fw.hpp"

extern "C" __attribute__((noinline)) void do_unmapped_store() {
  nicemu::fw::reg(0x40000000u, 0) = 0xDEADBEEF;
}

int main() {
  do_unmapped_store();
  return 0;
}
