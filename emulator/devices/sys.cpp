#include "devices/sys.hpp"

#include "nicemu/regs.h"
#include "sim/state_archive.hpp"

namespace nicemu {

SysDevice::SysDevice(DeviceHost &host, NodeIdentity id)
    : Device(RegisterLayout::of("SYS")), host_(host), id_(id) {
  registers()
      .constant(NICEMU_SYS_ID, NICEMU_ID_MAGIC)
      .constant(NICEMU_SYS_VERSION, NICEMU_REGS_VERSION)
      .constant(NICEMU_SYS_MODEL, id_.model_id)
      .constant(NICEMU_SYS_NODE, id_.node)
      .constant(NICEMU_SYS_NODES, id_.nodes)
      .constant(NICEMU_SYS_CLOCK_HZ, id_.clock_hz)
      .constant(NICEMU_SYS_CAPS, id_.caps)
      .on_write(NICEMU_SYS_EXIT,
                [this](uint64_t value) { host_.halt(uint32_t(value)); })
      .on_read(NICEMU_SYS_WDT_PERIOD,
               [this]() -> uint64_t {
                 uint64_t p = host_.watchdog_period();
                 return p > 0xFFFFFFFFu ? 0xFFFFFFFFu : p;
               })
      .on_write(NICEMU_SYS_WDT_PERIOD,
                [this](uint64_t value) { host_.set_watchdog_period(value); })
      .on_write(NICEMU_SYS_WDT_KICK,
                [this](uint64_t) { host_.kick_watchdog(); });
}

void SysDevice::save_state(StateWriter &out) const {
  out.section("sys");
}

void SysDevice::load_state(StateReader &in) {
  in.section("sys");
}

} // namespace nicemu
