// TIMER: the free-running cycle counter and one deadline timer that raises
// NICEMU_IRQ_TIMER, optionally re-arming itself every PERIOD cycles.
#pragma once

#include "devices/device.hpp"

#include <optional>

namespace nicemu {

class TimerDevice final : public Device {
public:
  explicit TimerDevice(DeviceHost &host);
  // Disarms the timer (its pending event is cancelled).
  void stop();
  // When it raises its line next, if it is armed.
  std::optional<Time> fires_at() const;

  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;
  void restore_event(Scheduler &scheduler, const SavedEvent &e) override;

private:
  template <class Self, class Archive> static void fields(Self &s, Archive &a) {
    a.fields(s.latched_hi_, s.deadline_, s.period_, s.enabled_);
  }
  void rearm();
  void expire();

  DeviceHost &host_;
  uint32_t latched_hi_ = 0;
  uint64_t deadline_ = 0;
  uint32_t period_ = 0;
  bool enabled_ = false;
  std::optional<EventId> event_;
};

} // namespace nicemu
