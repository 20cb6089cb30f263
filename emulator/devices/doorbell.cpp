#include "devices/doorbell.hpp"

#include "nicemu/error.hpp"
#include "nicemu/model.hpp"
#include "nicemu/regs.h"
#include "sim/state_archive.hpp"

#include <cmath>
#include <cstring>
#include <string>

namespace nicemu {

DoorbellDevice::DoorbellDevice(DeviceHost &host, uint32_t fifos, uint32_t depth)
    : Device(RegisterLayout::of("DOORBELL")), host_(host), fifos_(fifos),
      depth_(depth) {
  registers()
      .on_read(NICEMU_DOORBELL_NONEMPTY,
               [this] {
                 uint32_t bits = 0;
                 for (uint32_t i = 0; i < fifos_.size(); ++i)
                   if (!fifos_[i].entries.empty())
                     bits |= 1u << i;
                 return bits;
               })
      .constant(NICEMU_DOORBELL_FIFOS, fifos)
      .constant(NICEMU_DOORBELL_DEPTH, depth)
      .bind(NICEMU_DOORBELL_SELECT, select_)
      .on_read(NICEMU_DOORBELL_COUNT, [this] { return count(select_); })
      .on_read(NICEMU_DOORBELL_POP, [this] { return pop(); })
      .bind(NICEMU_DOORBELL_SOURCE, source_)
      // The FIFOs change only when the host rings or the core pops.
      .stable_read(NICEMU_DOORBELL_NONEMPTY)
      .stable_read(NICEMU_DOORBELL_COUNT);
}

std::unique_ptr<DoorbellDevice> DoorbellDevice::from_model(DeviceHost &host,
                                                           const Model &model) {
  // An integer in [low, high], or an error naming the model and the key.
  auto whole = [&](const char *key, double low, double high) {
    double v = model.param(key); // throws when the key is missing
    if (v != std::floor(v) || v < low || v > high)
      throw Error(model.source.string() + ": model \"" + model.name +
                  "\": [params.doorbell] " + (std::strchr(key, '.') + 1) +
                  " must be a whole number from " +
                  std::to_string(uint64_t(low)) + " to " +
                  std::to_string(uint64_t(high)));
    return uint32_t(v);
  };
  uint32_t fifos = whole("doorbell.fifos", 1, kMaxFifos);
  uint32_t depth = whole("doorbell.depth", 1, kMaxDepth);
  if (model.params.count("doorbell.entry_bits"))
    whole("doorbell.entry_bits", 32, 32); // entries are 32-bit words
  return std::make_unique<DoorbellDevice>(host, fifos, depth);
}

std::vector<ModelKey> DoorbellDevice::model_keys() {
  const char *me = "doorbell bank";
  return {{"params.doorbell.fifos", KeyUse::Required, me,
           whole_number(1, kMaxFifos)},
          {"params.doorbell.depth", KeyUse::Required, me,
           whole_number(1, kMaxDepth)},
          {"params.doorbell.entry_bits", KeyUse::Optional, me,
           whole_number(32, 32)},
          // How the VI provider shares the FIFOs out (docs/via.md).
          {"params.doorbell.reserved", KeyUse::Reference, me},
          {"params.doorbell.fifos_per_vi", KeyUse::Reference, me},
          {"params.doorbell.max_vis", KeyUse::Reference, me}};
}

uint32_t DoorbellDevice::count(uint32_t fifo) const {
  return fifo < fifos_.size() ? uint32_t(fifos_[fifo].entries.size()) : 0;
}

bool DoorbellDevice::push(uint32_t fifo, uint32_t value, uint32_t source) {
  if (fifo >= fifos_.size() || fifos_[fifo].entries.size() >= depth_)
    return false;
  std::deque<Entry> &entries = fifos_[fifo].entries;
  entries.push_back({value, source});
  if (entries.size() == 1) // empty -> non-empty
    host_.raise_irq(NICEMU_IRQ_DOORBELL);
  return true;
}

void DoorbellDevice::save_state(StateWriter &out) const {
  out.section("doorbell");
  out.fields(select_, source_);
  for (const Fifo &f : fifos_) {
    if (!f.waiters.empty())
      throw Error("checkpoint: a host's doorbell write waits for space in "
                  "DOORBELL FIFO " +
                  std::to_string(&f - fifos_.data()) +
                  ": such a moment cannot be saved yet");
    out.u64(f.entries.size());
    for (const Entry &e : f.entries)
      out.fields(e.value, e.source);
  }
}

void DoorbellDevice::load_state(StateReader &in) {
  in.section("doorbell");
  in.fields(select_, source_);
  for (Fifo &f : fifos_) {
    f.entries.clear();
    f.waiters.clear();
    for (uint64_t n = in.count(depth_); n--;) {
      Entry e{};
      in.fields(e.value, e.source);
      f.entries.push_back(e);
    }
  }
}

void DoorbellDevice::when_space(uint32_t fifo, SpaceWaiter waiter) {
  if (fifo < fifos_.size())
    fifos_[fifo].waiters.push_back(std::move(waiter));
}

uint32_t DoorbellDevice::pop() {
  if (select_ >= fifos_.size() || fifos_[select_].entries.empty())
    return 0;
  Fifo &f = fifos_[select_];
  uint32_t value = f.entries.front().value;
  source_ = f.entries.front().source;
  f.entries.pop_front();
  // A held write gets the entry just freed, at the time of this pop.
  if (!f.waiters.empty()) {
    SpaceWaiter waiter = std::move(f.waiters.front());
    f.waiters.pop_front();
    waiter(host_.now());
  }
  return value;
}

} // namespace nicemu
