// nicemu models            list the models on the search path
// nicemu ldscript --model M -o FILE   linker script for a model's memory map
#include "boards/board.hpp"
#include "cli/commands.hpp"
#include "mem/ldscript.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <cstdio>
#include <iostream>

namespace nicemu::cli {

void add_models_command(CLI::App &app, ExitStatus &) {
  CLI::App *cmd = app.add_subcommand("models", "List the available models");
  cmd->callback([] {
    for (const std::string &name : list_models()) {
      Model m = load_model(name);
      const Board &board = checked_board(m);
      // Names are checked when the model loads; free text is not.
      std::printf("%-10s %6.1f MHz  %s\n", name.c_str(), m.clock_hz / 1e6,
                  printable(m.description).c_str());
      std::printf("           board  %s: %s\n", board.name().c_str(),
                  board.description().c_str());
      for (const MemoryRegion &r : m.memories)
        std::printf("           %-6s 0x%08x %6u KiB%s\n",
                    printable(r.name).c_str(), r.base, r.size / 1024,
                    r.executable ? " code" : "");
      for (const ModelVariant &v : m.variants) {
        checked_board(with_variant(m, v.name)); // every variant fits too
        std::printf("           %s:%-4s %s\n", name.c_str(), v.name.c_str(),
                    printable(v.description).c_str());
      }
    }
    std::printf("search path:");
    for (const auto &dir : model_search_path())
      std::printf(" %s", dir.string().c_str());
    std::printf("\n");
  });
}

void add_ldscript_command(CLI::App &app, ExitStatus &) {
  auto model = std::make_shared<std::string>("lanai4");
  auto output = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand(
      "ldscript", "Print the linker script for a model's memory map");
  cmd->add_option("--model", *model, "model")->capture_default_str();
  cmd->add_option("-o,--output", *output, "write to this file");
  cmd->callback([model, output] {
    std::string script = linker_script_for(load_model(*model));
    if (output->empty()) {
      std::cout << script;
      return;
    }
    write_file_bytes(*output,
                     std::span(reinterpret_cast<const uint8_t *>(script.data()),
                               script.size()));
  });
}

} // namespace nicemu::cli
