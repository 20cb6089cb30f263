// The NIC's network port: the Tx engine (card memory -> link), the Rx engine
// (link -> card memory) and the route table, all on one fabric port.
#pragma once

#include "devices/device.hpp"
#include "devices/host_dma.hpp"
#include "fabric/ethernet.hpp"
#include "fabric/fabric.hpp"

#include <optional>
#include <vector>

namespace nicemu {

// TX: sends one packet per start. The head leaves after the engine's gap;
// the engine then feeds the link at its per-word rate (or the link's, if
// slower). DONE when the tail has left the card.
//
// On an Ethernet model (fabric/ethernet.hpp) the packet is an Ethernet
// frame without FCS (ROUTE_LEN must be 0; LENGTH 14..1514): the engine pads
// it with zeros to the minimum frame, appends the FCS and, standing in for
// the switches' static forwarding table, gives it the route to the node
// that owns its destination MAC. A frame no switch port leads to (unknown
// MAC, the sender's own, a group address) is filtered by the first switch;
// the send still completes.
class TxEngine final : public Device {
public:
  TxEngine(DeviceHost &host, DmaTiming timing);
  // The model keys it reads.
  static std::vector<ModelKey> model_keys();

  static constexpr uint32_t kMaxLength = 1u << 16;

  // The model's Ethernet framing; empty for Myrinet-style packets.
  const std::optional<EthernetFraming> &ethernet() const { return ethernet_; }

  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;

private:
  template <class Self, class Archive> static void fields(Self &s, Archive &a) {
    a.fields(s.addr_, s.length_, s.route_len_, s.status_, s.error_, s.irq_,
             s.sequence_, s.started_, s.sending_);
  }
  void start(uint32_t ctrl);
  void sent(Time now);

  DeviceHost &host_;
  DmaTiming timing_;
  std::optional<EthernetFraming> ethernet_;
  uint32_t addr_ = 0, length_ = 0, route_len_ = 0, status_ = 0, error_ = 0;
  bool irq_ = false;
  uint64_t sequence_ = 0;
  // The packet being sent, for observers.
  Time started_ = 0;
  uint32_t sending_ = 0;
};

// RX: one packet per ARM into the buffer at ADDR (SIZE bytes). A packet that
// arrives while nothing is armed waits on the link (backpressure).
class RxEngine final : public Device, public PacketReceiver {
public:
  explicit RxEngine(DeviceHost &host);

  bool accept_head(const Packet &p, Time now) override;
  void packet_arrived(Packet p, Time now) override;

  uint64_t crc_errors() const { return crc_errors_; }

  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;

private:
  template <class Self, class Archive> static void fields(Self &s, Archive &a) {
    a.fields(s.addr_, s.size_, s.status_, s.length_, s.irq_, s.receiving_,
             s.head_waiting_, s.head_time_, s.crc_errors_);
  }
  void arm(uint32_t ctrl);
  DeviceHost &host_;
  uint32_t addr_ = 0, size_ = 0, status_ = 0, length_ = 0;
  bool irq_ = false, receiving_ = false, head_waiting_ = false;
  Time head_time_ = 0; // when the packet being received was accepted
  uint64_t crc_errors_ = 0;
};

// ROUTE: the route bytes to each node, from the fabric's topology, and the
// node's Ethernet and IPv4 addresses (fabric/ethernet.hpp; on every model).
class RouteTable final : public Device {
public:
  explicit RouteTable(DeviceHost &host);

  void save_state(StateWriter &out) const override;
  void load_state(StateReader &in) override;

private:
  void look_up();

  DeviceHost &host_;
  uint32_t dest_ = 0;
  std::vector<uint8_t> route_;
  bool too_long_ = false; // longer than NICEMU_ROUTE_MAX_BYTES
};

} // namespace nicemu
