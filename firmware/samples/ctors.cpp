// ctors: checks the startup code. A global object's constructor must have
// run before main, a zero-initialised (.bss) array must read as zero, and an
// initialised (.data) global must hold its initial value.
// Expect: "ctors ok\n" and exit code 0; otherwise one line per failed check
// and exit code 1.
#include "nicemu/fw.hpp"

namespace {

// Volatile so the compiler cannot run the constructor at compile time and
// drop it from .init_array.
volatile uint32_t constructor_seed = 41;
uint32_t constructions;

struct Configured {
  Configured() : value(constructor_seed + 1) { ++constructions; }
  uint32_t value;
};

Configured configured;
uint32_t zeroes[256];
uint32_t initialised = 0xC0FFEE;

// Memory is read through volatile pointers: the compiler knows what these
// globals should contain and would otherwise fold the checks away.
template <typename T> T read(const T &object) {
  return *static_cast<const volatile T *>(&object);
}

int check(bool ok, const char *what) {
  if (ok)
    return 0;
  nicemu::fw::printf("ctors: %s\n", what);
  return 1;
}

} // namespace

int main() {
  int failures = 0;
  failures += check(read(configured.value) == 42, "constructor did not run");
  failures += check(read(constructions) == 1, "constructor count is not 1");
  bool all_zero = true;
  for (const uint32_t &word : zeroes)
    all_zero = all_zero && read(word) == 0;
  failures += check(all_zero, ".bss array is not zero");
  failures += check(read(initialised) == 0xC0FFEE, ".data value is wrong");
  if (failures)
    return 1;
  nicemu::fw::puts("ctors ok");
  return 0;
}
