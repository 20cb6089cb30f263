// Just enough MIPS32 decoding to cost a basic block, find its memory
// accesses, and name the faulting instruction. Disassembly for people is
// Capstone's job (debug/disasm); this is the cheap structural view.
#pragma once

#include <cstdint>

namespace nicemu::mips {

enum class Kind : uint8_t {
  Other,
  Load,
  Store,
  Mul,
  Div,
  Branch, // conditional, PC-relative
  Jump,   // j, jal, jr, jalr
  Break,
  Syscall,
  Trap, // teq, tne, ... and their immediate forms
  Wait,
  Eret,
  Cop1,    // FPU instruction: the core has no FPU
  Invalid, // reserved opcode as far as this core is concerned
};

struct Insn {
  Kind kind = Kind::Other;
  uint8_t rs = 0, rt = 0, rd = 0;
  uint8_t dest = 0;          // GPR written (0 = none)
  uint32_t reads = 0;        // bit mask of GPRs read
  int16_t imm = 0;           // immediate / memory displacement
  uint8_t mem_size = 0;      // bytes accessed by a load or store
  bool may_overflow = false; // add, addi, sub: trap on signed overflow
};

Insn decode(uint32_t word);

// True for instructions followed by a delay slot.
inline bool has_delay_slot(const Insn &i) {
  return i.kind == Kind::Branch || i.kind == Kind::Jump;
}

} // namespace nicemu::mips
