// The one file that includes Unicorn. It turns Unicorn's hooks into the Cpu
// interface: per-block cycle accounting, slices that end at block
// boundaries, exact timing of device accesses, and fault reports.
//
// Facts about Debian's Unicorn 2.0.1 this file is built around (pinned by
// tests/unit/test_unicorn_facts.cpp):
//  - uc_emu_start's `count` corrupts execution when a slice ends in a branch
//    delay slot, so slices are ended with uc_emu_stop from the block hook; the
//    block whose hook stops the run has not executed and runs on restart.
//  - The PC is not synchronised inside MMIO callbacks or exception hooks (it
//    reads as the block start, or 0); registers are. So the instruction that
//    touched a device or faulted is found from the block's decoded loads and
//    stores and the current register values.
//  - kseg2/kseg3 addresses go through a TLB the core does not have; all card
//    memory and devices live in useg.
//  - Debugging (tests/unit/test_unicorn_debug_facts.cpp): uc_emu_stop from
//    an instruction hook stops before that instruction with the PC exact;
//    with an instruction hook installed, stopping from the block hook breaks
//    the block, so the first instruction's hook stops instead; deleted hooks
//    stay until a uc_emu_start ends, and blocks translated with them must
//    be flushed.
//  - Writes to card memory that do not go through Unicorn (DMA engines,
//    host PIO: Node::card_write) leave translated blocks stale; the core
//    keeps the ranges it has translated code from, and a write there drops
//    that code with uc_ctl_remove_cache (code_written).
//  - Each engine reserves a large code buffer; with transparent huge pages it
//    pins 2 MiB at once, so THP is disabled for the process.
//  - Every guest store to RAM takes a slow path that allocates and frees a
//    tree; unicorn_store_fix.cpp replaces the two functions involved.
//  - A block that loops onto itself and only loads and computes (a polling
//    loop) is fast-forwarded once it repeats itself within a slice: see
//    fast_forward().
//  - uc_emu_start costs about a microsecond (it resets exits, timers and the
//    soft TLB), and slices are short: a network's lookahead is tens of
//    cycles. So a core's Unicorn run lives on a fiber of its own, and a
//    slice ends by parking that fiber in the block hook; the next slice
//    resumes it. Anything that needs the run really stopped (a new PC, a
//    register write, a code flush, a debugger) first "settles" it: the
//    parked hook then stops the run as the classic path does, before its
//    block has run.
#include "core/block_cost.hpp"
#include "core/core_fiber.hpp"
#include "core/cpu.hpp"
#include "core/mips_decode.hpp"
#include "core/unicorn_store_fix.hpp"
#include "mem/zeroed_buffer.hpp"
#include "nicemu/error.hpp"

#include <unicorn/unicorn.h>

#include <sys/prctl.h>

#include <array>
#include <cassert>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

namespace nicemu {

namespace {

constexpr uint64_t kNeverReached = 0xFFFFFFFFu; // odd: never a MIPS PC
// The engine fiber's stack: Unicorn's loop and translated code, our hooks,
// and device code down to the scheduler run on it. Reserved, not committed.
constexpr size_t kEngineStack = 512 * 1024;

void disable_transparent_huge_pages() {
  static bool done = [] {
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    return true;
  }();
  (void)done;
}

// A Unicorn call that failed, named with its arguments, e.g.
// "Unicorn uc_mem_map_ptr(0x1f000000, 16 MiB) failed: Invalid memory
// mapping (UC_ERR_MAP)".
std::string unicorn_failure(const std::string &call, uc_err err) {
  return "Unicorn " + call + " failed: " + uc_strerror(err);
}

void check(uc_err err, const std::string &call) {
  if (err != UC_ERR_OK)
    throw Error(unicorn_failure(call, err));
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", (unsigned long long)value);
  return text;
}

// "16 MiB", "4 KiB", or bytes when not a whole number of either.
std::string size_text(uint64_t bytes) {
  if (bytes != 0 && bytes % (1u << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes != 0 && bytes % (1u << 10) == 0)
    return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string range_text(uint64_t base, uint64_t size) {
  return hex(base) + ", " + size_text(size);
}

uc_engine *open_engine() {
  disable_transparent_huge_pages();
  // Also links the store workaround into every program that runs a core.
  (void)unicorn_store_fix_applies();
  uc_engine *uc = nullptr;
  check(uc_open(UC_ARCH_MIPS, uc_mode(UC_MODE_MIPS32 | UC_MODE_LITTLE_ENDIAN),
                &uc),
        "uc_open(MIPS32, little-endian)");
  return uc;
}

std::optional<FaultKind> exception_fault(uint32_t intno) {
  switch (intno) {
  case 12:
    return FaultKind::UnalignedRead; // AdEL
  case 13:
    return FaultKind::UnalignedWrite; // AdES
  case 17:
    return FaultKind::Syscall;
  case 18:
    return FaultKind::Break;
  case 19:
    return FaultKind::NoFpu; // coprocessor unusable
  case 20:
    return FaultKind::IllegalInstruction;
  case 21:
    return FaultKind::Overflow;
  case 22:
    return FaultKind::Trap;
  case 26:
    return FaultKind::UnmappedRead; // TLB refill on load (kseg2/3)
  case 27:
    return FaultKind::UnmappedWrite; // TLB refill on store
  default:
    return std::nullopt;
  }
}

class UnicornCpu final : public Cpu {
public:
  UnicornCpu(CpuBus &bus, const CpuOptions &options)
      : uc_(open_engine()), bus_(bus), options_(options) {
    try {
      install_hooks();
    } catch (...) {
      uc_close(uc_); // the destructor does not run
      throw;
    }
  }
  ~UnicornCpu() override {
    close_engine();
    uc_close(uc_);
  }
  UnicornCpu(const UnicornCpu &) = delete;
  UnicornCpu &operator=(const UnicornCpu &) = delete;

  void map_ram(uint32_t base, uint32_t size, uint8_t *host,
               bool writable) override {
    uint32_t perms = UC_PROT_READ | UC_PROT_EXEC;
    if (writable)
      perms |= UC_PROT_WRITE;
    check(uc_mem_map_ptr(uc_, base, size, perms, host),
          "uc_mem_map_ptr(" + range_text(base, size) + ")");
    ram_regions_.push_back({base, size});
    if (ram_regions_.size() == 1) { // the first memory holds the code
      hot_ = ZeroedBuffer<HotCost>(size / 4);
      hot_base_ = base;
    }
  }

  void map_mmio(uint32_t base, uint32_t size) override {
    mmio_base_ = base;
    check(uc_mmio_map(uc_, base, size, &UnicornCpu::on_mmio_read, this,
                      &UnicornCpu::on_mmio_write, this),
          "uc_mmio_map(" + range_text(base, size) + ")");
  }

  StopReason run(uint64_t cycle_limit) override;
  void set_fast_forward(bool on) override { fast_forward_on_ = on; }
  Skipped fast_forwarded() const override { return skipped_; }
  void limit_slice(uint64_t cycle_limit) override {
    if (cycle_limit < limit_)
      limit_ = cycle_limit;
  }
  void request_stop() override { limit_ = 0; }
  // The rest of the block still runs in Unicorn (the runtime spins after
  // exiting), but the halt takes effect at the store: see mmio_access.
  void halt() override {
    halted_ = true;
    uc_emu_stop(uc_);
  }

  uint64_t cycles() const override { return cycles_; }
  void add_cycles(uint64_t n) override { cycles_ += n; }
  uint64_t instructions() const override { return instructions_; }
  uint64_t device_wait_cycles() const override { return wait_cycles_; }
  void set_block_observer(BlockObserver *observer) override {
    observer_ = observer;
  }
  uint64_t access_cycle() const override { return access_cycle_; }
  CpuRegisters registers() const override;
  uint32_t pc() const override { return read_reg(UC_MIPS_REG_PC); }
  void set_pc(uint32_t pc) override {
    settle();
    write_reg(UC_MIPS_REG_PC, pc);
  }
  const Fault &fault() const override { return fault_; }
  bool read_memory(uint32_t addr, void *out, size_t len) const override;
  void flush_code_cache() override;
  void code_written(uint32_t addr, uint32_t len) override;
  void set_debugger(CpuDebugger *debugger) override {
    settle(); // debugging runs take the classic path
    debugger_ = debugger;
  }
  void set_debug_hooks(const CpuDebugHooks &hooks) override;
  void write_register(unsigned index, uint32_t value) override;
  // A run parked on its fiber is ended first: the registers Unicorn
  // shows from inside a parked run are not all up to date (seen: a
  // restored core faulted on a stale one). The next slice starts a run of
  // its own, with the same results (as without fibers).
  State checkpoint_state() override {
    settle();
    return {registers(),  cycles_,          instructions_, wait_cycles_,
            fallthrough_, pending_penalty_, skipped_};
  }
  void restore_state(const State &s) override;
  bool in_delay_slot(uint32_t pc) override;
  uint64_t instructions_before(uint32_t pc) const override;

private:
  struct RamRegion {
    uint32_t base, size;
  };
  struct PendingFault {
    FaultKind kind;
    bool has_address = false;
    uint32_t address = 0;
    std::string detail;
    std::optional<uint32_t> pc; // known exactly (fetch faults, bus errors)
  };

  uint32_t read_reg(int reg) const {
    uint32_t v = 0;
    uc_reg_read(uc_, reg, &v);
    return v;
  }
  void write_reg(int reg, uint32_t v) { uc_reg_write(uc_, reg, &v); }

  void install_hooks();
  StopReason finish_run(uc_err err);
  // Fiber slices.
  bool use_fiber() const {
    return options_.fiber_slices && options_.accounting && !debugger_;
  }
  StopReason run_on_fiber();
  void park();
  void settle();
  void close_engine();
  // The block at addr of this size, costed on first sight. Device accesses
  // and slice ends ask for the current block again and again: a
  // direct-mapped cache of recent blocks answers them without hashing.
  const BlockInfo &lookup_block(uint32_t addr, uint32_t size) {
    BlockInfo *recent = recent_[(addr >> 2) % kRecentBlocks];
    if (recent && recent->address == addr && recent->size == size) [[likely]]
      return *recent;
    return lookup_block_slow(addr, size);
  }
  const BlockInfo &lookup_block_slow(uint32_t addr, uint32_t size);
  void forget_recent(const BlockInfo *block) {
    BlockInfo *&recent = recent_[(block->address >> 2) % kRecentBlocks];
    if (recent == block)
      recent = nullptr;
  }
  void note_code(uint64_t begin, uint64_t end);
  void forget_code(uint64_t begin, uint64_t end);
  void drop_code(uint64_t begin, uint64_t end);
  const BlockInfo *current_block() {
    return block_size_ ? &lookup_block(block_addr_, block_size_) : nullptr;
  }
  void begin_access_tracking();
  void enter_block(uint32_t addr, uint32_t size);
  uint64_t fast_forward(uint32_t addr, uint32_t size, uint64_t cycles);
  const BlockMemOp *locate_access(uint32_t addr, unsigned size, bool store);
  uint32_t mmio_access(uint32_t addr, unsigned size, bool store,
                       uint32_t value);
  void raise(PendingFault f);
  void finish_fault();
  std::optional<uint32_t> find_faulting_index(const BlockInfo &block,
                                              const PendingFault &f) const;
  std::optional<uint32_t> misaligned_jump(const BlockInfo &block);
  bool effective_address_matches(const mips::Insn &insn,
                                 const PendingFault &f) const;

  static void on_block(uc_engine *, uint64_t addr, uint32_t size, void *me) {
    static_cast<UnicornCpu *>(me)->enter_block(uint32_t(addr), size);
  }
  static uint64_t on_mmio_read(uc_engine *, uint64_t offset, unsigned size,
                               void *me) {
    auto *self = static_cast<UnicornCpu *>(me);
    return self->mmio_access(self->mmio_base_ + uint32_t(offset), size, false,
                             0);
  }
  static void on_mmio_write(uc_engine *, uint64_t offset, unsigned size,
                            uint64_t value, void *me) {
    auto *self = static_cast<UnicornCpu *>(me);
    self->mmio_access(self->mmio_base_ + uint32_t(offset), size, true,
                      uint32_t(value));
  }
  static void on_exception(uc_engine *uc, uint32_t intno, void *me);
  void apply_debug_hooks();
  void drop_translations();
  // The debugger is not told about what runs after the core has stopped.
  bool stopping() const {
    return stopped_at_limit_ || halted_ || pending_fault_ || !debugger_;
  }
  static void on_debug_code(uc_engine *uc, uint64_t addr, uint32_t, void *me) {
    auto *self = static_cast<UnicornCpu *>(me);
    if (self->stopped_at_limit_)
      uc_emu_stop(uc); // exactly before the block's first instruction
    else if (!self->stopping())
      self->debugger_->before_instruction(uint32_t(addr));
  }
  static void on_debug_memory(uc_engine *, uc_mem_type type, uint64_t addr,
                              int size, int64_t, void *me) {
    auto *self = static_cast<UnicornCpu *>(me);
    if (!self->stopping())
      self->debugger_->memory_access(uint32_t(addr), unsigned(size),
                                     type == UC_MEM_WRITE);
  }
  static bool on_bad_memory(uc_engine *uc, uc_mem_type type, uint64_t addr,
                            int size, int64_t value, void *me);

  uc_engine *uc_;
  CpuBus &bus_;
  CpuOptions options_;
  uint32_t mmio_base_ = 0;
  std::vector<RamRegion> ram_regions_;
  // Full block descriptions, for device accesses and faults (not the block
  // hook's hot path, which reads hot_; device accesses find theirs through
  // recent_).
  std::unordered_map<uint32_t, std::unique_ptr<BlockInfo>> blocks_;
  // Blocks of blocks_ by (address / 4) % kRecentBlocks, or null; an entry is
  // cleared before blocks_ frees its block (lookup_block_slow, drop_code,
  // flush_code_cache).
  static constexpr uint32_t kRecentBlocks = 256;
  std::array<BlockInfo *, kRecentBlocks> recent_{};
  // The card memory Unicorn may hold translated code from: every block
  // costed since the last flush, as disjoint ranges [begin, end) by begin.
  std::map<uint64_t, uint64_t> code_ranges_;

  uint64_t cycles_ = 0;
  uint64_t instructions_ = 0;
  uint64_t wait_cycles_ = 0; // device wait states, included in cycles_
  BlockObserver *observer_ = nullptr;
  uint64_t limit_ = 0;
  bool stopped_at_limit_ = false;
  bool halted_ = false;
  std::optional<PendingFault> pending_fault_;
  Fault fault_;

  // The block being executed.
  // The block being executed: only its address, size and start cycle are
  // recorded per block; the rest is looked up when a device access or a
  // fault needs it.
  uint32_t block_addr_ = 0, block_size_ = 0;
  uint64_t block_start_ = 0; // cycles_ when it started
  // Device-access state of the block that started at access_block_:
  uint64_t access_block_ = UINT64_MAX;
  uint64_t block_stall_ = 0; // device wait states spent inside it
  size_t next_mem_op_ = 0;   // accesses happen in order within a block
  // Per-word cost cache of the main code memory: the hot path reads one
  // 8-byte entry per block.
  struct HotCost {
    uint32_t cost = 0;
    uint16_t size = 0; // 0: not cached
    uint8_t penalty = 0;
    bool poll_loop = false; // BlockInfo::poll_loop
  };
  ZeroedBuffer<HotCost> hot_;
  uint32_t hot_base_ = 0;
  uint64_t access_cycle_ = 0;
  uint32_t fallthrough_ = 1;     // next address if the previous block's
  uint32_t pending_penalty_ = 0; // ... branch was not taken
  // Debugging: hooks only while a debugger asks for them.
  CpuDebugger *debugger_ = nullptr;
  CpuDebugHooks hooks_wanted_, hooks_on_;
  std::vector<uc_hook> debug_hooks_;
  bool in_run_ = false;
  // Fiber slices: the fiber that runs uc_emu_start, made at the first run.
  std::unique_ptr<CoreFiber> engine_;
  bool parked_ = false;  // the engine waits in the block hook for a slice
  bool abandon_ = false; // ... and must stop the run instead
  bool closing_ = false; // the engine fiber must end
  uc_err engine_err_ = UC_ERR_OK; // what its last uc_emu_start returned
  // Polling loops (fast_forward): the last entry of a loop block, watched
  // for the next one to repeat it.
  struct LoopEntry {
    uint32_t addr = 1; // odd: no block
    uint64_t slice = 0, cycles = 0, instructions = 0, wait_cycles = 0;
    bool touched = false; // a device access that was not a stable read
    std::array<uint32_t, 32> regs{};
  };
  bool fast_forward_on_ = true;
  uint64_t slice_ = 0; // run() calls so far
  LoopEntry loop_;
  Skipped skipped_;
};

// Inside the engine fiber, from the block hook: back to run()'s caller
// until the next slice.
void UnicornCpu::park() {
  parked_ = true;
  engine_->yield();
  parked_ = false;
}

// A parked run is stopped for good: the hook stops it before its block has
// run, exactly where the classic path would have stopped.
void UnicornCpu::settle() {
  if (!parked_)
    return;
  abandon_ = true;
  engine_->resume();
  abandon_ = false;
}

void UnicornCpu::close_engine() {
  if (!engine_)
    return;
  settle();
  closing_ = true;
  engine_->resume(); // leaves its loop and ends
}

StopReason UnicornCpu::run_on_fiber() {
  if (!engine_)
    engine_ = std::make_unique<CoreFiber>(
        [this] {
          while (!closing_) {
            engine_err_ = uc_emu_start(uc_, pc(), kNeverReached, 0, 0);
            engine_->yield();
          }
        },
        kEngineStack);
  in_run_ = true;
  engine_->resume(); // starts a run, or continues a parked one
  in_run_ = false;
  if (parked_)
    return StopReason::Limit;
  return finish_run(engine_err_);
}

void UnicornCpu::set_debug_hooks(const CpuDebugHooks &hooks) {
  settle();
  hooks_wanted_ = hooks;
  if (!in_run_)
    apply_debug_hooks();
  else if (!(hooks_wanted_ == hooks_on_))
    request_stop(); // a slice may end at any block boundary
}

// Hooks added or removed between runs take effect at once
// (test_unicorn_debug_facts.cpp).
void UnicornCpu::apply_debug_hooks() {
  if (hooks_wanted_ == hooks_on_)
    return;
  for (uc_hook h : debug_hooks_)
    uc_hook_del(uc_, h);
  debug_hooks_.clear();
  uc_hook h;
  if (hooks_wanted_.instructions) {
    check(
        uc_hook_add(uc_, &h, UC_HOOK_CODE, (void *)&on_debug_code, this, 1, 0),
        "uc_hook_add(UC_HOOK_CODE)");
    debug_hooks_.push_back(h);
  }
  auto add = [&](int type, const CpuDebugHooks::Range &r) {
    if (r.end <= r.begin)
      return;
    check(uc_hook_add(uc_, &h, type, (void *)&on_debug_memory, this, r.begin,
                      r.end - 1),
          std::string("uc_hook_add(") +
              (type == UC_HOOK_MEM_READ ? "UC_HOOK_MEM_READ"
                                        : "UC_HOOK_MEM_WRITE") +
              ", " + hex(r.begin) + ".." + hex(r.end - 1) + ")");
    debug_hooks_.push_back(h);
  };
  for (const auto &r : hooks_wanted_.reads)
    add(UC_HOOK_MEM_READ, r);
  for (const auto &r : hooks_wanted_.writes)
    add(UC_HOOK_MEM_WRITE, r);
  if (hooks_wanted_.instructions != hooks_on_.instructions && block_size_) {
    // Deleted hooks stay in place until a uc_emu_start ends: end one at
    // once. Then blocks translated with an instruction hook, whose exit
    // checks break stops from the block hook, are translated again.
    // What was translated goes first: a cached block would run whole,
    // however short the run asked for (and so would the core's time).
    // Only what was translated: a full flush writes over Unicorn's whole
    // code buffer, seconds on a long run under a debugger (and copies of
    // it in every checkpoint, debug/fork_checkpoints.hpp).
    drop_translations();
    uint32_t here = pc();
    uc_emu_start(uc_, here, here, 0, 0);
    drop_translations(); // the block that stopped at `here` too
  }
  hooks_on_ = hooks_wanted_;
}

void UnicornCpu::write_register(unsigned index, uint32_t value) {
  settle();
  if (index < 32)
    write_reg(UC_MIPS_REG_0 + int(index), value);
  else if (index == 32)
    write_reg(UC_MIPS_REG_HI, value);
  else if (index == 33)
    write_reg(UC_MIPS_REG_LO, value);
}

void UnicornCpu::restore_state(const State &s) {
  settle();
  for (unsigned i = 1; i < 32; ++i)
    write_reg(UC_MIPS_REG_0 + int(i), s.registers.gpr[i]);
  write_reg(UC_MIPS_REG_HI, s.registers.hi);
  write_reg(UC_MIPS_REG_LO, s.registers.lo);
  write_reg(UC_MIPS_REG_PC, s.registers.pc);
  cycles_ = s.cycles;
  instructions_ = s.instructions;
  wait_cycles_ = s.wait_cycles;
  fallthrough_ = s.fallthrough;
  pending_penalty_ = s.pending_penalty;
  skipped_ = s.skipped;
  flush_code_cache(); // the memories were replaced under it
}

// A block never starts in a delay slot (runs never resume in one).
bool UnicornCpu::in_delay_slot(uint32_t pc) {
  if (pc == block_addr_ || pc - block_addr_ >= block_size_)
    return false;
  uint32_t word = 0;
  uc_mem_read(uc_, pc - 4, &word, 4);
  return mips::has_delay_slot(mips::decode(word));
}

uint64_t UnicornCpu::instructions_before(uint32_t pc) const {
  if (pc - block_addr_ >= block_size_)
    return instructions_;
  return instructions_ - (block_size_ - (pc - block_addr_)) / 4;
}

// Unicorn's translations of every block run so far (our costs stay).
void UnicornCpu::drop_translations() {
  for (const auto &[begin, end] : code_ranges_)
    check(uc_ctl_remove_cache(uc_, begin, end),
          "uc_ctl_remove_cache(" + hex(begin) + ", " + hex(end) + ")");
}

void UnicornCpu::install_hooks() {
  uc_hook h;
  if (options_.accounting)
    check(uc_hook_add(uc_, &h, UC_HOOK_BLOCK, (void *)&UnicornCpu::on_block,
                      this, 1, 0),
          "uc_hook_add(UC_HOOK_BLOCK)");
  check(uc_hook_add(uc_, &h, UC_HOOK_INTR, (void *)&UnicornCpu::on_exception,
                    this, 1, 0),
        "uc_hook_add(UC_HOOK_INTR)");
  check(uc_hook_add(uc_, &h, UC_HOOK_MEM_INVALID,
                    (void *)&UnicornCpu::on_bad_memory, this, 1, 0),
        "uc_hook_add(UC_HOOK_MEM_INVALID)");
}

const BlockInfo &UnicornCpu::lookup_block_slow(uint32_t addr, uint32_t size) {
  std::unique_ptr<BlockInfo> *slot = &blocks_[addr];
  if (!*slot || (*slot)->size != size) {
    if (*slot)
      forget_recent(slot->get());
    note_code(addr, uint64_t(addr) + size);
    std::vector<uint32_t> words(size / 4);
    uc_mem_read(uc_, addr, words.data(), words.size() * 4);
    *slot =
        std::make_unique<BlockInfo>(cost_block(addr, words, options_.cycles));
    uint32_t index = (addr - hot_base_) / 4;
    if (index < hot_.size() && size <= UINT16_MAX &&
        (*slot)->taken_penalty <= UINT8_MAX)
      hot_[index] = {(*slot)->cost, uint16_t(size),
                     uint8_t((*slot)->taken_penalty), (*slot)->poll_loop};
  }
  recent_[(addr >> 2) % kRecentBlocks] = slot->get();
  return **slot;
}

void UnicornCpu::enter_block(uint32_t addr, uint32_t size) {
  // The hot path of the whole emulator: keep it to a few loads and stores.
  uint64_t cycles = cycles_;
  // The previous block's branch was taken if we did not fall through.
  if (addr != fallthrough_)
    cycles += pending_penalty_;
  pending_penalty_ = 0;
  fallthrough_ = addr;
  if (cycles >= limit_) {
    // Translated, not run yet: its code must be known before the slice
    // ends, in case a DMA overwrites it meanwhile.
    if (uint32_t index = (addr - hot_base_) / 4;
        index >= hot_.size() || hot_[index].size != size)
      lookup_block(addr, size);
    cycles_ = cycles;
    stopped_at_limit_ = true;
    if (use_fiber()) {
      // The block waits here, not yet run, for a slice that reaches it.
      do {
        stopped_at_limit_ = true;
        park();
      } while (!abandon_ && cycles_ >= limit_);
      if (abandon_) {
        uc_emu_stop(uc_);
        return;
      }
      stopped_at_limit_ = false;
      cycles = cycles_;
    } else {
      // This block has not run; it runs first on restart. With an
      // instruction hook, stopping here breaks the block: the hook of its
      // first instruction stops instead (on_debug_code).
      if (!hooks_on_.instructions)
        uc_emu_stop(uc_);
      return;
    }
  }
  uint32_t index = (addr - hot_base_) / 4;
  uint32_t cost, penalty;
  bool poll_loop;
  if (index < hot_.size() && hot_[index].size == size) [[likely]] {
    cost = hot_[index].cost;
    penalty = hot_[index].penalty;
    poll_loop = hot_[index].poll_loop;
  } else {
    const BlockInfo &b = lookup_block(addr, size);
    cost = b.cost;
    penalty = b.taken_penalty;
    poll_loop = b.poll_loop;
  }
  if (poll_loop) [[unlikely]]
    cycles = fast_forward(addr, size, cycles);
  block_addr_ = addr;
  block_size_ = size;
  block_start_ = cycles;
  if (observer_) [[unlikely]]
    observer_->block_entered(addr, size, cycles);
  cycles_ = cycles + cost;
  instructions_ += size / 4;
  fallthrough_ = addr + size;
  pending_penalty_ = penalty;
}

// A polling loop, fast-forwarded exactly. The block at `addr` loops onto
// itself and changes nothing but its registers (BlockInfo::poll_loop); it
// is entered at `cycles`. If its previous entry was the block just run, in
// the same slice, with every device access a stable read (so no side
// effect, and within a slice no event can change what it read: a slice
// ends before the next event, host action or interrupt), and the registers
// it writes hold what they held then, the iteration changed nothing: every
// further one repeats it, at the same period. Those that would start
// before the slice's limit are skipped (their cycles, instructions and
// wait states counted) up to the last one, which runs: full emulation would
// stop at the same block, in the same state, having read the same values
// (tests/e2e/test_speed_switches.cpp compares runs both ways).
uint64_t UnicornCpu::fast_forward(uint32_t addr, uint32_t size,
                                  uint64_t cycles) {
  if (!fast_forward_on_ || observer_ || debugger_)
    return cycles; // profilers and debuggers see every block
  const BlockInfo &block = lookup_block(addr, size);
  std::array<uint32_t, 32> regs{};
  for (uint32_t m = block.loop_writes; m; m &= m - 1) {
    unsigned r = unsigned(__builtin_ctz(m));
    regs[r] = read_reg(UC_MIPS_REG_0 + int(r));
  }
  LoopEntry &last = loop_;
  // Exactly this block ran since: any other adds instructions.
  bool repeated = last.addr == addr && last.slice == slice_ && !last.touched &&
                  instructions_ == last.instructions + block.instructions &&
                  regs == last.regs && cycles > last.cycles;
  if (repeated) {
    uint64_t period = cycles - last.cycles;
    uint64_t skip = (limit_ - 1 - cycles) / period; // entries before limit_
    uint64_t waits = wait_cycles_ - last.wait_cycles;
    cycles += skip * period;
    instructions_ += skip * block.instructions;
    wait_cycles_ += skip * waits;
    skipped_.cycles += skip * period;
    skipped_.instructions += skip * block.instructions;
  }
  last = {addr, slice_, cycles, instructions_, wait_cycles_, false, regs};
  return cycles;
}

// Finds which load/store of the current block is making this access. With
// one candidate of the right direction and size that is the answer; with
// several, the current base registers (exact at the access) decide.
const BlockMemOp *UnicornCpu::locate_access(uint32_t addr, unsigned size,
                                            bool store) {
  const BlockInfo *block = current_block();
  if (!block)
    return nullptr;
  const auto &ops = block->mem_ops;
  const BlockMemOp *first = nullptr;
  int candidates = 0;
  for (size_t i = next_mem_op_; i < ops.size(); ++i)
    if (ops[i].store == store && ops[i].size == size && !candidates++)
      first = &ops[i];
  const BlockMemOp *found = first;
  if (candidates > 1)
    for (size_t i = next_mem_op_; i < ops.size(); ++i) {
      const BlockMemOp &op = ops[i];
      if (op.store != store || op.size != size)
        continue;
      uint32_t base = op.base ? read_reg(UC_MIPS_REG_0 + op.base) : 0;
      if (base + uint32_t(int32_t(op.disp)) == addr) {
        found = &op;
        break;
      }
    }
  if (found)
    next_mem_op_ = size_t(found - ops.data()) + 1;
  return found;
}

void UnicornCpu::begin_access_tracking() {
  if (access_block_ != block_start_) {
    access_block_ = block_start_;
    block_stall_ = 0;
    next_mem_op_ = 0;
  }
}

uint32_t UnicornCpu::mmio_access(uint32_t addr, unsigned size, bool store,
                                 uint32_t value) {
  if (halted_ || pending_fault_)
    return 0; // the core has already stopped at an earlier instruction
  begin_access_tracking();
  if (!loop_.touched && (store || !bus_.read_is_stable(addr)))
    loop_.touched = true; // a polling loop's turn must not be skipped
  const BlockMemOp *op = locate_access(addr, size, store);
  access_cycle_ =
      op ? block_start_ + op->cycles_before + block_stall_ : cycles_;
  std::string why;
  uint32_t result = 0;
  bool ok = store ? bus_.mmio_write(addr, size, value, why)
                  : bus_.mmio_read(addr, size, result, why);
  uint32_t wait =
      store ? options_.cycles.mmio_write : options_.cycles.mmio_read;
  cycles_ += wait;
  wait_cycles_ += wait;
  block_stall_ += wait;
  if (halted_) {
    // Nothing after the halting store counts.
    cycles_ = access_cycle_ + 1 + wait;
    if (op)
      instructions_ -= current_block()->instructions - op->index - 1u;
  }
  if (!ok) {
    PendingFault f{FaultKind::BusError, true, addr, why, std::nullopt};
    if (op)
      f.pc = block_addr_ + 4u * op->index;
    raise(std::move(f));
  }
  return result;
}

void UnicornCpu::raise(PendingFault f) {
  if (!pending_fault_)
    pending_fault_ = std::move(f);
  uc_emu_stop(uc_);
}

void UnicornCpu::on_exception(uc_engine *, uint32_t intno, void *me) {
  auto *self = static_cast<UnicornCpu *>(me);
  auto kind = exception_fault(intno);
  PendingFault f{kind.value_or(FaultKind::IllegalInstruction), false, 0, "",
                 std::nullopt};
  if (!kind)
    f.detail = "unexpected CPU exception " + std::to_string(intno);
  self->raise(std::move(f));
}

bool UnicornCpu::on_bad_memory(uc_engine *, uc_mem_type type, uint64_t addr,
                               int, int64_t, void *me) {
  auto *self = static_cast<UnicornCpu *>(me);
  PendingFault f{FaultKind::UnmappedRead, true, uint32_t(addr), "",
                 std::nullopt};
  switch (type) {
  case UC_MEM_WRITE_UNMAPPED:
    f.kind = FaultKind::UnmappedWrite;
    break;
  case UC_MEM_WRITE_PROT:
    f.kind = FaultKind::ReadOnlyWrite;
    break;
  case UC_MEM_FETCH_UNMAPPED:
  case UC_MEM_FETCH_PROT:
    f.kind = FaultKind::UnmappedFetch;
    f.pc = uint32_t(addr);
    break;
  default:
    break;
  }
  self->raise(std::move(f));
  return false;
}

bool UnicornCpu::effective_address_matches(const mips::Insn &insn,
                                           const PendingFault &f) const {
  uint32_t base = insn.rs ? read_reg(UC_MIPS_REG_0 + insn.rs) : 0;
  uint32_t ea = base + uint32_t(int32_t(insn.imm));
  switch (f.kind) {
  case FaultKind::UnalignedRead:
  case FaultKind::UnalignedWrite:
    return insn.mem_size > 1 && ea % insn.mem_size != 0;
  default: // unmapped: the access covers the faulting address
    return !f.has_address || f.address - ea < insn.mem_size;
  }
}

// The first instruction of the current block that can raise this fault given
// the current registers (exact at the faulting instruction).
std::optional<uint32_t>
UnicornCpu::find_faulting_index(const BlockInfo &block,
                                const PendingFault &f) const {
  using mips::Kind;
  for (uint32_t i = 0; i < block.instructions; ++i) {
    mips::Insn insn = mips::decode(block.words[i]);
    bool load = insn.kind == Kind::Load, store = insn.kind == Kind::Store;
    switch (f.kind) {
    case FaultKind::Break:
      if (insn.kind == Kind::Break)
        return i;
      break;
    case FaultKind::Syscall:
      if (insn.kind == Kind::Syscall)
        return i;
      break;
    case FaultKind::Trap:
      if (insn.kind == Kind::Trap)
        return i;
      break;
    case FaultKind::NoFpu:
      if (insn.kind == Kind::Cop1)
        return i;
      break;
    case FaultKind::Overflow:
      if (insn.may_overflow)
        return i;
      break;
    case FaultKind::IllegalInstruction:
      if (insn.kind == Kind::Invalid)
        return i;
      break;
    case FaultKind::UnalignedRead:
    case FaultKind::UnmappedRead:
      if (load && effective_address_matches(insn, f))
        return i;
      break;
    case FaultKind::UnalignedWrite:
    case FaultKind::UnmappedWrite:
    case FaultKind::ReadOnlyWrite:
      if (store && effective_address_matches(insn, f))
        return i;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

// An address error on fetch is reported as one on load (AdEL): when no load
// of the block explains it, the jump register at the block's end may. Its
// index, with the fault made a MisalignedJump to the register's value.
std::optional<uint32_t> UnicornCpu::misaligned_jump(const BlockInfo &block) {
  if (block.instructions < 2)
    return std::nullopt;
  const uint32_t at = block.instructions - 2; // the jump before its slot
  const uint32_t word = block.words[at];
  mips::Insn insn = mips::decode(word);
  if (insn.kind != mips::Kind::Jump || (word >> 26) != 0) // jr, jalr only
    return std::nullopt;
  uint32_t target = insn.rs ? read_reg(UC_MIPS_REG_0 + insn.rs) : 0;
  if (target % 4 == 0)
    return std::nullopt;
  fault_.kind = FaultKind::MisalignedJump;
  fault_.has_address = true;
  fault_.address = target;
  return at;
}

void UnicornCpu::finish_fault() {
  PendingFault &p = *pending_fault_;
  fault_ = Fault{};
  fault_.kind = p.kind;
  fault_.has_address = p.has_address;
  fault_.address = p.address;
  fault_.detail = p.detail;
  const BlockInfo *block = current_block();
  begin_access_tracking();
  std::optional<uint32_t> index;
  if (p.pc && block && *p.pc - block->address < block->size)
    index = (*p.pc - block->address) / 4;
  else if (!p.pc && block)
    index = find_faulting_index(*block, p);
  if (!index && block && p.kind == FaultKind::UnalignedRead)
    if (std::optional<uint32_t> jump = misaligned_jump(*block)) {
      fault_.pc = block->address + 4 * *jump; // the block ran in full
      pending_fault_.reset();
      return;
    }
  if (index) {
    fault_.pc = block->address + 4 * *index;
    fault_.in_delay_slot =
        *index > 0 &&
        mips::has_delay_slot(mips::decode(block->words[*index - 1]));
    // The rest of the block never ran.
    cycles_ = block_start_ + block->prefix[*index] + block_stall_;
    instructions_ -= block->instructions - *index;
  } else if (p.pc) {
    fault_.pc = *p.pc;
  } else {
    fault_.pc = block ? block->address : pc();
    fault_.pc_exact = false;
  }
  pending_fault_.reset();
}

StopReason UnicornCpu::run(uint64_t cycle_limit) {
  limit_ = cycle_limit;
  ++slice_;
  if (parked_ && cycles_ >= cycle_limit && use_fiber()) {
    // A slice that ends before the parked block may start: resuming would
    // only park again (enter_block's loop), so skip both fiber switches.
    stopped_at_limit_ = true;
    return StopReason::Limit;
  }
  stopped_at_limit_ = false;
  if (use_fiber())
    return run_on_fiber();
  apply_debug_hooks();
  uint32_t start = pc();
  in_run_ = true;
  uc_err err = uc_emu_start(uc_, start, kNeverReached, 0, 0);
  in_run_ = false;
  return finish_run(err);
}

// Why a uc_emu_start ended.
StopReason UnicornCpu::finish_run(uc_err err) {
  if (pending_fault_) {
    finish_fault();
    return StopReason::Fault;
  }
  if (halted_)
    return StopReason::Halt;
  if (err != UC_ERR_OK) {
    pending_fault_ = PendingFault{FaultKind::IllegalInstruction, false, 0,
                                  uc_strerror(err), std::nullopt};
    finish_fault();
    return StopReason::Fault;
  }
  if (stopped_at_limit_ || !options_.accounting)
    return StopReason::Limit;
  if (const BlockInfo *block = current_block(); block && block->ends_in_wait)
    return StopReason::Sleep;
  return StopReason::Limit;
}

CpuRegisters UnicornCpu::registers() const {
  CpuRegisters r;
  for (int i = 0; i < 32; ++i)
    r.gpr[i] = read_reg(UC_MIPS_REG_0 + i);
  r.hi = read_reg(UC_MIPS_REG_HI);
  r.lo = read_reg(UC_MIPS_REG_LO);
  r.pc = pc();
  return r;
}

bool UnicornCpu::read_memory(uint32_t addr, void *out, size_t len) const {
  for (const auto &r : ram_regions_)
    if (addr - r.base < r.size && len <= r.base + r.size - addr)
      return uc_mem_read(uc_, addr, out, len) == UC_ERR_OK;
  return false; // device registers are not read behind the firmware's back
}

void UnicornCpu::flush_code_cache() {
  settle();
  blocks_.clear();
  recent_.fill(nullptr);
  hot_.clear();
  code_ranges_.clear();
  // Flushing translated blocks resets the whole translation region, which is
  // costly: only do it when something was translated.
  if (block_size_)
    uc_ctl_flush_tlb(uc_); // flushes translated blocks (misnamed in 2.0.1)
  block_size_ = 0;
}

// Adds [begin, end) to the translated ranges, merging neighbours.
void UnicornCpu::note_code(uint64_t begin, uint64_t end) {
  auto it = code_ranges_.upper_bound(begin);
  if (it != code_ranges_.begin() && std::prev(it)->second >= begin) {
    --it;
    begin = it->first;
    end = std::max(end, it->second);
    it = code_ranges_.erase(it);
  }
  while (it != code_ranges_.end() && it->first <= end) {
    end = std::max(end, it->second);
    it = code_ranges_.erase(it);
  }
  code_ranges_.emplace(begin, end);
}

// Removes [begin, end) from the translated ranges.
void UnicornCpu::forget_code(uint64_t begin, uint64_t end) {
  auto it = code_ranges_.lower_bound(begin);
  if (it != code_ranges_.begin() && std::prev(it)->second > begin)
    --it;
  while (it != code_ranges_.end() && it->first < end) {
    uint64_t first = it->first, last = it->second;
    it = code_ranges_.erase(it);
    if (first < begin)
      code_ranges_.emplace(first, begin);
    if (last > end) {
      code_ranges_.emplace(end, last);
      break;
    }
  }
}

void UnicornCpu::code_written(uint32_t addr, uint32_t len) {
  const uint64_t begin = addr, end = uint64_t(addr) + len;
  auto it = code_ranges_.lower_bound(end); // first range starting at or past
  if (len == 0 || it == code_ranges_.begin() || std::prev(it)->second <= begin)
    return; // no range starts before `end` and reaches past `begin`
  drop_code(begin, end);
}

// Drops every block with code in [begin, end): our costs and Unicorn's
// translation. A parked run is stopped first, since its next block may be
// one of them; a run inside a device access ends at the next block.
void UnicornCpu::drop_code(uint64_t begin, uint64_t end) {
  settle();
  if (in_run_)
    request_stop();
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    uint64_t first = it->first, last = first + it->second->size;
    if (first < end && begin < last) {
      if (uint32_t index = uint32_t(first - hot_base_) / 4; index < hot_.size())
        hot_[index] = HotCost{};
      forget_recent(it->second.get());
      it = blocks_.erase(it);
    } else {
      ++it;
    }
  }
  // Addresses as 64-bit values: uc_ctl reads them with va_arg(uint64_t).
  check(uc_ctl_remove_cache(uc_, begin, end),
        "uc_ctl_remove_cache(" + hex(begin) + ", " + hex(end) + ")");
  forget_code(begin, end);
}

} // namespace

const char *fault_name(FaultKind kind) {
  switch (kind) {
  case FaultKind::UnmappedRead:
    return "read from unmapped address";
  case FaultKind::UnmappedWrite:
    return "write to unmapped address";
  case FaultKind::UnmappedFetch:
    return "instruction fetch from unmapped address";
  case FaultKind::ReadOnlyWrite:
    return "write to read-only memory";
  case FaultKind::UnalignedRead:
    return "unaligned read";
  case FaultKind::UnalignedWrite:
    return "unaligned write";
  case FaultKind::MisalignedJump:
    return "jump to a misaligned address";
  case FaultKind::IllegalInstruction:
    return "illegal instruction";
  case FaultKind::NoFpu:
    return "floating-point instruction (the core has no FPU)";
  case FaultKind::Break:
    return "break instruction";
  case FaultKind::Syscall:
    return "syscall instruction";
  case FaultKind::Trap:
    return "trap instruction";
  case FaultKind::Overflow:
    return "integer overflow trap";
  case FaultKind::BusError:
    return "bus error";
  case FaultKind::Watchdog:
    return "watchdog: no progress";
  }
  return "fault";
}

std::unique_ptr<Cpu> make_unicorn_cpu(CpuBus &bus, const CpuOptions &options) {
  return std::make_unique<UnicornCpu>(bus, options);
}

RawRunResult raw_unicorn_run(const std::vector<RawRunRegion> &regions,
                             uint32_t entry, uint32_t stop_at) {
  RawRunResult result;
  uc_engine *uc = open_engine();
  // Host-backed memory, as the emulator maps it, so both runs compare like
  // with like.
  std::vector<std::vector<uint8_t>> memory;
  for (const auto &r : regions) {
    memory.emplace_back(r.size, 0);
    if (r.contents)
      std::memcpy(memory.back().data(), r.contents, r.size);
    if (uc_err err = uc_mem_map_ptr(uc, r.base, r.size, UC_PROT_ALL,
                                    memory.back().data());
        err != UC_ERR_OK) {
      result.error = unicorn_failure(
          "uc_mem_map_ptr(" + range_text(r.base, r.size) + ")", err);
      uc_close(uc);
      return result;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  uc_err err = uc_emu_start(uc, entry, stop_at, 0, 0);
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  uint32_t pc = 0;
  uc_reg_read(uc, UC_MIPS_REG_PC, &pc);
  uc_reg_read(uc, UC_MIPS_REG_A0, &result.a0);
  result.ok = err == UC_ERR_OK && pc == stop_at;
  if (!result.ok)
    result.error =
        err != UC_ERR_OK ? uc_strerror(err) : "did not reach the stop address";
  uc_close(uc);
  return result;
}

} // namespace nicemu
