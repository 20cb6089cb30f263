// Register descriptions: the catalog of every register the shipped cards
// have, derived from the X-macro tables of the contract headers
// (nicemu/regs.h) so that offsets, widths, access rights and names are
// written down once; and the layout of one kind of register window, which
// finds the register at an offset in O(1) for the bus.
#pragma once

#include "nicemu/regs.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nicemu {

enum class Access : uint8_t { R = 1, W = 2, RW = 3 };

// One register, or an array of `count` registers of `bytes` bytes each at
// consecutive addresses.
struct RegisterInfo {
  const char *device;
  const char *name;
  uint32_t window; // device window index (4 KiB pages from the MMIO base)
  uint32_t offset; // of the first element, within the window
  Access access;
  const char *description;
  uint8_t bytes = 4;  // 1, 2, 4 or 8
  uint32_t count = 1; // array elements

  uint32_t size() const { return bytes * count; }
};

// The registers of one kind of window: where each one is, checked once
// (aligned, inside the window, no overlaps), with an O(1) lookup by offset.
// Built once per device type and shared by every instance.
class RegisterLayout {
public:
  // Throws std::logic_error for an ill-formed table (an emulator bug).
  RegisterLayout(std::string device, uint32_t window_bytes,
                 std::vector<RegisterInfo> registers);
  // The shipped device whose registers the catalog lists ("TIMER").
  static const RegisterLayout &of(const std::string &device);

  const std::string &device() const { return device_; }
  uint32_t window_bytes() const { return window_bytes_; }
  std::span<const RegisterInfo> registers() const { return registers_; }
  // The register holding byte `offset` (and its element and the byte
  // within it), or nullptr.
  const RegisterInfo *at(uint32_t offset, uint32_t &element,
                         uint32_t &byte) const;
  // Index of `reg` in registers().
  size_t index_of(const RegisterInfo &reg) const {
    return size_t(&reg - registers_.data());
  }

private:
  std::string device_;
  uint32_t window_bytes_;
  std::vector<RegisterInfo> registers_;
  std::vector<uint16_t> slot_; // per byte: register index + 1, 0 = none
};

// The catalog: every register of the shipped devices, in table order.
std::span<const RegisterInfo> all_registers();
// Device window index for a device name ("SYS" -> 0), if any.
std::optional<uint32_t> device_window(const std::string &device);
const char *device_name(uint32_t window);
const RegisterInfo *find_register(uint32_t window, uint32_t offset);
// "TIMER_CYCLE_LO" or "TIMER+0x40" or "0x1f0ff000"; an element of an array
// is "DEV_NAME[3]", a byte inside a register "DEV_NAME+2".
std::string describe_mmio_address(uint32_t addr);
// The same, for an offset in a window of `layout`.
std::string describe_register(const RegisterLayout &layout, uint32_t offset);

} // namespace nicemu
