// Topologies: checking, generating (one crossbar, or a tree of crossbars),
// and source routes by breadth-first search.
#include "fabric/fabric.hpp"
#include "fabric/routing.hpp"
#include "fabric/topology_check.hpp"
#include "fabric/wiring.hpp"

#include "nicemu/error.hpp"

#include <algorithm>
#include <deque>

namespace nicemu {

using namespace fabric_detail;

void Topology::validate() const {
  if (std::string problem = check_sizes(nodes, switches, ports_per_switch);
      !problem.empty())
    throw Error("topology: " + problem);
  auto where = [](size_t tag) {
    return tag == kNoTag ? std::string("topology")
                         : "topology: cable " + std::to_string(tag);
  };
  CableChecker checker(nodes, switches, ports_per_switch, [](size_t tag) {
    return "cable " + std::to_string(tag);
  });
  for (size_t i = 0; i < cables.size(); ++i)
    if (std::string problem = checker.add(cables[i].first, cables[i].second, i);
        !problem.empty())
      throw Error(where(i) + ": " + problem);
  if (auto problem = checker.finish(kNoTag, kNoTag))
    throw Error(where(problem->tag) + ": " + problem->text);
}

namespace {

Topology::Endpoint node_end(uint32_t node) {
  return {false, node, 0};
}
Topology::Endpoint switch_end(uint32_t sw, uint32_t port) {
  return {true, sw, port};
}

// A tree: every switch but the root has ports-1 children (nodes at the
// leaves) on its ports 0.. and its parent on its last port; the root has up
// to `ports` children. Switches are numbered level by level from the leaves.
void build_tree(Topology &t) {
  uint32_t fan = t.ports_per_switch - 1;
  uint32_t level = (t.nodes + fan - 1) / fan; // switches on this level
  for (uint32_t n = 0; n < t.nodes; ++n)
    t.cables.push_back({node_end(n), switch_end(n / fan, n % fan)});
  uint32_t first = 0; // number of this level's first switch
  while (level > t.ports_per_switch) {
    uint32_t parents = (level + fan - 1) / fan;
    for (uint32_t c = 0; c < level; ++c)
      t.cables.push_back({switch_end(first + c, fan),
                          switch_end(first + level + c / fan, c % fan)});
    first += level;
    level = parents;
  }
  uint32_t root = first + level;
  for (uint32_t c = 0; c < level; ++c)
    t.cables.push_back({switch_end(first + c, fan), switch_end(root, c)});
  t.switches = root + 1;
}

} // namespace

Topology make_topology(uint32_t nodes, uint32_t ports_per_switch) {
  if (std::string problem = check_sizes(nodes, 1, ports_per_switch);
      !problem.empty())
    throw Error("make_topology: " + problem);
  Topology t;
  t.nodes = nodes;
  t.ports_per_switch = ports_per_switch;
  if (nodes <= ports_per_switch) {
    t.switches = 1;
    for (uint32_t n = 0; n < nodes; ++n)
      t.cables.push_back({node_end(n), switch_end(0, n)});
  } else if (ports_per_switch < 3) {
    throw Error("make_topology: " + std::to_string(nodes) +
                " nodes need a tree of switches, which needs at least 3 "
                "ports per switch (not " +
                std::to_string(ports_per_switch) + ")");
  } else {
    build_tree(t);
  }
  return t;
}

std::vector<uint8_t> Topology::route(uint32_t from, uint32_t to) const {
  validate();
  Wiring w = wire(*this);
  return Router(w).route(from, to);
}

std::optional<Topology::LongRoute>
Topology::route_longer_than(size_t max_bytes) const {
  validate();
  Wiring w = wire(*this);
  // Each switch that has nodes, with its lowest node, by that node: a route
  // between two nodes is one byte per switch on the shortest path.
  std::vector<std::pair<uint32_t, uint32_t>> ends; // (node, switch)
  std::vector<bool> listed(switches, false);
  for (uint32_t n = 0; n < nodes; ++n) {
    uint32_t peer = w.peer[w.node_port(n)];
    if (peer == kNoPort || w.is_node(peer) || listed[w.switch_of(peer)])
      continue;
    listed[w.switch_of(peer)] = true;
    ends.push_back({n, w.switch_of(peer)});
  }
  std::vector<uint32_t> hops(switches);
  for (const auto &[from, start] : ends) {
    std::fill(hops.begin(), hops.end(), kNoPort);
    hops[start] = 0;
    std::deque<uint32_t> todo{start};
    while (!todo.empty()) {
      uint32_t sw = todo.front();
      todo.pop_front();
      for (uint32_t p = 0; p < w.ports; ++p) {
        uint32_t peer = w.peer[w.switch_port(sw, p)];
        if (peer == kNoPort || w.is_node(peer) ||
            hops[w.switch_of(peer)] != kNoPort)
          continue;
        hops[w.switch_of(peer)] = hops[sw] + 1;
        todo.push_back(w.switch_of(peer));
      }
    }
    for (const auto &[to, end] : ends)
      if (size_t(hops[end]) + 1 > max_bytes)
        return LongRoute{from, to, size_t(hops[end]) + 1};
  }
  return std::nullopt;
}

std::vector<std::vector<uint8_t>> Topology::routes_from(uint32_t from) const {
  validate();
  Wiring w = wire(*this);
  Router router(w);
  std::vector<std::vector<uint8_t>> routes(nodes);
  for (uint32_t to = 0; to < nodes; ++to)
    if (to != from)
      routes[to] = router.route(from, to);
  return routes;
}

} // namespace nicemu
