// Private to fabric/: a topology as a flat table of ports. Every port (a
// node's one port, or a switch's port) gets a number; `peer` says which port
// the cable from it reaches. The fabric, the router and the checker all walk
// this table, so each step is an array lookup.
#pragma once

#include "fabric/fabric.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu::fabric_detail {

inline constexpr uint32_t kNoPort = ~0u;

struct Wiring {
  uint32_t nodes = 0;
  uint32_t switches = 0;
  uint32_t ports = 0;
  std::vector<uint32_t> peer; // port -> port at the cable's other end

  Wiring(uint32_t nodes, uint32_t switches, uint32_t ports)
      : nodes(nodes), switches(switches), ports(ports),
        peer(size_t(nodes) + size_t(switches) * ports, kNoPort) {}

  // Ports are numbered nodes first (node n is port n), then switch by switch.
  uint32_t node_port(uint32_t node) const { return node; }
  uint32_t switch_port(uint32_t sw, uint32_t port) const {
    return nodes + sw * ports + port;
  }
  uint32_t id(const Topology::Endpoint &e) const {
    return e.is_switch ? switch_port(e.index, e.port) : node_port(e.index);
  }
  bool is_node(uint32_t id) const { return id < nodes; }
  uint32_t switch_of(uint32_t id) const { return (id - nodes) / ports; }
  uint32_t port_of(uint32_t id) const { return (id - nodes) % ports; }

  // "n3" or "s0:7", as in topology files and event names.
  std::string name(uint32_t id) const {
    return is_node(id) ? endpoint_text(false, id, 0)
                       : endpoint_text(true, switch_of(id), port_of(id));
  }

  // Built by appending: g++ 12 -O3 warns (falsely, -Wrestrict) on
  // "literal" + std::to_string(...).
  static std::string endpoint_text(bool is_switch, uint32_t index,
                                   uint32_t port) {
    std::string s(is_switch ? "s" : "n");
    s += std::to_string(index);
    if (is_switch) {
      s += ':';
      s += std::to_string(port);
    }
    return s;
  }
};

// The wiring of a topology whose endpoints are in range (validate() first).
inline Wiring wire(const Topology &t) {
  Wiring w(t.nodes, t.switches, t.ports_per_switch);
  for (const auto &[a, b] : t.cables) {
    w.peer[w.id(a)] = w.id(b);
    w.peer[w.id(b)] = w.id(a);
  }
  return w;
}

inline std::string endpoint_name(const Topology::Endpoint &e) {
  return Wiring::endpoint_text(e.is_switch, e.index, e.port);
}

} // namespace nicemu::fabric_detail
