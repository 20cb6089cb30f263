#include "debug/dwarf_expression.hpp"

#include "debug/dwarf_value.hpp"
#include "nicemu/error.hpp"

#include <dwarf.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace nicemu {

namespace {

uint32_t word_of(const std::vector<uint8_t> &b) {
  return b.size() < 4 ? 0
                      : b[0] | b[1] << 8 | b[2] << 16 | uint32_t(b[3]) << 24;
}

void skip_spaces(const std::string &e, size_t &at) {
  while (at < e.size() && std::isspace(uint8_t(e[at])))
    ++at;
}

// A C++ name, possibly qualified: "ticks", "nicemu::fw::x".
std::string identifier(const std::string &e, size_t &at) {
  size_t start = at;
  while (at < e.size() &&
         (std::isalnum(uint8_t(e[at])) || e[at] == '_' ||
          (e[at] == ':' && at + 1 < e.size() && e[at + 1] == ':')))
    at += e[at] == ':' ? 2 : 1;
  return e.substr(start, at - start);
}

[[noreturn]] void bad_expression(const std::string &e, size_t at) {
  throw Error("cannot read '" + e + "' at '" + e.substr(at) +
              "' (VAR, VAR.member, VAR->member, VAR[N], *EXPR, &EXPR)");
}

int peeled_tag(std::optional<Dwarf_Die> type) {
  if (!type || dwarf_peel_type(&*type, &*type) != 0)
    return 0;
  return dwarf_tag(&*type);
}

// The object a pointer value points to.
ExprValue dereferenced(const ExprValue &v, const FrameAccess &frame) {
  if (peeled_tag(v.type) != DW_TAG_pointer_type)
    throw Error("not a pointer");
  std::vector<uint8_t> b;
  if (!v.loc.read(frame, 4, b))
    throw Error("the pointer is not available");
  ExprValue out;
  Dwarf_Die pointer = *v.type;
  dwarf_peel_type(&pointer, &pointer);
  out.type = type_of(pointer);
  if (!out.type)
    throw Error("cannot look through a void pointer");
  out.loc.kind = Location::Kind::Memory;
  out.loc.address = word_of(b);
  return out;
}

// The part `[offset, offset + size)` of the object `v`.
Location part_of(const Location &loc, uint32_t offset, uint32_t size) {
  Location out = loc;
  if (loc.kind == Location::Kind::Memory)
    out.address += offset;
  else if (loc.kind == Location::Kind::Bytes)
    out.bytes.assign(
        loc.bytes.begin() + std::min<size_t>(offset, loc.bytes.size()),
        loc.bytes.begin() + std::min<size_t>(offset + size, loc.bytes.size()));
  return out;
}

ExprValue member_of(const ExprValue &v, Dwarf_Die member, uint32_t offset,
                    const FrameAccess &frame) {
  ExprValue out;
  out.type = type_of(member);
  if (!out.type)
    throw Error("member without a type");
  if (!dwarf_hasattr(&member, DW_AT_bit_size)) {
    out.loc = part_of(v.loc, offset, size_of(*out.type));
    return out;
  }
  // A bit field: its bits, from the whole object, as an integer.
  std::vector<uint8_t> whole;
  if (!v.loc.read(frame, size_of(*v.type), whole))
    throw Error("the object is not available");
  out.loc.kind = Location::Kind::Bytes;
  out.loc.bytes = bit_field_bytes(member, whole);
  return out;
}

// The bytes of `v`: its type's size, or of a row of an array.
uint32_t size_of_value(const ExprValue &v) {
  if (v.dim == 0)
    return size_of(*v.type);
  Dwarf_Die array = *v.type;
  dwarf_peel_type(&array, &array);
  std::optional<Dwarf_Die> element = type_of(array);
  uint64_t size = element ? size_of(*element) : 0;
  std::vector<uint64_t> dims = array_dimensions(array);
  for (size_t d = v.dim; d < dims.size(); ++d)
    size *= dims[d];
  return uint32_t(size);
}

ExprValue element_of(const ExprValue &v, long index, const FrameAccess &frame) {
  const int tag = peeled_tag(v.type);
  Dwarf_Die t = *v.type;
  dwarf_peel_type(&t, &t);
  ExprValue out;
  out.type = type_of(t);
  if (!out.type || (tag != DW_TAG_array_type && tag != DW_TAG_pointer_type))
    throw Error("cannot subscript something that is not an array or a "
                "pointer");
  if (tag == DW_TAG_pointer_type) {
    out.loc = dereferenced(v, frame).loc;
    out.loc.address += uint32_t(index * long(size_of(*out.type)));
    return out;
  }
  // One dimension more of the array: a row of it, or an element.
  if (v.dim + 1 < array_dimensions(t).size()) {
    out.type = v.type;
    out.dim = v.dim + 1;
  }
  const uint32_t size = size_of_value(out);
  out.loc = part_of(v.loc, uint32_t(index * long(size)), size);
  return out;
}

// `.member`, `->member`, `[N]` after a value.
ExprValue postfix(ExprValue v, const std::string &e, size_t &at,
                  const FrameAccess &frame) {
  for (;;) {
    skip_spaces(e, at);
    const bool arrow = e.compare(at, 2, "->") == 0;
    if (at < e.size() && (e[at] == '.' || arrow)) {
      at += arrow ? 2 : 1;
      skip_spaces(e, at);
      const std::string name = identifier(e, at);
      if (arrow)
        v = dereferenced(v, frame);
      uint32_t offset = 0;
      Dwarf_Die member;
      if (name.empty() || !find_member(*v.type, name, offset, member))
        throw Error("there is no member named " + name);
      v = member_of(v, member, offset, frame);
    } else if (at < e.size() && e[at] == '[') {
      char *end = nullptr;
      long index = std::strtol(e.c_str() + at + 1, &end, 0);
      at = size_t(end - e.c_str());
      skip_spaces(e, at);
      if (at >= e.size() || e[at] != ']')
        bad_expression(e, at);
      ++at;
      v = element_of(v, index, frame);
    } else {
      return v;
    }
  }
}

// [*|&]... NAME or (EXPR), then postfix operators.
ExprValue evaluate(const std::string &e, size_t &at, const NameLookup &lookup,
                   const FrameAccess &frame) {
  skip_spaces(e, at);
  if (at < e.size() && (e[at] == '*' || e[at] == '&')) {
    const char op = e[at++];
    ExprValue v = evaluate(e, at, lookup, frame);
    if (op == '*')
      return dereferenced(v, frame);
    if (v.loc.kind != Location::Kind::Memory)
      throw Error("cannot take the address of a value not in memory");
    ExprValue address;
    address.address_of = v.loc.address;
    return address;
  }
  ExprValue v;
  if (at < e.size() && e[at] == '(') {
    v = evaluate(e, ++at, lookup, frame);
    skip_spaces(e, at);
    if (at >= e.size() || e[at] != ')')
      bad_expression(e, at);
    ++at;
  } else {
    const std::string name = identifier(e, at);
    if (name.empty())
      bad_expression(e, at);
    v = lookup(name);
  }
  return postfix(v, e, at, frame);
}

} // namespace

ExprValue evaluate_expression(const std::string &expr, const NameLookup &lookup,
                              const FrameAccess &frame) {
  size_t at = 0;
  ExprValue v = evaluate(expr, at, lookup, frame);
  skip_spaces(expr, at);
  if (at != expr.size())
    bad_expression(expr, at);
  return v;
}

std::string print_value(const ExprValue &v, const FrameAccess &frame,
                        const ValueFormat &format) {
  if (v.address_of) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", *v.address_of);
    return hex + (format.symbol ? format.symbol(*v.address_of) : "");
  }
  if (v.loc.kind == Location::Kind::Unavailable)
    return "<" + v.loc.why + ">";
  std::vector<uint8_t> bytes;
  if (!v.loc.read(frame, size_of_value(v), bytes))
    return "<cannot read memory>";
  if (v.dim)
    return format_subarray(*v.type, v.dim, bytes, format);
  return format_value(*v.type, bytes, format);
}

} // namespace nicemu
