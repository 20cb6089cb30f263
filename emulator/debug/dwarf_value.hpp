// Values of firmware variables as GDB prints them, from their DWARF type
// (libdw) and their bytes: integers, characters, booleans, enumerators,
// pointers (with the string a char pointer points to, the symbol a code
// pointer names), structs, unions, classes and arrays (repeats collapsed).
#pragma once

#include "debug/dwarf_location.hpp"

#include <elfutils/libdw.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nicemu {

struct ValueFormat {
  const FrameAccess *frame = nullptr; // to read the strings pointers name
  // " <symbol+off>" for a code address, or "" (may be empty).
  std::function<std::string(uint32_t)> symbol;
  bool hex = false; // print/x: integers in hexadecimal
};

// The type `die`'s DW_AT_type refers to, typedefs, const and volatile
// peeled off when `peel`; nullopt for none (void).
std::optional<Dwarf_Die> type_of(Dwarf_Die &die, bool peel = false);
// The size of an object of `type` in bytes (0 if unknown).
uint32_t size_of(Dwarf_Die type);
// A struct, class or union member named `name` (also in base classes):
// its offset in bytes and its DIE. False if there is none.
bool find_member(Dwarf_Die type, const std::string &name, uint32_t &offset,
                 Dwarf_Die &member);

// The value of the bit field `member` of the object `object` (the bytes
// of the whole struct), as the bytes of an object of the member's type.
std::vector<uint8_t> bit_field_bytes(Dwarf_Die member,
                                     std::span<const uint8_t> object);

// The lengths of an array type's dimensions, outermost first (0: not
// known).
std::vector<uint64_t> array_dimensions(Dwarf_Die array);

// The `bytes` of an object of `type`, printed.
std::string format_value(Dwarf_Die type, std::span<const uint8_t> bytes,
                         const ValueFormat &format);
// The `bytes` of `array[i]...` with `dim` dimensions indexed (a row of a
// two-dimensional array: 1), printed.
std::string format_subarray(Dwarf_Die array, size_t dim,
                            std::span<const uint8_t> bytes,
                            const ValueFormat &format);

} // namespace nicemu
