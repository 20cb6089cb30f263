// Private to fabric/: the checks behind Topology::validate and the topology
// file parser. Problems come back as text; the caller says where they are
// (a file's line, or a cable's number), so both report the same way.
#pragma once

#include "fabric/wiring.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace nicemu::fabric_detail {

// Limits that keep port numbers in 32 bits and route bytes in 8.
inline constexpr uint32_t kMaxNodes = 1u << 16;
inline constexpr uint32_t kMaxSwitches = 1u << 16;
inline constexpr uint32_t kMaxPorts = 256;
inline constexpr size_t kNoTag = ~size_t(0);

// "" or what is wrong with these sizes.
std::string check_sizes(uint32_t nodes, uint32_t switches, uint32_t ports);

class CableChecker {
public:
  struct Problem {
    std::string text;
    size_t tag; // the cable (or declaration) to blame, or kNoTag
  };

  // `describe(tag)` names an earlier cable in messages ("line 5").
  CableChecker(uint32_t nodes, uint32_t switches, uint32_t ports,
               std::function<std::string(size_t)> describe);

  // Records the cable a-b, tagged `tag`; returns "" or what is wrong with it
  // (a bad cable is not recorded).
  std::string add(const Topology::Endpoint &a, const Topology::Endpoint &b,
                  size_t tag);
  // After the last cable: the first node not cabled (blamed on `nodes_tag`),
  // node or switch not connected to node 0, or a switch with no cables
  // (blamed on `switches_tag`).
  std::optional<Problem> finish(size_t nodes_tag, size_t switches_tag) const;

private:
  std::string check_endpoint(const Topology::Endpoint &e) const;
  std::vector<bool> reachable_from_node0() const;

  Wiring wiring_;
  std::vector<size_t> tag_of_; // port -> tag of its cable
  std::function<std::string(size_t)> describe_;
};

} // namespace nicemu::fabric_detail
