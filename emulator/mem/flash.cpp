#include "mem/flash.hpp"

#include "nicemu/error.hpp"
#include "nicemu/image.hpp"

#include <filesystem>

namespace nicemu {

namespace {

std::string kib(uint64_t bytes) {
  return std::to_string(bytes / 1024) + " KiB";
}

} // namespace

std::vector<uint8_t> read_flash(const std::string &path, const Model &model) {
  if (!std::filesystem::exists(path))
    throw Error(path + ": no such flash file (create it with `nicemu flash`)");
  std::vector<uint8_t> bytes = read_file_bytes(path);
  if (bytes.size() != model.flash_size)
    throw Error(path + ": flash file is " + std::to_string(bytes.size()) +
                " bytes, but the " + model.name + " model's flash is " +
                kib(model.flash_size) + " (wrong model, or not a flash file)");
  return bytes;
}

void write_flash(const std::string &path, const Model &model,
                 const std::vector<uint8_t> &image) {
  if (image.size() > model.flash_size)
    throw Error("image is " + std::to_string(image.size()) +
                " bytes, larger than the " + model.name + " flash (" +
                kib(model.flash_size) + ")");
  std::vector<uint8_t> flash =
      std::filesystem::exists(path)
          ? read_flash(path, model)
          : std::vector<uint8_t>(model.flash_size, 0xFF);
  // Erase, then program: no stale bytes of an older, longer image remain.
  std::fill(flash.begin(), flash.end(), 0xFF);
  std::copy(image.begin(), image.end(), flash.begin());
  write_file_bytes(path, flash);
  if (read_file_bytes(path) != flash)
    throw Error(path + ": verification after writing failed");
}

} // namespace nicemu
