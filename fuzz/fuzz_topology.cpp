// Fuzz target: a topology file's text (`--topology FILE`), for switches of
// 4 to 32 ports (the input's first byte). A topology is built or refused
// with nicemu::Error; routes between its nodes are computed.
#include "fabric/fabric.hpp"
#include "nicemu/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace nicemu;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uint32_t ports = 4 + data[0] % 29;
  std::string text(reinterpret_cast<const char *>(data + 1), size - 1);
  try {
    Topology t = parse_topology(text, "fuzz.topo", ports);
    t.validate();
    if (t.nodes > 0 && t.nodes <= 64)
      (void)t.routes_from(0);
  } catch (const Error &) {
  }
  return 0;
}
