#include "devices/registers.hpp"

#include <array>
#include <cstdio>

namespace nicemu {

namespace {

#define NICEMU_WINDOW_INDEX(dev, index)                                        \
  constexpr uint32_t k##dev##Window = index;
NICEMU_DEVICES(NICEMU_WINDOW_INDEX)
#undef NICEMU_WINDOW_INDEX

#define NICEMU_REGISTER_INFO(dev, name, off, acc, desc)                        \
  RegisterInfo{#dev, #name, k##dev##Window, off, Access::acc, desc},
constexpr RegisterInfo kRegisters[] = {NICEMU_ALL_REGS(NICEMU_REGISTER_INFO)};
#undef NICEMU_REGISTER_INFO

#define NICEMU_DEVICE_NAME(dev, index) #dev,
constexpr const char *kDeviceNames[] = {NICEMU_DEVICES(NICEMU_DEVICE_NAME)};
#undef NICEMU_DEVICE_NAME

constexpr bool registers_are_well_formed() {
  for (const auto &r : kRegisters) {
    if (r.offset % 4 != 0 || r.offset >= NICEMU_DEVICE_WINDOW)
      return false;
    for (const auto &s : kRegisters)
      if (&s != &r && s.window == r.window && s.offset == r.offset)
        return false;
  }
  return true;
}
static_assert(registers_are_well_formed(),
              "regs.h: offsets must be aligned, inside the window, unique");

} // namespace

std::span<const RegisterInfo> all_registers() {
  return kRegisters;
}

std::optional<uint32_t> device_window(const std::string &device) {
  for (uint32_t i = 0; i < std::size(kDeviceNames); ++i)
    if (device == kDeviceNames[i])
      return i;
  return std::nullopt;
}

const char *device_name(uint32_t window) {
  return window < std::size(kDeviceNames) ? kDeviceNames[window] : nullptr;
}

const RegisterInfo *find_register(uint32_t window, uint32_t offset) {
  for (const auto &r : kRegisters)
    if (r.window == window && r.offset == offset)
      return &r;
  return nullptr;
}

std::string describe_mmio_address(uint32_t addr) {
  char buf[64];
  uint32_t rel = addr - NICEMU_MMIO_BASE;
  uint32_t window = rel / NICEMU_DEVICE_WINDOW,
           offset = rel % NICEMU_DEVICE_WINDOW;
  if (addr < NICEMU_MMIO_BASE || !device_name(window)) {
    std::snprintf(buf, sizeof buf, "0x%08x", addr);
  } else if (const RegisterInfo *r = find_register(window, offset)) {
    std::snprintf(buf, sizeof buf, "%s_%s", r->device, r->name);
  } else {
    std::snprintf(buf, sizeof buf, "%s+0x%x", device_name(window), offset);
  }
  return buf;
}

} // namespace nicemu
