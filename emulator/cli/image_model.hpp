// Which model a command uses for an image: the one named by --model, or
// else the one the image was built for. `flash`, `run` and `debug` agree.
#pragma once

#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <string>

namespace nicemu::cli {

// The model when neither --model nor an image names one.
inline constexpr const char *kDefaultModel = "lanai4";

// `requested` (--model; a name, NAME:VARIANT or a .toml file), or else the
// model `image` (read from `path`) was built for, or else kDefaultModel.
// Throws nicemu::Error naming `path` when the image was built for another
// model than `requested`.
Model model_for_image(const std::string &path, const Image &image,
                      const std::string &requested);

} // namespace nicemu::cli
