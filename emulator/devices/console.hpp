// CONSOLE: firmware debug output, one byte per store, to the host terminal.
#pragma once

#include "devices/device.hpp"
#include "nicemu/regs.h"
#include "sim/state_archive.hpp"

namespace nicemu {

class ConsoleDevice final : public Device {
public:
  explicit ConsoleDevice(DeviceHost &host)
      : Device(RegisterLayout::of("CONSOLE")), host_(host) {
    registers().on_write(NICEMU_CONSOLE_TX, [this](uint64_t value) {
      host_.console_byte(uint8_t(value));
    });
  }

  // Nothing of it changes (the line being written is the node's).
  void save_state(StateWriter &out) const override { out.section("console"); }
  void load_state(StateReader &in) override { in.section("console"); }

private:
  DeviceHost &host_;
};

} // namespace nicemu
