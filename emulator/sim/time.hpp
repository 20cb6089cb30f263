// Virtual time: picoseconds since reset, on one clock owned by the scheduler.
#pragma once

#include <cstdint>
#include <limits>

namespace nicemu {

using Time = uint64_t; // picoseconds
inline constexpr Time kTimeNever = std::numeric_limits<Time>::max();
inline constexpr Time kPicosPerSecond = 1'000'000'000'000ull;
// The end of virtual time: 2^63 ps, about 106.7 days. Nothing a host or a
// firmware asks for is scheduled past it (a host's request is refused, a
// timer set beyond it never fires), so that adding a device's delay to the
// present never wraps (docs/reliability.md).
inline constexpr Time kTimeEnd = Time(1) << 63;

// Converts between a core's cycles and picoseconds without drift: both
// directions are exact integer functions of the cycle number, so a clock that
// does not divide 1 THz (33 MHz) never accumulates rounding error.
class ClockDomain {
public:
  // 1 THz / hz in lowest terms (33 MHz: 1000000 / 33), so that the usual
  // conversions fit 64-bit arithmetic; 128 bits only when they would not.
  explicit ClockDomain(uint64_t hz)
      : hz_(hz), ps_num_(kPicosPerSecond / gcd(kPicosPerSecond, hz)),
        ps_den_(hz / gcd(kPicosPerSecond, hz)) {}
  uint64_t hz() const { return hz_; }
  // Start time of cycle `c`; kTimeNever when that is past 2^64 - 1 ps.
  Time time_of(uint64_t c) const {
    uint64_t product;
    if (!__builtin_mul_overflow(c, ps_num_, &product))
      return product / ps_den_;
    unsigned __int128 t = (unsigned __int128)c * ps_num_ / ps_den_;
    return t >= kTimeNever ? kTimeNever : static_cast<Time>(t);
  }
  // First cycle that starts at or after `t`.
  uint64_t cycle_at_or_after(Time t) const {
    uint64_t product;
    if (!__builtin_mul_overflow(t, ps_den_, &product) &&
        product <= UINT64_MAX - (ps_num_ - 1))
      return (product + ps_num_ - 1) / ps_num_;
    unsigned __int128 n = (unsigned __int128)t * ps_den_;
    return static_cast<uint64_t>((n + ps_num_ - 1) / ps_num_);
  }

private:
  static constexpr uint64_t gcd(uint64_t a, uint64_t b) {
    while (b) {
      uint64_t r = a % b;
      a = b;
      b = r;
    }
    return a;
  }
  uint64_t hz_;
  uint64_t ps_num_, ps_den_; // picoseconds per cycle = ps_num_ / ps_den_
};

// "1.234567 ms" style text for summaries and reports.
inline double to_seconds(Time t) {
  return double(t) / double(kPicosPerSecond);
}

} // namespace nicemu
