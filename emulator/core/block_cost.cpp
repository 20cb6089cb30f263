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

// Instructions a polling loop may contain: loads and plain computation.
// Kind::Other also holds CP0 moves, mthi/mtlo, cache and pref, left out.
bool loop_safe(uint32_t word, const mips::Insn &insn) {
  uint32_t op = word >> 26, funct = word & 63;
  switch (insn.kind) {
  case mips::Kind::Load:
  case mips::Kind::Branch:
    return true;
  case mips::Kind::Other:
    return op != 0x10 && op != 0x2F && op != 0x33 &&
           !(op == 0 && (funct == 0x11 || funct == 0x13 || funct == 0x0F));
  default:
    return false;
  }
}

// Whether the block is a polling loop's candidate (BlockInfo::poll_loop):
// only loop_safe instructions, and its one branch, second to last, leads
// back to `address`.
bool is_poll_loop(uint32_t address, std::span<const uint32_t> words) {
  if (words.size() < 2)
    return false;
  for (size_t i = 0; i < words.size(); ++i) {
    mips::Insn insn = mips::decode(words[i]);
    if (!loop_safe(words[i], insn))
      return false;
    bool last_but_one = i + 2 == words.size();
    if ((insn.kind == mips::Kind::Branch) != last_but_one)
      return false;
    if (last_but_one) {
      uint32_t target =
          address + 4 * uint32_t(i) + 4 + uint32_t(int32_t(insn.imm) * 4);
      if (target != address)
        return false;
    }
  }
  return true;
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
    if (insn.dest)
      b.loop_writes |= 1u << insn.dest;
    prev = insn;
  }
  b.poll_loop = is_poll_loop(address, words);
  if (!b.poll_loop)
    b.loop_writes = 0;
  b.cost = cycles;
  b.prefix.push_back(cycles);
  return b;
}

} // namespace nicemu
