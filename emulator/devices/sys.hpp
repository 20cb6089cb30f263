// SYS: identification, capabilities, halt (exit code), watchdog.
#pragma once

#include "devices/device.hpp"

namespace nicemu {

struct NodeIdentity {
  uint32_t node = 0, nodes = 1, model_id = 0, clock_hz = 0, sram_size = 0;
  uint32_t caps = 0; // NICEMU_CAP_* of the devices present
};

class SysDevice final : public Device {
public:
  SysDevice(DeviceHost &host, NodeIdentity id);

  // Nothing of it changes (the watchdog is the node's).
  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;

private:
  DeviceHost &host_;
  NodeIdentity id_;
};

} // namespace nicemu
