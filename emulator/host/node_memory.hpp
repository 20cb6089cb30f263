// The host memory a card sees when several processes share it: each
// process's arena in its own bus window (channel::arena_bus_base), as the
// distinct physical pages of distinct processes. An address belongs to at
// most one process and reaches only what that process registered.
#pragma once

#include "devices/host_memory.hpp"
#include "nicemu/channel_layout.hpp"

#include <vector>

namespace nicemu {

class NodeHostMemory final : public HostMemory {
public:
  // `processes[p]` is the node's process p (its place on the node).
  explicit NodeHostMemory(std::vector<HostMemory *> processes)
      : processes_(std::move(processes)) {}

  bool registered(uint64_t addr, size_t len) const override {
    const HostMemory *p = owner(addr);
    return p && p->registered(addr, len);
  }
  bool read(uint64_t addr, void *out, size_t len) const override {
    const HostMemory *p = owner(addr);
    return p && p->read(addr, out, len);
  }
  bool write(uint64_t addr, const void *in, size_t len) override {
    HostMemory *p = owner(addr);
    return p && p->write(addr, in, len);
  }

private:
  HostMemory *owner(uint64_t addr) const {
    if (addr < channel::kArenaBusBase)
      return nullptr;
    uint64_t p = (addr - channel::kArenaBusBase) / channel::kArenaBusStride;
    return p < processes_.size() ? processes_[p] : nullptr;
  }

  std::vector<HostMemory *> processes_;
};

} // namespace nicemu
