// A node in a checkpoint file (Node::save_state, Node::load_state).
#include "node/node.hpp"

#include "sim/state_archive.hpp"

#include <algorithm>
#include <cstring>

namespace nicemu {

namespace {

constexpr size_t kPage = 4096;

template <class State, class Archive> void cpu_fields(State &s, Archive &a) {
  a.fields(s.registers.gpr, s.registers.hi, s.registers.lo, s.registers.pc,
           s.cycles, s.instructions, s.wait_cycles, s.fallthrough,
           s.pending_penalty, s.skipped.cycles, s.skipped.instructions);
}

bool all_zero(const uint8_t *p, size_t n) {
  return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}

} // namespace

void Node::save_state(StateWriter &out) const {
  out.section("node " + std::to_string(config_.node));
  out.fields(uint8_t(state_), exit_code_, watchdog_period_, last_progress_,
             sleep_cycles_, console_line_);
  out.fields(uint32_t(fault_.kind), fault_.pc, fault_.pc_exact,
             fault_.in_delay_slot, fault_.has_address, fault_.address,
             fault_.detail);
  const Cpu::State cpu = cpu_->checkpoint_state();
  cpu_fields(cpu, out);
  // Memories as their pages that are not all zero: a card's memory is
  // mostly empty.
  for (const Memory &m : memories_) {
    out.section(m.region.name);
    if (!m.region.writable)
      continue; // as the image left it
    std::vector<uint32_t> pages;
    for (size_t p = 0; p * kPage < m.bytes.size(); ++p)
      if (!all_zero(m.bytes.data() + p * kPage, kPage))
        pages.push_back(uint32_t(p));
    out.pods(pages);
    for (uint32_t p : pages)
      out.raw(m.bytes.data() + size_t(p) * kPage, kPage);
  }
  for (const auto &d : devices_)
    d->save_state(out);
}

void Node::load_state(StateReader &in) {
  in.section("node " + std::to_string(config_.node));
  uint8_t state = 0;
  in.fields(state, exit_code_, watchdog_period_, last_progress_, sleep_cycles_,
            console_line_);
  if (state > uint8_t(NodeState::Faulted))
    in.fail("node " + std::to_string(config_.node) + " in state " +
            std::to_string(state));
  uint32_t kind = 0;
  in.fields(kind, fault_.pc, fault_.pc_exact, fault_.in_delay_slot,
            fault_.has_address, fault_.address, fault_.detail);
  if (kind > uint32_t(FaultKind::Watchdog))
    in.fail("a fault of kind " + std::to_string(kind));
  fault_.kind = FaultKind(kind);
  Cpu::State cpu;
  cpu_fields(cpu, in);
  for (Memory &m : memories_) {
    in.section(m.region.name);
    if (!m.region.writable)
      continue;
    auto pages = in.pods<uint32_t>(m.bytes.size() / kPage);
    m.bytes.clear();
    for (uint32_t p : pages) {
      if (p >= m.bytes.size() / kPage)
        in.fail("page " + std::to_string(p) + " is past the end of " +
                m.region.name);
      in.raw(m.bytes.data() + size_t(p) * kPage, kPage);
    }
  }
  // After the memories: the core drops code it translated from the old.
  cpu_->restore_state(cpu);
  for (auto &d : devices_)
    d->load_state(in);
  set_state(NodeState(state));
}

} // namespace nicemu
