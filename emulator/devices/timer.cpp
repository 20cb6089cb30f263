#include "devices/timer.hpp"

#include "nicemu/regs.h"

#include <algorithm>

namespace nicemu {

uint32_t TimerDevice::read(uint32_t offset) {
  switch (offset) {
  case NICEMU_TIMER_CYCLE_LO: {
    uint64_t now = host_.now_cycle();
    latched_hi_ = uint32_t(now >> 32);
    return uint32_t(now);
  }
  case NICEMU_TIMER_CYCLE_HI:
    return latched_hi_;
  case NICEMU_TIMER_DEADLINE_LO:
    return uint32_t(deadline_);
  case NICEMU_TIMER_DEADLINE_HI:
    return uint32_t(deadline_ >> 32);
  case NICEMU_TIMER_PERIOD:
    return period_;
  case NICEMU_TIMER_CTRL:
    return enabled_ ? NICEMU_TIMER_ENABLE : 0;
  default:
    return 0;
  }
}

void TimerDevice::write(uint32_t offset, uint32_t value) {
  switch (offset) {
  case NICEMU_TIMER_DEADLINE_LO:
    deadline_ = (deadline_ & ~0xFFFFFFFFull) | value;
    break;
  case NICEMU_TIMER_DEADLINE_HI:
    deadline_ = (deadline_ & 0xFFFFFFFFull) | (uint64_t(value) << 32);
    break;
  case NICEMU_TIMER_PERIOD:
    period_ = value;
    break;
  case NICEMU_TIMER_CTRL:
    enabled_ = (value & NICEMU_TIMER_ENABLE) != 0;
    break;
  default:
    return;
  }
  rearm();
}

// One pending event at most: at the deadline, or now if it already passed.
void TimerDevice::rearm() {
  Scheduler &s = host_.scheduler();
  if (event_)
    s.cancel(*event_);
  event_.reset();
  if (!enabled_)
    return;
  uint64_t at = std::max(deadline_, host_.now_cycle());
  event_ = s.schedule(host_.clock().time_of(at), "timer", [this] { expire(); });
}

void TimerDevice::expire() {
  event_.reset();
  host_.raise_irq(NICEMU_IRQ_TIMER);
  if (period_ == 0) {
    enabled_ = false;
    return;
  }
  deadline_ += period_;
  rearm();
}

} // namespace nicemu
