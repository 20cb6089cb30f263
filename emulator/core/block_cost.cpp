#include "core/block_cost.hpp"

#include "core/mips_decode.hpp"

namespace nicemu {

namespace {

uint32_t extra_cycles(const mips::Insn &insn, const CycleTable &t) {
  switch (insn.kind) {
  case mips::Kind::Mul:
    return t.mul;
  case mips::Kind::Div:
    return t.div;
  default:
    return 0;
  }
}

// One interlock stall when an instruction reads the register loaded by the
// instruction just before it (MIPS I's load delay slot, interlocked).
bool load_use(const mips::Insn &prev, const mips::Insn &cur) {
  return prev.kind == mips::Kind::Load && prev.dest != 0 &&
         (cur.reads & (1u << prev.dest)) != 0;
}

} // namespace

BlockInfo cost_block(uint32_t address, std::span<const uint32_t> words,
                     const CycleTable &table) {
  BlockInfo b;
  b.address = address;
  b.size = static_cast<uint32_t>(words.size() * 4);
  b.instructions = static_cast<uint32_t>(words.size());
  b.words.assign(words.begin(), words.end());
  uint32_t cycles = 0;
  mips::Insn prev;
  for (size_t i = 0; i < words.size(); ++i) {
    mips::Insn insn = mips::decode(words[i]);
    if (i > 0 && load_use(prev, insn))
      cycles += table.load_use;
    b.prefix.push_back(cycles);
    if (insn.kind == mips::Kind::Load || insn.kind == mips::Kind::Store)
      b.mem_ops.push_back({static_cast<uint16_t>(i), insn.rs, insn.mem_size,
                           insn.imm, insn.kind == mips::Kind::Store, cycles});
    cycles += 1 + extra_cycles(insn, table);
    if (has_delay_slot(insn))
      b.taken_penalty = table.taken_branch;
    if (insn.kind == mips::Kind::Wait)
      b.ends_in_wait = true;
    prev = insn;
  }
  b.cost = cycles;
  b.prefix.push_back(cycles);
  return b;
}

} // namespace nicemu
