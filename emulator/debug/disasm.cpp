#include "debug/disasm.hpp"

#include <capstone/capstone.h>

#include <cstdio>
#include <mutex>

namespace nicemu {

namespace {

// One Capstone handle for the process: opening one costs more than a
// disassembly, and reports are rare.
csh capstone_handle() {
  static csh handle = [] {
    csh h = 0;
    if (cs_open(CS_ARCH_MIPS, cs_mode(CS_MODE_MIPS32 | CS_MODE_LITTLE_ENDIAN),
                &h) != CS_ERR_OK)
      return csh(0);
    return h;
  }();
  return handle;
}

} // namespace

std::string disassemble(uint32_t word, uint32_t address) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  char buf[96];
  csh h = capstone_handle();
  cs_insn *insn = nullptr;
  uint8_t bytes[4] = {uint8_t(word), uint8_t(word >> 8), uint8_t(word >> 16),
                      uint8_t(word >> 24)};
  size_t n = h ? cs_disasm(h, bytes, 4, address, 1, &insn) : 0;
  if (n == 0) {
    std::snprintf(buf, sizeof buf, "(not an instruction: 0x%08x)", word);
    return buf;
  }
  std::string text = insn->mnemonic;
  if (insn->op_str[0])
    text += std::string(" ") + insn->op_str;
  cs_free(insn, n);
  return text;
}

const char *mips_register_name(unsigned index) {
  static const char *const names[32] = {
      "zero", "at", "v0", "v1", "a0", "a1", "a2", "a3", "t0", "t1", "t2",
      "t3",   "t4", "t5", "t6", "t7", "s0", "s1", "s2", "s3", "s4", "s5",
      "s6",   "s7", "t8", "t9", "k0", "k1", "gp", "sp", "fp", "ra"};
  return index < 32 ? names[index] : "?";
}

} // namespace nicemu
