// nicemu image FW.elf [-o FW.img] [--model M]  pack a checked image
// nicemu image --info FW.img                  describe one
#include "cli/commands.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <filesystem>
#include <iostream>

namespace nicemu::cli {

namespace {

struct ImageOptions {
  std::string input, output, model = "lanai4";
  bool info = false;
};

// FW.img beside FW.elf (any other name: NAME.img).
std::string default_output(const std::string &input) {
  return std::filesystem::path(input).replace_extension(".img").string();
}

void pack(const ImageOptions &o) {
  const std::string output =
      o.output.empty() ? default_output(o.input) : o.output;
  if (output == o.input)
    throw Error("image: " + o.input +
                " would be overwritten; give the output file with -o");
  Model model = load_model(o.model);
  Image image = image_from_elf(o.input, model.name);
  check_image_against_model(image, model);
  std::vector<uint8_t> bytes = encode_image(image);
  if (bytes.size() > model.flash_size)
    throw Error(o.input + ": the image (" + std::to_string(bytes.size()) +
                " bytes) does not fit the " + model.name + " flash (" +
                std::to_string(model.flash_size) + " bytes)");
  write_file_bytes(output, bytes);
  std::cout << "packed " << output << ": " << bytes.size() << " bytes, "
            << image.segments.size() << " segments, " << image.symbols.size()
            << " symbols, model " << model.name << "\n";
}

void info(const ImageOptions &o) {
  std::vector<uint8_t> bytes = read_file_bytes(o.input);
  try {
    Image image = decode_image(bytes);
    std::cout << describe_image(image, bytes);
  } catch (const Error &e) {
    throw Error(o.input + ": " + e.what());
  }
}

} // namespace

void add_image_command(CLI::App &app, ExitStatus &) {
  auto opts = std::make_shared<ImageOptions>();
  CLI::App *cmd = app.add_subcommand(
      "image", "Pack a firmware ELF into a checked image, or describe one");
  cmd->add_option("input", opts->input,
                  "FW.elf to pack (or FW.img with --info)")
      ->required();
  cmd->add_option("-o,--output", opts->output,
                  "image file to write (default: FW.img beside FW.elf)");
  cmd->add_option("--model", opts->model, "target model")
      ->capture_default_str();
  cmd->add_flag("--info", opts->info,
                "print the image's header, segments, "
                "checksums and symbols");
  cmd->callback([opts] { opts->info ? info(*opts) : pack(*opts); });
}

} // namespace nicemu::cli
