#include "devices/timer.hpp"

#include "nicemu/regs.h"
#include "sim/state_archive.hpp"

#include <algorithm>

namespace nicemu {

TimerDevice::TimerDevice(DeviceHost &host)
    : Device(RegisterLayout::of("TIMER")), host_(host) {
  auto word = [](uint64_t value, int half) {
    return uint32_t(value >> (32 * half));
  };
  auto set_word = [](uint64_t &value, int half, uint64_t word) {
    uint64_t mask = 0xFFFFFFFFull << (32 * half);
    value = (value & ~mask) | (uint64_t(uint32_t(word)) << (32 * half));
  };
  registers()
      .on_read(NICEMU_TIMER_CYCLE_LO,
               [this]() -> uint64_t {
                 uint64_t now = host_.now_cycle();
                 latched_hi_ = uint32_t(now >> 32);
                 return uint32_t(now);
               })
      .on_read(NICEMU_TIMER_CYCLE_HI, [this] { return latched_hi_; })
      .on_read(NICEMU_TIMER_DEADLINE_LO,
               [this, word] { return word(deadline_, 0); })
      .on_write(NICEMU_TIMER_DEADLINE_LO,
                [this, set_word](uint64_t v) {
                  set_word(deadline_, 0, v);
                  rearm();
                })
      .on_read(NICEMU_TIMER_DEADLINE_HI,
               [this, word] { return word(deadline_, 1); })
      .on_write(NICEMU_TIMER_DEADLINE_HI,
                [this, set_word](uint64_t v) {
                  set_word(deadline_, 1, v);
                  rearm();
                })
      .bind(NICEMU_TIMER_PERIOD, period_, [this] { rearm(); })
      .on_read(
          NICEMU_TIMER_CTRL,
          [this]() -> uint64_t { return enabled_ ? NICEMU_TIMER_ENABLE : 0; })
      .on_write(NICEMU_TIMER_CTRL, [this](uint64_t v) {
        enabled_ = (v & NICEMU_TIMER_ENABLE) != 0;
        rearm();
      });
}

std::optional<Time> TimerDevice::fires_at() const {
  if (!enabled_ || !event_)
    return std::nullopt;
  return host_.clock().time_of(std::max(deadline_, host_.now_cycle()));
}

void TimerDevice::stop() {
  enabled_ = false;
  rearm();
}

// One pending event at most: at the deadline, or now if it already passed.
// A deadline past the end of virtual time never comes: no event, so a core
// that sleeps on it sleeps for good (a deadlock, if nothing else wakes it).
void TimerDevice::rearm() {
  Scheduler &s = host_.scheduler();
  if (event_)
    s.cancel(*event_);
  event_.reset();
  if (!enabled_)
    return;
  Time at = host_.clock().time_of(std::max(deadline_, host_.now_cycle()));
  if (at > kTimeEnd)
    return;
  event_ = s.schedule(
      at, "timer", [this] { expire(); }, 0, event_tag(0));
}

void TimerDevice::save_state(StateWriter &out) const {
  out.section("timer");
  fields(*this, out);
}

void TimerDevice::load_state(StateReader &in) {
  in.section("timer");
  fields(*this, in);
  event_.reset(); // the scheduler's load makes it again
}

void TimerDevice::restore_event(Scheduler &scheduler, const SavedEvent &e) {
  event_ = scheduler.restore(e, "timer", [this] { expire(); });
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
