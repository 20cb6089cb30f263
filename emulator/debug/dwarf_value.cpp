#include "debug/dwarf_value.hpp"

#include <dwarf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace nicemu {

namespace {

// As GDB: at most this many elements of an array or characters of a
// string, and a run of this many equal elements is shown once.
constexpr size_t kPrintElements = 200;
constexpr size_t kRepeats = 10;
constexpr int kMaxDepth = 8;

uint64_t unsigned_attr(Dwarf_Die die, unsigned name, uint64_t otherwise = 0) {
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (!dwarf_attr_integrate(&die, name, &attr) ||
      dwarf_formudata(&attr, &value) != 0)
    return otherwise;
  return value;
}

uint64_t little_endian(std::span<const uint8_t> bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i)
    v |= uint64_t(bytes[i]) << (8 * i);
  return v;
}

int64_t sign_extend(uint64_t v, size_t bytes) {
  if (bytes == 0 || bytes >= 8)
    return int64_t(v);
  const unsigned bits = unsigned(bytes * 8);
  return int64_t(v << (64 - bits)) >> (64 - bits);
}

std::string hex(uint64_t v) {
  char s[24];
  std::snprintf(s, sizeof s, "0x%llx", (unsigned long long)v);
  return s;
}

// 'A', '\n', '\000' as GDB writes characters.
std::string char_literal(uint8_t c, char quote) {
  switch (c) {
  case '\n':
    return "\\n";
  case '\t':
    return "\\t";
  case '\r':
    return "\\r";
  case '\\':
    return "\\\\";
  }
  if (c == uint8_t(quote))
    return std::string("\\") + quote;
  if (c >= 0x20 && c < 0x7f)
    return std::string(1, char(c));
  char s[8];
  std::snprintf(s, sizeof s, "\\%03o", c);
  return s;
}

bool is_char_type(Dwarf_Die type) {
  if (dwarf_peel_type(&type, &type) != 0 ||
      dwarf_tag(&type) != DW_TAG_base_type || size_of(type) != 1)
    return false;
  uint64_t e = unsigned_attr(type, DW_AT_encoding);
  return e == DW_ATE_signed_char || e == DW_ATE_unsigned_char;
}

std::string quoted(std::span<const uint8_t> chars) {
  std::string s = "\"";
  for (uint8_t c : chars)
    s += char_literal(c, '"');
  return s + "\"";
}

// A char array: the text up to its first NUL, then the NULs as GDB says
// them ("hi", '\000' <repeats 13 times>).
std::string format_chars(std::span<const uint8_t> bytes) {
  size_t end = 0;
  while (end < bytes.size() && bytes[end] != 0)
    ++end;
  bool only_nuls = true;
  for (size_t i = end; i < bytes.size(); ++i)
    only_nuls = only_nuls && bytes[i] == 0;
  if (!only_nuls || end > kPrintElements)
    return quoted(bytes.first(std::min(bytes.size(), kPrintElements))) +
           (bytes.size() > kPrintElements ? "..." : "");
  const size_t nuls = end < bytes.size() ? bytes.size() - end - 1 : 0;
  std::string text = quoted(bytes.first(end));
  if (nuls >= kRepeats)
    return text + ", '\\000' <repeats " + std::to_string(nuls) + " times>";
  for (size_t i = 0; i < nuls; ++i)
    text.insert(text.size() - 1, "\\000");
  return text;
}

std::string format_base(Dwarf_Die type, std::span<const uint8_t> bytes,
                        const ValueFormat &f) {
  const uint64_t enc = unsigned_attr(type, DW_AT_encoding);
  const uint64_t raw = little_endian(bytes);
  if (f.hex)
    return hex(raw);
  switch (enc) {
  case DW_ATE_boolean:
    return raw ? "true" : "false";
  case DW_ATE_float: {
    char s[40];
    double d = 0;
    if (bytes.size() == 4) {
      float x;
      std::memcpy(&x, bytes.data(), 4);
      d = x;
    } else if (bytes.size() == 8) {
      std::memcpy(&d, bytes.data(), 8);
    }
    std::snprintf(s, sizeof s, "%.9g", d);
    return s;
  }
  case DW_ATE_signed:
    return std::to_string(sign_extend(raw, bytes.size()));
  case DW_ATE_signed_char:
    return std::to_string(sign_extend(raw, 1)) + " '" +
           char_literal(uint8_t(raw), '\'') + "'";
  case DW_ATE_unsigned_char:
    return std::to_string(raw) + " '" + char_literal(uint8_t(raw), '\'') + "'";
  }
  return std::to_string(raw);
}

std::string format_enum(Dwarf_Die type, std::span<const uint8_t> bytes,
                        const ValueFormat &f) {
  const int64_t value = sign_extend(little_endian(bytes), bytes.size());
  // Enumerators are compared in the enum's own width.
  const unsigned drop =
      bytes.empty() || bytes.size() >= 8 ? 0 : unsigned(64 - 8 * bytes.size());
  Dwarf_Die child;
  if (!f.hex && dwarf_child(&type, &child) == 0)
    do {
      Dwarf_Attribute attr;
      Dwarf_Sword v = 0;
      if (dwarf_tag(&child) == DW_TAG_enumerator &&
          dwarf_attr(&child, DW_AT_const_value, &attr) &&
          dwarf_formsdata(&attr, &v) == 0 &&
          uint64_t(v) << drop == uint64_t(value) << drop)
        return dwarf_diename(&child) ? dwarf_diename(&child) : "?";
    } while (dwarf_siblingof(&child, &child) == 0);
  return f.hex ? hex(little_endian(bytes)) : std::to_string(value);
}

std::string format_pointer(Dwarf_Die type, std::span<const uint8_t> bytes,
                           const ValueFormat &f) {
  const uint32_t p = uint32_t(little_endian(bytes));
  std::string text = hex(p);
  std::optional<Dwarf_Die> target = type_of(type, true);
  if (!target || p == 0)
    return text;
  if (dwarf_tag(&*target) == DW_TAG_subroutine_type && f.symbol)
    return text + f.symbol(p);
  if (is_char_type(*target) && f.frame) {
    std::vector<uint8_t> chars;
    uint8_t c = 0;
    while (chars.size() <= kPrintElements &&
           f.frame->mem(uint32_t(p + chars.size()), std::span(&c, 1)) && c)
      chars.push_back(c);
    if (chars.size() > kPrintElements)
      return text + " " + quoted(std::span(chars).first(kPrintElements)) +
             "...";
    return text + " " + quoted(chars);
  }
  return text;
}

std::string format_in(Dwarf_Die type, std::span<const uint8_t> bytes,
                      const ValueFormat &f, int depth);

// Where a member starts, in bits from the start of the object, and how
// many bits it has (0: a whole object of its type, not a bit field).
// DWARF 4 and later say DW_AT_data_bit_offset; clang also writes the
// older DW_AT_bit_offset, counted from the most significant bit of a
// storage unit of DW_AT_byte_size bytes (on this little-endian core, from
// the end of the unit).
void member_place(Dwarf_Die member, uint64_t &bit_offset, uint64_t &bits) {
  bits = unsigned_attr(member, DW_AT_bit_size);
  if (dwarf_hasattr(&member, DW_AT_data_bit_offset)) {
    bit_offset = unsigned_attr(member, DW_AT_data_bit_offset);
    return;
  }
  bit_offset = 8 * unsigned_attr(member, DW_AT_data_member_location);
  if (bits && dwarf_hasattr(&member, DW_AT_bit_offset)) {
    std::optional<Dwarf_Die> type = type_of(member);
    const uint64_t unit =
        8 * unsigned_attr(member, DW_AT_byte_size, type ? size_of(*type) : 4);
    bit_offset += unit - unsigned_attr(member, DW_AT_bit_offset) - bits;
  }
}

std::string format_member(Dwarf_Die member, std::span<const uint8_t> bytes,
                          const ValueFormat &f, int depth) {
  std::optional<Dwarf_Die> type = type_of(member);
  if (!type)
    return "?";
  if (dwarf_hasattr(&member, DW_AT_bit_size)) {
    std::vector<uint8_t> bits = bit_field_bytes(member, bytes);
    return format_in(*type, bits, f, depth);
  }
  uint64_t bit_offset = 0, bits = 0;
  member_place(member, bit_offset, bits);
  const uint64_t offset = bit_offset / 8, size = size_of(*type);
  if (offset + size > bytes.size())
    return "<unavailable>";
  return format_in(*type, bytes.subspan(offset, size), f, depth);
}

std::string format_struct(Dwarf_Die type, std::span<const uint8_t> bytes,
                          const ValueFormat &f, int depth) {
  std::string out;
  Dwarf_Die child;
  if (dwarf_child(&type, &child) == 0)
    do {
      const int tag = dwarf_tag(&child);
      const bool base = tag == DW_TAG_inheritance;
      if ((tag != DW_TAG_member && !base) ||
          dwarf_hasattr(&child, DW_AT_external)) // a static member
        continue;
      std::string name;
      if (base) {
        std::optional<Dwarf_Die> t = type_of(child, true);
        const char *n = t ? dwarf_diename(&*t) : nullptr;
        name = std::string("<") + (n ? n : "base") + ">";
      } else {
        const char *n = dwarf_diename(&child);
        name = n ? n : "<anonymous>";
      }
      out += (out.empty() ? "" : ", ") + name + " = " +
             format_member(child, bytes, f, depth + 1);
    } while (dwarf_siblingof(&child, &child) == 0);
  return out.empty() ? "{<No data fields>}" : "{" + out + "}";
}

} // namespace

std::vector<uint64_t> array_dimensions(Dwarf_Die array) {
  std::vector<uint64_t> dims;
  Dwarf_Die child;
  if (dwarf_child(&array, &child) == 0)
    do {
      if (dwarf_tag(&child) != DW_TAG_subrange_type)
        continue;
      if (dwarf_hasattr(&child, DW_AT_count))
        dims.push_back(unsigned_attr(child, DW_AT_count));
      else if (dwarf_hasattr(&child, DW_AT_upper_bound))
        dims.push_back(unsigned_attr(child, DW_AT_upper_bound) + 1 -
                       unsigned_attr(child, DW_AT_lower_bound));
      else
        dims.push_back(0); // flexible: no known length
    } while (dwarf_siblingof(&child, &child) == 0);
  return dims;
}

namespace {

// Elements of `dims` (from `dim` on) of `element`, equal runs collapsed.
std::string format_elements(Dwarf_Die element,
                            const std::vector<uint64_t> &dims, size_t dim,
                            std::span<const uint8_t> bytes,
                            const ValueFormat &f, int depth) {
  uint64_t inner = size_of(element);
  for (size_t d = dim + 1; d < dims.size(); ++d)
    inner *= dims[d];
  if (dim + 1 == dims.size() && is_char_type(element) && !f.hex)
    return format_chars(
        bytes.first(std::min<uint64_t>(dims[dim], bytes.size())));
  std::vector<std::string> items;
  for (uint64_t i = 0; i < dims[dim] && i < kPrintElements; ++i) {
    if ((i + 1) * inner > bytes.size())
      break;
    auto part = bytes.subspan(i * inner, inner);
    items.push_back(
        dim + 1 < dims.size()
            ? format_elements(element, dims, dim + 1, part, f, depth)
            : format_in(element, part, f, depth + 1));
  }
  std::string out;
  for (size_t i = 0; i < items.size();) {
    size_t j = i;
    while (j < items.size() && items[j] == items[i])
      ++j;
    out += out.empty() ? "" : ", ";
    if (j - i >= kRepeats) {
      out += items[i] + " <repeats " + std::to_string(j - i) + " times>";
      i = j;
    } else {
      out += items[i++];
    }
  }
  if (dims[dim] > kPrintElements)
    out += "...";
  return "{" + out + "}";
}

std::string format_in(Dwarf_Die type, std::span<const uint8_t> bytes,
                      const ValueFormat &f, int depth) {
  if (depth > kMaxDepth)
    return "{...}";
  Dwarf_Die peeled;
  if (dwarf_peel_type(&type, &peeled) != 0)
    return "<unknown type>";
  switch (dwarf_tag(&peeled)) {
  case DW_TAG_base_type:
    return format_base(peeled, bytes, f);
  case DW_TAG_enumeration_type:
    return format_enum(peeled, bytes, f);
  case DW_TAG_pointer_type:
    return format_pointer(peeled, bytes, f);
  case DW_TAG_reference_type:
  case DW_TAG_rvalue_reference_type: {
    std::optional<Dwarf_Die> target = type_of(peeled);
    const uint32_t p = uint32_t(little_endian(bytes));
    std::vector<uint8_t> b(target ? size_of(*target) : 0);
    if (!target || !f.frame || !f.frame->mem(p, b))
      return "@" + hex(p);
    return "@" + hex(p) + ": " + format_in(*target, b, f, depth + 1);
  }
  case DW_TAG_structure_type:
  case DW_TAG_class_type:
  case DW_TAG_union_type:
    return format_struct(peeled, bytes, f, depth);
  case DW_TAG_array_type: {
    std::optional<Dwarf_Die> element = type_of(peeled);
    std::vector<uint64_t> dims = array_dimensions(peeled);
    if (!element || dims.empty())
      return "<unknown array>";
    return format_elements(*element, dims, 0, bytes, f, depth);
  }
  }
  return "<unsupported type>";
}

} // namespace

std::optional<Dwarf_Die> type_of(Dwarf_Die &die, bool peel) {
  Dwarf_Attribute attr;
  Dwarf_Die type;
  if (!dwarf_attr_integrate(&die, DW_AT_type, &attr) ||
      !dwarf_formref_die(&attr, &type))
    return std::nullopt;
  if (peel && dwarf_peel_type(&type, &type) != 0)
    return std::nullopt;
  return type;
}

uint32_t size_of(Dwarf_Die type) {
  Dwarf_Die peeled;
  if (dwarf_peel_type(&type, &peeled) != 0)
    return 0;
  const int tag = dwarf_tag(&peeled);
  if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type ||
      tag == DW_TAG_rvalue_reference_type)
    return uint32_t(unsigned_attr(peeled, DW_AT_byte_size, 4));
  Dwarf_Word size = 0;
  return dwarf_aggregate_size(&peeled, &size) == 0 ? uint32_t(size) : 0;
}

bool find_member(Dwarf_Die type, const std::string &name, uint32_t &offset,
                 Dwarf_Die &member) {
  Dwarf_Die peeled, child;
  if (dwarf_peel_type(&type, &peeled) != 0 || dwarf_child(&peeled, &child))
    return false;
  do {
    const int tag = dwarf_tag(&child);
    const uint32_t at =
        uint32_t(unsigned_attr(child, DW_AT_data_member_location));
    const char *n = dwarf_diename(&child);
    if (tag == DW_TAG_member && n && name == n) {
      offset = at;
      member = child;
      return true;
    }
    std::optional<Dwarf_Die> base = type_of(child);
    uint32_t inner = 0;
    if (tag == DW_TAG_inheritance && base &&
        find_member(*base, name, inner, member)) {
      offset = at + inner;
      return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

std::vector<uint8_t> bit_field_bytes(Dwarf_Die member,
                                     std::span<const uint8_t> object) {
  uint64_t bit_offset = 0, bits = 0;
  member_place(member, bit_offset, bits);
  uint64_t v = 0;
  for (uint64_t b = 0; b < bits && b < 64; ++b) {
    const uint64_t at = bit_offset + b;
    if (at / 8 < object.size() && (object[at / 8] >> (at % 8) & 1))
      v |= uint64_t(1) << b;
  }
  std::optional<Dwarf_Die> type = type_of(member);
  const uint32_t size = std::max<uint32_t>(1, type ? size_of(*type) : 4);
  std::vector<uint8_t> out;
  for (uint32_t i = 0; i < size && i < 8; ++i)
    out.push_back(uint8_t(v >> (8 * i)));
  return out;
}

std::string format_value(Dwarf_Die type, std::span<const uint8_t> bytes,
                         const ValueFormat &format) {
  return format_in(type, bytes, format, 0);
}

std::string format_subarray(Dwarf_Die array, size_t dim,
                            std::span<const uint8_t> bytes,
                            const ValueFormat &format) {
  Dwarf_Die peeled;
  if (dwarf_peel_type(&array, &peeled) != 0)
    return "<unknown type>";
  std::optional<Dwarf_Die> element = type_of(peeled);
  std::vector<uint64_t> dims = array_dimensions(peeled);
  if (!element || dim >= dims.size())
    return "<unknown array>";
  return format_elements(*element, dims, dim, bytes, format, 0);
}

} // namespace nicemu
