// Facts about Debian's Unicorn 2.0.1 that the debug hooks of
// core/unicorn_cpu.cpp rely on (nicemu run --gdb, docs/debugging.md).
#include "mips_asm.hpp"
#include "unicorn_engine.hpp"

#include <doctest/doctest.h>
#include <unicorn/unicorn.h>

#include <vector>

using namespace mips_asm;

namespace {

using unicorn_test::Engine;
using unicorn_test::kCode;

struct State {
  uint32_t stop_at = 0, pc_in_hook = 0;
  int calls = 0, blocks = 0;
  bool stop_next = false, pending = false;
};

// v1 += 2 fifty times, with the sum in v0 (the add in the delay slot).
std::vector<uint32_t> loop() {
  return {addiu(t0, zero, 50), addiu(v0, zero, 0),
          addiu(t0, t0, -1),   addiu(v1, v1, 1),
          addiu(v1, v1, 1),    bne(t0, zero, -4),
          addu(v0, v0, t0),    nop()};
}
constexpr uint32_t kLoopEnd = kCode + 7 * 4;

} // namespace

TEST_CASE("unicorn fact: uc_emu_stop from an instruction hook stops before "
          "that instruction, with the PC exact") {
  Engine e({addiu(v0, zero, 1), addiu(v0, v0, 1), addiu(v0, v0, 1), nop()});
  State s;
  s.stop_at = kCode + 8;
  uc_hook h;
  uc_hook_add(
      e.uc, &h, UC_HOOK_CODE,
      (void *)+[](uc_engine *uc, uint64_t addr, uint32_t, void *user) {
        auto *s = static_cast<State *>(user);
        if (addr == s->stop_at) {
          uc_reg_read(uc, UC_MIPS_REG_PC, &s->pc_in_hook);
          uc_emu_stop(uc);
        }
      },
      &s, 1, 0);
  uc_emu_start(e.uc, kCode, kCode + 12, 0, 0);
  CHECK(e.reg(UC_MIPS_REG_PC) == kCode + 8);
  CHECK(s.pc_in_hook == kCode + 8);
  CHECK(e.reg(UC_MIPS_REG_V0) == 2);
}

TEST_CASE("unicorn fact: hooks added after code was translated fire, and "
          "registers written in an instruction hook take effect") {
  Engine e({addiu(v0, zero, 1), addiu(v0, v0, 1), nop()});
  uc_emu_start(e.uc, kCode, kCode + 8, 0, 0);
  State s;
  uc_hook h;
  uc_hook_add(
      e.uc, &h, UC_HOOK_CODE,
      (void *)+[](uc_engine *uc, uint64_t addr, uint32_t, void *user) {
        static_cast<State *>(user)->calls++;
        if (addr == kCode + 4) {
          uint32_t v = 100;
          uc_reg_write(uc, UC_MIPS_REG_V0, &v);
        }
      },
      &s, 1, 0);
  uc_emu_start(e.uc, kCode, kCode + 8, 0, 0);
  CHECK(s.calls == 2);
  CHECK(e.reg(UC_MIPS_REG_V0) == 101);
}

TEST_CASE("unicorn fact: a memory hook runs before the store, its PC is not "
          "exact, and only its range is hooked") {
  Engine e({addiu(v0, zero, 5), nop(), sw(v0, 0x100, zero), sw(v0, 0x200, zero),
            nop()});
  uint32_t old = 0xdead;
  uc_mem_write(e.uc, 0x100, &old, 4);
  struct Seen {
    int calls = 0;
    uint32_t memory = 0, pc = 0;
  } seen;
  uc_hook h;
  uc_hook_add(
      e.uc, &h, UC_HOOK_MEM_WRITE,
      (void *)+[](uc_engine *uc, uc_mem_type, uint64_t, int, int64_t,
                  void *user) {
        auto *s = static_cast<Seen *>(user);
        s->calls++;
        uc_mem_read(uc, 0x100, &s->memory, 4);
        uc_reg_read(uc, UC_MIPS_REG_PC, &s->pc);
      },
      &seen, 0x100, 0x103);
  uc_emu_start(e.uc, kCode, kCode + 16, 0, 0);
  CHECK(seen.calls == 1);
  CHECK(seen.memory == 0xdead);
  CHECK(seen.pc != kCode + 8); // the block's start: the core tracks the PC
}

TEST_CASE("unicorn fact: with an instruction hook, stopping from the block "
          "hook breaks the block, stopping from the first instruction's "
          "hook does not") {
  for (bool defer : {false, true}) {
    CAPTURE(defer);
    Engine e(loop());
    State s;
    s.pending = defer; // reused as "defer the stop"
    uc_hook hb, hc;
    uc_hook_add(
        e.uc, &hb, UC_HOOK_BLOCK,
        (void *)+[](uc_engine *uc, uint64_t, uint32_t, void *user) {
          auto *s = static_cast<State *>(user);
          if (++s->blocks % 3 == 0) {
            if (s->pending)
              s->stop_next = true;
            else
              uc_emu_stop(uc);
          }
        },
        &s, 1, 0);
    uc_hook_add(
        e.uc, &hc, UC_HOOK_CODE,
        (void *)+[](uc_engine *uc, uint64_t, uint32_t, void *user) {
          auto *s = static_cast<State *>(user);
          if (s->stop_next) {
            s->stop_next = false;
            uc_emu_stop(uc);
          }
        },
        &s, 1, 0);
    uint32_t pc = kCode;
    for (int runs = 0; pc != kLoopEnd && runs < 200; ++runs) {
      uc_emu_start(e.uc, pc, kLoopEnd, 0, 0);
      pc = e.reg(UC_MIPS_REG_PC);
    }
    bool correct = pc == kLoopEnd && e.reg(UC_MIPS_REG_V1) == 100 &&
                   e.reg(UC_MIPS_REG_V0) == 49 * 50 / 2;
    CHECK(correct == defer);
  }
}
