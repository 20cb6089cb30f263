// The narrow device interface. The bus has already checked that an access is
// an aligned 32-bit access to a register the device defines, with the right
// direction, so devices only implement behaviour.
#pragma once

#include "sim/scheduler.hpp"
#include "sim/time.hpp"

#include <cstdint>

namespace nicemu {

// What a device may ask of the node it sits in.
class DeviceHost {
public:
  virtual ~DeviceHost() = default;
  // Exact cycle of the access being served, or of the event being run.
  virtual uint64_t now_cycle() const = 0;
  virtual const ClockDomain &clock() const = 0;
  virtual Scheduler &scheduler() = 0;
  virtual void raise_irq(uint32_t lines) = 0;
  virtual void irq_state_changed() = 0;
  virtual void halt(uint32_t exit_code) = 0;
  virtual void console_byte(uint8_t byte) = 0;
  virtual uint64_t watchdog_period() const = 0;
  virtual void set_watchdog_period(uint64_t cycles) = 0;
  virtual void kick_watchdog() = 0;
};

class Device {
public:
  virtual ~Device() = default;
  virtual uint32_t read(uint32_t offset) = 0;
  virtual void write(uint32_t offset, uint32_t value) = 0;
};

} // namespace nicemu
