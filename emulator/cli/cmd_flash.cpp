// nicemu flash FW.img --flash NODE.flash [--model M]
#include "cli/commands.hpp"
#include "cli/image_model.hpp"
#include "mem/flash.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <iostream>

namespace nicemu::cli {

namespace {

struct FlashOptions {
  std::string image, flash, model;
};

void flash(const FlashOptions &o) {
  std::vector<uint8_t> bytes = read_file_bytes(o.image);
  Image image;
  try {
    image = decode_image(bytes);
  } catch (const Error &e) {
    throw Error(o.image + ": " + e.what());
  }
  Model model = model_for_image(o.image, image, o.model);
  check_image_against_model(image, model);
  write_flash(o.flash, model, bytes);
  std::cout << "flashed " << o.image << " (" << bytes.size() << " bytes) into "
            << o.flash << " (" << model.name << ", " << model.flash_size / 1024
            << " KiB), verified\n";
}

} // namespace

void add_flash_command(CLI::App &app, ExitStatus &) {
  auto opts = std::make_shared<FlashOptions>();
  CLI::App *cmd = app.add_subcommand(
      "flash",
      "Write an image into an emulated flash file (created if absent)");
  cmd->add_option("image", opts->image, "FW.img")->required();
  cmd->add_option("--flash", opts->flash, "flash file of the node")->required();
  cmd->add_option("--model", opts->model,
                  "model of the card (default: the image's)");
  cmd->callback([opts] { flash(*opts); });
}

} // namespace nicemu::cli
