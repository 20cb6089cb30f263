#include "cli/image_model.hpp"

#include "nicemu/error.hpp"

namespace nicemu::cli {

Model model_for_image(const std::string &path, const Image &image,
                      const std::string &requested) {
  if (requested.empty())
    return load_model(image.model.empty() ? kDefaultModel : image.model);
  Model model = load_model(requested);
  if (!image.model.empty() && image.model != model.name)
    throw Error(path + ": built for model '" + image.model + "', not '" +
                model.name + "'");
  return model;
}

} // namespace nicemu::cli
