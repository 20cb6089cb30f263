// The fabric names a cable's ends "node3" or "switch1.p4" (LinkRef). The
// trace and the captures need them back as numbers, and a fixed order of
// the two ends of a cable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nicemu {

struct EndpointName {
  bool is_switch = false;
  uint32_t index = 0; // node or switch number
  uint32_t port = 0;  // switch port
};

// "node3" or "switch1.p4"; nullopt for anything else.
std::optional<EndpointName> parse_endpoint(std::string_view name);

// The order of a cable's ends in capture file names: nodes before switches,
// nodes by number, switch ports by (switch, port); names that are not
// endpoints compare as text, after the rest.
bool endpoint_before(std::string_view a, std::string_view b);

} // namespace nicemu
