// GDB's register numbering for a 32-bit MIPS core and the target
// description (target.xml) that declares it. GDB's MIPS support requires the
// cpu, cp0 and fpu features; a core without an FPU reports the FPU
// registers as unavailable.
#pragma once

#include <string_view>

namespace nicemu::gdb::mips {

// Numbers as in GDB's mips-tdep.h: what 'g', 'p' and 'P' use.
enum Reg : unsigned {
  kZero = 0,
  kSp = 29,
  kRa = 31,
  kStatus = 32,
  kLo = 33,
  kHi = 34,
  kBadVAddr = 35,
  kCause = 36,
  kPc = 37,
  kF0 = 38, // f0..f31 = 38..69
  kFcsr = 70,
  kFir = 71,
  kRegisterCount = 72,
};

// The whole description, with every feature inline (no xi:include).
std::string_view target_xml();

} // namespace nicemu::gdb::mips
