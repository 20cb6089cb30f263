// A bare Unicorn MIPS32 little-endian engine with 64 KiB of memory and code
// at kCode, for the tests that pin Unicorn's own behaviour.
#pragma once

#include <unicorn/unicorn.h>

#include <cstdint>
#include <vector>

namespace unicorn_test {

constexpr uint32_t kCode = 0x1000;

struct Engine {
  uc_engine *uc = nullptr;
  explicit Engine(const std::vector<uint32_t> &code) {
    uc_open(UC_ARCH_MIPS, uc_mode(UC_MODE_MIPS32 | UC_MODE_LITTLE_ENDIAN), &uc);
    uc_mem_map(uc, 0, 0x10000, UC_PROT_ALL);
    uc_mem_write(uc, kCode, code.data(), code.size() * 4);
  }
  ~Engine() { uc_close(uc); }
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;
  uint32_t reg(int r) {
    uint32_t v = 0;
    uc_reg_read(uc, r, &v);
    return v;
  }
};

} // namespace unicorn_test
