// Private to fabric/: source routes over a wiring. One breadth-first search
// per source switch, kept, so a whole route table costs one search per
// switch and each route is a walk back along the search tree.
#pragma once

#include "fabric/wiring.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace nicemu::fabric_detail {

class Router {
public:
  explicit Router(const Wiring &w) : w_(w), searches_(w.switches) {}
  // The route bytes from node `from` to node `to`: the shortest path, ties
  // broken by the lowest port. Throws nicemu::Error for a node that does not
  // exist, from == to, or a node that cannot be reached.
  std::vector<uint8_t> route(uint32_t from, uint32_t to);

private:
  struct Search {
    std::vector<uint32_t> parent; // switch -> switch before it, or kNoPort
    std::vector<uint8_t> via;     // switch -> parent's port leading to it
  };
  const Search &search_from(uint32_t start);

  const Wiring &w_;
  std::vector<std::unique_ptr<Search>> searches_; // by source switch
};

} // namespace nicemu::fabric_detail
