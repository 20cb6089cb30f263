// Register banks: layouts of any window size with 8/16/32/64-bit registers
// and arrays, the bus's checks (no register, direction, size), the
// behaviours a device binds (storage, write-one-to-clear, callbacks,
// constants), and 32-bit parts of 64-bit registers.
#include "devices/register_bank.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace nicemu;

namespace {

// A card block of the kind DIMMnet-1 brings: a 32 KiB window with a
// control byte, a 16-bit count, a status word, a 64-bit doorbell and 4096
// header seeds of 64 bits.
const RegisterLayout &seed_layout() {
  static const RegisterLayout layout(
      "SEEDS", 0x8000,
      {
          {"SEEDS", "CTRL", 0, 0x000, Access::RW, "control", 1, 1},
          {"SEEDS", "COUNT", 0, 0x002, Access::R, "entries in use", 2, 1},
          {"SEEDS", "STATUS", 0, 0x004, Access::RW, "w1c status", 4, 1},
          {"SEEDS", "KICK", 0, 0x008, Access::W, "64-bit kick", 8, 1},
          {"SEEDS", "SEED", 0, 0x10, Access::RW, "header seeds", 8, 4094},
      });
  return layout;
}

struct SeedBlock {
  RegisterBank bank{seed_layout()};
  uint32_t ctrl = 0, status = 0;
  std::vector<uint64_t> seeds = std::vector<uint64_t>(4094, 0);
  std::vector<uint64_t> kicks;

  SeedBlock() {
    bank.bind(0x000, ctrl)
        .constant(0x002, 7)
        .write_one_to_clear(0x004, status, 0x6)
        .on_write(0x008, [this](uint64_t v) { kicks.push_back(v); })
        .on_read(0x10, [this](uint32_t i) { return seeds.at(i); })
        .on_write(0x10, [this](uint32_t i, uint64_t v) { seeds.at(i) = v; });
  }
  uint64_t read(uint32_t offset, unsigned size) {
    uint64_t v = 0;
    std::string why;
    REQUIRE_MESSAGE(bank.read(offset, size, v, why), why);
    return v;
  }
  void write(uint32_t offset, unsigned size, uint64_t v) {
    std::string why;
    REQUIRE_MESSAGE(bank.write(offset, size, v, why), why);
  }
  std::string refusal(uint32_t offset, unsigned size, bool write) {
    uint64_t v = 0;
    std::string why;
    bool done = write ? bank.write(offset, size, v, why)
                      : bank.read(offset, size, v, why);
    return done ? "(done)" : why;
  }
};

} // namespace

TEST_CASE("register bank: each width and arrays, found by offset") {
  SeedBlock b;
  CHECK(b.bank.complete());
  b.write(0x000, 1, 0x1A5); // a byte register keeps its byte
  CHECK(b.ctrl == 0xA5);
  CHECK(b.read(0x000, 1) == 0xA5);
  CHECK(b.read(0x002, 2) == 7);
  b.write(0x008, 8, 0x1122334455667788ull);
  CHECK(b.kicks == std::vector<uint64_t>{0x1122334455667788ull});
  // The last seed of the array, at the end of the 32 KiB window.
  const uint32_t last = 0x10 + 8 * 4093;
  CHECK(last + 8 == 0x8000);
  b.write(last, 8, 0xCAFEF00DDEADBEEFull);
  CHECK(b.seeds[4093] == 0xCAFEF00DDEADBEEFull);
  CHECK(b.read(last, 8) == 0xCAFEF00DDEADBEEFull);
  uint32_t element = 0, byte = 0;
  const RegisterInfo *r = seed_layout().at(last + 5, element, byte);
  REQUIRE(r != nullptr);
  CHECK(std::string(r->name) == "SEED");
  CHECK(element == 4093);
  CHECK(byte == 5);
  CHECK(describe_register(seed_layout(), last) == "SEEDS_SEED[4093]");
  CHECK(describe_register(seed_layout(), 0x00C) == "SEEDS_KICK+4");
  CHECK(describe_register(seed_layout(), 0x001) == "SEEDS+0x1");
}

TEST_CASE(
    "register bank: the 32-bit core reaches a 64-bit register in halves") {
  SeedBlock b;
  b.seeds[2] = 0x1111111122222222ull;
  CHECK(b.read(0x20, 4) == 0x22222222);
  CHECK(b.read(0x24, 4) == 0x11111111);
  b.write(0x24, 4, 0xAAAAAAAA); // merged into the current value
  CHECK(b.seeds[2] == 0xAAAAAAAA22222222ull);
  b.write(0x20, 4, 0xBBBBBBBB);
  CHECK(b.seeds[2] == 0xAAAAAAAABBBBBBBBull);
  // A write-only 64-bit register has nothing to merge a half into.
  CHECK(b.refusal(0x008, 4, true) ==
        "4-byte part of a write-only 64-bit register");
  CHECK(b.kicks.empty());
}

TEST_CASE("register bank: write-one-to-clear clears only the written bits in "
          "its mask") {
  SeedBlock b;
  b.status = 0xF;
  b.write(0x004, 4, 0x3); // bit 0 is outside the mask
  CHECK(b.status == 0xD);
  CHECK(b.read(0x004, 4) == 0xD);
}

TEST_CASE("register bank: the bus refuses what the layout does not allow") {
  SeedBlock b;
  CHECK(b.refusal(0x001, 1, false) == "no such register");
  CHECK(b.refusal(0x9000, 4, false) == "no such register");
  CHECK(b.refusal(0x002, 2, true) == "register is read-only");
  CHECK(b.refusal(0x008, 8, false) == "register is write-only");
  CHECK(b.refusal(0x000, 4, false) == "4-byte access to a 8-bit register");
  CHECK(b.refusal(0x004, 2, false) == "2-byte access to a 32-bit register");
  CHECK(b.refusal(0x022, 4, false) == "4-byte access to a 64-bit register");
  CHECK(b.refusal(0x003, 1, false) == "1-byte access to a 16-bit register");
}

TEST_CASE("register bank: a table that overlaps, is misaligned or leaves its "
          "window is an emulator bug caught at once") {
  auto layout = [](uint32_t window, std::vector<RegisterInfo> regs) {
    RegisterLayout l("BAD", window, std::move(regs));
  };
  CHECK_THROWS_AS(layout(0x1000, {{"BAD", "A", 0, 0x0, Access::RW, "", 4, 1},
                                  {"BAD", "B", 0, 0x2, Access::RW, "", 2, 1}}),
                  std::logic_error);
  CHECK_THROWS_AS(layout(0x1000, {{"BAD", "A", 0, 0x4, Access::RW, "", 8, 1}}),
                  std::logic_error);
  CHECK_THROWS_AS(
      layout(0x1000, {{"BAD", "A", 0, 0xFF8, Access::RW, "", 8, 2}}),
      std::logic_error);
  CHECK_THROWS_AS(layout(0x1000, {{"BAD", "A", 0, 0x0, Access::RW, "", 3, 1}}),
                  std::logic_error);
  CHECK_NOTHROW(layout(0x1000, {{"BAD", "A", 0, 0xFF8, Access::RW, "", 8, 1}}));
}

TEST_CASE("register bank: a bank is complete only when every register has "
          "its behaviour") {
  static const RegisterLayout layout(
      "TWO", 0x1000,
      {{"TWO", "A", 0, 0x0, Access::RW, "", 4, 1},
       {"TWO", "B", 0, 0x4, Access::W, "", 4, 1}});
  RegisterBank bank(layout);
  uint32_t a = 0;
  bank.bind(0x0, a);
  CHECK(!bank.complete());
  bank.on_write(0x4, [](uint64_t) {});
  CHECK(bank.complete());
}

TEST_CASE("register bank: every shipped device's layout comes from the "
          "contract header") {
  for (const char *device : {"SYS", "CONSOLE", "TIMER", "IRQ", "HDMA", "TX",
                             "RX", "ROUTE", "DOORBELL"}) {
    CAPTURE(device);
    const RegisterLayout &l = RegisterLayout::of(device);
    CHECK(l.device() == device);
    CHECK(l.window_bytes() == NICEMU_DEVICE_WINDOW);
    CHECK(!l.registers().empty());
  }
  CHECK_THROWS_AS(RegisterLayout::of("NOSUCH"), std::logic_error);
}

TEST_CASE("stable reads: storage, write-one-to-clear and constants are, a "
          "reader is only when declared so") {
  SeedBlock b;
  CHECK(b.bank.read_is_stable(0x000));        // bind
  CHECK(b.bank.read_is_stable(0x002));        // constant
  CHECK(b.bank.read_is_stable(0x004));        // write-one-to-clear
  CHECK_FALSE(b.bank.read_is_stable(0x008));  // write-only
  CHECK_FALSE(b.bank.read_is_stable(0x10));   // on_read: may change alone
  CHECK_FALSE(b.bank.read_is_stable(0x7FFC)); // no register
  b.bank.stable_read(0x10);
  CHECK(b.bank.read_is_stable(0x10));
  CHECK(b.bank.read_is_stable(0x18)); // another element of the array
  // A new reader forgets the declaration: it is about that reader.
  b.bank.on_read(0x10, [](uint32_t) { return uint64_t(0); });
  CHECK_FALSE(b.bank.read_is_stable(0x10));
}
