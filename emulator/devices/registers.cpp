#include "devices/registers.hpp"

#include "nicemu/martini.h"
#include "nicemu/uzura_card.h"

#include <array>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace nicemu {

namespace {

#define NICEMU_WINDOW_INDEX(dev, index)                                        \
  constexpr uint32_t k##dev##Window = index;
#define NICEMU_FAMILY_WINDOW_INDEX(dev, page, bytes)                           \
  constexpr uint32_t k##dev##Window = page;
NICEMU_DEVICES(NICEMU_WINDOW_INDEX)
NICEMU_MARTINI_DEVICES(NICEMU_FAMILY_WINDOW_INDEX)
NICEMU_UZURA_DEVICES(NICEMU_FAMILY_WINDOW_INDEX)
#undef NICEMU_WINDOW_INDEX
#undef NICEMU_FAMILY_WINDOW_INDEX

// The shared devices (nicemu/regs.h), then the shipped families' own, in
// the sized form of their headers (DIMMnet-1's OTF: nicemu/martini.h;
// UZURA's ENGINE: nicemu/uzura_card.h).
#define NICEMU_REGISTER_INFO(dev, name, off, acc, desc)                        \
  RegisterInfo{#dev, #name, k##dev##Window, off, Access::acc, desc, 4, 1},
#define NICEMU_SIZED_REGISTER_INFO(dev, name, off, bits, count, acc, desc)     \
  RegisterInfo{#dev,        #name, k##dev##Window, off,                        \
               Access::acc, desc,  (bits) / 8,     count},
constexpr RegisterInfo kRegisters[] = {
    NICEMU_ALL_REGS(NICEMU_REGISTER_INFO)
        NICEMU_OTF_REGS(NICEMU_SIZED_REGISTER_INFO)
            NICEMU_ENGINE_REGS(NICEMU_SIZED_REGISTER_INFO)};
#undef NICEMU_REGISTER_INFO
#undef NICEMU_SIZED_REGISTER_INFO

// By window index: the families' windows follow the shared ones.
#define NICEMU_DEVICE_NAME(dev, index) #dev,
#define NICEMU_FAMILY_DEVICE_NAME(dev, page, bytes) #dev,
constexpr const char *kDeviceNames[] = {
    NICEMU_DEVICES(NICEMU_DEVICE_NAME)
        NICEMU_MARTINI_DEVICES(NICEMU_FAMILY_DEVICE_NAME)
            NICEMU_UZURA_DEVICES(NICEMU_FAMILY_DEVICE_NAME)};
#undef NICEMU_DEVICE_NAME
#undef NICEMU_FAMILY_DEVICE_NAME
static_assert(kOTFWindow == kDOORBELLWindow + 1 &&
                  kENGINEWindow == kOTFWindow + 1,
              "family windows follow the shared ones without a gap");

[[noreturn]] void ill_formed(const std::string &device,
                             const std::string &what) {
  throw std::logic_error("register table of " + device + ": " + what);
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

} // namespace

RegisterLayout::RegisterLayout(std::string device, uint32_t window_bytes,
                               std::vector<RegisterInfo> registers)
    : device_(std::move(device)), window_bytes_(window_bytes),
      registers_(std::move(registers)), slot_(window_bytes, 0) {
  if (registers_.size() >= UINT16_MAX)
    ill_formed(device_, "too many registers");
  for (size_t i = 0; i < registers_.size(); ++i) {
    const RegisterInfo &r = registers_[i];
    bool width_ok =
        r.bytes == 1 || r.bytes == 2 || r.bytes == 4 || r.bytes == 8;
    if (!width_ok || r.count == 0 || r.offset % r.bytes != 0 ||
        uint64_t(r.offset) + r.size() > window_bytes_)
      ill_formed(device_, std::string(r.name) + " at " + hex(r.offset) +
                              " is misaligned, empty or past the window");
    for (uint32_t b = r.offset; b < r.offset + r.size(); ++b) {
      if (slot_[b])
        ill_formed(device_, std::string(r.name) + " overlaps " +
                                registers_[slot_[b] - 1].name);
      slot_[b] = uint16_t(i + 1);
    }
  }
}

const RegisterInfo *RegisterLayout::at(uint32_t offset, uint32_t &element,
                                       uint32_t &byte) const {
  if (offset >= window_bytes_ || slot_[offset] == 0)
    return nullptr;
  const RegisterInfo &r = registers_[slot_[offset] - 1];
  element = (offset - r.offset) / r.bytes;
  byte = (offset - r.offset) % r.bytes;
  return &r;
}

const RegisterLayout &RegisterLayout::of(const std::string &device) {
  // Built on first use, one per shipped device, never freed.
  static const std::map<std::string, RegisterLayout> layouts = [] {
    std::map<std::string, RegisterLayout> m;
    for (uint32_t w = 0; w < std::size(kDeviceNames); ++w) {
      std::vector<RegisterInfo> regs;
      for (const RegisterInfo &r : kRegisters)
        if (r.window == w)
          regs.push_back(r);
      m.emplace(kDeviceNames[w],
                RegisterLayout(kDeviceNames[w], NICEMU_DEVICE_WINDOW, regs));
    }
    return m;
  }();
  auto it = layouts.find(device);
  if (it == layouts.end())
    throw std::logic_error("no register table for device " + device);
  return it->second;
}

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
  const char *name = device_name(window);
  if (!name)
    return nullptr;
  uint32_t element, byte;
  const RegisterInfo *r = RegisterLayout::of(name).at(offset, element, byte);
  return r && element == 0 && byte == 0 ? r : nullptr;
}

std::string describe_register(const RegisterLayout &layout, uint32_t offset) {
  uint32_t element = 0, byte = 0;
  const RegisterInfo *r = layout.at(offset, element, byte);
  if (!r)
    return layout.device() + "+" + hex(offset);
  std::string name = layout.device() + "_" + r->name;
  if (r->count > 1)
    name += "[" + std::to_string(element) + "]";
  if (byte)
    name += "+" + std::to_string(byte);
  return name;
}

std::string describe_mmio_address(uint32_t addr) {
  uint32_t rel = addr - NICEMU_MMIO_BASE;
  uint32_t window = rel / NICEMU_DEVICE_WINDOW;
  if (addr < NICEMU_MMIO_BASE || !device_name(window)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", addr);
    return buf;
  }
  return describe_register(RegisterLayout::of(device_name(window)),
                           rel % NICEMU_DEVICE_WINDOW);
}

} // namespace nicemu
