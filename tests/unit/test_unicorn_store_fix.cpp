// The workaround for Unicorn 2.0.1's slow guest stores
// (core/unicorn_store_fix.cpp): it must be in effect, and translated code
// that the guest overwrites must still be retranslated.
#include "core/unicorn_store_fix.hpp"
#include "mips_asm.hpp"
#include "unicorn_engine.hpp"

#include <doctest/doctest.h>
#include <unicorn/unicorn.h>

#include <vector>

using namespace mips_asm;
using unicorn_test::Engine;
using unicorn_test::kCode;

namespace {

constexpr uint32_t kData = 0x8000;

// Loads a 32-bit constant into a register.
void load_word(std::vector<uint32_t> &code, Reg r, uint32_t value) {
  code.push_back(lui(r, int32_t(value >> 16)));
  code.push_back(ori(r, r, int32_t(value & 0xFFFF)));
}

uint32_t word_at(Engine &e, uint32_t addr) {
  uint32_t v = 0;
  uc_mem_read(e.uc, addr, &v, 4);
  return v;
}

} // namespace

TEST_CASE("unicorn store fix: guest stores go through the replacement") {
  REQUIRE(nicemu::unicorn_store_fix_applies()); // Debian 12 ships 2.0.1
  std::vector<uint32_t> code;
  load_word(code, t0, kData);
  code.push_back(addiu(t1, zero, 42));
  code.push_back(sw(t1, 0, t0));
  code.push_back(sw(t1, 4, t0));
  code.push_back(sb(t1, 9, t0));
  code.push_back(nop());
  Engine e(code);
  uint64_t before = nicemu::unicorn_store_fix_uses();
  uint32_t end = kCode + 4 * uint32_t(code.size() - 1);
  REQUIRE(uc_emu_start(e.uc, kCode, end, 0, 0) == UC_ERR_OK);
  CHECK(word_at(e, kData) == 42);
  CHECK(word_at(e, kData + 4) == 42);
  CHECK(word_at(e, kData + 8) == 42u << 8);
  // Each store asked for a page collection, and got the token instead.
  CHECK(nicemu::unicorn_store_fix_uses() - before >= 3);
}

TEST_CASE("unicorn store fix: overwritten code in another block is "
          "retranslated") {
  // f: v0 += 1, called once; then its first instruction is overwritten
  // with v0 += 100 and f is called again.
  constexpr uint32_t kF = kCode + 0x100;
  std::vector<uint32_t> code;
  code.push_back(addiu(v0, zero, 0));
  code.push_back(jal(kF));
  code.push_back(nop());
  load_word(code, t0, addiu(v0, v0, 100));
  load_word(code, t1, kF);
  code.push_back(sw(t0, 0, t1));
  code.push_back(jal(kF));
  code.push_back(nop());
  uint32_t end = kCode + 4 * uint32_t(code.size());
  code.push_back(nop());
  code.resize((kF - kCode) / 4, nop());
  code.push_back(addiu(v0, v0, 1));
  code.push_back(jr(ra));
  code.push_back(nop());
  Engine e(code);
  REQUIRE(uc_emu_start(e.uc, kCode, end, 0, 0) == UC_ERR_OK);
  CHECK(e.reg(UC_MIPS_REG_V0) == 101);
}

TEST_CASE("unicorn store fix: a block that overwrites itself runs the new "
          "code next time") {
  // The loop body stores over its own second instruction (v0 += 1 becomes
  // v0 += 100). MIPS has no precise self-modifying code in Unicorn: the
  // first pass finishes with the old translation, the second must run the
  // new one.
  std::vector<uint32_t> code;
  load_word(code, t0, addiu(v0, v0, 100));
  code.push_back(addiu(v0, zero, 0));
  code.push_back(addiu(t2, zero, 2));
  uint32_t loop = kCode + 4 * uint32_t(code.size() + 2);
  load_word(code, t1, loop + 4);
  code.push_back(sw(t0, 0, t1)); // loop:
  code.push_back(addiu(v0, v0, 1));
  code.push_back(addiu(t2, t2, -1));
  code.push_back(bne(t2, zero, -4));
  code.push_back(nop());
  uint32_t end = kCode + 4 * uint32_t(code.size());
  code.push_back(nop());
  Engine e(code);
  REQUIRE(uc_emu_start(e.uc, kCode, end, 0, 0) == UC_ERR_OK);
  CHECK(e.reg(UC_MIPS_REG_V0) == 101);
}
