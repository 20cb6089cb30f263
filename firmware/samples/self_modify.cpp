// self_modify: overwrites its own code as it runs. patched() returns 1;
// main calls it, stores "addiu v0, zero, 2" over its delay slot and calls it
// again, then stores the word 0xFFFFFFFF (no MIPS32 instruction) over its
// first instruction and calls it a third time.
// Expect: "patched() returned 1", then "after the patch: 2" (the new bytes
// run, not a stale translation), then an illegal-instruction fault reported
// with the PC at patched; no normal exit.
#include "nicemu/fw.hpp"

extern "C" int patched();

// In assembly, so the words the stores replace are known:
//   jr ra; addiu v0, zero, 1 (in the delay slot)
asm(".text\n"
    ".globl patched\n"
    ".type patched, @function\n"
    ".set push\n"
    ".set noreorder\n"
    "patched:\n"
    "  jr $ra\n"
    "  addiu $v0, $zero, 1\n"
    ".set pop\n"
    ".size patched, .-patched\n");

namespace {

volatile uint32_t *code_of(int (*f)()) {
  return reinterpret_cast<volatile uint32_t *>(reinterpret_cast<uint32_t>(f));
}

} // namespace

int main() {
  nicemu::fw::printf("patched() returned %d\n", patched());
  code_of(patched)[1] = 0x24020002; // addiu v0, zero, 2
  nicemu::fw::printf("after the patch: %d\n", patched());
  code_of(patched)[0] = 0xFFFFFFFF;
  patched();
  return 0;
}
