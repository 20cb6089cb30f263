// A device's own clock domain. Devices that are not clocked by the core
// (DIMMnet-1's host interface at the DIMM clock and its link interface at
// the SWIF clock, UZURA's PCI-X side) count their pipeline stages in
// cycles of their own clock; a stage can only start on an edge of that
// clock, so a hand-over from a faster domain to a slower one waits for the
// next edge (the bubbles of a clock crossing) without any extra figure.
#pragma once

#include "devices/device.hpp"

namespace nicemu {

class DeviceClock {
public:
  // `hz` > 0; the domain's cycle 0 starts at time 0, as the core's does.
  DeviceClock(DeviceHost &host, uint64_t hz) : host_(host), domain_(hz) {}

  uint64_t hz() const { return domain_.hz(); }
  const ClockDomain &domain() const { return domain_; }
  // The first edge of this clock at or after `t`.
  Time next_edge(Time t) const {
    return domain_.time_of(domain_.cycle_at_or_after(t));
  }
  // When a stage of `cycles` cycles that is handed its input at `t` ends:
  // it starts on the next edge and lasts `cycles` periods.
  Time after(Time t, uint64_t cycles) const {
    return domain_.time_of(domain_.cycle_at_or_after(t) + cycles);
  }
  // The same, for input handed over now (the access or event being run).
  Time after(uint64_t cycles) const { return after(host_.now(), cycles); }
  // This clock's cycle count now (the first edge at or after now).
  uint64_t now_cycle() const { return domain_.cycle_at_or_after(host_.now()); }

private:
  DeviceHost &host_;
  ClockDomain domain_;
};

} // namespace nicemu
