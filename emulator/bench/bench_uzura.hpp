// `nicemu bench uzura`: the UZURA card (uzura.img) with the host program
// uzura_bench run in this process as `nicemu run -n 2` runs it: the 64-byte
// round trip and where one way goes, stage by stage (from the cards' own
// record of the last message); RDMA-write throughput against the size,
// against the bound the PCI-X bus sets; the five notification modes
// compared, latency and bus time; and a matrix transpose sent as one vector
// datatype against pack, send and unpack.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

struct UzuraStage {
  std::string name;
  double ns = 0;
};

struct UzuraWrite {
  uint32_t bytes = 0;
  double us = 0, mb_per_s = 0;
};

struct UzuraMode {
  std::string in, out;
  int rounds = 0;
  double rtt_us = 0;
  double bus_busy_percent = 0; // of the run's virtual time, node 0's bus
};

// An n x n float matrix transposed on its way to the other node, two ways,
// each until the target program has it in place (and knows it). The host's
// copies are charged copy_ns_per_element each (uzura_bench.cpp).
struct UzuraTranspose {
  int n = 0;
  double copy_ns_per_element = 0;
  // One uz_write_typed: from the call to its completion, and to the
  // target program told by a message sent after it.
  double typed_completion_us = 0, typed_to_target_us = 0;
  // The origin packs (plain copies), writes the packed matrix into a
  // staging buffer and says so by a message, the target unpacks (strided
  // copies).
  double packed_to_target_us = 0, pack_us = 0, send_us = 0, unpack_us = 0;
  int typed_checked = 0, packed_checked = 0; // elements right at the target
  double typed_over_packed() const {
    return packed_to_target_us > 0 ? typed_to_target_us / packed_to_target_us
                                   : 0;
  }
};

struct UzuraBenchFigures {
  std::string model;
  int rounds = 0;
  double rtt_us = 0, one_way_us = 0;
  std::vector<UzuraStage> stages; // the program's doorbell to the slot
  double doorbell_to_placed_ns = 0;
  std::vector<UzuraWrite> writes;
  double bus_bound_mb_per_s = 0; // 4 KB over the source bus
  std::vector<UzuraMode> modes;
  UzuraTranspose transpose;
  double wall_seconds = 0;
};

struct UzuraBenchOptions {
  bool quick = false;
  std::string firmware;     // default: the shipped uzura.img
  std::string programs_dir; // default: next to nicemu
};

// Throws nicemu::Error when a run fails.
UzuraBenchFigures run_uzura_bench(const UzuraBenchOptions &options);

} // namespace nicemu
