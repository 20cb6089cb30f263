// Virtual time: picoseconds since reset, on one clock owned by the scheduler.
#pragma once

#include <cstdint>
#include <limits>

namespace nicemu {

using Time = uint64_t; // picoseconds
inline constexpr Time kTimeNever = std::numeric_limits<Time>::max();
inline constexpr Time kPicosPerSecond = 1'000'000'000'000ull;

// Converts between a core's cycles and picoseconds without drift: both
// directions are exact integer functions of the cycle number, so a clock that
// does not divide 1 THz (33 MHz) never accumulates rounding error.
class ClockDomain {
public:
  explicit ClockDomain(uint64_t hz) : hz_(hz) {}
  uint64_t hz() const { return hz_; }
  // Start time of cycle `c`.
  Time time_of(uint64_t c) const {
    return static_cast<Time>((unsigned __int128)c * kPicosPerSecond / hz_);
  }
  // First cycle that starts at or after `t`.
  uint64_t cycle_at_or_after(Time t) const {
    unsigned __int128 n = (unsigned __int128)t * hz_;
    return static_cast<uint64_t>((n + kPicosPerSecond - 1) / kPicosPerSecond);
  }

private:
  uint64_t hz_;
};

// "1.234567 ms" style text for summaries and reports.
inline double to_seconds(Time t) {
  return double(t) / double(kPicosPerSecond);
}

} // namespace nicemu
