#include "observe/link_names.hpp"

#include <charconv>
#include <tuple>

namespace nicemu {

namespace {

// Reads a decimal number at the front of `text` and drops it.
std::optional<uint32_t> take_number(std::string_view &text) {
  uint32_t value = 0;
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data())
    return std::nullopt;
  text.remove_prefix(size_t(end - text.data()));
  return value;
}

bool take_prefix(std::string_view &text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix)
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

} // namespace

std::optional<EndpointName> parse_endpoint(std::string_view name) {
  EndpointName e;
  if (take_prefix(name, "node")) {
    auto node = take_number(name);
    if (!node || !name.empty())
      return std::nullopt;
    e.index = *node;
    return e;
  }
  if (!take_prefix(name, "switch"))
    return std::nullopt;
  auto sw = take_number(name);
  if (!sw || !take_prefix(name, ".p"))
    return std::nullopt;
  auto port = take_number(name);
  if (!port || !name.empty())
    return std::nullopt;
  e.is_switch = true;
  e.index = *sw;
  e.port = *port;
  return e;
}

bool endpoint_before(std::string_view a, std::string_view b) {
  auto ea = parse_endpoint(a), eb = parse_endpoint(b);
  if (ea && eb)
    return std::tuple(ea->is_switch, ea->index, ea->port) <
           std::tuple(eb->is_switch, eb->index, eb->port);
  if (ea || eb)
    return bool(ea);
  return a < b;
}

} // namespace nicemu
