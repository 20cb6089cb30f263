// The NIC core as the rest of the emulator sees it. Only
// core/unicorn_cpu.cpp knows the core is Unicorn.
#pragma once

#include "nicemu/model.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nicemu {

enum class FaultKind {
  UnmappedRead,
  UnmappedWrite,
  UnmappedFetch,
  ReadOnlyWrite,
  UnalignedRead,
  UnalignedWrite,
  MisalignedJump, // a jump or branch to an address that is not a word's
  IllegalInstruction,
  NoFpu,
  Break,
  Syscall,
  Trap,
  Overflow,
  BusError, // a device refused the access (undefined register, wrong size)
  Watchdog,
};

const char *fault_name(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::IllegalInstruction;
  uint32_t pc = 0;
  bool pc_exact = true;       // false if the instruction could not be pinned
  bool in_delay_slot = false; // pc is the delay slot of the branch at pc - 4
  bool has_address = false;
  uint32_t address = 0; // data address for memory faults
  std::string detail;   // device errors, watchdog period, ...
};

// Where device accesses of the core go. The CPU tells the exact cycle of the
// access through Cpu::access_cycle() while the call runs.
class CpuBus {
public:
  virtual ~CpuBus() = default;
  // Return false to refuse the access (bus error): `why` says why.
  virtual bool mmio_read(uint32_t addr, unsigned size, uint32_t &value,
                         std::string &why) = 0;
  virtual bool mmio_write(uint32_t addr, unsigned size, uint32_t value,
                          std::string &why) = 0;
  // Whether a read at `addr` has no side effect and returns what changes
  // only when the device acts (RegisterBank::stable_read): a loop of such
  // reads may be fast-forwarded. False is always safe.
  virtual bool read_is_stable(uint32_t /*addr*/) const { return false; }
};

// Sees every basic block the core executes, for profilers. Only installed
// when someone listens: plain runs pay one pointer test per block.
class BlockObserver {
public:
  virtual ~BlockObserver() = default;
  // The block at `addr` (`size` bytes) starts executing at cycle `start`
  // (after the previous block's taken-branch penalty). Called once per
  // execution: a block that ends a slice before running is not reported.
  virtual void block_entered(uint32_t addr, uint32_t size, uint64_t start) = 0;
  // Told by the node: an interrupt is taken at cycle `at`, before the entry
  // cost; execution resumes at `epc` when the handler returns.
  virtual void interrupt_taken(uint32_t /*epc*/, uint64_t /*at*/) {}
  // Told by the node: the core slept (and woke) for `cycles`.
  virtual void slept(uint64_t /*cycles*/) {}
};

// A debugger of the core (debug/gdb_target.cpp). The core calls it from
// inside the emulation; it may block there (the whole run halts with it)
// and read or change registers and memory before returning, so stopping
// never splits a block or a slice and never changes timing.
class CpuDebugger {
public:
  virtual ~CpuDebugger() = default;
  // Before the instruction at `pc` runs (only while instruction hooks are on).
  virtual void before_instruction(uint32_t pc) = 0;
  // A load or store of a watched range, before it happens.
  virtual void memory_access(uint32_t addr, unsigned size, bool write) = 0;
};

// What the debugger needs hooked: per-instruction calls, and watched ranges
// [begin, end) of loads and stores. Nothing is hooked by default.
struct CpuDebugHooks {
  struct Range {
    uint32_t begin, end;
    bool operator==(const Range &) const = default;
  };
  bool instructions = false;
  std::vector<Range> reads, writes;
  bool operator==(const CpuDebugHooks &) const = default;
};

enum class StopReason {
  Limit, // reached the cycle limit at a block boundary (or stop requested)
  Sleep, // executed `wait`
  Halt,  // firmware halted (Cpu::halt called by a device)
  Fault, // see Cpu::fault()
};

struct CpuRegisters {
  std::array<uint32_t, 32> gpr{};
  uint32_t hi = 0, lo = 0, pc = 0;
};

class Cpu {
public:
  virtual ~Cpu() = default;

  // Memory: RAM backed by host buffers (shared with DMA engines) and one
  // device range routed to the bus. Bases and sizes are 4 KB aligned.
  virtual void map_ram(uint32_t base, uint32_t size, uint8_t *host,
                       bool writable) = 0;
  virtual void map_mmio(uint32_t base, uint32_t size) = 0;

  // Runs until cycles() >= limit at a block boundary, or sleep, halt, fault.
  // The block that would cross the limit still runs in full: slices end at
  // block boundaries, never inside a block or a delay slot.
  virtual StopReason run(uint64_t cycle_limit) = 0;
  // Exact fast-forward of polling loops (unicorn_cpu.cpp): on by default;
  // off, every iteration is emulated, with the same results.
  virtual void set_fast_forward(bool /*on*/) {}
  // The loop iterations skipped so far: their cycles and instructions
  // (counted in cycles() and instructions(), as if emulated).
  struct Skipped {
    uint64_t cycles = 0, instructions = 0;
  };
  virtual Skipped fast_forwarded() const { return {}; }
  // Lowers the limit of the running slice (e.g. an earlier event appeared).
  virtual void limit_slice(uint64_t cycle_limit) = 0;
  // Called by devices: stop at the next block boundary / halt now.
  virtual void request_stop() = 0;
  virtual void halt() = 0;

  virtual uint64_t cycles() const = 0;
  virtual void add_cycles(uint64_t n) = 0;
  virtual uint64_t instructions() const = 0;
  // Device wait states spent so far (part of cycles()).
  virtual uint64_t device_wait_cycles() const = 0;
  virtual void set_block_observer(BlockObserver *observer) = 0;
  // Exact cycle of the device access in progress (valid inside CpuBus calls).
  virtual uint64_t access_cycle() const = 0;

  virtual CpuRegisters registers() const = 0;
  virtual uint32_t pc() const = 0;
  virtual void set_pc(uint32_t pc) = 0;
  virtual const Fault &fault() const = 0;
  // Reads card memory through the core's view (for reports and debuggers).
  virtual bool read_memory(uint32_t addr, void *out, size_t len) const = 0;
  // Forgets cached block costs (after loading new code).
  virtual void flush_code_cache() = 0;
  // Card memory [addr, addr + len) was written behind the core's back (a
  // DMA engine, the host's PIO, a debugger): code translated from it is
  // dropped, so the new bytes run. Costs a map lookup when no executed code
  // lies there.
  virtual void code_written(uint32_t /*addr*/, uint32_t /*len*/) {}

  // Debugging. Hooks change at once between runs; inside a run (the
  // debugger holds it from a hook) at the next block boundary, where the
  // slice ends.
  virtual void set_debugger(CpuDebugger * /*debugger*/) {}
  virtual void set_debug_hooks(const CpuDebugHooks & /*hooks*/) {}
  // Registers 0-31, then 32 = HI, 33 = LO (the PC: set_pc).
  virtual void write_register(unsigned /*index*/, uint32_t /*value*/) {}
  // Inside before_instruction(): `pc` is the delay slot of the branch
  // before it (it runs as one step with the branch).
  virtual bool in_delay_slot(uint32_t /*pc*/) { return false; }
  // Inside before_instruction() or memory_access(): the instructions run
  // before the one at `pc` (instructions() already counts its whole block).
  // The same whatever the slicing: a position in the core's own history.
  virtual uint64_t instructions_before(uint32_t /*pc*/) const {
    return instructions();
  }

  // What a checkpoint file keeps of the core between slices, where it
  // stands at a block boundary (docs/replay.md): all that decides what it
  // does next and what it has counted. Restored into a core that has not
  // run, it goes on as the saved one would have: its next slice starts a
  // run at the saved pc (as a slice without fibers does).
  struct State {
    CpuRegisters registers;
    uint64_t cycles = 0, instructions = 0, wait_cycles = 0;
    uint32_t fallthrough = 1, pending_penalty = 0; // the last block's branch
    Skipped skipped;
  };
  // (May end a run parked between slices: nothing that changes results.)
  virtual State checkpoint_state() = 0;
  virtual void restore_state(const State &state) = 0;
};

struct CpuOptions {
  CycleTable cycles;
  bool accounting = true; // per-block cycle accounting (off: bench only)
  // Slices end by parking the core's Unicorn run on a fiber instead of
  // leaving uc_emu_start (see unicorn_cpu.cpp). Off: every slice is a
  // uc_emu_start of its own; same results, slower (tests compare the two).
  bool fiber_slices = true;
};

std::unique_ptr<Cpu> make_unicorn_cpu(CpuBus &bus, const CpuOptions &options);

// A plain Unicorn run of the same code in the same process, for benchmarks:
// RAM regions and the device range mapped as ordinary memory, no hooks.
struct RawRunRegion {
  uint32_t base, size;
  const uint8_t *contents; // copied in
};
struct RawRunResult {
  bool ok = false;
  std::string error;
  double wall_seconds = 0;
  uint32_t a0 = 0; // first argument register at the stop address
};
RawRunResult raw_unicorn_run(const std::vector<RawRunRegion> &regions,
                             uint32_t entry, uint32_t stop_at);

} // namespace nicemu
