// The expressions of the built-in debugger's `print`, over objects that
// DWARF describes: a name, then any of `.member`, `->member`, `[N]` (rows
// of many-dimensional arrays too); `*EXPR`, `&EXPR`, `(EXPR)`.
#pragma once

#include "debug/dwarf_location.hpp"
#include "debug/dwarf_value.hpp"

#include <elfutils/libdw.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace nicemu {

// What an expression denotes: an object of `type` at `loc`, or an address
// (`&x`).
struct ExprValue {
  std::optional<Dwarf_Die> type;
  Location loc;
  std::optional<uint32_t> address_of;
  size_t dim = 0; // of an array `type`: the dimensions already indexed
};

// The object a name denotes; throws nicemu::Error if there is none.
using NameLookup = std::function<ExprValue(const std::string &name)>;

// Evaluates all of `expr`. Throws nicemu::Error saying what is wrong.
ExprValue evaluate_expression(const std::string &expr, const NameLookup &lookup,
                              const FrameAccess &frame);
// `v` printed, as GDB prints it ("<optimized out>" if it is not there).
std::string print_value(const ExprValue &v, const FrameAccess &frame,
                        const ValueFormat &format);

} // namespace nicemu
