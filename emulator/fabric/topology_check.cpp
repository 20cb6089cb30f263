#include "fabric/topology_check.hpp"

#include <deque>

namespace nicemu::fabric_detail {

namespace {

std::string plural(uint64_t n, const std::string &what) {
  const char *ending = n == 1 ? "" : what.back() == 'h' ? "es" : "s";
  return std::to_string(n) + " " + what + ending;
}

} // namespace

std::string check_sizes(uint32_t nodes, uint32_t switches, uint32_t ports) {
  if (nodes == 0)
    return "a topology needs at least one node";
  if (nodes > kMaxNodes)
    return plural(nodes, "node") + " is too many (at most " +
           std::to_string(kMaxNodes) + ")";
  if (switches > kMaxSwitches)
    return plural(switches, "switch") + " is too many (at most " +
           std::to_string(kMaxSwitches) + ")";
  if (ports == 0 || ports > kMaxPorts)
    return "switches need 1 to " + std::to_string(kMaxPorts) +
           " ports (a route byte names one), not " + std::to_string(ports);
  return "";
}

CableChecker::CableChecker(uint32_t nodes, uint32_t switches, uint32_t ports,
                           std::function<std::string(size_t)> describe)
    : wiring_(nodes, switches, ports), tag_of_(wiring_.peer.size(), kNoTag),
      describe_(std::move(describe)) {}

// Messages are built only on failure: route() validates every time.
std::string CableChecker::check_endpoint(const Topology::Endpoint &e) const {
  auto name = [&] { return endpoint_name(e); };
  if (!e.is_switch) {
    if (e.index >= wiring_.nodes)
      return "node " + name() + " does not exist (the topology has " +
             plural(wiring_.nodes, "node") + ")";
    if (e.port != 0)
      return "node " + name() + " has one port (port " +
             std::to_string(e.port) + " given)";
    return {};
  }
  if (e.index >= wiring_.switches)
    return "switch s" + std::to_string(e.index) +
           " does not exist (the topology has " +
           plural(wiring_.switches, "switch") + ")";
  if (e.port >= wiring_.ports)
    return "port " + name() + " does not exist (switches have " +
           plural(wiring_.ports, "port") + ")";
  return "";
}

std::string CableChecker::add(const Topology::Endpoint &a,
                              const Topology::Endpoint &b, size_t tag) {
  for (const auto *e : {&a, &b})
    if (std::string problem = check_endpoint(*e); !problem.empty())
      return problem;
  auto cable = [&] {
    return "cable " + endpoint_name(a) + " " + endpoint_name(b);
  };
  uint32_t ia = wiring_.id(a), ib = wiring_.id(b);
  if (ia == ib)
    return cable() + " connects a port to itself";
  if (a.is_switch && b.is_switch && a.index == b.index)
    return cable() + " connects switch s" + std::to_string(a.index) +
           " to itself";
  for (uint32_t id : {ia, ib})
    if (tag_of_[id] != kNoTag)
      return (wiring_.is_node(id) ? "node " : "port ") + wiring_.name(id) +
             " is already cabled (" + describe_(tag_of_[id]) + ")";
  wiring_.peer[ia] = ib;
  wiring_.peer[ib] = ia;
  tag_of_[ia] = tag_of_[ib] = tag;
  return "";
}

// Vertices: nodes 0..n-1, then switches. A switch reaches every port it has.
std::vector<bool> CableChecker::reachable_from_node0() const {
  const Wiring &w = wiring_;
  auto vertex = [&](uint32_t port) {
    return w.is_node(port) ? port : w.nodes + w.switch_of(port);
  };
  std::vector<bool> seen(size_t(w.nodes) + w.switches, false);
  std::deque<uint32_t> todo{0};
  seen[0] = true;
  while (!todo.empty()) {
    uint32_t v = todo.front();
    todo.pop_front();
    uint32_t first = v < w.nodes ? v : w.switch_port(v - w.nodes, 0);
    uint32_t count = v < w.nodes ? 1 : w.ports;
    for (uint32_t p = first; p < first + count; ++p) {
      if (w.peer[p] == kNoPort || seen[vertex(w.peer[p])])
        continue;
      seen[vertex(w.peer[p])] = true;
      todo.push_back(vertex(w.peer[p]));
    }
  }
  return seen;
}

std::optional<CableChecker::Problem>
CableChecker::finish(size_t nodes_tag, size_t switches_tag) const {
  const Wiring &w = wiring_;
  for (uint32_t n = 0; n < w.nodes; ++n)
    if (w.peer[n] == kNoPort)
      return Problem{"node " + std::to_string(n) + " is not cabled", nodes_tag};
  std::vector<bool> seen = reachable_from_node0();
  for (uint32_t n = 0; n < w.nodes; ++n)
    if (!seen[n])
      return Problem{"node " + std::to_string(n) + " cannot reach node 0",
                     tag_of_[n]};
  for (uint32_t s = 0; s < w.switches; ++s) {
    if (seen[w.nodes + s])
      continue;
    std::string name = "switch s" + std::to_string(s);
    for (uint32_t p = 0; p < w.ports; ++p)
      if (size_t tag = tag_of_[w.switch_port(s, p)]; tag != kNoTag)
        return Problem{name + " cannot reach node 0", tag};
    return Problem{name + " has no cables", switches_tag};
  }
  return std::nullopt;
}

} // namespace nicemu::fabric_detail
