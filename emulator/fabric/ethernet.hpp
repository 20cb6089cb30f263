// Ethernet networks (the `comet` model; docs/fabric.md, "Ethernet (comet)"):
// the addresses nicemu gives each node and the IEEE 802.3 framing figures of
// a model.
//
// Addressing: node n has the locally administered unicast MAC
// 02:4E:4D:00:(n >> 8):(n & 255) ('N', 'M' for nicemu) and the IPv4 address
// 10.77.0.0 + n + 1 (node 0 is 10.77.0.1, node 255 is 10.77.1.0). Both are
// functions of the node number only, so every node knows every other's
// addresses without a protocol (ARP) and a switch's forwarding table is
// static and complete.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace nicemu {

struct Model;

using MacAddress = std::array<uint8_t, 6>;

inline constexpr uint32_t kEthernetHeaderBytes = 14; // dest, source, type
inline constexpr uint32_t kEthernetFcsBytes = 4;     // CRC-32 at the end
inline constexpr uint32_t kMaxMacNode = 0xFFFF;      // nodes with a MAC

// The MAC of node `node` (node <= kMaxMacNode; higher bits are ignored).
MacAddress mac_of(uint32_t node);
// The node whose MAC is `mac` (6 bytes), or nothing for any other address
// (another prefix, a group address, broadcast).
std::optional<uint32_t> node_of_mac(const uint8_t *mac);
// The IPv4 address of node `node`, a.b.c.d as 0xaabbccdd.
uint32_t ipv4_of(uint32_t node);

// IEEE 802.3 framing, from a model's [params.ethernet].
struct EthernetFraming {
  uint32_t preamble_bytes = 8;        // preamble + start-of-frame delimiter
  uint32_t interframe_gap_bytes = 12; // idle time after each frame
  uint32_t min_frame_bytes = 64;      // with the FCS; shorter ones are padded
  uint32_t max_payload_bytes = 1500;  // after the 14-byte header

  // A frame as the Tx engine takes it: header and payload, no FCS.
  uint32_t min_length() const { return kEthernetHeaderBytes; }
  uint32_t max_length() const {
    return kEthernetHeaderBytes + max_payload_bytes;
  }
  // Frames shorter than this (without FCS) are padded with zeros to it.
  uint32_t padded_length() const { return min_frame_bytes - kEthernetFcsBytes; }
};

// The framing of a model whose links are Ethernet (it has [params.ethernet];
// keys left out take the IEEE values above), or nothing. Throws
// nicemu::Error for values that make no frame possible.
std::optional<EthernetFraming> ethernet_framing(const Model &model);

} // namespace nicemu
