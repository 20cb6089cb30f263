// What a run can tell observers while it happens: handler calls on the
// cores, transfers of the DMA engines, packets on the links and calls of the
// host library, all on the virtual clock. Traces (--trace), packet captures
// (--pcap) and reports subscribe to these; with no observer the emulator
// pays one null-pointer test per event.
#pragma once

#include "sim/time.hpp"

#include <cstdint>
#include <span>
#include <string_view>

namespace nicemu {

enum class DmaEngineKind : uint8_t { HostDma, Tx, Rx };

// One cable between two endpoints, as the fabric knows it. `from` and `to`
// name the ends as "node3" or "switch1.p4" (`from`: where the packet entered
// the cable); index is the cable's number in the topology (stable for a
// given topology). route_bytes: how many of the frame's first bytes are
// route bytes (the route does not say where it ends). ethernet: the frame is
// an Ethernet frame, FCS included (no route bytes, no preamble).
struct LinkRef {
  static constexpr uint32_t kUnknownNode = ~0u;
  uint32_t index = 0;
  std::string_view from, to;
  uint32_t route_bytes = 0;
  bool ethernet = false;
  bool rhinet = false; // DIMMnet-1's links: table-routed RHiNET packets
  // The node the packet's route leads to from this cable; kUnknownNode
  // where no source route says (Ethernet, RHiNET) or it leads nowhere.
  uint32_t destination = kUnknownNode;
};

class RunEvents {
public:
  virtual ~RunEvents() = default;

  // A measured firmware function (an AM handler, the dispatch, an interrupt
  // handler, a --measure symbol) ran on `node`'s core from `start` to `end`.
  virtual void handler_call(uint32_t /*node*/, std::string_view /*name*/,
                            Time /*start*/, Time /*end*/) {}

  // A DMA engine of `node` moved `bytes` from `start` to `end`. For HostDma,
  // `to_host` gives the direction.
  virtual void dma_transfer(uint32_t /*node*/, DmaEngineKind /*engine*/,
                            Time /*start*/, Time /*end*/, uint32_t /*bytes*/,
                            bool /*to_host*/) {}

  // A packet crossed one cable: its head entered at `head`, its tail left at
  // `tail`. `frame` is what travelled on that cable: the route bytes still
  // ahead of it, then the payload (with its CRC); on Ethernet, the frame
  // from its destination MAC to its FCS (`head` is the preamble's start).
  virtual void link_packet(const LinkRef & /*link*/, uint32_t /*source*/,
                           uint64_t /*packet_id*/, Time /*head*/, Time /*tail*/,
                           std::span<const uint8_t> /*frame*/) {}

  // A host library call of rank `node` (by its channel request kind, e.g.
  // "PioWrite", "WaitWord") from `start` to `end` in virtual time.
  virtual void host_call(uint32_t /*node*/, std::string_view /*what*/,
                         Time /*start*/, Time /*end*/) {}

  // `node`'s firmware printed a console line (without its '\n') at `at`.
  virtual void console_line(uint32_t /*node*/, Time /*at*/,
                            std::string_view /*line*/) {}

  // `node`'s core faulted at `at` (a bus error, an illegal instruction, the
  // watchdog...): `what` says which, where and why.
  virtual void fault(uint32_t /*node*/, Time /*at*/,
                     std::string_view /*what*/) {}
};

} // namespace nicemu
