// The C string functions the compiler may call on its own (struct copies,
// zero-initialised locals) and firmware uses directly. no_builtin keeps
// clang from turning these very loops back into calls to themselves.
#include <stddef.h>
#include <stdint.h>

namespace {

// Word access to memory the caller typed as bytes.
using Word = uint32_t __attribute__((may_alias));

bool word_aligned(const void *a, const void *b) {
  return ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) &
          3) == 0;
}

} // namespace

extern "C" {

__attribute__((no_builtin)) void *memcpy(void *dest, const void *src,
                                         size_t n) {
  auto *d = static_cast<unsigned char *>(dest);
  auto *s = static_cast<const unsigned char *>(src);
  if (word_aligned(d, s)) {
    for (; n >= 4; n -= 4, d += 4, s += 4)
      *reinterpret_cast<Word *>(d) = *reinterpret_cast<const Word *>(s);
  }
  while (n--)
    *d++ = *s++;
  return dest;
}

__attribute__((no_builtin)) void *memmove(void *dest, const void *src,
                                          size_t n) {
  auto *d = static_cast<unsigned char *>(dest);
  auto *s = static_cast<const unsigned char *>(src);
  if (d <= s || d >= s + n)
    return memcpy(dest, src, n); // forward copy is safe
  while (n--)
    d[n] = s[n];
  return dest;
}

__attribute__((no_builtin)) void *memset(void *dest, int value, size_t n) {
  auto *d = static_cast<unsigned char *>(dest);
  auto byte = static_cast<unsigned char>(value);
  for (; n > 0 && (reinterpret_cast<uintptr_t>(d) & 3); --n)
    *d++ = byte;
  uint32_t word = byte * 0x01010101u;
  for (; n >= 4; n -= 4, d += 4)
    *reinterpret_cast<Word *>(d) = word;
  while (n--)
    *d++ = byte;
  return dest;
}

__attribute__((no_builtin)) int memcmp(const void *a, const void *b, size_t n) {
  auto *x = static_cast<const unsigned char *>(a);
  auto *y = static_cast<const unsigned char *>(b);
  for (size_t i = 0; i < n; ++i)
    if (x[i] != y[i])
      return x[i] < y[i] ? -1 : 1;
  return 0;
}

__attribute__((no_builtin)) size_t strlen(const char *text) {
  size_t n = 0;
  while (text[n])
    ++n;
  return n;
}

__attribute__((no_builtin)) int strcmp(const char *a, const char *b) {
  for (; *a && *a == *b; ++a, ++b) {
  }
  return static_cast<unsigned char>(*a) - static_cast<unsigned char>(*b);
}

} // extern "C"
