// MIPS32 disassembly for people (Capstone), with symbols.
#pragma once

#include <cstdint>
#include <string>

namespace nicemu {

// "lw $t0, 1($a0)"; "(not an instruction: 0xffffffff)" when undecodable.
std::string disassemble(uint32_t word, uint32_t address);

// Conventional o32 register names, "zero" .. "ra".
const char *mips_register_name(unsigned index);

} // namespace nicemu
