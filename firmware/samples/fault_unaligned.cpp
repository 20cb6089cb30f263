// fault_unaligned: a 32-bit load from an odd address.
// Expect: an address-error fault (unaligned load) reported with the PC in
// do_unaligned_load; no console output, no normal exit.
#include "nicemu/fw.hpp"

alignas(4) volatile uint8_t bytes[8];

extern "C" __attribute__((noinline)) uint32_t
do_unaligned_load(const volatile uint8_t *base) {
  return *reinterpret_cast<const volatile uint32_t *>(base + 1); // lw, odd
}

int main() {
  return static_cast<int>(do_unaligned_load(bytes));
}
