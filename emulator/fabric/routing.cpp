#include "fabric/routing.hpp"

#include "nicemu/error.hpp"

#include <deque>

namespace nicemu::fabric_detail {

namespace {

[[noreturn]] void unreachable(uint32_t from, uint32_t to) {
  throw Error("route: node " + std::to_string(to) +
              " cannot be reached from node " + std::to_string(from));
}

void check_node(const Wiring &w, uint32_t node) {
  if (node >= w.nodes)
    throw Error("route: node " + std::to_string(node) +
                " does not exist (the topology has " + std::to_string(w.nodes) +
                " nodes)");
}

} // namespace

// Each switch's ports in increasing order: the first path found to a switch
// is the shortest with the lowest route bytes, since breadth-first search
// visits each level in the order of those bytes.
const Router::Search &Router::search_from(uint32_t start) {
  if (searches_[start])
    return *searches_[start];
  auto s = std::make_unique<Search>();
  s->parent.assign(w_.switches, kNoPort);
  s->via.assign(w_.switches, 0);
  s->parent[start] = start;
  std::deque<uint32_t> todo{start};
  while (!todo.empty()) {
    uint32_t sw = todo.front();
    todo.pop_front();
    for (uint32_t p = 0; p < w_.ports; ++p) {
      uint32_t peer = w_.peer[w_.switch_port(sw, p)];
      if (peer == kNoPort || w_.is_node(peer) ||
          s->parent[w_.switch_of(peer)] != kNoPort)
        continue;
      s->parent[w_.switch_of(peer)] = sw;
      s->via[w_.switch_of(peer)] = uint8_t(p);
      todo.push_back(w_.switch_of(peer));
    }
  }
  return *(searches_[start] = std::move(s));
}

std::vector<uint8_t> Router::route(uint32_t from, uint32_t to) {
  check_node(w_, from);
  check_node(w_, to);
  if (from == to)
    throw Error("route: from node " + std::to_string(from) +
                " to itself (a node needs no route to itself)");
  uint32_t first = w_.peer[w_.node_port(from)];
  uint32_t last = w_.peer[w_.node_port(to)];
  if (first == w_.node_port(to))
    return {}; // two nodes cabled back to back
  if (first == kNoPort || last == kNoPort || w_.is_node(first) ||
      w_.is_node(last))
    unreachable(from, to);
  uint32_t start = w_.switch_of(first), end = w_.switch_of(last);
  const Search &s = search_from(start);
  if (s.parent[end] == kNoPort)
    unreachable(from, to);
  size_t hops = 1;
  for (uint32_t sw = end; sw != start; sw = s.parent[sw])
    ++hops;
  std::vector<uint8_t> bytes(hops);
  bytes[--hops] = uint8_t(w_.port_of(last));
  for (uint32_t sw = end; sw != start; sw = s.parent[sw])
    bytes[--hops] = s.via[sw];
  return bytes;
}

} // namespace nicemu::fabric_detail
