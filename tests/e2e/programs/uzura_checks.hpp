// What the uzura test programs (uzura_basic.cpp, uzura_contract.cpp) share:
// this rank and its peer, failures counted and printed with the host
// library's last error, and a byte pattern to fill and check buffers with.
#pragma once

#include <nicemu/uzura.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace uzura_checks {

inline uint32_t me, peer;
inline int failures;

inline void expect(bool ok, const char *what, long long got, long long want) {
  if (ok)
    return;
  ++failures;
  std::printf("rank %u: FAILED %s: got %lld, want %lld (%s)\n", me, what, got,
              want, uz_last_error());
}

inline void check(int r, const char *what) {
  expect(r == UZ_OK, what, r, UZ_OK);
}

inline uint8_t pattern(uint32_t seed, size_t i) {
  return uint8_t((i * 131 + seed * 7 + 1) & 0xFF);
}

} // namespace uzura_checks
