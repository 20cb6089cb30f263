// 64-bit integer division. The core divides 32 by 32 bits in hardware
// (divu); for 64-bit operands clang calls these libgcc/compiler-rt helpers,
// and compiler-rt is not built for this target.
//
// The common firmware case, a 64-bit value (cycles, byte counts) divided by
// a 32-bit one (a clock rate, a size), costs three divu and a few dozen
// instructions; only 64-bit divisors take the bit-at-a-time loop.
#include <stdint.h>

namespace {

[[noreturn]] void divide_by_zero() {
  asm volatile("break 7"); // the code MIPS compilers use for division by 0
  __builtin_unreachable();
}

// Knuth's algorithm D for a 64-bit dividend (high:low) and a 32-bit divisor,
// with 16-bit digits so that each step fits the 32-bit divu. Requires
// high < divisor (the quotient fits in 32 bits).
uint32_t divide_64_by_32(uint32_t high, uint32_t low, uint32_t divisor,
                         uint32_t *remainder) {
  constexpr uint32_t kBase = 1u << 16;
  // Normalise: the divisor's top bit set makes each digit estimate at most
  // two too large.
  const int shift = __builtin_clz(divisor);
  const uint32_t d = divisor << shift;
  const uint32_t d_hi = d >> 16, d_lo = d & 0xFFFF;
  const uint32_t n_hi = shift ? (high << shift) | (low >> (32 - shift)) : high;
  const uint32_t n_lo = low << shift;

  // Quotient digit of (top 48 bits of the partial dividend) / d. top_bits:
  // the partial dividend's upper 32 bits; next: its next 16-bit digit.
  auto digit = [&](uint32_t top_bits, uint32_t next) {
    uint32_t q = top_bits / d_hi;
    uint32_t r = top_bits - q * d_hi;
    while (q >= kBase || q * d_lo > ((r << 16) | next)) {
      --q;
      r += d_hi;
      if (r >= kBase)
        break;
    }
    return q;
  };

  const uint32_t q1 = digit(n_hi, n_lo >> 16);
  const uint32_t rest = (n_hi << 16) + (n_lo >> 16) - q1 * d;
  const uint32_t q0 = digit(rest, n_lo & 0xFFFF);
  if (remainder)
    *remainder = ((rest << 16) + (n_lo & 0xFFFF) - q0 * d) >> shift;
  return (q1 << 16) | q0;
}

// Binary long division: align the divisor's top bit with the dividend's,
// then subtract and shift one quotient bit at a time.
uint64_t divide_bitwise(uint64_t n, uint64_t d, uint64_t *remainder) {
  uint64_t quotient = 0;
  if (d <= n) {
    int shift = __builtin_clzll(d) - __builtin_clzll(n);
    d <<= shift;
    for (int bit = 0; bit <= shift; ++bit, d >>= 1) {
      quotient <<= 1;
      if (n >= d) {
        n -= d;
        quotient |= 1;
      }
    }
  }
  if (remainder)
    *remainder = n;
  return quotient;
}

uint64_t divide(uint64_t n, uint64_t d, uint64_t *remainder) {
  if (d == 0)
    divide_by_zero();
  if (d >> 32)
    return divide_bitwise(n, d, remainder);
  const auto d32 = static_cast<uint32_t>(d);
  const auto n_hi = static_cast<uint32_t>(n >> 32);
  const auto n_lo = static_cast<uint32_t>(n);
  if (n_hi == 0) {
    if (remainder)
      *remainder = n_lo % d32;
    return n_lo / d32;
  }
  // Schoolbook with 32-bit digits: the high digit by divu, then the rest.
  uint32_t rest;
  const uint32_t q_hi = n_hi / d32;
  const uint32_t q_lo = divide_64_by_32(n_hi % d32, n_lo, d32, &rest);
  if (remainder)
    *remainder = rest;
  return (static_cast<uint64_t>(q_hi) << 32) | q_lo;
}

uint64_t magnitude(int64_t value) {
  return value < 0 ? 0 - static_cast<uint64_t>(value)
                   : static_cast<uint64_t>(value);
}

int64_t with_sign(uint64_t value, bool negative) {
  return static_cast<int64_t>(negative ? 0 - value : value);
}

} // namespace

extern "C" {

uint64_t __udivmoddi4(uint64_t n, uint64_t d, uint64_t *remainder) {
  return divide(n, d, remainder);
}

uint64_t __udivdi3(uint64_t n, uint64_t d) {
  return divide(n, d, nullptr);
}

uint64_t __umoddi3(uint64_t n, uint64_t d) {
  uint64_t remainder;
  divide(n, d, &remainder);
  return remainder;
}

// Signed: the quotient truncates toward zero, the remainder has the sign of
// the dividend (C's rules).
int64_t __divdi3(int64_t n, int64_t d) {
  return with_sign(divide(magnitude(n), magnitude(d), nullptr),
                   (n < 0) != (d < 0));
}

int64_t __moddi3(int64_t n, int64_t d) {
  uint64_t remainder;
  divide(magnitude(n), magnitude(d), &remainder);
  return with_sign(remainder, n < 0);
}

} // extern "C"
