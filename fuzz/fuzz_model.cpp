// Fuzz target: a model file's text, as `--model FILE` reads it. Parsing
// and building the card it describes either work or throw nicemu::Error
// naming the file, the line and the key; nothing else may escape.
#include "nicemu/error.hpp"
#include "nicemu/model.hpp"
#include "node/node.hpp"
#include "sim/scheduler.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace nicemu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    Model model = parse_model(text, "fuzz.toml");
    Scheduler scheduler;
    Node node(model, scheduler, NodeConfig{});
  } catch (const Error &) {
  }
  return 0;
}
