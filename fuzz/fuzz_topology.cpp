// Fuzz target: a topology file's text (`--topology FILE`), for switches of
// 4 to 32 ports (the input's first byte). A topology is built or refused
// with nicemu::Error; routes between its nodes are computed, and its nodes
// shared out among 1 to 8 ranks (`nicemu partition`), by the topology and
// by the same text read as a partition file.
#include "dist/partition.hpp"
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
    const uint32_t ranks = 1 + data[0] % 8;
    if (t.nodes >= ranks) {
      Partition p = partition_by_topology(t, ranks);
      if (p.rank_of.size() != t.nodes)
        __builtin_trap();
      for (uint32_t r : p.rank_of)
        if (r >= ranks)
          __builtin_trap();
      if (cross_rank_cables(t, p) > t.cables.size())
        __builtin_trap();
    }
  } catch (const Error &) {
  }
  // The same text as a partition file of a run of up to 256 nodes.
  try {
    (void)parse_partition(text, "fuzz.part", 1 + data[0], 1 + data[0] % 8);
  } catch (const Error &) {
  }
  return 0;
}
