#include "fabric/ethernet.hpp"

#include "nicemu/error.hpp"
#include "nicemu/model.hpp"

#include <cmath>
#include <string>

namespace nicemu {

namespace {

// 02: locally administered, unicast; 4E 4D: 'N' 'M'.
constexpr uint8_t kPrefix[4] = {0x02, 0x4E, 0x4D, 0x00};
constexpr uint32_t kIpv4Base = 0x0A4D0000; // 10.77.0.0

} // namespace

MacAddress mac_of(uint32_t node) {
  return {kPrefix[0], kPrefix[1],         kPrefix[2],
          kPrefix[3], uint8_t(node >> 8), uint8_t(node & 0xFF)};
}

std::optional<uint32_t> node_of_mac(const uint8_t *mac) {
  for (int i = 0; i < 4; ++i)
    if (mac[i] != kPrefix[i])
      return std::nullopt;
  return uint32_t(mac[4]) << 8 | mac[5];
}

uint32_t ipv4_of(uint32_t node) {
  return kIpv4Base + node + 1;
}

std::optional<EthernetFraming> ethernet_framing(const Model &model) {
  const std::string section = "ethernet.";
  auto first = model.params.lower_bound(section);
  if (first == model.params.end() || first->first.rfind(section, 0) != 0)
    return std::nullopt;
  EthernetFraming f;
  auto read = [&](const char *key, uint32_t &out) {
    auto it = model.params.find(section + key);
    if (it == model.params.end())
      return;
    double v = it->second;
    if (v < 0 || v > 65535 || v != std::floor(v))
      throw Error("model " + model.name + ": [params.ethernet] " + key +
                  " must be a whole number of bytes from 0 to 65535");
    out = uint32_t(v);
  };
  read("preamble_bytes", f.preamble_bytes);
  read("interframe_gap_bytes", f.interframe_gap_bytes);
  read("min_frame_bytes", f.min_frame_bytes);
  read("max_payload_bytes", f.max_payload_bytes);
  if (f.min_frame_bytes < kEthernetHeaderBytes + kEthernetFcsBytes ||
      f.padded_length() > f.max_length())
    throw Error("model " + model.name +
                ": [params.ethernet] min_frame_bytes must be at least 18 (a "
                "header and the FCS) and at most max_payload_bytes + 18");
  return f;
}

} // namespace nicemu
