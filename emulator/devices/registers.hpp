// The register name table, derived from the X-macro tables in nicemu/regs.h
// so that offsets, access rights and names are written down only once.
#pragma once

#include "nicemu/regs.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace nicemu {

enum class Access : uint8_t { R = 1, W = 2, RW = 3 };

struct RegisterInfo {
  const char *device;
  const char *name;
  uint32_t window; // device window index
  uint32_t offset;
  Access access;
  const char *description;
};

std::span<const RegisterInfo> all_registers();
// Device window index for a device name ("SYS" -> 0), if any.
std::optional<uint32_t> device_window(const std::string &device);
const char *device_name(uint32_t window);
const RegisterInfo *find_register(uint32_t window, uint32_t offset);
// "TIMER_CYCLE_LO" or "TIMER+0x40" or "0x1f0ff000".
std::string describe_mmio_address(uint32_t addr);

} // namespace nicemu
