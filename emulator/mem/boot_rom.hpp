// The boot ROM: part of the emulator, not of the firmware. At reset it reads
// the image from flash, verifies it (every CRC, the target model, that every
// segment fits the model's memories) and copies it into card memory. A bad
// image never boots: the error says why.
#pragma once

#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <cstdint>
#include <functional>
#include <span>

namespace nicemu {

// Copies `len` bytes (or zeroes when data is null) to card memory at addr.
using CardWriter =
    std::function<void(uint32_t addr, const uint8_t *data, uint32_t len)>;

// Returns the booted image (for its entry point and symbols).
Image boot_from_flash(std::span<const uint8_t> flash, const Model &model,
                      const CardWriter &write);

} // namespace nicemu
