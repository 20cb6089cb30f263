// What runs between crt0's _start and main, and the one way out.
#include "nicemu/fw.hpp"

extern "C" {
// Defined by the linker script (nicemu ldscript).
extern uint32_t __bss_start[], __bss_end[];
using Constructor = void (*)();
extern const Constructor __init_array_start[], __init_array_end[];
extern const Constructor __ctors_start[], __ctors_end[];
}

// The firmware's main. -ffreestanding makes main an ordinary function, so a
// C++ main has a mangled name; each spelling is a weak reference and the
// startup calls the one the firmware defines. o32 passes arguments in
// registers, so calling any of them with (0, nullptr) is safe.
int main_cxx() asm("_Z4mainv") __attribute__((weak));
int main_cxx_args(int, char **) asm("_Z4mainiPPc") __attribute__((weak));
extern "C" int main_c(int, char **) asm("main") __attribute__((weak));

namespace {

// The boot ROM already zero-fills .bss; clearing it again keeps a warm
// restart (jump to _start) or a loader that skips it safe.
__attribute__((no_builtin("memset"))) void clear_bss() {
  for (uint32_t *word = __bss_start; word != __bss_end; ++word)
    *word = 0;
}

void run_constructors() {
  for (const Constructor *ctor = __init_array_start; ctor != __init_array_end;
       ++ctor)
    (*ctor)();
  // .ctors runs from the end; 0 and -1 are list terminators some toolchains
  // put at its ends.
  for (const Constructor *ctor = __ctors_end; ctor != __ctors_start;) {
    --ctor;
    auto value = reinterpret_cast<uintptr_t>(*ctor);
    if (value != 0 && value != ~uintptr_t{0})
      (*ctor)();
  }
}

int call_main() {
  if (main_cxx)
    return main_cxx();
  if (main_cxx_args)
    return main_cxx_args(0, nullptr);
  if (main_c)
    return main_c(0, nullptr);
  nicemu::fw::puts("nicemu runtime: the firmware has no main()");
  return 127;
}

} // namespace

extern "C" [[noreturn]] void nicemu_start() {
  clear_bss();
  run_constructors();
  nicemu_exit(call_main());
}

// Kept out of line so benchmarks and the debugger can stop at its address
// with the exit code in a0.
extern "C" [[noreturn]] __attribute__((noinline)) void nicemu_exit(int code) {
  nicemu::fw::reg(NICEMU_SYS_BASE, NICEMU_SYS_EXIT) =
      static_cast<uint32_t>(code);
  // The store halts the core; should it not, stay here and do nothing.
  for (;;)
    asm volatile(".set push\n"
                 ".set noreorder\n"
                 "1: b 1b\n"
                 "   nop\n"
                 ".set pop");
}

namespace nicemu::fw {

void exit(int code) {
  nicemu_exit(code);
}

} // namespace nicemu::fw
