// SUM: the example card's own device (docs/adding-a-card.md). Firmware
// writes ADDR and LENGTH, then CTRL = START; the engine adds up the 32-bit
// words on its own clock, one word per cycle after a start-up of a few
// cycles, and raises NICEMU_IRQ_SUM when the 64-bit RESULT is ready.
#pragma once

#include "devices/device.hpp"
#include "devices/device_clock.hpp"
#include "nicemu/model.hpp"

#include <array>
#include <memory>
#include <vector>

namespace nicemu::example {

class SumEngine final : public Device {
public:
  SumEngine(DeviceHost &host, uint64_t clock_hz, uint32_t startup_cycles);
  static std::unique_ptr<SumEngine> from_model(DeviceHost &host,
                                               const Model &model);
  static std::vector<ModelKey> model_keys();
  static const RegisterLayout &layout();

private:
  void start();
  void finish(uint64_t sum);

  DeviceHost &host_;
  DeviceClock clock_;
  uint32_t startup_cycles_;
  uint32_t addr_ = 0, length_ = 0, status_ = 0;
  uint64_t result_ = 0;
  std::array<uint32_t, 8> history_{};
};

} // namespace nicemu::example
