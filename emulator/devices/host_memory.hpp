// The host's memory as a NIC sees it: bus addresses, reachable only inside
// regions the host registered (pinned). Anything else is a protection error,
// never a silent access.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nicemu {

class HostMemory {
public:
  virtual ~HostMemory() = default;
  // True if [addr, addr + len) lies inside one registered region.
  virtual bool registered(uint64_t addr, size_t len) const = 0;
  // Copy from / to host memory; false (and nothing copied) when the range is
  // not registered.
  virtual bool read(uint64_t addr, void *out, size_t len) const = 0;
  virtual bool write(uint64_t addr, const void *in, size_t len) = 0;
};

} // namespace nicemu
