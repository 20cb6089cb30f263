// Fuzz target: flash bytes as `nicemu flash` and `nicemu run --firmware`
// hand them to a card. The decoder either returns an image or throws
// nicemu::Error; booting takes a good image or refuses with nicemu::Error;
// the firmware then runs for 100 us of virtual time (its faults are the
// run's outcome, not crashes).
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "node/simulation.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

using namespace nicemu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const Model model = load_model("lanai4");
  try {
    Image image = decode_image({data, size});
    check_image_against_model(image, model);
    (void)describe_image(image, {data, size});
  } catch (const Error &) {
  }
  std::vector<uint8_t> flash(data,
                             data + std::min<size_t>(size, model.flash_size));
  flash.resize(model.flash_size, 0xFF);
  Simulation sim;
  NodeConfig config;
  config.console = [](uint32_t, const std::string &) {};
  Node &node = sim.add_node(model, config);
  try {
    node.boot(flash); // a bad image: nicemu::Error, saying why
  } catch (const Error &) {
    return 0;
  }
  sim.run(100'000'000); // 100 us
  return 0;
}
