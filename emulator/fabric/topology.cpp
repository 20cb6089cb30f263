// Topologies: checking, generating (one crossbar, or a tree of crossbars),
// and source routes by breadth-first search.
#include "fabric/fabric.hpp"
#include "fabric/routing.hpp"
#include "fabric/topology_check.hpp"
#include "fabric/wiring.hpp"

#include "nicemu/error.hpp"

#include <algorithm>
#include <deque>
#include <optional>

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

// Levels of build_tree for `nodes` (the leaves' level is 1, the root's the
// last).
uint32_t tree_levels(uint32_t nodes, uint32_t ports) {
  uint32_t fan = ports - 1, level = (nodes + fan - 1) / fan, levels = 1;
  for (; level > ports; ++levels)
    level = (level + fan - 1) / fan;
  return levels + 1;
}

// Levels below each centre of build_two_centres (0: the centres hold the
// nodes), or nothing if more than `most` would be needed.
std::optional<uint32_t> depth_below_centres(uint32_t nodes, uint32_t ports,
                                            uint32_t most) {
  uint64_t fan = ports - 1, capacity = 2 * fan; // nodes on the centres
  for (uint32_t depth = 0; depth <= most; ++depth, capacity *= fan)
    if (nodes <= capacity)
      return depth;
  return std::nullopt;
}

// Two centres cabled to each other on their last ports, each the root of
// a tree of `depth` levels below it (children on ports 0..ports-2, as in
// build_tree): half the nodes (the first, rounded up) below the first
// centre. A route climbs to its centre, crosses to the other if it must and
// comes down: at most 2 * (depth + 1) bytes, one less level each way than
// one root needs for as many nodes once that root's tree is tall.
// Switches are numbered as build_tree numbers each half (level by level
// from the leaves, its centre last), the first half first.
void build_two_centres(Topology &t, uint32_t depth) {
  const uint32_t fan = t.ports_per_switch - 1;
  uint32_t centres[2] = {0, 0};
  uint32_t first_node = 0, next_switch = 0;
  for (uint32_t half = 0; half < 2; ++half) {
    uint32_t count = half == 0 ? (t.nodes + 1) / 2 : t.nodes / 2;
    // Switches of each level, from the leaves; the centre's level has one.
    std::vector<uint32_t> sizes;
    uint32_t level = count;
    for (uint32_t d = 0; d < depth; ++d) {
      level = (level + fan - 1) / fan;
      sizes.push_back(level);
    }
    uint32_t first = next_switch; // of the level being cabled
    uint32_t below = depth == 0 ? 0 : sizes[0];
    // Nodes onto the leaves (or onto the centre when depth is 0).
    for (uint32_t n = 0; n < count; ++n)
      t.cables.push_back(
          {node_end(first_node + n), switch_end(first + n / fan, n % fan)});
    for (uint32_t d = 1; d < depth; ++d) {
      for (uint32_t c = 0; c < sizes[d - 1]; ++c)
        t.cables.push_back({switch_end(first + c, fan),
                            switch_end(first + below + c / fan, c % fan)});
      first += below;
      below = sizes[d];
    }
    uint32_t centre = first + below;
    for (uint32_t c = 0; c < below; ++c)
      t.cables.push_back({switch_end(first + c, fan), switch_end(centre, c)});
    centres[half] = centre;
    next_switch = centre + 1;
    first_node += count;
  }
  t.cables.push_back(
      {switch_end(centres[0], fan), switch_end(centres[1], fan)});
  t.switches = next_switch;
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
  } else if (uint32_t levels = tree_levels(nodes, ports_per_switch);
             levels >= 5) {
    // A tall tree: two centres give routes a byte shorter where they hold
    // the nodes with one level less on each side (2745-4802 nodes on
    // 8-port switches, whose routes then fit the route table's 8 bytes).
    // Shorter trees keep their shape, on which figures were published.
    auto depth = depth_below_centres(nodes, ports_per_switch, levels - 2);
    if (depth && 2 * (*depth + 1) < 2 * levels - 1)
      build_two_centres(t, *depth);
    else
      build_tree(t);
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
