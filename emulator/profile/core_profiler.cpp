#include "profile/core_profiler.hpp"

#include "core/mips_decode.hpp"

#include <algorithm>

namespace nicemu {

FunctionMap::FunctionMap(const Image &image) {
  std::vector<const ImageSymbol *> symbols;
  for (const ImageSymbol &s : image.symbols)
    if (s.kind == ImageSymbol::kFunction)
      symbols.push_back(&s);
  // Image symbols are sorted by address; of aliases, the first one names it.
  for (size_t i = 0; i < symbols.size(); ++i) {
    const ImageSymbol &s = *symbols[i];
    if (!functions_.empty() && functions_.back().lo == s.address) {
      functions_.back().measured |= s.handler();
      continue;
    }
    uint32_t next = i + 1 < symbols.size() ? symbols[i + 1]->address
                                           : s.address + std::max(s.size, 4u);
    uint32_t hi = s.size ? s.address + s.size : next;
    if (!functions_.empty() && functions_.back().hi > s.address)
      functions_.back().hi = s.address;
    functions_.push_back({s.address, std::max(hi, s.address + 4),
                          short_function_name(s.name), s.name, s.handler()});
  }
}

uint32_t FunctionMap::index_at(uint32_t addr) const {
  auto it =
      std::upper_bound(functions_.begin(), functions_.end(), addr,
                       [](uint32_t a, const Function &f) { return a < f.lo; });
  if (it == functions_.begin())
    return kNone;
  --it;
  return addr < it->hi ? uint32_t(it - functions_.begin()) : kNone;
}

uint32_t FunctionMap::measure(const std::string &name) {
  for (uint32_t i = 0; i < functions_.size(); ++i) {
    Function &f = functions_[i];
    if (name == f.raw || name == f.name || name == demangle_symbol(f.raw)) {
      f.measured = true;
      return i;
    }
  }
  return kNone;
}

CoreProfiler::CoreProfiler(const FunctionMap &functions, const Cpu &cpu,
                           const ClockDomain &clock, uint32_t node,
                           RunEvents *events)
    : map_(functions), cpu_(cpu), clock_(clock), node_(node), events_(events),
      profiles_(functions.functions().size()),
      open_(functions.functions().size(), 0) {}

CoreProfiler::Block &CoreProfiler::block(uint32_t addr, uint32_t size) {
  auto [it, added] = blocks_.try_emplace(uint64_t(addr) << 32 | size);
  Block &b = it->second;
  if (added) {
    b.addr = addr;
    b.size = size;
    b.function = map_.index_at(addr);
    // The control transfer of a block is its second-to-last instruction
    // (the last is the delay slot).
    uint32_t word = 0;
    if (size >= 8 && cpu_.read_memory(addr + size - 8, &word, 4)) {
      mips::Insn insn = mips::decode(word);
      if (mips::has_delay_slot(insn)) {
        b.ends_in_call = insn.dest != 0;
        b.ends_in_jump = insn.dest == 0;
      }
    }
  }
  return b;
}

void CoreProfiler::push(uint32_t function, uint32_t ret, uint64_t start) {
  // Calls that never return (a loop that jumps out of them) must not grow
  // the stack without bound: forget the oldest.
  constexpr size_t kMaxDepth = 4096;
  if (stack_.size() == kMaxDepth) {
    if (stack_.front().function != FunctionMap::kNone)
      --open_[stack_.front().function];
    stack_.erase(stack_.begin());
  }
  stack_.push_back({function, ret, start, stall_now(), sleep_total_});
  if (function != FunctionMap::kNone) {
    ++profiles_[function].entries;
    ++open_[function];
  }
}

void CoreProfiler::pop(uint64_t at) {
  Frame f = stack_.back();
  stack_.pop_back();
  if (f.function == FunctionMap::kNone)
    return;
  FunctionProfile &p = profiles_[f.function];
  uint64_t cycles = at - f.start;
  uint64_t slept = sleep_total_ - f.sleep_at_start;
  if (--open_[f.function] == 0) // recursion: count the outermost call only
    p.inclusive += cycles - slept;
  const FunctionMap::Function &fn = map_.functions()[f.function];
  if (fn.measured) {
    Time start = clock_.time_of(f.start);
    p.calls.push_back({cycles, stall_now() - f.stall_at_start, start});
    if (events_)
      events_->handler_call(node_, fn.name, start, clock_.time_of(at));
  }
}

// A block at `addr` returns from the innermost open call expecting it, and
// from every tail call chained to that one (they share its return address).
bool CoreProfiler::returns_to(uint32_t addr, uint64_t at) {
  constexpr size_t kSearch = 16; // calls left without return (longjmp...)
  size_t depth = std::min(stack_.size(), kSearch);
  for (size_t i = 1; i <= depth; ++i) {
    if (stack_[stack_.size() - i].ret != addr)
      continue;
    for (size_t k = 0; k < i; ++k)
      pop(at);
    while (!stack_.empty() && stack_.back().ret == addr)
      pop(at);
    return true;
  }
  return false;
}

// The previous block ran from its start to `end`, less any sleep.
void CoreProfiler::charge_previous(uint64_t end) {
  uint64_t spent = end - prev_start_ - sleep_since_prev_;
  prev_->executions++;
  prev_->cycles += spent;
  if (prev_->function != FunctionMap::kNone)
    profiles_[prev_->function].self += spent;
  else
    outside_ += spent;
}

void CoreProfiler::block_entered(uint32_t addr, uint32_t size, uint64_t start) {
  bool called = false, tail_called = false;
  if (prev_) {
    charge_previous(start);
    called = prev_->ends_in_call;
    tail_called = prev_->ends_in_jump;
  }
  sleep_since_prev_ = 0;
  Block &b = block(addr, size);
  if (interrupt_pending_) {
    interrupt_pending_ = false;
    // The interrupt came between the call and the callee's first block:
    // the call starts when the handler returns to it.
    push(b.function, interrupt_epc_, interrupt_at_);
    stack_.back().resumes_call = called;
    stack_.back().resumed_ret = prev_ ? prev_->addr + prev_->size : 0;
  } else {
    uint32_t resumed_ret = 0;
    bool resumes = false;
    if (!stack_.empty() && stack_.back().ret == addr) {
      resumes = stack_.back().resumes_call;
      resumed_ret = stack_.back().resumed_ret;
    }
    if (returns_to(addr, start)) {
      if (resumes)
        push(b.function, resumed_ret, start);
    } else if (called) {
      push(b.function, prev_->addr + prev_->size, start);
    } else if (tail_called && b.function != FunctionMap::kNone &&
               map_.functions()[b.function].lo == addr &&
               b.function != prev_->function) {
      // Returns where its caller would have: share the caller's return.
      push(b.function, stack_.empty() ? 0 : stack_.back().ret, start);
    }
  }
  prev_ = &b;
  prev_start_ = start;
}

void CoreProfiler::interrupt_taken(uint32_t epc, uint64_t at) {
  interrupt_pending_ = true;
  interrupt_epc_ = epc;
  interrupt_at_ = at;
}

void CoreProfiler::slept(uint64_t cycles) {
  sleep_total_ += cycles;
  sleep_since_prev_ += cycles;
}

void CoreProfiler::finish(uint64_t end) {
  if (prev_ && end >= prev_start_ + sleep_since_prev_)
    charge_previous(end);
  prev_ = nullptr;
  // Calls still open (main, the polling loop) count their inclusive time
  // but are not complete calls.
  while (!stack_.empty()) {
    Frame f = stack_.back();
    stack_.pop_back();
    if (f.function != FunctionMap::kNone && --open_[f.function] == 0)
      profiles_[f.function].inclusive +=
          end - f.start - (sleep_total_ - f.sleep_at_start);
  }
}

std::vector<BlockProfile> CoreProfiler::blocks() const {
  std::vector<BlockProfile> out;
  out.reserve(blocks_.size());
  for (const auto &[key, b] : blocks_)
    if (b.executions)
      out.push_back({b.addr, b.size, b.executions, b.cycles});
  std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
    return a.addr != b.addr ? a.addr < b.addr : a.size < b.size;
  });
  return out;
}

CoreProfile CoreProfiler::result(Time end_time) const {
  return {node_, profiles_, blocks(), sleep_total_, outside_, end_time};
}

} // namespace nicemu
