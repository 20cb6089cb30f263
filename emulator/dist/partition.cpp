#include "dist/partition.hpp"

#include "nicemu/error.hpp"
#include "sim/text_file.hpp"

#include <algorithm>
#include <deque>
#include <sstream>

namespace nicemu {

namespace {

// The network as switches with their nodes and their neighbouring
// switches (by port, so that walks are deterministic).
struct SwitchGraph {
  std::vector<std::vector<uint32_t>> nodes;      // switch -> its nodes
  std::vector<std::vector<uint32_t>> neighbours; // switch -> switches
  std::vector<uint32_t> switch_of;               // node -> switch, or none

  static constexpr uint32_t kNone = ~0u;

  explicit SwitchGraph(const Topology &t)
      : nodes(t.switches), neighbours(t.switches), switch_of(t.nodes, kNone) {
    // (port, what) per switch, sorted by port below.
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> node_at(t.switches),
        switch_at(t.switches);
    for (const auto &[a, b] : t.cables) {
      for (int side = 0; side < 2; ++side) {
        const Topology::Endpoint &here = side ? b : a;
        const Topology::Endpoint &there = side ? a : b;
        if (!here.is_switch || here.index >= t.switches)
          continue;
        if (there.is_switch) {
          if (there.index < t.switches && there.index != here.index)
            switch_at[here.index].push_back({here.port, there.index});
        } else if (there.index < t.nodes) {
          node_at[here.index].push_back({here.port, there.index});
          switch_of[there.index] = here.index;
        }
      }
    }
    for (uint32_t s = 0; s < t.switches; ++s) {
      std::sort(node_at[s].begin(), node_at[s].end());
      std::sort(switch_at[s].begin(), switch_at[s].end());
      for (auto [port, n] : node_at[s])
        nodes[s].push_back(n);
      for (auto [port, sw] : switch_at[s])
        if (std::find(neighbours[s].begin(), neighbours[s].end(), sw) ==
            neighbours[s].end())
          neighbours[s].push_back(sw);
    }
  }

  // The switch farthest from `from` (the lowest number among equals), and
  // each switch's predecessor on the way there (kNone: unreachable).
  uint32_t farthest(uint32_t from, std::vector<uint32_t> &parent) const {
    std::vector<uint32_t> hops(nodes.size(), kNone);
    parent.assign(nodes.size(), kNone);
    hops[from] = 0;
    uint32_t far = from;
    std::deque<uint32_t> todo{from};
    while (!todo.empty()) {
      uint32_t s = todo.front();
      todo.pop_front();
      if (hops[s] > hops[far] || (hops[s] == hops[far] && s < far))
        far = s;
      for (uint32_t n : neighbours[s])
        if (hops[n] == kNone) {
          hops[n] = hops[s] + 1;
          parent[n] = s;
          todo.push_back(n);
        }
    }
    return far;
  }

  // The root of the walk: the middle of a longest path, found by two
  // searches from the switch of the lowest node that has one. That is the
  // centre of a tree (the generated networks), so its subtrees are as even
  // as the network allows; elsewhere a fair start. Linear in the switches.
  uint32_t centre() const {
    uint32_t start = 0;
    for (uint32_t n = 0; n < switch_of.size(); ++n)
      if (switch_of[n] != kNone) {
        start = switch_of[n];
        break;
      }
    std::vector<uint32_t> parent;
    uint32_t end = farthest(farthest(start, parent), parent);
    std::vector<uint32_t> path{end};
    while (parent[path.back()] != kNone)
      path.push_back(parent[path.back()]);
    // Two middles (an even count): the lower switch number.
    return std::min(path[(path.size() - 1) / 2], path[path.size() / 2]);
  }
};

// The walk's order of the nodes and, for each place in it, the size of the
// largest subtree of the walk that ends just before it (0: none).
struct Walk {
  std::vector<uint32_t> order;
  std::vector<uint32_t> subtree_end; // size order.size() + 1
};

Walk walk_switches(const Topology &t, const SwitchGraph &g) {
  Walk w;
  w.subtree_end.assign(size_t(t.nodes) + 1, 0);
  std::vector<bool> seen(t.switches, false);
  // Iterative depth-first walk: (switch, next neighbour, first place).
  struct Frame {
    uint32_t sw;
    size_t next;
    size_t start;
  };
  auto visit = [&](uint32_t root) {
    std::vector<Frame> stack;
    seen[root] = true;
    stack.push_back({root, 0, w.order.size()});
    for (uint32_t n : g.nodes[root])
      w.order.push_back(n);
    while (!stack.empty()) {
      Frame &f = stack.back();
      if (f.next < g.neighbours[f.sw].size()) {
        uint32_t s = g.neighbours[f.sw][f.next++];
        if (seen[s])
          continue;
        seen[s] = true;
        size_t start = w.order.size();
        for (uint32_t n : g.nodes[s])
          w.order.push_back(n);
        stack.push_back({s, 0, start});
        continue;
      }
      size_t size = w.order.size() - f.start;
      uint32_t &end = w.subtree_end[w.order.size()];
      end = std::max(end, uint32_t(size));
      stack.pop_back();
    }
  };
  if (t.switches > 0)
    visit(g.centre());
  for (uint32_t s = 0; s < t.switches; ++s) // a network in pieces
    if (!seen[s])
      visit(s);
  // Nodes on no switch (cabled to each other), in node order.
  for (uint32_t n = 0; n < t.nodes; ++n)
    if (g.switch_of[n] == SwitchGraph::kNone) {
      w.order.push_back(n);
      w.subtree_end[w.order.size()] =
          std::max(w.subtree_end[w.order.size()], 1u);
    }
  return w;
}

// Where in [lo, hi] of the walk rank r's share ends (ranks before it
// placed in `p`, up to `previous`): at the end of a subtree, the one that
// leaves the fewest cables between ranks with the rest of the walk on rank
// r + 1 (counted as cross_rank_cables counts them), then the largest, then
// the nearest to `even`. Counting is linear in the network, so only the
// kMaxCandidates largest subtrees are counted.
size_t best_cut(const Topology &t, const Walk &w, Partition &p, uint32_t r,
                size_t previous, size_t even, size_t lo, size_t hi) {
  constexpr size_t kMaxCandidates = 64;
  auto distance = [even](size_t x) { return x > even ? x - even : even - x; };
  auto larger = [&](size_t a, size_t b) {
    if (w.subtree_end[a] != w.subtree_end[b])
      return w.subtree_end[a] > w.subtree_end[b];
    return distance(a) != distance(b) ? distance(a) < distance(b) : a < b;
  };
  std::vector<size_t> candidates;
  for (size_t c = lo; c <= hi; ++c)
    if (w.subtree_end[c] > 0)
      candidates.push_back(c);
  if (candidates.empty())
    return std::clamp(even, lo, hi);
  std::sort(candidates.begin(), candidates.end(), larger);
  if (candidates.size() > kMaxCandidates)
    candidates.resize(kMaxCandidates);
  Partition trial = p;
  trial.ranks = r + 2;
  size_t best = candidates.front();
  uint64_t fewest = UINT64_MAX;
  for (size_t c : candidates) {
    for (size_t i = previous; i < w.order.size(); ++i)
      trial.rank_of[w.order[i]] = i < c ? r : r + 1;
    uint64_t cables = cross_rank_cables(t, trial);
    if (cables < fewest) { // candidates come largest first: ties keep it
      fewest = cables;
      best = c;
    }
  }
  return best;
}

[[noreturn]] void too_few_nodes(uint32_t nodes, uint32_t ranks) {
  throw Error(std::to_string(nodes) + " node(s) cannot be shared out among " +
              std::to_string(ranks) +
              " ranks: each rank needs at least one node");
}

std::string trimmed(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos)
    return "";
  size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

} // namespace

std::vector<uint32_t> Partition::nodes_of(uint32_t rank) const {
  std::vector<uint32_t> out;
  for (uint32_t n = 0; n < rank_of.size(); ++n)
    if (rank_of[n] == rank)
      out.push_back(n);
  return out;
}

Partition partition_by_topology(const Topology &t, uint32_t ranks) {
  if (ranks == 0)
    throw Error("a partition needs at least one rank");
  if (t.nodes < ranks)
    too_few_nodes(t.nodes, ranks);
  SwitchGraph g(t);
  Walk w = walk_switches(t, g);
  Partition p;
  p.ranks = ranks;
  p.origin = "the topology";
  p.rank_of.assign(t.nodes, 0);
  // Cut k of ranks - 1 goes near k * nodes / ranks.
  const uint64_t n = t.nodes;
  size_t previous = 0;
  for (uint32_t r = 0; r < ranks; ++r) {
    size_t cut = n;
    if (r + 1 < ranks) {
      size_t even = size_t(n * (r + 1) / ranks);
      size_t slack = std::max<size_t>(1, size_t(n / ranks / 16));
      // Each rank keeps at least one node, and leaves one to each after it.
      size_t lo = std::max(previous + 1, even > slack ? even - slack : 0);
      size_t hi = std::min<size_t>(n - (ranks - 1 - r), even + slack);
      cut = best_cut(t, w, p, r, previous, even, lo, hi);
    }
    for (size_t i = previous; i < cut; ++i)
      p.rank_of[w.order[i]] = r;
    previous = cut;
  }
  return p;
}

Partition parse_partition(const std::string &text, const std::string &origin,
                          uint32_t nodes, uint32_t ranks) {
  Partition p;
  p.ranks = ranks;
  p.origin = origin;
  const uint32_t kUnset = ~0u;
  p.rank_of.assign(nodes, kUnset);
  std::vector<bool> rank_seen(ranks, false);
  std::istringstream in(text);
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    auto fail = [&](const std::string &why) -> Error {
      return Error(origin + ":" + std::to_string(number) + ": " + why);
    };
    std::string body = trimmed(line.substr(0, line.find('#')));
    if (body.empty())
      continue;
    size_t colon = body.find(':');
    if (colon == std::string::npos)
      throw fail("expected '<rank>: <nodes>', e.g. '1: 512-1023'");
    auto rank = parse_u32(trimmed(body.substr(0, colon)));
    if (!rank)
      throw fail("'" + trimmed(body.substr(0, colon)) +
                 "' is not a rank number");
    if (*rank >= ranks)
      throw fail("rank " + std::to_string(*rank) +
                 " is not one of the run's ranks (0-" +
                 std::to_string(ranks - 1) + ")");
    if (rank_seen[*rank])
      throw fail("rank " + std::to_string(*rank) + " has a line already");
    rank_seen[*rank] = true;
    std::istringstream items(body.substr(colon + 1));
    bool any = false;
    for (std::string item; std::getline(items, item, ',');) {
      item = trimmed(item);
      if (item.empty())
        throw fail("an empty entry in the list of nodes");
      size_t dash = item.find('-');
      auto first = parse_u32(trimmed(item.substr(0, dash)));
      auto last = dash == std::string::npos
                      ? first
                      : parse_u32(trimmed(item.substr(dash + 1)));
      if (!first || !last || *last < *first)
        throw fail("'" + item +
                   "' is neither a node number nor a range a-b with a <= b");
      if (*last >= nodes)
        throw fail("node " + std::to_string(*last) +
                   " is not in the run (nodes 0-" + std::to_string(nodes - 1) +
                   ")");
      for (uint64_t node = *first; node <= *last; ++node) {
        uint32_t &owner = p.rank_of[node];
        if (owner != kUnset)
          throw fail("node " + std::to_string(node) + " is on rank " +
                     std::to_string(owner) + " already");
        owner = *rank;
      }
      any = true;
    }
    if (!any)
      throw fail("rank " + std::to_string(*rank) + " is given no nodes");
  }
  for (uint32_t r = 0; r < ranks; ++r)
    if (!rank_seen[r])
      throw Error(origin + ": rank " + std::to_string(r) +
                  " has no line (every rank needs at least one node)");
  for (uint32_t n = 0; n < nodes; ++n)
    if (p.rank_of[n] == kUnset)
      throw Error(origin + ": node " + std::to_string(n) + " is on no rank");
  return p;
}

Partition read_partition(const std::string &path, uint32_t nodes,
                         uint32_t ranks) {
  // Far more than a line per rank needs, even with a list per node.
  constexpr size_t kMaxBytes = size_t(16) << 20;
  std::string text = read_text_file(path, "partition file", kMaxBytes);
  if (nodes < ranks)
    too_few_nodes(nodes, ranks);
  return parse_partition(text, path, nodes, ranks);
}

uint64_t cross_rank_cables(const Topology &t, const Partition &p) {
  SwitchGraph g(t);
  const uint32_t kNone = SwitchGraph::kNone;
  // A switch with nodes votes by them. One without takes the votes of the
  // neighbours one hop nearer to the nodes (breadth-first from the switches
  // that have nodes), each weighing the nodes it stands for: so between two
  // subtrees a switch goes with the nearer one, not the larger.
  std::vector<uint32_t> owner(t.switches, kNone), hops(t.switches, kNone);
  std::vector<uint64_t> weight(t.switches, 0);
  std::vector<uint64_t> votes(p.ranks);
  auto elect = [&] {
    return uint32_t(std::max_element(votes.begin(), votes.end()) -
                    votes.begin());
  };
  std::vector<uint32_t> layer;
  for (uint32_t s = 0; s < t.switches; ++s) {
    if (g.nodes[s].empty())
      continue;
    std::fill(votes.begin(), votes.end(), 0);
    for (uint32_t n : g.nodes[s])
      ++votes[p.rank_of[n]];
    owner[s] = elect();
    weight[s] = g.nodes[s].size();
    hops[s] = 0;
    layer.push_back(s);
  }
  for (uint32_t h = 1; !layer.empty(); ++h) {
    std::vector<uint32_t> next;
    for (uint32_t s : layer)
      for (uint32_t n : g.neighbours[s])
        if (hops[n] == kNone) {
          hops[n] = h;
          next.push_back(n);
        }
    std::sort(next.begin(), next.end());
    for (uint32_t s : next) {
      std::fill(votes.begin(), votes.end(), 0);
      for (uint32_t m : g.neighbours[s])
        if (hops[m] == h - 1) {
          votes[owner[m]] += weight[m];
          weight[s] += weight[m];
        }
      owner[s] = elect();
    }
    layer = std::move(next);
  }
  auto rank_of = [&](const Topology::Endpoint &e) {
    return e.is_switch ? owner[e.index] : p.rank_of[e.index];
  };
  uint64_t cut = 0;
  for (const auto &[a, b] : t.cables)
    cut += rank_of(a) != rank_of(b);
  return cut;
}

std::string node_ranges(const std::vector<uint32_t> &nodes) {
  return number_ranges(nodes, ",");
}

std::string describe_partition(const Topology &t, const Partition &p) {
  std::string out = "partition (from " + p.origin +
                    "): " + std::to_string(t.nodes) + " nodes on " +
                    std::to_string(p.ranks) + " ranks\n";
  for (uint32_t r = 0; r < p.ranks; ++r) {
    std::vector<uint32_t> mine = p.nodes_of(r);
    out += "  rank " + std::to_string(r) + ": " + std::to_string(mine.size()) +
           (mine.size() == 1 ? " node (" : " nodes (") + node_ranges(mine) +
           ")\n";
  }
  uint64_t cut = cross_rank_cables(t, p);
  out += "  " + std::to_string(cut) + (cut == 1 ? " cable" : " cables") +
         " between ranks, of " + std::to_string(t.cables.size()) + "\n";
  return out;
}

} // namespace nicemu
