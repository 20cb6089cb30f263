// nicemu regs [--model M]   the device register map, from the same table
// the firmware and the emulator are built from (nicemu/regs.h); with
// --model, only the devices of that model's card
#include "cli/commands.hpp"
#include "devices/registers.hpp"
#include "nicemu/model.hpp"
#include "node/node.hpp"
#include "sim/scheduler.hpp"

#include <cstdio>
#include <set>

namespace nicemu::cli {

namespace {

uint32_t window_base(uint32_t window) {
  return NICEMU_MMIO_BASE + window * NICEMU_DEVICE_WINDOW;
}

// The device windows a card of `model` has: those its node fills when
// the board assembles it.
std::set<uint32_t> windows_of(const Model &model) {
  Scheduler scheduler;
  Node node(model, scheduler, NodeConfig{});
  std::set<uint32_t> windows;
  for (uint32_t w = 0; device_name(w); ++w)
    if (node.device_at(window_base(w)))
      windows.insert(w);
  return windows;
}

void print_registers(const std::string &model_name) {
  std::set<uint32_t> windows;
  if (!model_name.empty()) {
    Model model = load_model(model_name);
    windows = windows_of(model);
    std::printf("model %s (board %s):", model.full_name().c_str(),
                model.board.c_str());
    for (uint32_t w : windows)
      std::printf(" %s", device_name(w));
    std::printf("\n");
  }
  std::printf("%-10s %-20s %-3s %s\n", "address", "register", "rw", "meaning");
  for (const RegisterInfo &r : all_registers()) {
    if (!model_name.empty() && !windows.count(r.window))
      continue;
    const char *rw = r.access == Access::R   ? "r"
                     : r.access == Access::W ? "w"
                                             : "rw";
    std::printf("0x%08x %-20s %-3s %s\n", window_base(r.window) + r.offset,
                (std::string(r.device) + "_" + r.name).c_str(), rw,
                r.description);
  }
}

} // namespace

void add_regs_command(CLI::App &app, ExitStatus &) {
  auto model = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand(
      "regs", "List the device registers and their addresses");
  cmd->add_option("--model", *model,
                  "only the devices of this model's card (name, "
                  "NAME:VARIANT or .toml file); default: every device");
  cmd->callback([model] { print_registers(*model); });
}

} // namespace nicemu::cli
