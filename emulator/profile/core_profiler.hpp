// The cycle profiler of one core: it watches the basic blocks the core
// executes and turns them into calls of functions, exactly, on the core's
// own cycle count.
//
// Calls are found from the code, not from symbols alone: a block that
// follows a linking jump (jal, jalr, bal...) enters a callee whose return
// address is the end of that block; a jump without link onto another
// function's first instruction is a tail call, which returns where its
// caller would; an interrupt enters its handler with EPC as the return
// address. A call ends when a block starts at its return address. Cycles
// between two block starts belong to the first block: the instructions, the
// device wait states and the taken-branch penalty it paid. Sleep (`wait`)
// is kept apart, so it never counts as execution.
#pragma once

#include "core/cpu.hpp"
#include "nicemu/image.hpp"
#include "observe/run_events.hpp"
#include "sim/time.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace nicemu {

// The functions of an image, by address: handlers (NICEMU_HANDLER) and
// --measure symbols are "measured" (every call recorded).
class FunctionMap {
public:
  struct Function {
    uint32_t lo = 0, hi = 0; // [lo, hi)
    std::string name;        // demangled, without parameters
    std::string raw;         // as in the image
    bool measured = false;
  };
  static constexpr uint32_t kNone = UINT32_MAX;

  explicit FunctionMap(const Image &image);
  uint32_t index_at(uint32_t addr) const; // kNone outside every function
  // Marks the function named `name` (raw, demangled, or demangled without
  // parameters) as measured. Returns its index, or kNone if unknown.
  uint32_t measure(const std::string &name);
  const std::vector<Function> &functions() const { return functions_; }

private:
  std::vector<Function> functions_; // sorted by lo, not overlapping
};

// One recorded call of a measured function.
struct CallSample {
  uint64_t cycles = 0; // from entry to return, everything included
  uint64_t stall = 0;  // of which device wait states, sleep and wake-up
  Time start = 0;      // virtual time of the entry
};

struct FunctionProfile {
  uint64_t self = 0;      // cycles executing its own blocks (sleep excluded)
  uint64_t inclusive = 0; // cycles from entries to returns (sleep excluded)
  uint64_t entries = 0;   // calls seen (complete or not)
  std::vector<CallSample> calls; // measured functions only, complete calls
};

// Execution counts of one basic block, for the hottest source lines.
struct BlockProfile {
  uint32_t addr = 0, size = 0;
  uint64_t executions = 0;
  uint64_t cycles = 0; // sleep excluded
};

// What one core's profiler found, once the run is over: what the reports
// read. A run spread over MPI ranks carries these from the ranks that own
// the cores to every rank (cli/run_spread.cpp).
struct CoreProfile {
  uint32_t node = 0;
  std::vector<FunctionProfile> functions; // by FunctionMap index
  std::vector<BlockProfile> blocks;       // sorted by address
  uint64_t sleep_cycles = 0;
  uint64_t unattributed_cycles = 0; // in code no symbol covers
  Time end_time = 0;                // the node's virtual time at the end
};

class CoreProfiler final : public BlockObserver {
public:
  CoreProfiler(const FunctionMap &functions, const Cpu &cpu,
               const ClockDomain &clock, uint32_t node, RunEvents *events);

  void block_entered(uint32_t addr, uint32_t size, uint64_t start) override;
  void interrupt_taken(uint32_t epc, uint64_t at) override;
  void slept(uint64_t cycles) override;
  // The run is over at core cycle `end`: closes the last block's cycles and
  // the inclusive time of calls still open (not recorded as calls).
  void finish(uint64_t end);

  uint32_t node() const { return node_; }
  const std::vector<FunctionProfile> &profiles() const { return profiles_; }
  std::vector<BlockProfile> blocks() const; // sorted by address
  uint64_t sleep_cycles() const { return sleep_total_; }
  uint64_t unattributed_cycles() const { return outside_; }
  // After finish(): everything above, with the node's end time.
  CoreProfile result(Time end_time) const;

private:
  struct Block {
    uint32_t addr = 0, size = 0;
    uint32_t function = FunctionMap::kNone;
    bool ends_in_call = false; // jal, jalr, bal...: the next block is a callee
    bool ends_in_jump = false; // a jump or branch without link
    uint64_t executions = 0, cycles = 0;
  };
  struct Frame {
    uint32_t function = FunctionMap::kNone;
    uint32_t ret = 0;
    uint64_t start = 0, stall_at_start = 0, sleep_at_start = 0;
    bool resumes_call = false; // an interrupt taken just before a callee ran
    uint32_t resumed_ret = 0;
  };
  Block &block(uint32_t addr, uint32_t size);
  void push(uint32_t function, uint32_t ret, uint64_t start);
  void pop(uint64_t at);
  bool returns_to(uint32_t addr, uint64_t at);
  void charge_previous(uint64_t end);
  uint64_t stall_now() const {
    return sleep_total_ + cpu_.device_wait_cycles();
  }

  const FunctionMap &map_;
  const Cpu &cpu_;
  ClockDomain clock_;
  uint32_t node_;
  RunEvents *events_;
  std::vector<FunctionProfile> profiles_;
  std::vector<uint32_t> open_; // open frames per function (recursion)
  // Keyed by address << 32 | size; node-based, so references stay valid.
  std::unordered_map<uint64_t, Block> blocks_;
  std::vector<Frame> stack_;
  Block *prev_ = nullptr;
  uint64_t prev_start_ = 0;
  uint64_t sleep_total_ = 0, sleep_since_prev_ = 0;
  uint64_t outside_ = 0; // cycles in code no symbol covers
  bool interrupt_pending_ = false;
  uint32_t interrupt_epc_ = 0;
  uint64_t interrupt_at_ = 0;
};

} // namespace nicemu
