#include "gdb/mips_tdesc.hpp"

#include <string>

namespace nicemu::gdb::mips {

namespace {

// Appends only: g++ 12 at -O3 warns falsely (-Wrestrict) about
// "literal" + std::string temporaries.
void reg(std::string &xml, std::string_view name, unsigned regnum,
         std::string_view extra = {}) {
  xml += "    <reg name=\"";
  xml += name;
  xml += "\" bitsize=\"32\" regnum=\"";
  xml += std::to_string(regnum);
  xml += '"';
  if (!extra.empty()) {
    xml += ' ';
    xml += extra;
  }
  xml += "/>\n";
}

std::string build() {
  std::string xml = "<?xml version=\"1.0\"?>\n"
                    "<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
                    "<target version=\"1.0\">\n"
                    "  <architecture>mips:isa32</architecture>\n"
                    "  <feature name=\"org.gnu.gdb.mips.cpu\">\n";
  for (unsigned i = 0; i < 32; ++i)
    reg(xml, std::string(1, 'r').append(std::to_string(i)), i);
  reg(xml, "lo", kLo);
  reg(xml, "hi", kHi);
  reg(xml, "pc", kPc);
  xml += "  </feature>\n  <feature name=\"org.gnu.gdb.mips.cp0\">\n";
  reg(xml, "status", kStatus);
  reg(xml, "badvaddr", kBadVAddr);
  reg(xml, "cause", kCause);
  xml += "  </feature>\n  <feature name=\"org.gnu.gdb.mips.fpu\">\n";
  for (unsigned i = 0; i < 32; ++i)
    reg(xml, std::string(1, 'f').append(std::to_string(i)), kF0 + i,
        "type=\"ieee_single\"");
  reg(xml, "fcsr", kFcsr, "group=\"float\"");
  reg(xml, "fir", kFir, "group=\"float\"");
  xml += "  </feature>\n</target>\n";
  return xml;
}

} // namespace

std::string_view target_xml() {
  static const std::string xml = build();
  return xml;
}

} // namespace nicemu::gdb::mips
