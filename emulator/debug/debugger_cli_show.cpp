// The built-in debugger's commands that look at the machine: registers,
// memory, disassembly, the call stack, nodes, time and handlers.
#include "debug/debugger_cli.hpp"

#include "debug/disasm.hpp"
#include "gdb/mips_tdesc.hpp"
#include "nicemu/image.hpp"
#include "profile/line_table.hpp"

#include <cstdio>

namespace nicemu {

namespace {

std::string hex32(uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

bool is_branch(const std::string &text) {
  return !text.empty() && (text[0] == 'j' || text[0] == 'b');
}

} // namespace

// "0x000001c0:  jal 0x240 <checksum>": branch targets with their symbols.
std::string DebuggerCli::disassembly(uint32_t addr, uint32_t word) const {
  std::string text = disassemble(word, addr);
  size_t at = text.rfind("0x");
  if (is_branch(text) && at != std::string::npos && options_.image) {
    uint32_t target = uint32_t(std::strtoul(text.c_str() + at, nullptr, 16));
    std::string name = options_.image->describe_address(target);
    if (name.rfind("0x", 0) != 0)
      text += " <" + name + ">";
  }
  return hex32(addr) + ":\t" + text;
}

void DebuggerCli::cmd_regs(const Args &args) {
  namespace m = gdb::mips;
  if (!args.empty()) {
    for (const std::string &a : args) {
      std::string name = a[0] == '$' ? a : "$" + a;
      size_t errors = errors_;
      auto v = resolve(name);
      if (!v && errors_ == int(errors))
        error("no register " + a);
      if (v)
        out_ << a << "\t" << hex32(*v) << "\n";
    }
    return;
  }
  char cell[40];
  for (unsigned i = 0; i < 32; ++i) {
    std::snprintf(cell, sizeof cell, "%-4s %08x%s", mips_register_name(i),
                  reg(i), i % 4 == 3 ? "\n" : "   ");
    out_ << cell;
  }
  std::snprintf(cell, sizeof cell, "%-4s %08x   %-4s %08x   ", "hi",
                reg(m::kHi), "lo", reg(m::kLo));
  out_ << cell << "pc   " << location(reg(m::kPc)) << "\n";
}

// x/NFMT ADDR: N units of F (b, h, w) bytes in FMT (x, d, u; i: instructions).
void DebuggerCli::cmd_examine(const std::string &format, const Args &args) {
  if (args.size() != 1) {
    error("x/NFMT ADDRESS (e.g. x/4wx 0x1F000000)");
    return;
  }
  unsigned count = 0, size = 4;
  char fmt = 'x';
  for (char c : format) {
    if (c >= '0' && c <= '9')
      count = count * 10 + unsigned(c - '0');
    else if (c == 'b' || c == 'h' || c == 'w')
      size = c == 'b' ? 1 : c == 'h' ? 2 : 4;
    else if (c == 'x' || c == 'd' || c == 'u' || c == 'i')
      fmt = c;
    else {
      error("x: unknown format letter '" + std::string(1, c) + "'");
      return;
    }
  }
  count = std::max(count, 1u);
  if (count > 4096) {
    error("x: at most 4096 units");
    return;
  }
  auto addr = resolve(args[0]);
  if (!addr)
    return;
  if (fmt == 'i') {
    for (unsigned i = 0; i < count; ++i) {
      uint32_t word = 0, a = *addr + 4 * i;
      if (!read_word(a, word)) {
        error("cannot read memory at " + hex32(a));
        return;
      }
      out_ << "   " << disassembly(a, word) << "\n";
    }
    return;
  }
  std::vector<uint8_t> bytes(size_t(count) * size);
  if (!target_.read_memory(current_, *addr, bytes)) {
    error("cannot read " + std::to_string(bytes.size()) + " bytes at " +
          hex32(*addr));
    return;
  }
  unsigned per_line = size == 4 ? 4 : 8;
  for (unsigned i = 0; i < count; ++i) {
    uint32_t a = *addr + i * size;
    if (i % per_line == 0)
      out_ << (i ? "\n" : "") << describe(a) << ":";
    uint32_t v = 0;
    for (unsigned b = 0; b < size; ++b)
      v |= uint32_t(bytes[i * size + b]) << (8 * b);
    char cell[24];
    if (fmt == 'x')
      std::snprintf(cell, sizeof cell, "\t0x%0*x", int(size * 2), v);
    else if (fmt == 'u')
      std::snprintf(cell, sizeof cell, "\t%u", v);
    else {
      int32_t s = size == 4 ? int32_t(v) : size == 2 ? int16_t(v) : int8_t(v);
      std::snprintf(cell, sizeof cell, "\t%d", s);
    }
    out_ << cell;
  }
  out_ << "\n";
}

// disas: the function around the PC (or 16 instructions from it);
// disas LOC [N]: the function at LOC, or N instructions from LOC.
void DebuggerCli::cmd_disas(const Args &args) {
  uint32_t pc = reg(gdb::mips::kPc), start = pc, count = 16;
  if (!args.empty()) {
    auto a = resolve(args[0]);
    if (!a)
      return;
    start = *a;
  }
  const ImageSymbol *f = function_at(start);
  if (args.size() > 1) {
    auto n = resolve(args[1]);
    if (!n)
      return;
    count = *n;
  } else if (f && f->size) {
    start = f->address;
    count = f->size / 4;
  }
  count = std::min<uint32_t>(count, 4096);
  if (f && f->address == start)
    out_ << "function " << describe(start) << ":\n";
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t a = start + 4 * i, word = 0;
    if (!read_word(a, word)) {
      error("cannot read memory at " + hex32(a));
      return;
    }
    out_ << (a == pc ? "=> " : "   ") << disassembly(a, word) << "\n";
  }
}

// The call stack by prologue scan: from the function's symbol up to the PC,
// `addiu sp,sp,-N` gives the frame size and `sw ra,K(sp)` where the return
// address was saved; without them (a leaf, or before the prologue) the
// return address is still in ra. Frame pointers are not needed (the
// firmware build keeps them, other code may not); interrupt frames and
// functions without symbols end the walk.
std::vector<DebuggerCli::Frame> DebuggerCli::frames(gdb::ThreadId thread) {
  gdb::ThreadId keep = current_;
  current_ = thread;
  std::vector<Frame> out;
  uint32_t pc = reg(gdb::mips::kPc), sp = reg(gdb::mips::kSp);
  uint32_t ra = reg(gdb::mips::kRa);
  for (int depth = 0; depth < 64; ++depth) {
    out.push_back({pc, sp});
    const ImageSymbol *f = function_at(depth ? pc - 8 : pc);
    if (!f)
      break;
    uint32_t size = 0, word = 0;
    std::optional<uint32_t> ra_slot;
    for (uint32_t a = f->address; a < pc && a < f->address + 1024; a += 4) {
      if (!read_word(a, word) || word == 0x03e00008) // jr ra
        break;
      int16_t imm = int16_t(word & 0xffff);
      if ((word >> 16) == 0x27bd && imm < 0 && size == 0) // addiu sp,sp,-N
        size = uint32_t(-imm);
      else if ((word >> 16) == 0xafbf && !ra_slot) // sw ra,K(sp)
        ra_slot = uint32_t(imm);
    }
    uint32_t caller = 0;
    if (ra_slot) {
      if (!read_word(sp + *ra_slot, caller))
        break;
    } else if (depth == 0) {
      caller = ra;
    } else {
      break;
    }
    if (caller == 0 || caller < 8 || (caller == pc && size == 0))
      break;
    pc = caller;
    sp += size;
  }
  current_ = keep;
  return out;
}

void DebuggerCli::cmd_bt() {
  std::vector<Frame> f = frames(current_);
  for (size_t i = 0; i < f.size(); ++i) {
    // A caller's line is that of its call (the return address less 8).
    uint32_t at = i ? f[i].pc - 8 : f[i].pc;
    std::string where = location(at);
    out_ << "#" << i << "  " << describe(f[i].pc);
    size_t line = where.find(" at ");
    if (line != std::string::npos)
      out_ << where.substr(line);
    out_ << "\n";
  }
}

void DebuggerCli::cmd_node(const Args &args) {
  size_t n = target_.threads().size();
  std::optional<uint32_t> id;
  if (args.size() == 1)
    id = resolve(args[0]);
  else
    error("node N");
  if (!id)
    return;
  if (*id >= n) {
    error("no node " + args[0] + " (" + std::to_string(n) + " nodes)");
    return;
  }
  current_ = *id + 1;
  out_ << "[switching to node" << *id << "]\n";
  print_where(current_);
}

void DebuggerCli::info_nodes() {
  for (gdb::ThreadId t : target_.threads()) {
    gdb::ThreadId keep = current_;
    current_ = t;
    out_ << (t == keep ? "* " : "  ") << target_.thread_name(t) << " ("
         << target_.thread_extra(t) << ") " << location(reg(gdb::mips::kPc))
         << "\n";
    current_ = keep;
  }
}

void DebuggerCli::info_handlers() {
  if (!options_.image) {
    error("no symbols: cannot tell the handlers");
    return;
  }
  size_t n = 0;
  for (const ImageSymbol &s : options_.image->symbols) {
    if (!s.handler())
      continue;
    out_ << hex32(s.address) << "  " << s.size << " bytes  "
         << demangle_symbol(s.name) << "\n";
    ++n;
  }
  if (n == 0)
    out_ << "no handlers (functions marked NICEMU_HANDLER)\n";
}

void DebuggerCli::cmd_status(bool time_only) {
  std::string text;
  if (!target_.monitor("status", text)) {
    error(text);
    return;
  }
  out_ << (time_only ? text.substr(0, text.find('\n') + 1) : text);
}

} // namespace nicemu
