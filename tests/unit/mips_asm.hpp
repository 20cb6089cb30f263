// A tiny MIPS32 encoder for test vectors: enough to write instruction
// sequences whose exact cycle counts and delay-slot behaviour tests check.
#pragma once

#include <cstdint>

namespace mips_asm {

enum Reg : uint32_t {
  zero = 0,
  at,
  v0,
  v1,
  a0,
  a1,
  a2,
  a3,
  t0,
  t1,
  t2,
  t3,
  t4,
  t5,
  t6,
  t7,
  s0,
  s1,
  s2,
  s3,
  s4,
  s5,
  s6,
  s7,
  t8,
  t9,
  k0,
  k1,
  gp,
  sp,
  fp,
  ra
};

constexpr uint32_t i_type(uint32_t op, uint32_t rs, uint32_t rt, int32_t imm) {
  return (op << 26) | (rs << 21) | (rt << 16) | (uint32_t(imm) & 0xffff);
}
constexpr uint32_t r_type(uint32_t rs, uint32_t rt, uint32_t rd, uint32_t sa,
                          uint32_t funct) {
  return (rs << 21) | (rt << 16) | (rd << 11) | (sa << 6) | funct;
}

constexpr uint32_t nop() {
  return 0;
}
constexpr uint32_t addiu(Reg rt, Reg rs, int32_t imm) {
  return i_type(9, rs, rt, imm);
}
constexpr uint32_t ori(Reg rt, Reg rs, int32_t imm) {
  return i_type(13, rs, rt, imm);
}
constexpr uint32_t andi(Reg rt, Reg rs, int32_t imm) {
  return i_type(12, rs, rt, imm);
}
constexpr uint32_t lui(Reg rt, int32_t imm) {
  return i_type(15, 0, rt, imm);
}
constexpr uint32_t lw(Reg rt, int32_t off, Reg base) {
  return i_type(0x23, base, rt, off);
}
constexpr uint32_t lb(Reg rt, int32_t off, Reg base) {
  return i_type(0x20, base, rt, off);
}
constexpr uint32_t sw(Reg rt, int32_t off, Reg base) {
  return i_type(0x2b, base, rt, off);
}
constexpr uint32_t sb(Reg rt, int32_t off, Reg base) {
  return i_type(0x28, base, rt, off);
}
// Branch offsets are in instructions, relative to the delay slot.
constexpr uint32_t beq(Reg rs, Reg rt, int32_t off) {
  return i_type(4, rs, rt, off);
}
constexpr uint32_t bne(Reg rs, Reg rt, int32_t off) {
  return i_type(5, rs, rt, off);
}
constexpr uint32_t addu(Reg rd, Reg rs, Reg rt) {
  return r_type(rs, rt, rd, 0, 0x21);
}
constexpr uint32_t subu(Reg rd, Reg rs, Reg rt) {
  return r_type(rs, rt, rd, 0, 0x23);
}
constexpr uint32_t xor_(Reg rd, Reg rs, Reg rt) {
  return r_type(rs, rt, rd, 0, 0x26);
}
constexpr uint32_t sll(Reg rd, Reg rt, uint32_t sa) {
  return r_type(0, rt, rd, sa, 0);
}
constexpr uint32_t mult(Reg rs, Reg rt) {
  return r_type(rs, rt, 0, 0, 0x18);
}
constexpr uint32_t divu(Reg rs, Reg rt) {
  return r_type(rs, rt, 0, 0, 0x1b);
}
constexpr uint32_t mflo(Reg rd) {
  return r_type(0, 0, rd, 0, 0x12);
}
constexpr uint32_t jr(Reg rs) {
  return r_type(rs, 0, 0, 0, 0x08);
}
constexpr uint32_t jal(uint32_t target) {
  return (3u << 26) | ((target >> 2) & 0x3ffffff);
}
constexpr uint32_t j(uint32_t target) {
  return (2u << 26) | ((target >> 2) & 0x3ffffff);
}
constexpr uint32_t brk() {
  return 0x0000000d;
}
constexpr uint32_t wait() {
  return 0x42000020;
}
constexpr uint32_t illegal() {
  return 0xffffffff;
}

} // namespace mips_asm
