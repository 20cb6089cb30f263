// The few C++ ABI hooks a freestanding firmware still needs.
#include <stddef.h>

extern "C" {

// Destructors of globals are registered at construction; firmware never
// returns to anyone who would run them, so registering is a no-op.
void *__dso_handle = &__dso_handle;
int __cxa_atexit(void (*)(void *), void *, void *) {
  return 0;
}
int atexit(void (*)()) {
  return 0;
}

// A call through a pure virtual slot: a firmware bug. `break` makes the
// emulator report it with the PC.
void __cxa_pure_virtual() {
  __builtin_trap();
}
}

// Virtual destructors refer to operator delete even when nothing is ever
// allocated (there is no heap); reaching one is a bug.
void operator delete(void *) noexcept {
  __builtin_trap();
}
void operator delete(void *, size_t) noexcept {
  __builtin_trap();
}
