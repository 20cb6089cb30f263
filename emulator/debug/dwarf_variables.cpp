#include "debug/dwarf_variables.hpp"

#include "debug/dwarf_expression.hpp"
#include "debug/dwarf_location.hpp"
#include "debug/dwarf_value.hpp"
#include "nicemu/error.hpp"

#include <dwarf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace nicemu {

namespace {

constexpr size_t kNone = size_t(-1);

// The DIEs that hold a PC, the compilation unit first: functions, inlined
// calls and lexical blocks (namespaces are looked through).
struct Scope {
  std::vector<Dwarf_Die> chain;
  size_t cu = kNone;
  size_t function = kNone;   // the innermost function, inlined or not
  size_t subprogram = kNone; // the innermost one that is not inlined

  bool found() const { return function != kNone; }
};

bool holds(Dwarf_Die &die, uint32_t pc) {
  return dwarf_haspc(&die, pc) == 1;
}

bool descend(Dwarf_Die parent, uint32_t pc, std::vector<Dwarf_Die> &chain) {
  Dwarf_Die child;
  if (dwarf_child(&parent, &child) != 0)
    return false;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_namespace && descend(child, pc, chain))
      return true;
    if ((tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
         tag == DW_TAG_inlined_subroutine) &&
        holds(child, pc)) {
      chain.push_back(child);
      descend(child, pc, chain);
      return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

std::string name_of(Dwarf_Die die) {
  const char *n = dwarf_diename(&die);
  return n ? n : "";
}

// The variables (or parameters) directly inside `scope`.
std::vector<Dwarf_Die> children(Dwarf_Die scope, int tag) {
  std::vector<Dwarf_Die> out;
  Dwarf_Die child;
  if (dwarf_child(&scope, &child) == 0)
    do {
      if (dwarf_tag(&child) == tag && !name_of(child).empty())
        out.push_back(child);
    } while (dwarf_siblingof(&child, &child) == 0);
  return out;
}

} // namespace

struct DwarfVariables::Impl {
  int fd = -1;
  Dwarf *dwarf = nullptr;
  std::vector<Dwarf_Die> cus;
  struct Global {
    std::string name, qualified;
    Dwarf_Die die;
    size_t cu;
  };
  std::vector<Global> globals;

  void index_globals(Dwarf_Die parent, const std::string &prefix, size_t cu);
  Scope scope_at(uint32_t pc) const;
  Location locate(Dwarf_Die var, const Scope &s, uint32_t pc,
                  const FrameAccess &frame) const;
  std::string value_text(Dwarf_Die var, const Scope &s, uint32_t pc,
                         const Printing &p) const;
  std::vector<Named> named(const std::vector<Dwarf_Die> &vars, const Scope &s,
                           uint32_t pc, const Printing &p) const;
  bool find_variable(const std::string &name, const Scope &s,
                     Dwarf_Die &found) const;
};

void DwarfVariables::Impl::index_globals(Dwarf_Die parent,
                                         const std::string &prefix, size_t cu) {
  Dwarf_Die child;
  if (dwarf_child(&parent, &child) != 0)
    return;
  do {
    const int tag = dwarf_tag(&child);
    const std::string name = name_of(child);
    if (tag == DW_TAG_namespace)
      index_globals(
          child,
          prefix + (name.empty() ? "(anonymous namespace)" : name) + "::", cu);
    else if (tag == DW_TAG_variable && !name.empty() &&
             dwarf_hasattr(&child, DW_AT_location))
      globals.push_back({name, prefix + name, child, cu});
  } while (dwarf_siblingof(&child, &child) == 0);
}

DwarfVariables::DwarfVariables(const std::string &elf_path)
    : impl_(std::make_unique<Impl>()) {
  impl_->fd = ::open(elf_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl_->fd < 0)
    throw Error(elf_path + ": cannot open");
  impl_->dwarf = dwarf_begin(impl_->fd, DWARF_C_READ);
  if (!impl_->dwarf) {
    ::close(impl_->fd);
    throw Error(elf_path + ": no DWARF debug information; build the "
                           "firmware with -g");
  }
  Dwarf_Off offset = 0, next = 0;
  size_t header = 0;
  while (dwarf_nextcu(impl_->dwarf, offset, &next, &header, nullptr, nullptr,
                      nullptr) == 0) {
    Dwarf_Die cu;
    if (dwarf_offdie(impl_->dwarf, offset + header, &cu)) {
      impl_->cus.push_back(cu);
      impl_->index_globals(cu, "", impl_->cus.size() - 1);
    }
    offset = next;
  }
}

DwarfVariables::~DwarfVariables() {
  dwarf_end(impl_->dwarf);
  ::close(impl_->fd);
}

Scope DwarfVariables::Impl::scope_at(uint32_t pc) const {
  Scope s;
  for (size_t i = 0; i < cus.size() && s.cu == kNone; ++i) {
    Dwarf_Die cu = cus[i];
    std::vector<Dwarf_Die> chain{cu};
    if (holds(cu, pc) && descend(cu, pc, chain)) {
      s.cu = i;
      s.chain = chain;
    }
  }
  for (size_t i = s.chain.size(); i-- > 1;) {
    const int tag = dwarf_tag(&s.chain[i]);
    if (s.function == kNone &&
        (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine))
      s.function = i;
    if (s.subprogram == kNone && tag == DW_TAG_subprogram)
      s.subprogram = i;
  }
  return s;
}

Location DwarfVariables::Impl::locate(Dwarf_Die var, const Scope &s,
                                      uint32_t pc,
                                      const FrameAccess &frame) const {
  std::optional<uint32_t> base;
  if (s.subprogram != kNone) {
    Dwarf_Die fn = s.chain[s.subprogram];
    base = frame_base_of(fn, pc, frame);
  }
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(&var, DW_AT_const_value, &attr) ||
      dwarf_attr_integrate(&var, DW_AT_location, &attr))
    return evaluate_location(attr, pc, base, frame);
  Location none;
  none.why = "optimized out";
  return none;
}

std::string DwarfVariables::Impl::value_text(Dwarf_Die var, const Scope &s,
                                             uint32_t pc,
                                             const Printing &p) const {
  std::optional<Dwarf_Die> type = type_of(var);
  Location loc = locate(var, s, pc, p.frame);
  std::vector<uint8_t> bytes;
  if (loc.kind == Location::Kind::Unavailable)
    return "<" + loc.why + ">";
  if (!type)
    return "<no type>";
  if (!loc.read(p.frame, size_of(*type), bytes))
    return "<cannot read memory>";
  return format_value(*type, bytes, ValueFormat{&p.frame, p.symbol, p.hex});
}

std::vector<DwarfVariables::Named>
DwarfVariables::Impl::named(const std::vector<Dwarf_Die> &vars, const Scope &s,
                            uint32_t pc, const Printing &p) const {
  std::vector<Named> out;
  for (const Dwarf_Die &v : vars)
    out.push_back({name_of(v), value_text(v, s, pc, p)});
  return out;
}

namespace {

[[noreturn]] void no_function(uint32_t pc) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", pc);
  throw Error(std::string("no function with debug information at ") + hex);
}

} // namespace

std::vector<DwarfVariables::Named>
DwarfVariables::args(uint32_t pc, const Printing &p) const {
  Scope s = impl_->scope_at(pc);
  if (!s.found())
    no_function(pc);
  return impl_->named(children(s.chain[s.function], DW_TAG_formal_parameter), s,
                      pc, p);
}

std::vector<DwarfVariables::Named>
DwarfVariables::locals(uint32_t pc, const Printing &p) const {
  Scope s = impl_->scope_at(pc);
  if (!s.found())
    no_function(pc);
  std::vector<Dwarf_Die> vars;
  for (size_t i = s.chain.size(); i-- > s.function;)
    for (const Dwarf_Die &v : children(s.chain[i], DW_TAG_variable))
      vars.push_back(v);
  return impl_->named(vars, s, pc, p);
}

// A local or argument of the scope (innermost first), else a global or
// static of the PC's compilation unit, else of any.
bool DwarfVariables::Impl::find_variable(const std::string &name,
                                         const Scope &s,
                                         Dwarf_Die &found) const {
  if (s.found())
    for (size_t i = s.chain.size(); i-- > s.function;)
      for (int tag : {DW_TAG_variable, DW_TAG_formal_parameter})
        for (const Dwarf_Die &v : children(s.chain[i], tag))
          if (name_of(v) == name)
            return found = v, true;
  auto matches = [&name](const Global &g) {
    return g.name == name || g.qualified == name ||
           (g.qualified.size() > name.size() + 2 &&
            g.qualified.compare(g.qualified.size() - name.size() - 2,
                                std::string::npos, "::" + name) == 0);
  };
  for (const Global &g : globals)
    if (g.cu == s.cu && matches(g))
      return found = g.die, true;
  for (const Global &g : globals)
    if (matches(g))
      return found = g.die, true;
  return false;
}

std::string DwarfVariables::print(const std::string &expr, uint32_t pc,
                                  const Printing &p) const {
  const Scope s = impl_->scope_at(pc);
  NameLookup lookup = [&](const std::string &name) {
    Dwarf_Die var;
    if (!impl_->find_variable(name, s, var))
      throw Error("no symbol \"" + name + "\" in current context");
    ExprValue v;
    v.type = type_of(var);
    v.loc = impl_->locate(var, s, pc, p.frame);
    if (!v.type)
      throw Error(name + " has no type");
    return v;
  };
  ExprValue v = evaluate_expression(expr, lookup, p.frame);
  return print_value(v, p.frame, ValueFormat{&p.frame, p.symbol, p.hex});
}

} // namespace nicemu
