// Private to the host library: the card handle of nicemu/dimmnet.h, shared
// by the card's calls (dimmnet.cpp) and the protocols built on them
// (dimmnet_comm.cpp).
#pragma once

#include "host_end.hpp"

#include <cstdint>
#include <string>

struct dimm_card {
  nicemu::channel::HostEnd *end = nullptr;
  unsigned pgid = 0, pid = 0;
  uint32_t node = 0, nodes = 0;
  uint32_t credits_hint = 0; // credits the card surely has
  uint8_t *burst = nullptr;  // arena scratch for BOTF bursts
  uint32_t burst_offset = 0; // its arena offset
  unsigned windows = 0;
  bool status_address = false; // the card's packets may carry one
  bool notify_set = false;     // the RDMA page's NOTIFY word is not 0
};

namespace nicemu::dimmnet {
// Records `why` as dimm_last_error() and returns `code`.
int fail(int code, std::string why);
} // namespace nicemu::dimmnet
