// The built-in debugger's variables: print, info locals, info args, from
// the firmware's DWARF (debug/dwarf_variables.hpp), in the frame of the
// current node's PC.
#include "debug/debugger_cli.hpp"

#include "debug/dwarf_variables.hpp"
#include "gdb/mips_tdesc.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"

#include <cstdio>

namespace nicemu {

namespace {

// DWARF's MIPS register numbers: 0-31, then HI and LO as 64 and 65.
unsigned gdb_register(unsigned dwarf_reg) {
  if (dwarf_reg == 64)
    return gdb::mips::kHi;
  if (dwarf_reg == 65)
    return gdb::mips::kLo;
  return dwarf_reg;
}

std::string joined(const std::vector<std::string> &words) {
  std::string out;
  for (const std::string &w : words)
    out += (out.empty() ? "" : " ") + w;
  return out;
}

// What the DWARF reader needs of the current node, and how to name code.
DwarfVariables::Printing printing(gdb::Target &target, gdb::ThreadId thread,
                                  const Image *image, bool hex) {
  DwarfVariables::Printing p;
  p.frame.reg = [&target, thread](unsigned dwarf_reg, uint32_t &value) {
    return dwarf_reg < 66 &&
           target.read_register(thread, gdb_register(dwarf_reg), value);
  };
  p.frame.mem = [&target, thread](uint32_t addr, std::span<uint8_t> out) {
    return target.read_memory(thread, addr, out);
  };
  p.symbol = [image](uint32_t addr) -> std::string {
    if (!image)
      return "";
    std::string name = image->describe_address(addr);
    return name.rfind("0x", 0) == 0 ? "" : " <" + name + ">";
  };
  p.hex = hex;
  return p;
}

} // namespace

// print [/x] EXPR: a variable of the current frame or a global; $REG as
// `regs` reads it.
void DebuggerCli::cmd_print(const std::string &format, const Args &args) {
  Args rest = args;
  std::string fmt = format;
  if (!rest.empty() && rest[0][0] == '/') {
    fmt = rest[0].substr(1);
    rest.erase(rest.begin());
  }
  if (fmt != "" && fmt != "x" && fmt != "d") {
    error("print: format /" + fmt + " (only /x and /d)");
    return;
  }
  const std::string expr = joined(rest);
  if (expr.empty()) {
    error("print EXPRESSION");
    return;
  }
  if (expr[0] == '$') {
    if (auto v = resolve(expr)) {
      char text[48];
      std::snprintf(text, sizeof text, fmt == "d" ? "%d" : "0x%08x", *v);
      out_ << expr << " = " << text << "\n";
    }
    return;
  }
  if (!options_.variables) {
    error("no variables: no ELF file with DWARF (--elf)");
    return;
  }
  try {
    const std::string value = options_.variables->print(
        expr, reg(gdb::mips::kPc),
        printing(target_, current_, options_.image, fmt == "x"));
    out_ << expr << " = " << value << "\n";
  } catch (const Error &e) {
    error(e.what());
  }
}

// info locals, info args: as GDB, one "name = value" a line.
void DebuggerCli::info_variables(bool arguments) {
  if (!options_.variables) {
    error("no variables: no ELF file with DWARF (--elf)");
    return;
  }
  const uint32_t pc = reg(gdb::mips::kPc);
  const DwarfVariables::Printing p =
      printing(target_, current_, options_.image, false);
  try {
    std::vector<DwarfVariables::Named> vars =
        arguments ? options_.variables->args(pc, p)
                  : options_.variables->locals(pc, p);
    if (vars.empty())
      out_ << (arguments ? "No arguments.\n" : "No locals.\n");
    for (const DwarfVariables::Named &v : vars)
      out_ << v.name << " = " << v.value << "\n";
  } catch (const Error &e) {
    error(e.what());
  }
}

} // namespace nicemu
