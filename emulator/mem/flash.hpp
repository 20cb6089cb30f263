// The card's flash: a file on the host holding the persistent image store.
// An erased flash reads as 0xFF; the image sits at offset 0.
#pragma once

#include "nicemu/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

// Reads a flash file and checks it has the model's flash size.
std::vector<uint8_t> read_flash(const std::string &path, const Model &model);

// Writes `image` at offset 0 of the flash file (created erased at the model's
// size if absent), then reads it back and compares. Throws nicemu::Error.
void write_flash(const std::string &path, const Model &model,
                 const std::vector<uint8_t> &image);

} // namespace nicemu
