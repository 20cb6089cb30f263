// What the stub's source files share: error replies and field parsers.
// Internal to the gdb component.
#pragma once

#include "gdb/packet.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace nicemu::gdb {

// GDB does not interpret the numbers; they help reading a protocol log.
inline const std::string kMalformed = "E01";
inline const std::string kNoThread = "E02";
inline const std::string kBadMemory = "E14";
inline const std::string kRefused = "E22";
inline const std::string kOk = "OK";

constexpr uint64_t kAddressSpace = uint64_t(1) << 32;

// Splits `s` at the first `sep`; false if there is none.
inline bool split(std::string_view s, char sep, std::string_view &head,
                  std::string_view &tail) {
  size_t at = s.find(sep);
  if (at == std::string_view::npos)
    return false;
  head = s.substr(0, at);
  tail = s.substr(at + 1);
  return true;
}

// "addr,length" with a 32-bit address and a length that fits in it.
inline bool parse_range(std::string_view s, uint32_t &addr, uint64_t &len) {
  std::string_view a, l;
  return split(s, ',', a, l) && parse_address(a, addr) && parse_hex(l, len) &&
         len <= kAddressSpace;
}

// Two hex digits (signals, exit codes, register numbers in stop replies).
inline std::string hex_byte(unsigned v) {
  std::string s = hex_number(v & 0xff);
  return s.size() == 1 ? "0" + s : s;
}

} // namespace nicemu::gdb
