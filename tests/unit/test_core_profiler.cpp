// The cycle profiler fed by hand: synthetic sequences of blocks (a call, a
// tail jump, returns, interrupts) over a tiny "image" whose code holds only
// the control transfers the profiler decodes. Every figure is exact.
#include "mips_asm.hpp"
#include "profile/core_profiler.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <map>

using namespace nicemu;
using namespace mips_asm;

namespace {

// A core that is only memory: the profiler reads the instruction that ends
// each block, and the device wait states (none here).
class CodeOnlyCpu final : public Cpu {
public:
  std::map<uint32_t, uint32_t> words;

  bool read_memory(uint32_t addr, void *out, size_t len) const override {
    if (len != 4)
      return false;
    auto it = words.find(addr);
    uint32_t w = it == words.end() ? nop() : it->second;
    std::memcpy(out, &w, 4);
    return true;
  }
  uint64_t device_wait_cycles() const override { return 0; }

  void map_ram(uint32_t, uint32_t, uint8_t *, bool) override {}
  void map_mmio(uint32_t, uint32_t) override {}
  StopReason run(uint64_t) override { return StopReason::Halt; }
  void limit_slice(uint64_t) override {}
  void request_stop() override {}
  void halt() override {}
  uint64_t cycles() const override { return 0; }
  void add_cycles(uint64_t) override {}
  uint64_t instructions() const override { return 0; }
  void set_block_observer(BlockObserver *) override {}
  uint64_t access_cycle() const override { return 0; }
  CpuRegisters registers() const override { return {}; }
  uint32_t pc() const override { return 0; }
  void set_pc(uint32_t) override {}
  const Fault &fault() const override { return fault_; }
  void flush_code_cache() override {}
  State checkpoint_state() override { return {}; }
  void restore_state(const State &) override {}

private:
  Fault fault_;
};

// main [0x100, 0x200), handler h [0x200, 0x300) (measured), t [0x300,
// 0x400) (measured), leaf l [0x400, 0x500), interrupt handler isr
// [0x500, 0x600).
Image five_functions() {
  Image image;
  auto fn = [&](const char *name, uint32_t at, bool measured) {
    ImageSymbol s;
    s.address = at;
    s.size = 0x100;
    s.kind = ImageSymbol::kFunction;
    s.name = name;
    s.flags = measured ? ImageSymbol::kHandler : 0;
    image.symbols.push_back(s);
  };
  fn("main", 0x100, false);
  fn("h", 0x200, true);
  fn("t", 0x300, true);
  fn("l", 0x400, false);
  fn("isr", 0x500, false);
  return image;
}

struct Rig {
  Image image = five_functions();
  FunctionMap map{image};
  CodeOnlyCpu cpu;
  ClockDomain clock{100'000'000}; // 10 ns a cycle
  CoreProfiler profiler{map, cpu, clock, 0, nullptr};

  // The block [addr, addr + size) ends with `transfer` and its delay slot.
  void code(uint32_t addr, uint32_t size, uint32_t transfer) {
    cpu.words[addr + size - 8] = transfer;
  }
  const FunctionProfile &of(const char *name) {
    for (size_t i = 0; i < map.functions().size(); ++i)
      if (map.functions()[i].name == name)
        return profiler.profiles()[i];
    FAIL("no function " << name);
    return profiler.profiles()[0];
  }
};

} // namespace

TEST_CASE("profiler: a handler that ends in a tail call, its callee's "
          "calls, inclusive and self cycles, exactly") {
  Rig r;
  r.code(0x100, 16, jal(0x200)); // main calls h
  r.code(0x200, 8, j(0x300));    // h tail-jumps to t
  r.code(0x300, 16, jal(0x400)); // t calls l
  r.code(0x400, 8, jr(ra));      // l returns into t
  r.code(0x310, 8, jr(ra));      // t returns where h would: into main
  r.code(0x110, 8, j(0x110));    // main spins
  CoreProfiler &p = r.profiler;
  p.block_entered(0x100, 16, 0);
  p.block_entered(0x200, 8, 10);
  p.block_entered(0x300, 16, 20);
  p.block_entered(0x400, 8, 30);
  p.block_entered(0x310, 8, 40);
  p.block_entered(0x110, 8, 55);
  p.finish(60);

  const FunctionProfile &h = r.of("h"), &t = r.of("t"), &l = r.of("l");
  CHECK(h.entries == 1);
  REQUIRE(h.calls.size() == 1);
  CHECK(h.calls[0].cycles == 45); // 10 .. 55: t's time is h's too
  CHECK(h.inclusive == 45);
  CHECK(h.self == 10);
  CHECK(t.entries == 1);
  REQUIRE(t.calls.size() == 1);
  CHECK(t.calls[0].cycles == 35); // 20 .. 55
  CHECK(t.calls[0].start == 20 * 10'000);
  CHECK(t.inclusive == 35);
  CHECK(t.self == 25); // 20 .. 30 and 40 .. 55
  CHECK(l.entries == 1);
  CHECK(l.inclusive == 10);
  CHECK(l.self == 10);
  CHECK(r.of("main").self == 10 + 5);
}

TEST_CASE("profiler: a jump within a function is no call, a jump onto "
          "another function's first instruction is") {
  Rig r;
  r.code(0x100, 16, jal(0x200)); // main calls h
  r.code(0x200, 8, j(0x240));    // h jumps within itself
  r.code(0x240, 8, j(0x410));    // then into the middle of l: no call
  r.code(0x410, 8, jr(ra));      // and returns into main
  CoreProfiler &p = r.profiler;
  p.block_entered(0x100, 16, 0);
  p.block_entered(0x200, 8, 4);
  p.block_entered(0x240, 8, 6);
  p.block_entered(0x410, 8, 9);
  p.block_entered(0x110, 8, 20);
  p.finish(21);
  CHECK(r.of("h").entries == 1);
  REQUIRE(r.of("h").calls.size() == 1);
  CHECK(r.of("h").calls[0].cycles == 16);
  CHECK(r.of("l").entries == 0);
  CHECK(r.of("l").self == 11); // its code ran, as part of h's call
}

TEST_CASE("profiler: interrupts: a handler entered at EPC's return, and one "
          "taken between a call and its callee's first block") {
  Rig r;
  r.code(0x100, 16, j(0x110));   // main's loop
  r.code(0x500, 8, jr(ra));      // the interrupt handler (returns to EPC)
  r.code(0x120, 16, jal(0x400)); // main calls l
  r.code(0x400, 8, jr(ra));      // l returns
  CoreProfiler &p = r.profiler;
  p.block_entered(0x100, 16, 0);
  p.interrupt_taken(0x110, 10);
  p.block_entered(0x500, 8, 10);
  p.block_entered(0x110, 16, 20); // back at EPC: the handler returned
  p.block_entered(0x120, 16, 30);
  p.interrupt_taken(0x400, 40); // the call's target is EPC
  p.block_entered(0x500, 8, 40);
  p.block_entered(0x400, 8, 50); // the handler returns into l's first block
  p.block_entered(0x130, 8, 58); // l returns into main
  p.finish(60);
  CHECK(r.of("isr").entries == 2);
  CHECK(r.of("isr").inclusive == 20);
  CHECK(r.of("isr").self == 20);
  CHECK(r.of("l").entries == 1); // the call starts when the handler returns
  CHECK(r.of("l").inclusive == 8);
  CHECK(r.of("main").self == 10 + 10 + 10 + 2);
}

TEST_CASE("profiler: sleep inside a call is kept out of its cycles") {
  Rig r;
  r.code(0x100, 16, jal(0x200));
  r.code(0x200, 8, jr(ra));
  CoreProfiler &p = r.profiler;
  p.block_entered(0x100, 16, 0);
  p.block_entered(0x200, 8, 5);
  p.slept(100); // a `wait` in h's block
  p.block_entered(0x110, 8, 115);
  p.finish(120);
  REQUIRE(r.of("h").calls.size() == 1);
  CHECK(r.of("h").calls[0].cycles == 110); // entry to return
  CHECK(r.of("h").calls[0].stall == 100);  // of which asleep
  CHECK(r.of("h").inclusive == 10);
  CHECK(r.of("h").self == 10);
  CHECK(p.sleep_cycles() == 100);
}
