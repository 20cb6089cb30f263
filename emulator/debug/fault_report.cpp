#include "debug/fault_report.hpp"

#include "debug/disasm.hpp"
#include "devices/registers.hpp"
#include "nicemu/regs.h"
#include "node/node.hpp"

#include <cstdio>
#include <sstream>

namespace nicemu {

namespace {

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string describe_data_address(uint32_t addr) {
  if (addr >= NICEMU_MMIO_BASE && addr < NICEMU_MMIO_BASE + 0x01000000u)
    return hex32(addr) + " (" + describe_mmio_address(addr) + ")";
  return hex32(addr);
}

void print_instruction(std::ostringstream &out, const Node &node,
                       const Fault &f) {
  uint32_t word = 0;
  if (!node.cpu().read_memory(f.pc, &word, 4)) {
    out << "  instruction: (not readable at " << hex32(f.pc) << ")\n";
    return;
  }
  char raw[16];
  std::snprintf(raw, sizeof raw, "%08x", word);
  out << "  instruction: " << disassemble(word, f.pc) << "    [" << raw
      << "]\n";
}

void print_registers(std::ostringstream &out, const CpuRegisters &r) {
  out << "  registers:\n";
  for (unsigned i = 0; i < 32; ++i) {
    char cell[32];
    std::snprintf(cell, sizeof cell, "%4s %08x", mips_register_name(i),
                  r.gpr[i]);
    out << (i % 4 == 0 ? "   " : "  ") << cell << (i % 4 == 3 ? "\n" : "");
  }
  char tail[96];
  std::snprintf(tail, sizeof tail, "     hi %08x    lo %08x    pc %08x\n", r.hi,
                r.lo, r.pc);
  out << tail;
}

} // namespace

std::string fault_report(const Node &node) {
  const Fault &f = node.fault();
  std::ostringstream out;
  out << "node " << node.id() << ": firmware fault: " << fault_name(f.kind);
  if (f.has_address) // a jump's target, or the data address
    out << (f.kind == FaultKind::MisalignedJump ? " " : " at ")
        << describe_data_address(f.address);
  out << "\n";
  if (!f.detail.empty())
    out << "  " << f.detail << "\n";
  out << "  pc " << node.image().describe_address(f.pc);
  if (!f.pc_exact)
    out << " (start of the block; the exact instruction is unknown)";
  if (f.in_delay_slot)
    out << " (in the delay slot of the branch at " << hex32(f.pc - 4) << ")";
  out << "\n";
  print_instruction(out, node, f);
  CpuRegisters regs = node.cpu().registers();
  regs.pc = f.pc;
  print_registers(out, regs);
  char when[96];
  std::snprintf(
      when, sizeof when, "  at cycle %llu (%.3f us of virtual time)\n",
      (unsigned long long)node.cpu().cycles(), double(node.time()) / 1e6);
  out << when;
  return out.str();
}

} // namespace nicemu
