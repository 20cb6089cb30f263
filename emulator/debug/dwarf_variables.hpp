// The firmware's variables from the DWARF of its ELF file (elfutils'
// libdw): the arguments and locals in scope at a PC, and any variable
// (local, argument, global, static) by name, for the built-in debugger's
// `info args`, `info locals` and `print`. Frame 0 only: the registers are
// those of the stopped core.
#pragma once

#include "debug/frame_access.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace nicemu {

class DwarfVariables {
public:
  // Reads `elf_path`. Throws nicemu::Error if it cannot be read or has no
  // DWARF debug information.
  explicit DwarfVariables(const std::string &elf_path);
  ~DwarfVariables();
  DwarfVariables(const DwarfVariables &) = delete;
  DwarfVariables &operator=(const DwarfVariables &) = delete;

  struct Printing {
    FrameAccess frame;
    // " <symbol+off>" for a code address, or "".
    std::function<std::string(uint32_t)> symbol;
    bool hex = false; // print/x
  };
  struct Named {
    std::string name, value;
  };

  // The arguments of the function the PC is in (innermost inlined one
  // first), in their order; the locals of the blocks around the PC,
  // innermost first. Values that are not there at this PC read
  // "<optimized out>". Throws nicemu::Error when no function with debug
  // information holds the PC.
  std::vector<Named> args(uint32_t pc, const Printing &p) const;
  std::vector<Named> locals(uint32_t pc, const Printing &p) const;
  // `expr`: a variable (local, argument, or global and static: `ticks`,
  // `ns::name`), then any of `.member`, `->member`, `[N]`; or `*EXPR`,
  // `&EXPR`. Throws nicemu::Error saying what is wrong ("no symbol "x" in
  // current context").
  std::string print(const std::string &expr, uint32_t pc,
                    const Printing &p) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace nicemu
