// Registers and memory: g, G, p, P, m, M, X.
#include "gdb/mips_tdesc.hpp"
#include "gdb/stub.hpp"
#include "gdb/stub_util.hpp"

#include <algorithm>
#include <vector>

namespace nicemu::gdb {

Stub::Reply Stub::read_registers() {
  ThreadId thread = general_thread();
  std::string r;
  r.reserve(size_t(mips::kRegisterCount) * 8);
  for (unsigned regno = 0; regno < mips::kRegisterCount; ++regno) {
    uint32_t value = 0;
    if (target_.read_register(thread, regno, value))
      append_le32(r, value);
    else
      r += "xxxxxxxx"; // unavailable
  }
  return r;
}

Stub::Reply Stub::write_registers(std::string_view hex) {
  size_t count = hex.size() / 8;
  if (hex.size() % 8 || count > mips::kRegisterCount)
    return kMalformed;
  std::vector<uint32_t> values(count);
  std::vector<bool> given(count, true);
  for (size_t i = 0; i < count; ++i) {
    std::string_view field = hex.substr(i * 8, 8);
    if (field == "xxxxxxxx")
      given[i] = false;
    else if (!parse_le32(field, values[i]))
      return kMalformed;
  }
  ThreadId thread = general_thread();
  bool refused = false;
  for (unsigned regno = 0; regno < count; ++regno) {
    uint32_t old = 0;
    // GDB sends every register back; unavailable ones cannot be written.
    if (given[regno] && !target_.write_register(thread, regno, values[regno]))
      refused |= target_.read_register(thread, regno, old);
  }
  return refused ? kRefused : kOk;
}

Stub::Reply Stub::read_register(std::string_view args) {
  uint64_t regno = 0;
  if (!parse_hex(args, regno))
    return kMalformed;
  if (regno >= mips::kRegisterCount)
    return kRefused;
  uint32_t value = 0;
  if (!target_.read_register(general_thread(), unsigned(regno), value))
    return "xxxxxxxx";
  std::string r;
  append_le32(r, value);
  return r;
}

Stub::Reply Stub::write_register(std::string_view args) {
  std::string_view n, v;
  uint64_t regno = 0;
  uint32_t value = 0;
  if (!split(args, '=', n, v) || !parse_hex(n, regno) || !parse_le32(v, value))
    return kMalformed;
  if (regno >= mips::kRegisterCount ||
      !target_.write_register(general_thread(), unsigned(regno), value))
    return kRefused;
  return kOk;
}

Stub::Reply Stub::read_memory(std::string_view args) {
  uint32_t addr = 0;
  uint64_t len = 0;
  if (!parse_range(args, addr, len))
    return kMalformed;
  // Shorter replies are allowed: GDB asks again for the rest.
  len = std::min({len, uint64_t(kMaxMemoryRead), kAddressSpace - addr});
  ThreadId thread = general_thread();
  std::vector<uint8_t> buf(len);
  if (len && !target_.read_memory(thread, addr, buf)) {
    // Send what can be read: search the longest readable prefix (mapped
    // regions are contiguous, so prefixes of a readable one are readable).
    size_t good = 0, bad = len;
    while (bad - good > 1) {
      size_t mid = good + (bad - good) / 2;
      if (target_.read_memory(thread, addr, std::span(buf).first(mid)))
        good = mid;
      else
        bad = mid;
    }
    if (good == 0)
      return kBadMemory;
    buf.resize(good);
    if (!target_.read_memory(thread, addr, buf))
      return kBadMemory;
  }
  std::string r;
  append_hex(r, buf);
  return r;
}

Stub::Reply Stub::write_memory(std::string_view args, bool binary) {
  std::string_view range, data;
  uint32_t addr = 0;
  uint64_t len = 0;
  std::vector<uint8_t> bytes;
  if (!split(args, ':', range, data) || !parse_range(range, addr, len))
    return kMalformed;
  bool decoded =
      binary ? unescape_binary(data, bytes) : hex_decode(data, bytes);
  if (!decoded || bytes.size() != len)
    return kMalformed;
  if (addr + len > kAddressSpace)
    return kBadMemory;
  // A zero length is GDB probing for X support.
  if (len && !target_.write_memory(general_thread(), addr, bytes))
    return kBadMemory;
  return kOk;
}

} // namespace nicemu::gdb
