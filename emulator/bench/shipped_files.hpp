// Where the benchmarks find what nicemu ships when no option names it:
// relative to the running nicemu, as `cmake --install` lays it out
// (docs/benchmarks.md, "Where the benches find their files"). The build tree
// is laid out the same way around build/emulator/nicemu
// (toolchain/BuildTreeLayout.cmake), so one rule serves both.
#pragma once

#include <string>

namespace nicemu {

// <exe>/../share/nicemu/firmware: the firmware images (bench_cpu.img,
// sleep_1s.img, niam.img, via.img, ...).
std::string shipped_firmware_dir();
// shipped_firmware_dir()/NAME.
std::string shipped_image(const std::string &name);
// <exe>/../lib/nicemu/examples: the host programs the benches run.
std::string shipped_programs_dir();

} // namespace nicemu
