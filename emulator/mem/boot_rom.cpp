#include "mem/boot_rom.hpp"

#include "nicemu/error.hpp"

#include <algorithm>

namespace nicemu {

Image boot_from_flash(std::span<const uint8_t> flash, const Model &model,
                      const CardWriter &write) {
  if (std::all_of(flash.begin(), flash.end(),
                  [](uint8_t b) { return b == 0xFF; }))
    throw Error("boot: the flash is erased (no image was flashed)");
  Image image;
  try {
    image = decode_image(flash);
  } catch (const Error &e) {
    throw Error(std::string("boot: refusing the image in flash: ") + e.what());
  }
  if (image.model != model.name)
    throw Error("boot: the image was built for model '" + image.model +
                "', but this card is '" + model.name + "'");
  check_image_against_model(image, model);
  for (const ImageSegment &s : image.segments) {
    write(s.address, s.data.data(), uint32_t(s.data.size()));
    if (s.mem_size > s.data.size())
      write(s.address + uint32_t(s.data.size()), nullptr,
            s.mem_size - uint32_t(s.data.size()));
  }
  return image;
}

} // namespace nicemu
