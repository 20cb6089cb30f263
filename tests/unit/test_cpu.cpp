// The core on its own: exact cycle counts per instruction class, slices that
// end at block boundaries without breaking delay slots, exact timing of
// device accesses, sleeping, and the faults the core reports.
#include "core/cpu.hpp"
#include "mips_asm.hpp"
#include "nicemu/error.hpp"
#include "nicemu/regs.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace nicemu;
using namespace mips_asm;

namespace {

constexpr uint32_t kRamSize = 0x10000;
constexpr uint32_t kExit = NICEMU_SYS_BASE + NICEMU_SYS_EXIT;

// A bus that records device accesses; a store to SYS_EXIT halts the core.
struct RecordingBus : CpuBus {
  Cpu *cpu = nullptr;
  struct Access {
    uint32_t addr;
    bool write;
    uint32_t value;
    uint64_t cycle;
  };
  std::vector<Access> accesses;
  uint32_t read_value = 0x1234;
  bool mmio_read(uint32_t addr, unsigned, uint32_t &value,
                 std::string &) override {
    accesses.push_back({addr, false, 0, cpu->access_cycle()});
    value = read_value;
    return true;
  }
  bool mmio_write(uint32_t addr, unsigned, uint32_t value,
                  std::string &why) override {
    accesses.push_back({addr, true, value, cpu->access_cycle()});
    if (addr == kExit)
      cpu->halt();
    if (addr == NICEMU_SYS_BASE + 0xFF0) {
      why = "no such register";
      return false;
    }
    return true;
  }
};

// Distinct extra costs so that each class is visible in the total.
CycleTable test_table() {
  CycleTable t;
  t.load_use = 3;
  t.mul = 5;
  t.div = 7;
  t.taken_branch = 2;
  t.mmio_read = 4;
  t.mmio_write = 6;
  return t;
}

struct Harness {
  RecordingBus bus;
  std::vector<uint8_t> ram = std::vector<uint8_t>(kRamSize, 0);
  std::unique_ptr<Cpu> cpu;
  explicit Harness(std::vector<uint32_t> code, CycleTable table = test_table(),
                   uint32_t at = 0x1000, bool fiber_slices = true) {
    cpu = make_unicorn_cpu(bus, CpuOptions{table, true, fiber_slices});
    bus.cpu = cpu.get();
    std::memcpy(ram.data() + at, code.data(), code.size() * 4);
    cpu->map_ram(0, kRamSize, ram.data(), true);
    cpu->map_mmio(NICEMU_MMIO_BASE, 0x10000);
    cpu->set_pc(at);
  }
  uint32_t reg(unsigned r) const { return cpu->registers().gpr[r]; }
};

// Appends: t9 = SYS base; sw zero -> SYS_EXIT (halts); then spin.
void append_exit(std::vector<uint32_t> &code) {
  code.push_back(lui(t9, NICEMU_SYS_BASE >> 16));
  code.push_back(sw(zero, NICEMU_SYS_EXIT, t9));
  code.push_back(beq(zero, zero, -1));
  code.push_back(nop());
}

StopReason run_to_end(Harness &h, uint64_t slice = UINT64_MAX) {
  for (;;) {
    StopReason r =
        h.cpu->run(slice == UINT64_MAX ? UINT64_MAX : h.cpu->cycles() + slice);
    if (r != StopReason::Limit)
      return r;
  }
}

} // namespace

TEST_CASE("straight-line code costs one cycle per instruction") {
  std::vector<uint32_t> code = {addiu(t0, zero, 1), addiu(t1, zero, 2),
                                addu(t2, t0, t1)};
  append_exit(code);
  Harness h(code);
  CHECK(run_to_end(h) == StopReason::Halt);
  CHECK(h.reg(t2) == 3);
  // 3 + lui + the exit store (1 cycle + 6 wait states), then halted.
  CHECK(h.cpu->cycles() == 3 + 1 + 1 + 6);
  CHECK(h.bus.accesses.at(0).cycle == 4);
}

TEST_CASE("load-use interlock, multiply and divide cost their table entries") {
  std::vector<uint32_t> code = {
      addiu(t0, zero, 0x100), sw(t0, 0, t0), // t0 = 0x100, mem[0x100] = 0x100
      lw(t1, 0, t0),          addu(t2, t1, t1), // use right after load: +3
      lw(t3, 0, t0),          nop(),
      addu(t4, t3, t3), // no stall
      addiu(a0, zero, 7),     addiu(a1, zero, 6),
      mult(a0, a1),           mflo(v0), // +5
      divu(v0, a1),           mflo(v1), // +7
  };
  size_t body = code.size();
  append_exit(code);
  Harness h(code);
  CHECK(run_to_end(h) == StopReason::Halt);
  CHECK(h.reg(t2) == 0x200);
  CHECK(h.reg(v0) == 42);
  CHECK(h.reg(v1) == 7);
  CHECK(h.bus.accesses.at(0).cycle == body + 3 + 5 + 7 + 1);
}

TEST_CASE("a taken branch costs its penalty, a branch not taken does not") {
  // beq not taken, then bne taken over one instruction.
  std::vector<uint32_t> code = {
      addiu(t0, zero, 1),
      beq(t0, zero, 3),
      nop(), // not taken
      bne(t0, zero, 2),
      nop(),               // taken
      addiu(t1, zero, 99), // skipped
      addiu(t2, zero, 5),
  };
  append_exit(code);
  Harness h(code);
  CHECK(run_to_end(h) == StopReason::Halt);
  CHECK(h.reg(t1) == 0);
  CHECK(h.reg(t2) == 5);
  // 6 instructions executed before lui; +2 for the taken bne; lui at 8.
  CHECK(h.bus.accesses.at(0).cycle == 6 + 2 + 1);
}

TEST_CASE("device accesses are timed at their instruction inside the block") {
  std::vector<uint32_t> code = {
      lui(t9, NICEMU_TIMER_BASE >> 16),
      ori(t9, t9, NICEMU_TIMER_BASE & 0xffff),
      lw(t0, NICEMU_TIMER_CYCLE_LO, t9), // cycle 2, +4 wait
      addiu(t1, zero, 1),
      addiu(t1, t1, 1),
      lw(t2, NICEMU_TIMER_CYCLE_LO, t9), // cycle 3 + 4 + 2 = 9
      addiu(t8, t9, 4),
      lw(t3, NICEMU_TIMER_CYCLE_LO - 4, t8), // same size, other base: 9+1+4+1
  };
  append_exit(code);
  Harness h(code);
  CHECK(run_to_end(h) == StopReason::Halt);
  REQUIRE(h.bus.accesses.size() == 4);
  CHECK(h.bus.accesses[0].cycle == 2);
  CHECK(h.bus.accesses[1].cycle == 2 + 1 + 4 + 2);
  CHECK(h.bus.accesses[2].cycle == 9 + 1 + 4 + 1);
  CHECK(h.reg(t0) == 0x1234);
}

TEST_CASE("a device access in code rewritten behind the core's back is timed "
          "by the new code") {
  // Two blocks of the same address and size; the device read moves from
  // instruction 2 to instruction 3. Device accesses find their block
  // through a cache of recent blocks, which code_written must clear.
  std::vector<uint32_t> before = {
      lui(t9, NICEMU_TIMER_BASE >> 16), ori(t9, t9, NICEMU_TIMER_BASE & 0xffff),
      lw(t0, NICEMU_TIMER_CYCLE_LO, t9), addiu(t1, zero, 1), wait()};
  std::vector<uint32_t> after = {
      lui(t9, NICEMU_TIMER_BASE >> 16), ori(t9, t9, NICEMU_TIMER_BASE & 0xffff),
      addiu(t1, zero, 2), lw(t0, NICEMU_TIMER_CYCLE_LO, t9), wait()};
  Harness h(before);
  CHECK(h.cpu->run(UINT64_MAX) == StopReason::Sleep);
  REQUIRE(h.bus.accesses.size() == 1);
  CHECK(h.bus.accesses[0].cycle == 2);
  std::memcpy(h.ram.data() + 0x1000, after.data(), after.size() * 4);
  h.cpu->code_written(0x1000, uint32_t(after.size() * 4));
  h.cpu->set_pc(0x1000);
  const uint64_t start = h.cpu->cycles();
  CHECK(h.cpu->run(UINT64_MAX) == StopReason::Sleep);
  REQUIRE(h.bus.accesses.size() == 2);
  CHECK(h.bus.accesses[1].cycle == start + 3);
  CHECK(h.reg(t1) == 2);
}

// A loop full of delay slots (taken and not), nested calls, and loads whose
// use sits in the delay slot. Whatever the slice length, the result and the
// cycle count must equal those of one unsliced run.
std::vector<uint32_t> delay_slot_program() {
  return {
      /*0x1000*/ addiu(s0, zero, 0),  // accumulator
      /*0x1004*/ addiu(s1, zero, 40), // iterations
      /*0x1008*/ addiu(sp, zero, 0x8000),
      // loop:
      /*0x100c*/ jal(0x1040),
      /*0x1010*/ addiu(a0, s1, 3), // delay slot: argument
      /*0x1014*/ addu(s0, s0, v0),
      /*0x1018*/ addiu(s1, s1, -1),
      /*0x101c*/ bne(s1, zero, -5), // back to 0x100c
      /*0x1020*/ xor_(s0, s0, s1),  // delay slot runs every time
      /*0x1024*/ j(0x1060),
      /*0x1028*/ addiu(s2, zero, 77), // delay slot of j
      /*0x102c*/ addiu(s2, zero, 88), // never runs
      /*0x1030*/ nop(),
      nop(),
      nop(),
      nop(),
      // 0x1040: v0 = (a0 * 3) ^ mem, via a load used in a delay slot
      /*0x1040*/ sll(v0, a0, 1),
      /*0x1044*/ addu(v0, v0, a0),
      /*0x1048*/ sw(v0, 0x100, zero),
      /*0x104c*/ lw(t0, 0x100, zero),
      /*0x1050*/ jr(ra),
      /*0x1054*/ xor_(v0, v0, t0), // delay slot uses the loaded value
      /*0x1058*/ nop(),
      nop(),
      // 0x1060: exit
      /*0x1060*/ lui(t9, NICEMU_SYS_BASE >> 16),
      /*0x1064*/ sw(s0, NICEMU_SYS_EXIT, t9),
      /*0x1068*/ beq(zero, zero, -1),
      /*0x106c*/ nop(),
  };
}

TEST_CASE("slicing at every length never breaks a delay slot") {
  Harness reference(delay_slot_program());
  REQUIRE(run_to_end(reference) == StopReason::Halt);
  uint32_t expected = reference.reg(s0);
  uint64_t expected_cycles = reference.cpu->cycles();
  CHECK(reference.reg(s2) == 77);
  for (uint64_t slice = 1; slice <= 40; ++slice) {
    CAPTURE(slice);
    Harness h(delay_slot_program());
    REQUIRE(run_to_end(h, slice) == StopReason::Halt);
    CHECK(h.reg(s0) == expected);
    CHECK(h.reg(s2) == 77);
    CHECK(h.cpu->cycles() == expected_cycles);
    CHECK(h.cpu->instructions() == reference.cpu->instructions());
  }
}

TEST_CASE("a slice ends at the first block boundary at or past its limit") {
  Harness h(delay_slot_program());
  CHECK(h.cpu->run(10) == StopReason::Limit);
  CHECK(h.cpu->cycles() >= 10);
  uint32_t pc = h.cpu->pc();
  // Stopped at a block start: never inside a delay slot.
  CHECK(pc != 0x1010);
  CHECK(pc != 0x1020);
  CHECK(pc != 0x1054);
}

TEST_CASE("wait puts the core to sleep and execution resumes after it") {
  std::vector<uint32_t> code = {addiu(t0, zero, 1), wait(), addiu(t0, t0, 1),
                                wait(), addiu(t0, t0, 1)};
  append_exit(code);
  Harness h(code);
  CHECK(h.cpu->run(UINT64_MAX) == StopReason::Sleep);
  CHECK(h.reg(t0) == 1);
  CHECK(h.cpu->pc() == 0x1008);
  CHECK(h.cpu->run(UINT64_MAX) == StopReason::Sleep);
  CHECK(h.reg(t0) == 2);
  CHECK(run_to_end(h) == StopReason::Halt);
  CHECK(h.reg(t0) == 3);
}

TEST_CASE("faults name the exact instruction") {
  SUBCASE("unaligned load, after other loads in the same block") {
    Harness h({addiu(a0, zero, 0x201), lw(t0, 0x100, zero), lb(t1, 0, a0),
               lw(t2, 0, a0), nop()});
    CHECK(run_to_end(h) == StopReason::Fault);
    CHECK(h.cpu->fault().kind == FaultKind::UnalignedRead);
    CHECK(h.cpu->fault().pc == 0x100c);
    CHECK(h.cpu->fault().pc_exact);
    CHECK(h.cpu->instructions() == 3); // the faulting one did not complete
  }
  SUBCASE("regression: a jump to a misaligned address is not an unaligned "
          "read (issue 23, also)") {
    Harness h({addiu(t0, zero, 0x1102), lw(t1, 0x100, zero), jr(t0), nop()});
    CHECK(run_to_end(h) == StopReason::Fault);
    CHECK(h.cpu->fault().kind == FaultKind::MisalignedJump);
    CHECK(h.cpu->fault().pc == 0x1008); // the jump, not the load before it
    CHECK(h.cpu->fault().pc_exact);
    CHECK(h.cpu->fault().has_address);
    CHECK(h.cpu->fault().address == 0x1102);
    CHECK(std::string(fault_name(h.cpu->fault().kind)) ==
          "jump to a misaligned address");
  }
  SUBCASE("store to unmapped memory") {
    Harness h({lui(a0, 0x4000), nop(), sw(zero, 8, a0), nop()});
    CHECK(run_to_end(h) == StopReason::Fault);
    CHECK(h.cpu->fault().kind == FaultKind::UnmappedWrite);
    CHECK(h.cpu->fault().address == 0x40000008);
    CHECK(h.cpu->fault().pc == 0x1008);
  }
  SUBCASE("break in a delay slot") {
    Harness h({addiu(t0, zero, 1), beq(zero, zero, 4), brk(), nop()});
    CHECK(run_to_end(h) == StopReason::Fault);
    CHECK(h.cpu->fault().kind == FaultKind::Break);
    CHECK(h.cpu->fault().pc == 0x1008);
    CHECK(h.cpu->fault().in_delay_slot);
  }
  SUBCASE("illegal instruction") {
    Harness h({nop(), nop(), illegal(), nop()});
    CHECK(run_to_end(h) == StopReason::Fault);
    CHECK(h.cpu->fault().kind == FaultKind::IllegalInstruction);
    CHECK(h.cpu->fault().pc == 0x1008);
  }
  SUBCASE("jump to unmapped memory") {
    Harness h({lui(t0, 0x5000), jr(t0), nop()});
    CHECK(run_to_end(h) == StopReason::Fault);
    CHECK(h.cpu->fault().kind == FaultKind::UnmappedFetch);
    CHECK(h.cpu->fault().pc == 0x50000000);
  }
  SUBCASE("a device refusing an access is a bus error at that store") {
    Harness h({lui(t9, NICEMU_SYS_BASE >> 16), nop(), sw(zero, 0xFF0, t9),
               nop(), nop()});
    CHECK(run_to_end(h) == StopReason::Fault);
    CHECK(h.cpu->fault().kind == FaultKind::BusError);
    CHECK(h.cpu->fault().pc == 0x1008);
    CHECK(h.cpu->fault().detail == "no such register");
  }
}

namespace {

// A loop with loads, stores, a multiply, device reads and writes and
// delay-slot branches: enough for slices to end in every kind of block.
std::vector<uint32_t> busy_loop_program() {
  std::vector<uint32_t> code = {
      addiu(t0, zero, 40),    // counter
      addiu(t1, zero, 0x400), // buffer
      lui(t8, NICEMU_SYS_BASE >> 16),
      addiu(v0, zero, 0),
      /*loop*/ lw(t2, 0, t1),
      addu(v0, v0, t2),
      sw(v0, 4, t1),
      mult(v0, t0),
      mflo(t3),
      lw(t4, 0x10, t8), // device read
      addu(v0, v0, t4),
      sw(t3, 0x14, t8), // device write
      addiu(t1, t1, 4),
      addiu(t0, t0, -1),
      bne(t0, zero, -11),
      addiu(v1, v1, 1), // delay slot
  };
  append_exit(code);
  return code;
}

struct Outcome {
  uint64_t cycles, instructions;
  CpuRegisters regs;
  std::vector<uint64_t> access_cycles;
};

// `empty_too`: before each slice, slices that end where the core already is
// (a core ahead of the round's bound), which must change nothing.
Outcome run_sliced(bool fibers, uint64_t slice, uint32_t redirect_after = 0,
                   bool empty_too = false) {
  std::vector<uint32_t> code = busy_loop_program();
  // A second routine at 0x2000 that a redirect jumps to (like an
  // interrupt): v1 = 0x77, then back to the loop's start.
  std::vector<uint32_t> other = {addiu(v1, zero, 0x77), j(0x1000), nop()};
  Harness h(code, test_table(), 0x1000, fibers);
  std::memcpy(h.ram.data() + 0x2000, other.data(), other.size() * 4);
  uint32_t runs = 0;
  for (;;) {
    if (empty_too && runs > 0) {
      uint64_t cycles = h.cpu->cycles();
      uint64_t instructions = h.cpu->instructions();
      uint32_t pc = h.cpu->pc();
      for (uint64_t limit : {cycles - 1, cycles}) {
        CHECK(h.cpu->run(limit) == StopReason::Limit);
        CHECK(h.cpu->cycles() == cycles);
        CHECK(h.cpu->instructions() == instructions);
        CHECK(h.cpu->pc() == pc);
      }
    }
    StopReason r = h.cpu->run(h.cpu->cycles() + slice);
    if (r != StopReason::Limit)
      break;
    if (++runs == redirect_after)
      h.cpu->set_pc(0x2000);
  }
  Outcome o{h.cpu->cycles(), h.cpu->instructions(), h.cpu->registers(), {}};
  for (const auto &a : h.bus.accesses)
    o.access_cycles.push_back(a.cycle);
  return o;
}

void check_same(const Outcome &a, const Outcome &b) {
  CHECK(a.cycles == b.cycles);
  CHECK(a.instructions == b.instructions);
  CHECK(a.access_cycles == b.access_cycles);
  for (int r = 0; r < 32; ++r)
    CHECK(a.regs.gpr[r] == b.regs.gpr[r]);
  CHECK(a.regs.pc == b.regs.pc);
}

} // namespace

TEST_CASE("fiber slices give the results of classic slices") {
  Outcome whole = run_sliced(false, UINT64_MAX);
  REQUIRE(whole.access_cycles.size() == 81); // 40 reads, 40 writes, exit
  for (uint64_t slice : {1, 2, 3, 5, 7, 11, 64}) {
    CAPTURE(slice);
    Outcome classic = run_sliced(false, slice);
    Outcome fiber = run_sliced(true, slice);
    Outcome with_empty = run_sliced(true, slice, 0, true);
    check_same(classic, whole);
    check_same(fiber, classic);
    check_same(with_empty, classic);
  }
}

TEST_CASE("a new PC between fiber slices takes effect at once") {
  // Redirected after the 5th slice: the parked block must not run.
  for (uint64_t slice : {1, 4, 9}) {
    CAPTURE(slice);
    Outcome classic = run_sliced(false, slice, 5);
    Outcome fiber = run_sliced(true, slice, 5);
    CHECK(classic.regs.gpr[v1] >= 0x77); // the other routine ran
    check_same(fiber, classic);
  }
}

TEST_CASE("a mapping Unicorn refuses is a nicemu::Error naming the call") {
  std::vector<uint32_t> code = {addiu(t0, zero, 7)};
  append_exit(code);
  Harness h(code);
  std::vector<uint8_t> more(0x1000);
  // Over the RAM the harness mapped at 0, then not page-aligned.
  CHECK_THROWS_WITH_AS(h.cpu->map_ram(0x8000, 0x1000, more.data(), true),
                       "Unicorn uc_mem_map_ptr(0x8000, 4 KiB) failed: "
                       "Invalid memory mapping (UC_ERR_MAP)",
                       Error);
  CHECK_THROWS_WITH_AS(h.cpu->map_ram(0x20100, 0x1000, more.data(), true),
                       "Unicorn uc_mem_map_ptr(0x20100, 4 KiB) failed: "
                       "Invalid argument (UC_ERR_ARG)",
                       Error);
  CHECK_THROWS_WITH_AS(h.cpu->map_mmio(NICEMU_MMIO_BASE, 0x10000),
                       doctest::Contains("Unicorn uc_mmio_map(0x"), Error);
  std::vector<uint8_t> big(0x100000);
  try {
    h.cpu->map_ram(0, 0x100000, big.data(), false);
    FAIL("mapped over the RAM");
  } catch (const Error &e) {
    CHECK(e.kind() == ErrorKind::Failure);
    CHECK(std::string(e.what()) ==
          "Unicorn uc_mem_map_ptr(0x0, 1 MiB) failed: Invalid memory mapping "
          "(UC_ERR_MAP)");
  }
  // The core is as it was: the program still runs.
  CHECK(run_to_end(h) == StopReason::Halt);
  CHECK(h.reg(t0) == 7);
}

// ---- Fast-forward of polling loops (UnicornCpu::fast_forward) -------------

namespace {

// t0 = TIMER base; then a loop polling bit 0 of a device register (the bus
// answers read_value): lw, andi, beq back, nop; then the exit.
std::vector<uint32_t> device_poll_program() {
  std::vector<uint32_t> code = {
      lui(t0, NICEMU_TIMER_BASE >> 16),
      lw(t1, 0, t0), // 0x1004: the loop
      andi(t1, t1, 1),
      beq(t1, zero, -3),
      nop(),
  };
  append_exit(code);
  return code;
}

// A harness whose bus calls every read stable (or not), with fast-forward
// on or off.
struct PollHarness : Harness {
  struct StableBus : RecordingBus {
    bool stable = true;
    bool read_is_stable(uint32_t) const override { return stable; }
  };
  PollHarness(std::vector<uint32_t> code, bool fast_forward, bool stable = true)
      : Harness(code) {
    StableBus *b = new StableBus; // owned by `owned`
    owned.reset(b);
    b->stable = stable;
    b->read_value = 0;
    cpu = make_unicorn_cpu(*b, CpuOptions{test_table(), true, true});
    b->cpu = cpu.get();
    std::memcpy(ram.data() + 0x1000, code.data(), code.size() * 4);
    cpu->map_ram(0, kRamSize, ram.data(), true);
    cpu->map_mmio(NICEMU_MMIO_BASE, 0x10000);
    cpu->set_pc(0x1000);
    cpu->set_fast_forward(fast_forward);
  }
  StableBus &poll_bus() { return *owned; }
  std::unique_ptr<StableBus> owned;
};

// Everything a run shows of the core: what fast-forward must not change.
void same_core(PollHarness &a, PollHarness &b) {
  CHECK(a.cpu->cycles() == b.cpu->cycles());
  CHECK(a.cpu->instructions() == b.cpu->instructions());
  CHECK(a.cpu->device_wait_cycles() == b.cpu->device_wait_cycles());
  CHECK(a.cpu->pc() == b.cpu->pc());
  CHECK(a.cpu->registers().gpr == b.cpu->registers().gpr);
  REQUIRE_FALSE(a.poll_bus().accesses.empty());
  REQUIRE_FALSE(b.poll_bus().accesses.empty());
  CHECK(a.poll_bus().accesses.back().cycle ==
        b.poll_bus().accesses.back().cycle);
}

} // namespace

TEST_CASE("fast-forward: a loop of stable device reads stops at the block "
          "and in the state of full emulation") {
  PollHarness full(device_poll_program(), false);
  PollHarness fast(device_poll_program(), true);
  // Slices of several lengths, as the run loop gives them; the register
  // changes between slices, as an event would change it.
  for (uint64_t limit : {7ull, 40ull, 1001ull, 5000ull, 123457ull}) {
    CAPTURE(limit);
    CHECK(full.cpu->run(limit) == StopReason::Limit);
    CHECK(fast.cpu->run(limit) == StopReason::Limit);
    same_core(full, fast);
  }
  // Most iterations were skipped, not emulated: one access per slice or so.
  CHECK(fast.cpu->fast_forwarded().cycles > 100000);
  CHECK(fast.cpu->fast_forwarded().instructions > 30000);
  CHECK(fast.poll_bus().accesses.size() < 20);
  CHECK(full.cpu->fast_forwarded().cycles == 0);
  CHECK(full.poll_bus().accesses.size() > 9000);
  // The bit rises between slices: both leave the loop at the same cycle.
  full.poll_bus().read_value = fast.poll_bus().read_value = 1;
  CHECK(run_to_end(full) == StopReason::Halt);
  CHECK(run_to_end(fast) == StopReason::Halt);
  same_core(full, fast);
}

TEST_CASE("fast-forward: never past a read that is not stable") {
  // A register that may change by itself (a cycle counter): every
  // iteration is emulated.
  PollHarness h(device_poll_program(), true, false);
  CHECK(h.cpu->run(20000) == StopReason::Limit);
  CHECK(h.cpu->fast_forwarded().cycles == 0);
  CHECK(h.poll_bus().accesses.size() > 1000);
}

TEST_CASE("fast-forward: loops that store or change their registers run in "
          "full, a spin loop is skipped") {
  SUBCASE("a loop that stores is not a polling loop") {
    std::vector<uint32_t> code = {lui(t0, NICEMU_TIMER_BASE >> 16),
                                  sw(zero, 0x100, zero), lw(t1, 0, t0),
                                  beq(t1, zero, -3), nop()};
    PollHarness full(code, false), fast(code, true);
    CHECK(full.cpu->run(20000) == StopReason::Limit);
    CHECK(fast.cpu->run(20000) == StopReason::Limit);
    CHECK(fast.cpu->fast_forwarded().cycles == 0);
    same_core(full, fast);
  }
  SUBCASE("a counting loop never repeats its registers") {
    // t2 counts up to t3 = 5000 while t1 polls: each iteration differs.
    std::vector<uint32_t> code = {lui(t0, NICEMU_TIMER_BASE >> 16),
                                  addiu(t3, zero, 5000),
                                  lw(t1, 0, t0),
                                  addiu(t2, t2, 1),
                                  bne(t2, t3, -3),
                                  nop()};
    append_exit(code);
    PollHarness full(code, false), fast(code, true);
    CHECK(run_to_end(full, 333) == StopReason::Halt);
    CHECK(run_to_end(fast, 333) == StopReason::Halt);
    CHECK(fast.cpu->fast_forwarded().cycles == 0);
    CHECK(fast.reg(t2) == 5000);
    same_core(full, fast);
  }
  SUBCASE("a spin loop (b .) is skipped to the limit") {
    std::vector<uint32_t> code = {lui(t0, NICEMU_TIMER_BASE >> 16),
                                  lw(t1, 0, t0), beq(zero, zero, -1), nop()};
    PollHarness full(code, false), fast(code, true);
    for (uint64_t limit : {10ull, 999ull, 100000ull}) {
      CHECK(full.cpu->run(limit) == StopReason::Limit);
      CHECK(fast.cpu->run(limit) == StopReason::Limit);
      same_core(full, fast);
    }
    CHECK(fast.cpu->fast_forwarded().cycles > 90000);
  }
}

// A debugger adding its instruction hook between two runs, where the core
// stopped before its limit (asleep, here) at a block already translated:
// Unicorn must run nothing while the hooks change (it used to run that
// block whole, moving the core on outside any slice).
TEST_CASE("turning the debugger's instruction hook on between runs runs "
          "nothing") {
  struct Quiet final : CpuDebugger {
    void before_instruction(uint32_t) override {}
    void memory_access(uint32_t, unsigned, bool) override {}
  } quiet;
  // loop: t0 += 1; wait; b loop
  std::vector<uint32_t> code = {addiu(t0, t0, 1), wait(), beq(zero, zero, -3),
                                nop()};
  Harness h(code, test_table(), 0x1000, false);
  h.cpu->set_debugger(&quiet);
  CHECK(h.cpu->run(UINT64_MAX) == StopReason::Sleep);
  CHECK(h.cpu->run(UINT64_MAX) == StopReason::Sleep); // the branch is cached
  REQUIRE(h.reg(t0) == 2);
  uint64_t cycles = h.cpu->cycles(), instructions = h.cpu->instructions();
  uint32_t pc = h.cpu->pc();
  h.cpu->set_debug_hooks({true, {}, {}});
  CHECK(h.reg(t0) == 2);
  CHECK(h.cpu->pc() == pc);
  CHECK(h.cpu->cycles() == cycles);
  CHECK(h.cpu->instructions() == instructions);
  h.cpu->set_debug_hooks({}); // and off again
  CHECK(h.reg(t0) == 2);
  CHECK(h.cpu->pc() == pc);
  CHECK(h.cpu->instructions() == instructions);
  CHECK(h.cpu->run(UINT64_MAX) == StopReason::Sleep);
  CHECK(h.reg(t0) == 3);
  h.cpu->set_debugger(nullptr);
}
