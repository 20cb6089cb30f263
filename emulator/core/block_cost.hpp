// The cost of a translated basic block, computed once from its instructions
// with the model's cycle table and cached by address. Counting per block (a
// hook per block, not per instruction) keeps cycle accounting cheap.
#pragma once

#include "nicemu/model.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace nicemu {

// A load or store inside a block, kept to time device accesses exactly and
// to name the instruction that faulted.
struct BlockMemOp {
  uint16_t index; // instruction index in the block
  uint8_t base;   // base register
  uint8_t size;   // bytes
  int16_t disp;   // displacement
  bool store;
  uint32_t cycles_before; // block cycles spent before this instruction
};

struct BlockInfo {
  uint32_t address = 0;
  uint32_t size = 0; // bytes
  uint32_t instructions = 0;
  uint32_t cost = 0; // cycles, excluding device wait states and taken branch
  uint32_t taken_penalty = 0; // paid if the next block is not the fall-through
  bool ends_in_wait = false;
  // A polling loop's candidate: the block ends with a branch back to its
  // own start (and its delay slot), and only loads and computes (no store,
  // call, wait, trap, multiply, HI/LO or coprocessor access), so an
  // iteration changes nothing but the registers in `loop_writes` (a mask of
  // GPRs). UnicornCpu fast-forwards such a loop once it repeats itself.
  bool poll_loop = false;
  uint32_t loop_writes = 0;
  std::vector<uint32_t> words;
  std::vector<BlockMemOp> mem_ops;
  // prefix[i]: cycles spent before instruction i; prefix[instructions] ==
  // cost. Used to time device accesses and faults inside the block.
  std::vector<uint32_t> prefix;
};

// Costs instruction words [words] starting at `address`.
BlockInfo cost_block(uint32_t address, std::span<const uint32_t> words,
                     const CycleTable &table);

} // namespace nicemu
