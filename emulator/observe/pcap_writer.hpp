// --pcap DIR: one classic pcap file per cable that carried a packet, named
// link-<end>-<end>.pcap after the cable's two ends (e.g.
// link-node0-switch0.p0.pcap), with nanosecond timestamps from the virtual
// clock. Each packet is recorded once per cable, when its head entered,
// behind a small pseudo-header (direction, route length, source, packet id,
// time on the cable, destination). tools/wireshark/nicemu.lua decodes the
// records. Format: docs/profiling.md, "Packet captures". On an Ethernet network
// the files are standard LINKTYPE_ETHERNET captures: each record is the frame
// as on the wire, without preamble and FCS (docs/fabric.md, "Ethernet
// (comet)").
#pragma once

#include "observe/run_events.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nicemu {

class PcapWriter final : public RunEvents {
public:
  // How frames are encoded, per file, from the crossings told
  // (LinkRef::ethernet). Myrinet-style frames (route bytes, payload, CRC-32)
  // use the first user link type behind the pseudo-header; Ethernet frames
  // are written as captured from a NIC: destination MAC to payload, no FCS.
  // DIMMnet-1's RHiNET packets (header, payload, CRC-32; no route bytes)
  // use the second user link type, behind the same pseudo-header.
  enum class LinkType : uint32_t {
    Ethernet = 1,        // LINKTYPE_ETHERNET
    NicemuMyrinet = 147, // LINKTYPE_USER0
    NicemuRhinet = 148,  // LINKTYPE_USER1
  };

  static constexpr uint32_t kMagicNanoseconds = 0xA1B23C4D;
  static constexpr uint32_t kSnapLength = 1u << 18; // > any Tx frame
  // Version 2 added the destination node (version 1: 24 bytes, without).
  static constexpr uint8_t kPseudoHeaderVersion = 2;
  static constexpr size_t kPseudoHeaderBytes = 28;

  // Creates `dir` if needed and removes the link-*.pcap files an earlier run
  // left there. Throws nicemu::Error if the directory cannot be written.
  explicit PcapWriter(const std::string &dir);
  ~PcapWriter() override; // finishes, ignoring errors, if finish() was not
  PcapWriter(const PcapWriter &) = delete;
  PcapWriter &operator=(const PcapWriter &) = delete;

  // Writes what is still buffered; nothing is recorded after. Throws
  // nicemu::Error if a file could not be written.
  void finish();

  void link_packet(const LinkRef &link, uint32_t source, uint64_t packet_id,
                   Time head, Time tail,
                   std::span<const uint8_t> frame) override;

  // The file of the cable between `a` and `b` (in either order), and whether
  // a packet from `from` travels in direction 0 (first end to second).
  static std::string file_name(std::string_view a, std::string_view b);
  static bool forward(std::string_view from, std::string_view to);

private:
  struct Capture {
    std::string path;
    std::vector<uint8_t> pending; // records not yet in the file
    bool created = false;
    LinkType type = LinkType::NicemuMyrinet;
  };
  void write_out(Capture &capture);

  std::string dir_;
  // By cable index. Buffered so that a network of a thousand cables needs
  // one open file at a time.
  std::vector<std::unique_ptr<Capture>> captures_;
  bool finished_ = false;
  std::string error_; // the first write error
};

} // namespace nicemu
