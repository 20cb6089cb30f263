// CONSOLE: firmware debug output, one byte per store, to the host terminal.
#pragma once

#include "devices/device.hpp"

namespace nicemu {

class ConsoleDevice final : public Device {
public:
  explicit ConsoleDevice(DeviceHost &host) : host_(host) {}
  uint32_t read(uint32_t) override { return 0; }
  void write(uint32_t, uint32_t value) override {
    host_.console_byte(uint8_t(value));
  }

private:
  DeviceHost &host_;
};

} // namespace nicemu
