// Facts about Debian's Unicorn 2.0.1 that the core is designed around
// (see core/unicorn_cpu.cpp). If an upgrade changes one, these tests say
// which design decision to revisit.
#include "mips_asm.hpp"
#include "unicorn_engine.hpp"

#include <doctest/doctest.h>
#include <unicorn/unicorn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace mips_asm;

namespace {

using unicorn_test::Engine;
using unicorn_test::kCode;

// Sums 1..n with the add in the delay slot of the loop branch; ends at `end`.
std::vector<uint32_t> delay_slot_loop(int n) {
  return {addiu(t0, zero, n),
          addiu(v0, zero, 0),
          /*loop*/ addiu(t0, t0, -1),
          bne(t0, zero, -2),
          addu(v0, v0, t0),
          /*end*/ nop()};
}
constexpr uint32_t kLoopEnd = kCode + 5 * 4;

} // namespace

TEST_CASE(
    "unicorn fact: slicing with uc_emu_start's count breaks delay slots") {
  // Reference: one run.
  Engine whole(delay_slot_loop(50));
  REQUIRE(uc_emu_start(whole.uc, kCode, kLoopEnd, 0, 0) == UC_ERR_OK);
  uint32_t expected = whole.reg(UC_MIPS_REG_V0);
  REQUIRE(expected == 49 * 50 / 2);
  // Sliced by instruction count: some slice length gives a wrong sum or
  // never arrives. This is why the core stops from its block hook instead.
  bool some_slicing_corrupts = false;
  for (int count = 2; count <= 12 && !some_slicing_corrupts; ++count) {
    Engine sliced(delay_slot_loop(50));
    uint32_t pc = kCode;
    for (int guard = 0; pc != kLoopEnd && guard < 10000; ++guard) {
      uc_emu_start(sliced.uc, pc, kLoopEnd, 0, size_t(count));
      pc = sliced.reg(UC_MIPS_REG_PC);
    }
    if (pc != kLoopEnd || sliced.reg(UC_MIPS_REG_V0) != expected)
      some_slicing_corrupts = true;
  }
  CHECK(some_slicing_corrupts);
}

TEST_CASE("unicorn fact: a block stopped from its own hook has not run") {
  Engine e({addiu(v0, zero, 1), addiu(v0, v0, 1), nop()});
  struct State {
    int blocks = 0;
  } state;
  uc_hook hook;
  uc_hook_add(
      e.uc, &hook, UC_HOOK_BLOCK,
      (void *)+[](uc_engine *uc, uint64_t, uint32_t, void *user) {
        if (static_cast<State *>(user)->blocks++ == 0)
          uc_emu_stop(uc);
      },
      &state, 1, 0);
  REQUIRE(uc_emu_start(e.uc, kCode, kCode + 12, 0, 0) == UC_ERR_OK);
  CHECK(e.reg(UC_MIPS_REG_PC) == kCode);
  CHECK(e.reg(UC_MIPS_REG_V0) == 0);
  REQUIRE(uc_emu_start(e.uc, kCode, kCode + 12, 0, 0) == UC_ERR_OK);
  CHECK(e.reg(UC_MIPS_REG_V0) == 2);
}

TEST_CASE("unicorn fact: the PC is not synchronised in MMIO callbacks") {
  Engine e({lui(t9, 0x1F00), nop(), nop(), lw(t0, 0, t9), nop()});
  uint32_t seen_pc = 0;
  uc_mmio_map(
      e.uc, 0x1F000000, 0x1000,
      +[](uc_engine *uc, uint64_t, unsigned, void *user) -> uint64_t {
        uc_reg_read(uc, UC_MIPS_REG_PC, user);
        return 0;
      },
      &seen_pc, nullptr, nullptr);
  REQUIRE(uc_emu_start(e.uc, kCode, kCode + 20, 0, 0) == UC_ERR_OK);
  // The load is at kCode + 12, but the PC still reads as the block start.
  CHECK(seen_pc == kCode);
}

TEST_CASE("unicorn fact: registers are exact when an exception is raised") {
  Engine e({addiu(v0, zero, 1), addiu(v0, v0, 1), brk(), addiu(v0, v0, 1)});
  uc_hook hook;
  uint32_t pc_in_hook = 0xdead;
  uc_hook_add(
      e.uc, &hook, UC_HOOK_INTR,
      (void *)+[](uc_engine *uc, uint32_t, void *user) {
        uc_reg_read(uc, UC_MIPS_REG_PC, user);
        uc_emu_stop(uc);
      },
      &pc_in_hook, 1, 0);
  uc_emu_start(e.uc, kCode, kCode + 16, 0, 0);
  CHECK(e.reg(UC_MIPS_REG_V0) == 2); // exactly the instructions before break
  CHECK(pc_in_hook != kCode + 8);    // but the PC is lost
}

TEST_CASE("unicorn fact: code written behind Unicorn's back during a run "
          "runs only after uc_ctl_remove_cache") {
  // Card memory is the emulator's own buffer (uc_mem_map_ptr); DMA engines
  // write it with memcpy, which Unicorn does not see (Node::card_write),
  // while the core's run waits in its block hook (a parked fiber).
  static constexpr size_t kBytes = 0x10000;
  static constexpr uint32_t kFunction = 0x2000, kEnd = kCode + 0x18;
  struct Run {
    uint8_t *mem = static_cast<uint8_t *>(std::aligned_alloc(4096, kBytes));
    uc_engine *uc = nullptr;
    bool remove = false;
    void returns(int32_t value) {
      uint32_t code[] = {jr(ra), addiu(v0, zero, value)};
      std::memcpy(mem + kFunction, code, sizeof code);
    }
    ~Run() {
      uc_close(uc);
      std::free(mem);
    }
  };
  // Calls the function twice, keeping its results in s0 and s1; the hook
  // of the block between the calls loads a new function over it.
  auto second_result = [&](bool remove) {
    Run r;
    r.remove = remove;
    std::memset(r.mem, 0, kBytes);
    uint32_t main[] = {jal(kFunction), nop(), addu(s0, v0, zero),
                       jal(kFunction), nop(), addu(s1, v0, zero),
                       nop()};
    std::memcpy(r.mem + kCode, main, sizeof main);
    r.returns(1);
    uc_open(UC_ARCH_MIPS, uc_mode(UC_MODE_MIPS32 | UC_MODE_LITTLE_ENDIAN),
            &r.uc);
    uc_mem_map_ptr(r.uc, 0, kBytes, UC_PROT_ALL, r.mem);
    uc_hook hook;
    uc_hook_add(
        r.uc, &hook, UC_HOOK_BLOCK,
        (void *)+[](uc_engine *uc, uint64_t addr, uint32_t, void *user) {
          auto *run = static_cast<Run *>(user);
          if (addr != kCode + 8)
            return;
          run->returns(2);
          // Addresses as 64-bit values: uc_ctl reads them as uint64_t.
          if (run->remove)
            uc_ctl_remove_cache(uc, uint64_t(kFunction),
                                uint64_t(kFunction + 8));
        },
        &r, 1, 0);
    uc_emu_start(r.uc, kCode, kEnd, 0, 0);
    uint32_t first = 0, second = 0;
    uc_reg_read(r.uc, UC_MIPS_REG_S0, &first);
    uc_reg_read(r.uc, UC_MIPS_REG_S1, &second);
    CHECK(first == 1);
    return second;
  };
  CHECK(second_result(false) == 1); // the block translated before still runs
  CHECK(second_result(true) == 2);
}
