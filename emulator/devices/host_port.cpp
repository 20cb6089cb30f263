#include "devices/host_port.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>

namespace nicemu {

void HostPort::map(uint64_t base, uint64_t size,
                   std::unique_ptr<HostWindow> window) {
  auto at =
      std::lower_bound(windows_.begin(), windows_.end(), base,
                       [](const Mapped &m, uint64_t b) { return m.base < b; });
  assert(window && size > 0);
  assert((at == windows_.end() || base + size <= at->base) &&
         (at == windows_.begin() ||
          std::prev(at)->base + std::prev(at)->size <= base) &&
         "host windows overlap");
  windows_.insert(at, Mapped{base, size, std::move(window)});
}

// Windows are few (two to a handful): a binary search over their bases.
const HostPort::Mapped *HostPort::find(uint64_t addr) const {
  auto after =
      std::upper_bound(windows_.begin(), windows_.end(), addr,
                       [](uint64_t a, const Mapped &m) { return a < m.base; });
  if (after == windows_.begin())
    return nullptr;
  const Mapped &m = *std::prev(after);
  return addr - m.base < m.size ? &m : nullptr;
}

namespace {

HostBusResult refused(uint64_t addr, Time at) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "no card window at host address 0x%llx",
                static_cast<unsigned long long>(addr));
  return {false, 0, at, buf};
}

} // namespace

void HostPort::read(uint64_t addr, unsigned size, Time at,
                    const HostBusCompletion &done) {
  const Mapped *m = find(addr);
  if (!m || addr + size > m->base + m->size)
    return (void)done(refused(addr, at));
  m->window->read(addr - m->base, size, at, done);
}

void HostPort::write(uint64_t addr, unsigned size, uint64_t value, Time at,
                     HostBusCompletion done) {
  const Mapped *m = find(addr);
  if (!m || addr + size > m->base + m->size)
    return (void)done(refused(addr, at));
  m->window->write(addr - m->base, size, value, at, std::move(done));
}

void HostPort::write_block(uint64_t addr, std::span<const uint8_t> bytes,
                           Time at, const HostBusCompletion &done) {
  const Mapped *m = find(addr);
  if (!m || bytes.empty() || addr + bytes.size() > m->base + m->size)
    return (void)done(refused(addr, at));
  m->window->write_block(addr - m->base, bytes, at, done);
}

void HostPort::read_block(uint64_t addr, std::span<uint8_t> out, Time at,
                          const HostBusCompletion &done) {
  const Mapped *m = find(addr);
  if (!m || out.empty() || addr + out.size() > m->base + m->size)
    return (void)done(refused(addr, at));
  m->window->read_block(addr - m->base, out, at, done);
}

void HostWindow::read_block(uint64_t, std::span<uint8_t>, Time at,
                            const HostBusCompletion &done) {
  done({false, 0, at, "this window takes no read bursts"});
}

void HostWindow::write_block(uint64_t, std::span<const uint8_t>, Time at,
                             const HostBusCompletion &done) {
  done({false, 0, at, "this window takes no write bursts"});
}

const char *HostPort::call_name(uint64_t addr, bool write) const {
  const Mapped *m = find(addr);
  return m ? m->window->call_name(write) : write ? "Write" : "Read";
}

Time HostPort::posted_write_cost(uint64_t addr) const {
  const Mapped *m = find(addr);
  return m ? m->window->posted_write_cost() : 0;
}

} // namespace nicemu
