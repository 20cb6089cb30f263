// What reading a variable needs of a stopped core: its registers, in
// DWARF's MIPS numbering (0-31 the general registers, 64 HI, 65 LO), and
// its memory.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace nicemu {

struct FrameAccess {
  std::function<bool(unsigned dwarf_reg, uint32_t &value)> reg;
  std::function<bool(uint32_t addr, std::span<uint8_t> out)> mem;
};

} // namespace nicemu
