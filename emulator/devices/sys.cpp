#include "devices/sys.hpp"

#include "nicemu/regs.h"

namespace nicemu {

uint32_t SysDevice::read(uint32_t offset) {
  switch (offset) {
  case NICEMU_SYS_ID:
    return NICEMU_ID_MAGIC;
  case NICEMU_SYS_VERSION:
    return NICEMU_REGS_VERSION;
  case NICEMU_SYS_MODEL:
    return id_.model_id;
  case NICEMU_SYS_NODE:
    return id_.node;
  case NICEMU_SYS_NODES:
    return id_.nodes;
  case NICEMU_SYS_CLOCK_HZ:
    return id_.clock_hz;
  case NICEMU_SYS_CAPS:
    return id_.caps;
  case NICEMU_SYS_WDT_PERIOD: {
    uint64_t p = host_.watchdog_period();
    return p > 0xFFFFFFFFu ? 0xFFFFFFFFu : uint32_t(p);
  }
  default:
    return 0;
  }
}

void SysDevice::write(uint32_t offset, uint32_t value) {
  switch (offset) {
  case NICEMU_SYS_EXIT:
    host_.halt(value);
    break;
  case NICEMU_SYS_WDT_PERIOD:
    host_.set_watchdog_period(value);
    break;
  case NICEMU_SYS_WDT_KICK:
    host_.kick_watchdog();
    break;
  default:
    break;
  }
}

} // namespace nicemu
