#include "core/mips_decode.hpp"

namespace nicemu::mips {
namespace {

constexpr uint32_t bit(unsigned r) {
  return r ? (1u << r) : 0u;
}

struct Fields {
  uint32_t op, rs, rt, rd, funct;
  int16_t imm;
};

Fields fields(uint32_t w) {
  return {w >> 26,        (w >> 21) & 31, (w >> 16) & 31,
          (w >> 11) & 31, w & 63,         static_cast<int16_t>(w & 0xffff)};
}

Insn make(Kind k, const Fields &f, uint8_t dest, uint32_t reads) {
  Insn i;
  i.kind = k;
  i.rs = f.rs;
  i.rt = f.rt;
  i.rd = f.rd;
  i.dest = dest;
  i.reads = reads;
  i.imm = f.imm;
  return i;
}

Insn decode_special(const Fields &f) {
  uint32_t rs_rt = bit(f.rs) | bit(f.rt);
  switch (f.funct) {
  case 0x00:
  case 0x02:
  case 0x03: // sll srl sra
    return make(Kind::Other, f, f.rd, bit(f.rt));
  case 0x08: // jr
    return make(Kind::Jump, f, 0, bit(f.rs));
  case 0x09: // jalr
    return make(Kind::Jump, f, f.rd, bit(f.rs));
  case 0x0C:
    return make(Kind::Syscall, f, 0, 0);
  case 0x0D:
    return make(Kind::Break, f, 0, 0);
  case 0x0F: // sync
    return make(Kind::Other, f, 0, 0);
  case 0x10:
  case 0x12: // mfhi mflo
    return make(Kind::Other, f, f.rd, 0);
  case 0x11:
  case 0x13: // mthi mtlo
    return make(Kind::Other, f, 0, bit(f.rs));
  case 0x18:
  case 0x19:
    return make(Kind::Mul, f, 0, rs_rt);
  case 0x1A:
  case 0x1B:
    return make(Kind::Div, f, 0, rs_rt);
  case 0x30:
  case 0x31:
  case 0x32:
  case 0x33:
  case 0x34:
  case 0x36:
    return make(Kind::Trap, f, 0, rs_rt);
  case 0x20:
  case 0x22: { // add sub
    Insn i = make(Kind::Other, f, f.rd, rs_rt);
    i.may_overflow = true;
    return i;
  }
  default:
    break;
  }
  bool alu = (f.funct >= 0x04 && f.funct <= 0x07) || // shifts by register
             (f.funct >= 0x20 && f.funct <= 0x2B) || // arithmetic, logic, slt
             f.funct == 0x0A || f.funct == 0x0B;     // movz movn
  if (alu)
    return make(Kind::Other, f, f.rd, rs_rt);
  return make(Kind::Invalid, f, 0, 0);
}

Insn decode_memory(const Fields &f, bool store, uint8_t size) {
  Insn i = make(store ? Kind::Store : Kind::Load, f, store ? 0 : f.rt,
                store ? bit(f.rs) | bit(f.rt) : bit(f.rs));
  i.mem_size = size;
  return i;
}

} // namespace

Insn decode(uint32_t w) {
  Fields f = fields(w);
  switch (f.op) {
  case 0x00:
    return decode_special(f);
  case 0x01: { // REGIMM
    if (f.rt >= 0x08 && f.rt <= 0x0E)
      return make(Kind::Trap, f, 0, bit(f.rs));
    bool link = f.rt >= 0x10;
    return make(Kind::Branch, f, link ? 31 : 0, bit(f.rs));
  }
  case 0x02:
    return make(Kind::Jump, f, 0, 0);
  case 0x03:
    return make(Kind::Jump, f, 31, 0);
  case 0x04:
  case 0x05:
  case 0x14:
  case 0x15:
    return make(Kind::Branch, f, 0, bit(f.rs) | bit(f.rt));
  case 0x06:
  case 0x07:
  case 0x16:
  case 0x17:
    return make(Kind::Branch, f, 0, bit(f.rs));
  case 0x08: { // addi
    Insn i = make(Kind::Other, f, f.rt, bit(f.rs));
    i.may_overflow = true;
    return i;
  }
  case 0x09:
  case 0x0A:
  case 0x0B:
  case 0x0C:
  case 0x0D:
  case 0x0E:
    return make(Kind::Other, f, f.rt, bit(f.rs));
  case 0x0F: // lui
    return make(Kind::Other, f, f.rt, 0);
  case 0x10: // COP0
    if (w == 0x42000020)
      return make(Kind::Wait, f, 0, 0);
    if (w == 0x42000018)
      return make(Kind::Eret, f, 0, 0);
    return make(Kind::Other, f, f.rs == 0 ? f.rt : 0, 0); // mfc0 / mtc0
  case 0x11:
  case 0x31:
  case 0x35:
  case 0x39:
  case 0x3D: // FPU
    return make(Kind::Cop1, f, 0, 0);
  case 0x1C: { // SPECIAL2
    uint32_t rs_rt = bit(f.rs) | bit(f.rt);
    if (f.funct == 0x02)
      return make(Kind::Mul, f, f.rd, rs_rt);
    if (f.funct <= 0x05 && f.funct != 0x03)
      return make(Kind::Mul, f, 0, rs_rt); // madd maddu msub msubu
    if (f.funct == 0x20 || f.funct == 0x21)
      return make(Kind::Other, f, f.rd, bit(f.rs)); // clz clo
    return make(Kind::Invalid, f, 0, 0);
  }
  case 0x20:
    return decode_memory(f, false, 1); // lb
  case 0x21:
    return decode_memory(f, false, 2); // lh
  case 0x23:
    return decode_memory(f, false, 4); // lw
  case 0x24:
    return decode_memory(f, false, 1); // lbu
  case 0x25:
    return decode_memory(f, false, 2); // lhu
  case 0x30:
    return decode_memory(f, false, 4); // ll
  case 0x22:
  case 0x26: { // lwl lwr merge into rt
    Insn i = decode_memory(f, false, 4);
    i.reads |= bit(f.rt);
    return i;
  }
  case 0x28:
    return decode_memory(f, true, 1); // sb
  case 0x29:
    return decode_memory(f, true, 2); // sh
  case 0x2B:
    return decode_memory(f, true, 4); // sw
  case 0x2A:
  case 0x2E:
    return decode_memory(f, true, 4); // swl swr
  case 0x38: {                        // sc writes its success flag into rt
    Insn i = decode_memory(f, true, 4);
    i.dest = f.rt;
    return i;
  }
  case 0x2F:
  case 0x33: // cache, pref
    return make(Kind::Other, f, 0, bit(f.rs));
  default:
    return make(Kind::Invalid, f, 0, 0);
  }
}

} // namespace nicemu::mips
