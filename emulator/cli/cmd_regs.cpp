// nicemu regs   the device register map, from the same table the firmware
// and the emulator are built from (nicemu/regs.h)
#include "cli/commands.hpp"
#include "devices/registers.hpp"

#include <cstdio>

namespace nicemu::cli {

void add_regs_command(CLI::App &app, ExitStatus &) {
  CLI::App *cmd = app.add_subcommand(
      "regs", "List the device registers and their addresses");
  cmd->callback([] {
    std::printf("%-10s %-20s %-3s %s\n", "address", "register", "rw",
                "meaning");
    for (const RegisterInfo &r : all_registers()) {
      uint32_t addr =
          NICEMU_MMIO_BASE + r.window * NICEMU_DEVICE_WINDOW + r.offset;
      const char *rw = r.access == Access::R   ? "r"
                       : r.access == Access::W ? "w"
                                               : "rw";
      std::printf("0x%08x %-20s %-3s %s\n", addr,
                  (std::string(r.device) + "_" + r.name).c_str(), rw,
                  r.description);
    }
  });
}

} // namespace nicemu::cli
