// cycles: reads the cycle counter before and after a fixed loop of 1000
// iterations and prints the difference as "cycles N\n".
// Expect: one line "cycles N" with N the same on every run of the same
// model (the loop plus one counter read), exit code 0.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

// The loop is in assembly so its instructions do not depend on the compiler.
extern "C" __attribute__((noinline)) void fixed_loop(uint32_t count) {
  asm volatile(".set push\n"
               ".set noreorder\n"
               "1: addiu %0, %0, -1\n"
               "   bnez %0, 1b\n"
               "   nop\n"
               ".set pop"
               : "+r"(count));
}

int main() {
  uint64_t before = fw::cycles();
  fixed_loop(1000);
  uint64_t after = fw::cycles();
  fw::printf("cycles %llu\n", static_cast<unsigned long long>(after - before));
  return 0;
}
