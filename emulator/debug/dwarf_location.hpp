// Where a variable is, from its DWARF location expression (read with
// elfutils' libdw): in memory at an address, in registers, or a value the
// compiler computed (DW_OP_stack_value, DW_OP_implicit_value), or pieces of
// those. For the built-in debugger's `print`, `info locals`, `info args`.
#pragma once

#include "debug/frame_access.hpp"

#include <elfutils/libdw.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nicemu {

struct Location {
  enum class Kind : uint8_t {
    Memory,      // the object is at `address`
    Bytes,       // its bytes are `bytes` (registers, a computed value)
    Unavailable, // optimized out here, or an expression we cannot evaluate
  };
  Kind kind = Kind::Unavailable;
  uint32_t address = 0;
  std::vector<uint8_t> bytes;
  std::string why; // Unavailable: "optimized out", "DW_OP_entry_value"...

  // The object's `size` bytes; false if they cannot be read.
  bool read(const FrameAccess &frame, uint32_t size,
            std::vector<uint8_t> &out) const;
};

// The location of the variable whose DW_AT_location (or DW_AT_const_value)
// is `attr`, at `pc`, with `frame_base` the value of the function's
// DW_AT_frame_base (if it has one).
Location evaluate_location(Dwarf_Attribute &attr, uint32_t pc,
                           std::optional<uint32_t> frame_base,
                           const FrameAccess &frame);

// The value of a function's DW_AT_frame_base at `pc` (a register location
// such as DW_OP_reg30 means that register's value).
std::optional<uint32_t> frame_base_of(Dwarf_Die &function, uint32_t pc,
                                      const FrameAccess &frame);

} // namespace nicemu
