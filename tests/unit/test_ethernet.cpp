// Ethernet on the `comet` model (docs/fabric.md, "Ethernet (comet)"): node
// addresses, the Tx and Rx engines' framing, store-and-forward timing at
// 12.5 MB/s through 16-port switches, filtered frames, the ROUTE and SYS
// registers, and captures that tshark decodes as Ethernet/IPv4/UDP.
//
// The nodes are not booted: the tests drive the engines' registers from
// scheduled events (Node::debug_mmio, checked by the bus like the core's
// accesses), at exactly known times. Expected times are computed from the
// model's figures; the comments give them for comet: Tx gap 1 us, 80 ns per
// byte, cables 50 ns, switch 5 us, preamble 8 bytes, interframe gap 12.
#include "devices/network.hpp"
#include "fabric/ethernet.hpp"
#include "fabric/fabric.hpp"
#include "nicemu/model.hpp"
#include "nicemu/regs.h"
#include "node/cluster.hpp"
#include "node/node.hpp"
#include "observe/pcap_writer.hpp"
#include "observe/run_events.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace nicemu;
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kTxBuf = 0x10000, kRxBuf = 0x20000, kRxBuf2 = 0x30000;
constexpr uint32_t kRxSize = 2048;
constexpr Time kUs = 1'000'000;

const Model &comet() {
  static Model m = load_model("comet");
  return m;
}

struct Transfer {
  uint32_t node;
  DmaEngineKind engine;
  Time start, end;
  uint32_t bytes;
};

struct Crossing {
  std::string from, to;
  bool ethernet;
  uint32_t route_bytes;
  Time head, tail;
  std::vector<uint8_t> frame;
};

class Observer : public RunEvents {
public:
  void dma_transfer(uint32_t node, DmaEngineKind engine, Time start, Time end,
                    uint32_t bytes, bool) override {
    transfers.push_back({node, engine, start, end, bytes});
    if (on_transfer)
      on_transfer(transfers.back());
  }
  void link_packet(const LinkRef &link, uint32_t source, uint64_t id, Time head,
                   Time tail, std::span<const uint8_t> frame) override {
    crossings.push_back({std::string(link.from), std::string(link.to),
                         link.ethernet, link.route_bytes, head, tail,
                         std::vector<uint8_t>(frame.begin(), frame.end())});
    if (also)
      also->link_packet(link, source, id, head, tail, frame);
  }
  std::vector<Transfer> of(uint32_t node, DmaEngineKind engine) const {
    std::vector<Transfer> out;
    for (const Transfer &t : transfers)
      if (t.node == node && t.engine == engine)
        out.push_back(t);
    return out;
  }

  std::vector<Transfer> transfers;
  std::vector<Crossing> crossings;
  std::function<void(const Transfer &)> on_transfer;
  RunEvents *also = nullptr; // e.g. a capture writer
};

// `n` nodes of `model` on the network make_fabric builds for them.
struct EthNet {
  const Model &model;
  Scheduler sched;
  Observer seen;
  std::unique_ptr<Fabric> fabric;
  std::vector<std::unique_ptr<Node>> nodes;
  FabricParams params;
  Time tx_gap = 0;

  explicit EthNet(uint32_t n, const Model &m = comet()) : model(m) {
    fabric = make_fabric(sched, m, n, "");
    fabric->set_events(&seen);
    params = fabric->params();
    tx_gap = Time(m.timing("tx_dma.gap"));
    for (uint32_t i = 0; i < n; ++i) {
      NodeConfig c;
      c.node = i;
      c.nodes = n;
      c.fabric = fabric.get();
      c.events = &seen;
      nodes.push_back(std::make_unique<Node>(m, sched, c));
    }
  }

  uint32_t get(uint32_t node, uint32_t reg) {
    uint32_t v = 0;
    std::string why;
    REQUIRE_MESSAGE(nodes[node]->debug_mmio(reg, false, v, why), why);
    return v;
  }
  void set(uint32_t node, uint32_t reg, uint32_t v) {
    std::string why;
    REQUIRE_MESSAGE(nodes[node]->debug_mmio(reg, true, v, why), why);
  }
  // Starts node `from`'s Tx on `frame` (header and payload, no FCS).
  void send(uint32_t from, const std::vector<uint8_t> &frame,
            uint32_t route_len = 0) {
    REQUIRE(
        nodes[from]->card_write(kTxBuf, frame.data(), uint32_t(frame.size())));
    set(from, NICEMU_TX_BASE + NICEMU_TX_ADDR, kTxBuf);
    set(from, NICEMU_TX_BASE + NICEMU_TX_LENGTH, uint32_t(frame.size()));
    set(from, NICEMU_TX_BASE + NICEMU_TX_ROUTE_LEN, route_len);
    set(from, NICEMU_TX_BASE + NICEMU_TX_CTRL, NICEMU_DMA_START);
  }
  void arm(uint32_t node, uint32_t addr = kRxBuf) {
    set(node, NICEMU_RX_BASE + NICEMU_RX_ADDR, addr);
    set(node, NICEMU_RX_BASE + NICEMU_RX_SIZE, kRxSize);
    set(node, NICEMU_RX_BASE + NICEMU_RX_CTRL, NICEMU_RX_ARM);
  }
  uint32_t tx_status(uint32_t node) {
    return get(node, NICEMU_TX_BASE + NICEMU_TX_STATUS);
  }
  uint32_t rx_status(uint32_t node) {
    return get(node, NICEMU_RX_BASE + NICEMU_RX_STATUS);
  }
  std::vector<uint8_t> card(uint32_t node, uint32_t addr, uint32_t len) {
    std::vector<uint8_t> out(len);
    REQUIRE(nodes[node]->card_read(addr, out.data(), len));
    return out;
  }
  void at(Time t, std::function<void()> fn) {
    sched.schedule(t, "test", std::move(fn));
  }
  void run() { sched.run_until(kTimeNever); }

  // A frame of `length` bytes (no FCS) on the wire: preamble, the frame
  // padded to the minimum, the FCS.
  Time wire(size_t length) const {
    size_t bytes =
        std::max<size_t>(length + kEthernetFcsBytes, params.min_frame_bytes);
    return Time(params.preamble_bytes + bytes) * params.link_ps_per_byte;
  }
  Time ifg() const {
    return Time(params.interframe_gap_bytes) * params.link_ps_per_byte;
  }
};

// A frame of `length` bytes (no FCS) from node `from` to `dest`, with the
// IEEE local experimental EtherType and a recognisable payload.
std::vector<uint8_t> frame_to(const MacAddress &dest, uint32_t from,
                              size_t length) {
  std::vector<uint8_t> f(length);
  MacAddress source = mac_of(from);
  std::copy(dest.begin(), dest.end(), f.begin());
  std::copy(source.begin(), source.end(), f.begin() + 6);
  f[12] = 0x88;
  f[13] = 0xB5;
  for (size_t i = 14; i < length; ++i)
    f[i] = uint8_t(i * 7 + from);
  return f;
}

std::vector<uint8_t> frame_to(uint32_t dest, uint32_t from, size_t length) {
  return frame_to(mac_of(dest), from, length);
}

} // namespace

TEST_CASE("node addresses: MAC 02:4E:4D:00:hi:lo, IPv4 10.77.0.0 + n + 1") {
  CHECK(mac_of(0) == MacAddress{0x02, 0x4E, 0x4D, 0x00, 0x00, 0x00});
  CHECK(mac_of(2) == MacAddress{0x02, 0x4E, 0x4D, 0x00, 0x00, 0x02});
  CHECK(mac_of(258) == MacAddress{0x02, 0x4E, 0x4D, 0x00, 0x01, 0x02});
  CHECK(mac_of(65535) == MacAddress{0x02, 0x4E, 0x4D, 0x00, 0xFF, 0xFF});
  for (uint32_t n : {0u, 1u, 255u, 256u, 4095u, 65535u}) {
    CAPTURE(n);
    MacAddress mac = mac_of(n);
    CHECK(node_of_mac(mac.data()) == n);
    CHECK((mac[0] & 1) == 0); // unicast
    CHECK((mac[0] & 2) == 2); // locally administered
  }
  const uint8_t broadcast[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  const uint8_t multicast[6] = {0x01, 0x00, 0x5E, 0x00, 0x00, 0x01};
  const uint8_t group[6] = {0x03, 0x4E, 0x4D, 0x00, 0x00, 0x01};
  const uint8_t other[6] = {0x02, 0x4E, 0x4D, 0x01, 0x00, 0x01};
  const uint8_t vendor[6] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55};
  for (const uint8_t *mac : {broadcast, multicast, group, other, vendor})
    CHECK(!node_of_mac(mac));
  CHECK(ipv4_of(0) == 0x0A4D0001);   // 10.77.0.1
  CHECK(ipv4_of(1) == 0x0A4D0002);   // 10.77.0.2
  CHECK(ipv4_of(254) == 0x0A4D00FF); // 10.77.0.255
  CHECK(ipv4_of(255) == 0x0A4D0100); // 10.77.1.0
  CHECK(ipv4_of(300) == 0x0A4D012D); // 10.77.1.45
}

TEST_CASE("comet's network is Ethernet: framing, 12.5 MB/s, store-and-"
          "forward 16-port switches, lanai4's is not") {
  std::optional<EthernetFraming> eth = ethernet_framing(comet());
  REQUIRE(eth);
  CHECK(eth->preamble_bytes == 8);
  CHECK(eth->interframe_gap_bytes == 12);
  CHECK(eth->min_frame_bytes == 64);
  CHECK(eth->padded_length() == 60);
  CHECK(eth->min_length() == 14);
  CHECK(eth->max_length() == 1514);
  FabricParams p = fabric_params(comet());
  CHECK(p.ethernet);
  CHECK(p.store_and_forward);
  CHECK(p.link_ps_per_byte == 80'000); // 12.5 MB/s
  CHECK(p.link_latency == 50'000);
  CHECK(p.switch_latency == 5'000'000);
  CHECK(p.switch_ports == 16);
  CHECK(p.preamble_bytes == 8);
  CHECK(p.interframe_gap_bytes == 12);
  CHECK(p.min_frame_bytes == 64);
  CHECK(comet().timing("tx_dma.gap") == 1'000'000);

  Model lanai4 = load_model("lanai4");
  CHECK(!ethernet_framing(lanai4));
  FabricParams m = fabric_params(lanai4);
  CHECK(!m.ethernet);
  CHECK(!m.store_and_forward);
  CHECK(m.preamble_bytes == 0);
  CHECK(m.interframe_gap_bytes == 0);
  CHECK(m.min_frame_bytes == 0);
}

TEST_CASE("ROUTE answers DEST's MAC and IPv4, SYS_CAPS says Ethernet") {
  EthNet net(3);
  const uint32_t dest = NICEMU_ROUTE_BASE + NICEMU_ROUTE_DEST;
  const uint32_t mac_lo = NICEMU_ROUTE_BASE + NICEMU_ROUTE_MAC_LO;
  const uint32_t mac_hi = NICEMU_ROUTE_BASE + NICEMU_ROUTE_MAC_HI;
  const uint32_t ipv4 = NICEMU_ROUTE_BASE + NICEMU_ROUTE_IPV4;
  net.set(0, dest, 2);
  CHECK(net.get(0, mac_lo) == 0x004D4E02); // 02:4E:4D:00, byte 0 lowest
  CHECK(net.get(0, mac_hi) == 0x0200);     // :00:02
  CHECK(net.get(0, ipv4) == 0x0A4D0003);   // 10.77.0.3
  CHECK(net.get(0, NICEMU_ROUTE_BASE + NICEMU_ROUTE_LENGTH) == 1);
  net.set(0, dest, 0); // its own addresses, for the source fields
  CHECK(net.get(0, mac_lo) == 0x004D4E02);
  CHECK(net.get(0, mac_hi) == 0x0000);
  CHECK(net.get(0, ipv4) == 0x0A4D0001);
  net.set(1, dest, 300); // beyond the run: still the address of node 300
  CHECK(net.get(1, mac_hi) == 0x2C01);
  CHECK(net.get(1, ipv4) == 0x0A4D012D);
  net.set(1, dest, 0x10000); // no node number that large has an address
  CHECK(net.get(1, mac_lo) == 0);
  CHECK(net.get(1, ipv4) == 0);
  uint32_t caps = net.get(2, NICEMU_SYS_BASE + NICEMU_SYS_CAPS);
  CHECK((caps & NICEMU_CAP_NETWORK) != 0);
  CHECK((caps & NICEMU_CAP_ETHERNET) != 0);

  // On a Myrinet-style model the addresses answer too; no Ethernet bit.
  Model lanai4 = load_model("lanai4");
  EthNet myrinet(2, lanai4);
  myrinet.set(0, dest, 1);
  CHECK(myrinet.get(0, mac_hi) == 0x0100);
  CHECK(myrinet.get(0, ipv4) == 0x0A4D0002);
  caps = myrinet.get(0, NICEMU_SYS_BASE + NICEMU_SYS_CAPS);
  CHECK((caps & NICEMU_CAP_NETWORK) != 0);
  CHECK((caps & NICEMU_CAP_ETHERNET) == 0);
}

TEST_CASE("a frame to node 2's MAC reaches node 2 only, store-and-forward "
          "at 12.5 MB/s") {
  EthNet net(4);
  const Time t0 = 1 * kUs;
  std::vector<uint8_t> frame = frame_to(2, 0, 100);
  for (uint32_t n = 1; n < 4; ++n)
    net.arm(n);
  net.at(t0, [&] { net.send(0, frame); });
  net.run();

  const FabricParams &p = net.params;
  const Time F = net.wire(100); // (8 + 100 + 4) x 80 ns = 8.96 us
  CHECK(F == 8'960'000);
  // The head leaves after the Tx gap; the switch holds it for the whole
  // frame and its latency; the tail is a frame's time behind the head.
  const Time head =
      t0 + net.tx_gap + p.link_latency + p.switch_latency + F + p.link_latency;
  CHECK(head == 16'060'000); // 1 + 1 + 0.05 + 5 + 8.96 + 0.05 us
  std::vector<Transfer> tx = net.seen.of(0, DmaEngineKind::Tx);
  REQUIRE(tx.size() == 1);
  CHECK(tx[0].start == t0);
  CHECK(tx[0].end == t0 + net.tx_gap + F); // DONE: the tail has left
  CHECK(tx[0].end == 10'960'000);
  std::vector<Transfer> rx = net.seen.of(2, DmaEngineKind::Rx);
  REQUIRE(rx.size() == 1);
  CHECK(rx[0].start == head);
  CHECK(rx[0].end == head + F);
  CHECK(rx[0].end == 25'020'000);
  CHECK(rx[0].bytes == 100);

  CHECK((net.tx_status(0) & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR)) ==
        NICEMU_DMA_DONE);
  CHECK(net.rx_status(2) == NICEMU_RX_DONE); // no CRC error, not truncated
  CHECK(net.get(2, NICEMU_RX_BASE + NICEMU_RX_LENGTH) == 100);
  CHECK(net.card(2, kRxBuf, 100) == frame);
  for (uint32_t n : {1u, 3u}) {
    CHECK(net.rx_status(n) == NICEMU_RX_ARMED);
    CHECK(net.seen.of(n, DmaEngineKind::Rx).empty());
  }
  CHECK(net.fabric->stats().packets_delivered == 1);
  CHECK(net.fabric->stats().packets_filtered == 0);
  CHECK(net.fabric->misrouted() == 0);

  // On the cables: the frame and its FCS, no route bytes.
  REQUIRE(net.seen.crossings.size() == 2);
  for (const Crossing &c : net.seen.crossings) {
    CHECK(c.ethernet);
    CHECK(c.route_bytes == 0);
    REQUIRE(c.frame.size() == 104);
    CHECK(std::vector<uint8_t>(c.frame.begin(), c.frame.begin() + 100) ==
          frame);
  }
  CHECK(net.seen.crossings[0].from == "node0");
  CHECK(net.seen.crossings[1].to == "node2");
}

TEST_CASE("short frames are padded with zeros to 60 bytes, then the FCS") {
  EthNet net(2);
  std::vector<uint8_t> frame = frame_to(0, 1, 20);
  net.arm(0);
  net.at(0, [&] { net.send(1, frame); });
  net.run();
  CHECK(net.rx_status(0) == NICEMU_RX_DONE); // the FCS checks
  CHECK(net.get(0, NICEMU_RX_BASE + NICEMU_RX_LENGTH) == 60);
  std::vector<uint8_t> padded = frame;
  padded.resize(60, 0);
  CHECK(net.card(0, kRxBuf, 60) == padded);
  REQUIRE(!net.seen.crossings.empty());
  const std::vector<uint8_t> &wire = net.seen.crossings[0].frame;
  REQUIRE(wire.size() == 64);
  uint32_t fcs = packet_crc(padded.data(), padded.size());
  CHECK(wire == [&] {
    std::vector<uint8_t> w = padded;
    for (int i = 0; i < 4; ++i) // Ethernet's CRC-32, least significant first
      w.push_back(uint8_t(fcs >> (8 * i)));
    return w;
  }());
  // A minimum frame's time: (8 + 64) x 80 ns.
  std::vector<Transfer> rx = net.seen.of(0, DmaEngineKind::Rx);
  REQUIRE(rx.size() == 1);
  CHECK(rx[0].end - rx[0].start == 5'760'000);
  CHECK(rx[0].end - rx[0].start == net.wire(20));
}

TEST_CASE("the FCS is Ethernet's CRC-32, least significant byte first") {
  // A receiver running the IEEE 802.3 CRC-32 over a frame and its FCS, in
  // wire order, finds the constant residue 0x2144DF1C.
  std::vector<uint8_t> frame(60, 0);
  frame[0] = 0x02;
  frame[13] = 0x42;
  uint32_t fcs = packet_crc(frame.data(), frame.size());
  for (int i = 0; i < 4; ++i)
    frame.push_back(uint8_t(fcs >> (8 * i)));
  CHECK(packet_crc(frame.data(), frame.size()) == 0x2144DF1Cu);
}

TEST_CASE("the Tx engine checks Ethernet lengths and ROUTE_LEN") {
  EthNet net(2);
  auto error_of = [&](size_t length, uint32_t route_len) {
    std::vector<uint8_t> frame = frame_to(1, 0, std::max<size_t>(length, 14));
    frame.resize(length);
    net.set(0, NICEMU_TX_BASE + NICEMU_TX_STATUS,
            NICEMU_DMA_DONE | NICEMU_DMA_ERROR);
    net.send(0, frame, route_len);
    uint32_t status = net.tx_status(0);
    uint32_t error = (status & NICEMU_DMA_ERROR)
                         ? net.get(0, NICEMU_TX_BASE + NICEMU_TX_ERROR)
                         : 0;
    net.run(); // let a started frame finish
    return error;
  };
  CHECK(error_of(13, 0) == NICEMU_DMA_ELENGTH);
  CHECK(error_of(1515, 0) == NICEMU_DMA_ELENGTH);
  CHECK(error_of(100, 1) == NICEMU_DMA_ELENGTH); // Ethernet has no route
  CHECK(net.fabric->stats().packets_sent == 0);
  CHECK(error_of(14, 0) == 0);
  CHECK(error_of(1514, 0) == 0);
  CHECK(net.fabric->stats().packets_sent == 2);
}

TEST_CASE("frames to unknown, own, multicast and broadcast MACs are dropped "
          "by the switch and counted, the Tx still completes") {
  EthNet net(4);
  for (uint32_t n = 0; n < 4; ++n)
    net.arm(n);
  const MacAddress broadcast{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  const MacAddress multicast{0x01, 0x00, 0x5E, 0x00, 0x00, 0x01};
  const MacAddress vendor{0x00, 0x11, 0x22, 0x33, 0x44, 0x55};
  std::vector<MacAddress> dests = {broadcast, multicast, vendor,
                                   mac_of(0),  // the sender's own
                                   mac_of(7)}; // no node 7 in this run
  const Time every = 50 * kUs;
  for (size_t i = 0; i < dests.size(); ++i)
    net.at(Time(i) * every,
           [&, i] { net.send(0, frame_to(dests[i], 0, 100)); });
  // Afterwards, a good frame still goes through.
  net.at(Time(dests.size()) * every, [&] { net.send(0, frame_to(3, 0, 100)); });
  net.run();
  std::vector<Transfer> tx = net.seen.of(0, DmaEngineKind::Tx);
  REQUIRE(tx.size() == dests.size() + 1);
  for (size_t i = 0; i < tx.size(); ++i) {
    CAPTURE(i);
    CHECK(tx[i].start == Time(i) * every);
    CHECK(tx[i].end == tx[i].start + net.tx_gap + net.wire(100));
  }
  CHECK((net.tx_status(0) & NICEMU_DMA_DONE) != 0);
  CHECK(net.fabric->stats().packets_filtered == dests.size());
  CHECK(net.fabric->misrouted() == 0);
  CHECK(net.fabric->stats().packets_delivered == 1);
  for (uint32_t n : {0u, 1u, 2u})
    CHECK(net.rx_status(n) == NICEMU_RX_ARMED);
  CHECK(net.rx_status(3) == NICEMU_RX_DONE);
  // Each filtered frame crossed the sender's cable only.
  size_t on_node0 = 0;
  for (const Crossing &c : net.seen.crossings)
    on_node0 += c.from == "node0";
  CHECK(on_node0 == dests.size() + 1);
  CHECK(net.seen.crossings.size() == dests.size() + 2);
}

TEST_CASE("a frame claiming another node's source MAC is dropped by the "
          "switch and counted as forged") {
  EthNet net(4);
  for (uint32_t n = 0; n < 4; ++n)
    net.arm(n);
  // Node 0 sends to node 3 as node 1, then as a station outside the
  // cluster (allowed: only the cluster's own addresses are guarded), then
  // as itself.
  std::vector<uint8_t> forged = frame_to(3, 0, 100);
  const MacAddress one = mac_of(1);
  std::copy(one.begin(), one.end(), forged.begin() + 6);
  std::vector<uint8_t> outsider = frame_to(3, 0, 100);
  const MacAddress vendor{0x00, 0x11, 0x22, 0x33, 0x44, 0x55};
  std::copy(vendor.begin(), vendor.end(), outsider.begin() + 6);
  net.at(0, [&] { net.send(0, forged); });
  net.at(50 * kUs, [&] { net.arm(3); });
  net.at(100 * kUs, [&] { net.send(0, outsider); });
  net.at(200 * kUs, [&] { net.arm(3); });
  net.at(300 * kUs, [&] { net.send(0, frame_to(3, 0, 100)); });
  net.run();
  CHECK(net.fabric->stats().packets_spoofed == 1);
  CHECK(net.fabric->stats().packets_filtered == 1);
  CHECK(net.fabric->stats().packets_delivered == 2);
  CHECK(net.fabric->misrouted() == 0);
  CHECK((net.tx_status(0) & NICEMU_DMA_DONE) != 0);
}

TEST_CASE("two frames for one port serialize, their senders are not held") {
  EthNet net(3);
  const Time t0 = 2 * kUs;
  net.arm(2);
  // Node 2's firmware re-arms at once (into a second buffer).
  net.seen.on_transfer = [&](const Transfer &t) {
    if (t.node == 2 && t.engine == DmaEngineKind::Rx &&
        net.seen.of(2, DmaEngineKind::Rx).size() == 1)
      net.at(net.sched.now(), [&] { net.arm(2, kRxBuf2); });
  };
  std::vector<uint8_t> a = frame_to(2, 0, 1514), b = frame_to(2, 1, 1514);
  net.at(t0, [&] {
    net.send(0, a);
    net.send(1, b);
  });
  net.run();

  const FabricParams &p = net.params;
  const Time F = net.wire(1514); // (8 + 1518) x 80 ns = 122.08 us
  CHECK(F == 122'080'000);
  CHECK(net.ifg() == 960'000);
  const Time out = t0 + net.tx_gap + p.link_latency + p.switch_latency + F;
  std::vector<Transfer> rx = net.seen.of(2, DmaEngineKind::Rx);
  REQUIRE(rx.size() == 2);
  // a takes s0:2 first; b waits in the switch until a's tail has left the
  // port and the interframe gap has passed.
  CHECK(rx[0].start == out + p.link_latency);
  CHECK(rx[0].end == out + p.link_latency + F);
  CHECK(rx[1].start == out + F + net.ifg() + p.link_latency);
  CHECK(rx[1].end == rx[0].end + net.ifg() + F);
  CHECK(rx[1].end ==
        2 * kUs + 1 * kUs + 50'000 + 5 * kUs + 3 * F + 960'000 + 50'000);
  CHECK(net.card(2, kRxBuf, 1514) == a);
  CHECK(net.card(2, kRxBuf2, 1514) == b);
  // Both tails left their NICs on time: the frames were in the switch.
  for (uint32_t n : {0u, 1u}) {
    std::vector<Transfer> tx = net.seen.of(n, DmaEngineKind::Tx);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].end == t0 + net.tx_gap + F);
  }
  CHECK(net.fabric->stats().packets_blocked == 1);
  CHECK(net.fabric->stats().blocked_time == F + net.ifg());
}

TEST_CASE("one sender's frames stream at the wire's pace through the "
          "switch") {
  EthNet net(2);
  net.arm(1);
  int sent = 0;
  std::vector<uint8_t> frame = frame_to(1, 0, 1000);
  net.seen.on_transfer = [&](const Transfer &t) {
    if (t.engine == DmaEngineKind::Rx) // re-armed at once
      net.at(net.sched.now(), [&] { net.arm(1); });
    if (t.engine == DmaEngineKind::Tx && ++sent < 4) // the next at once
      net.at(net.sched.now(), [&] { net.send(0, frame); });
  };
  net.at(0, [&] { net.send(0, frame); });
  net.run();
  std::vector<Transfer> rx = net.seen.of(1, DmaEngineKind::Rx);
  REQUIRE(rx.size() == 4);
  // Frame k+1 leaves a Tx gap after frame k's tail; the switch adds no
  // delay of its own between frames: arrivals are spaced like departures.
  for (size_t k = 1; k < rx.size(); ++k) {
    CAPTURE(k);
    CHECK(rx[k].end - rx[k - 1].end == net.tx_gap + net.wire(1000));
  }
  CHECK(net.fabric->stats().packets_blocked == 0);
}

TEST_CASE("a tree of 16-port switches: the frame is stored at each one") {
  // 17 nodes: node 16 hangs off a second leaf switch, under the root.
  EthNet net(17);
  REQUIRE(net.fabric->topology().switches == 3);
  net.arm(16);
  net.at(0, [&] { net.send(0, frame_to(16, 0, 200)); });
  net.run();
  const FabricParams &p = net.params;
  const Time F = net.wire(200);
  std::vector<Transfer> rx = net.seen.of(16, DmaEngineKind::Rx);
  REQUIRE(rx.size() == 1);
  CHECK(rx[0].start ==
        net.tx_gap + 4 * p.link_latency + 3 * (p.switch_latency + F));
  CHECK(rx[0].end == rx[0].start + F);
}

TEST_CASE("lookahead: nothing reaches another node sooner than the Tx gap, "
          "two cables, the switch and a minimum frame") {
  EthNet net(2);
  const FabricParams &p = net.params;
  Time lookahead = network_lookahead(comet(), *net.fabric);
  CHECK(lookahead == net.tx_gap + 2 * p.link_latency + p.switch_latency +
                         Time(8 + 64) * p.link_ps_per_byte);
  CHECK(lookahead == 11'860'000); // 1 + 0.1 + 5 + 5.76 us
  // The shortest frame meets the bound exactly.
  const Time t0 = 3 * kUs;
  net.arm(1);
  net.at(t0, [&] { net.send(0, frame_to(1, 0, 14)); });
  net.run();
  std::vector<Transfer> rx = net.seen.of(1, DmaEngineKind::Rx);
  REQUIRE(rx.size() == 1);
  CHECK(rx[0].start == t0 + lookahead);
}

// ---- Captures ----------------------------------------------------------

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    static int count = 0;
    path = fs::temp_directory_path() /
           ("nicemu-eth-" + std::to_string(::getpid()) + "-" +
            std::to_string(count++));
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::vector<uint8_t> bytes(const std::string &name) const {
    std::ifstream in(path / name, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "no file " << name);
    return {std::istreambuf_iterator<char>(in), {}};
  }
};

uint32_t le32(const std::vector<uint8_t> &b, size_t at) {
  REQUIRE(at + 4 <= b.size());
  return uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 |
         uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24;
}

void put16be(std::vector<uint8_t> &out, size_t at, uint32_t v) {
  out[at] = uint8_t(v >> 8);
  out[at + 1] = uint8_t(v);
}

// The Internet checksum (RFC 1071) of `bytes`, continuing from `sum`.
uint32_t ones_sum(const uint8_t *bytes, size_t len, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < len; i += 2)
    sum += uint32_t(bytes[i]) << 8 | bytes[i + 1];
  if (len & 1)
    sum += uint32_t(bytes[len - 1]) << 8;
  return sum;
}
uint16_t fold(uint32_t sum) {
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

// An Ethernet/IPv4/UDP frame from node `from` to node `to`, with correct IP
// header and UDP checksums, as firmware will build them.
std::vector<uint8_t> udp_frame(uint32_t from, uint32_t to,
                               const std::string &text) {
  const size_t ip = 14, udp = ip + 20, data = udp + 8;
  std::vector<uint8_t> f(data + text.size(), 0);
  MacAddress d = mac_of(to), s = mac_of(from);
  std::copy(d.begin(), d.end(), f.begin());
  std::copy(s.begin(), s.end(), f.begin() + 6);
  put16be(f, 12, 0x0800); // IPv4
  f[ip] = 0x45;           // version 4, 5 words of header
  put16be(f, ip + 2, uint32_t(f.size() - ip));
  put16be(f, ip + 4, 0x1234); // identification
  put16be(f, ip + 6, 0x4000); // don't fragment
  f[ip + 8] = 64;             // TTL
  f[ip + 9] = 17;             // UDP
  for (int i = 0; i < 4; ++i) {
    f[ip + 12 + i] = uint8_t(ipv4_of(from) >> (24 - 8 * i));
    f[ip + 16 + i] = uint8_t(ipv4_of(to) >> (24 - 8 * i));
  }
  put16be(f, ip + 10, fold(ones_sum(&f[ip], 20)));
  put16be(f, udp, 40000);
  put16be(f, udp + 2, 40001);
  put16be(f, udp + 4, uint32_t(8 + text.size()));
  std::copy(text.begin(), text.end(), f.begin() + long(data));
  // Pseudo-header: source, destination, protocol, UDP length.
  uint32_t sum = ones_sum(&f[ip + 12], 8);
  sum += 17 + uint32_t(8 + text.size());
  uint16_t check = fold(ones_sum(&f[udp], 8 + text.size(), sum));
  put16be(f, udp + 6, check == 0 ? 0xFFFF : check);
  return f;
}

std::string find_tshark() {
  const char *path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir) / "tshark";
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate.string();
  }
  FAIL("tshark is not installed (toolchain/setup.sh --deps-only installs "
       "it): the capture cannot be checked");
  return {};
}

// tshark's standard output (its warnings, e.g. about running as root, go
// elsewhere); `status` gets its exit status.
std::string tshark(const fs::path &file, const std::string &args, int &status) {
  std::string command =
      find_tshark() + " -r '" + file.string() + "' " + args + " 2>/dev/null";
  std::FILE *pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    out.append(buffer, n);
  status = ::pclose(pipe);
  return out;
}

} // namespace

TEST_CASE("a capture of an Ethernet run: link type 1, the frames without "
          "FCS") {
  TempDir dir;
  EthNet net(2);
  PcapWriter pcap(dir.path.string());
  net.seen.also = &pcap;
  std::vector<uint8_t> frame = frame_to(1, 0, 20);
  net.arm(1);
  net.at(0, [&] { net.send(0, frame); });
  net.run();
  net.fabric->flush_events();
  pcap.finish();
  std::vector<uint8_t> padded = frame;
  padded.resize(60, 0);
  // One file per cable: node 0's, then the switch's port to node 1.
  for (const char *name :
       {"link-node0-switch0.p0.pcap", "link-node1-switch0.p1.pcap"}) {
    CAPTURE(name);
    std::vector<uint8_t> file = dir.bytes(name);
    CHECK(le32(file, 20) == 1); // LINKTYPE_ETHERNET
    REQUIRE(file.size() == 24 + 16 + 60);
    CHECK(le32(file, 32) == 60); // captured
    CHECK(le32(file, 36) == 60); // on the wire, without preamble and FCS
    CHECK(std::vector<uint8_t>(file.begin() + 40, file.end()) == padded);
  }
  // Timestamps: when the preamble started on each cable.
  const FabricParams &p = net.params;
  CHECK(le32(dir.bytes("link-node0-switch0.p0.pcap"), 28) == net.tx_gap / 1000);
  CHECK(le32(dir.bytes("link-node1-switch0.p1.pcap"), 28) ==
        (net.tx_gap + p.link_latency + p.switch_latency + net.wire(20)) / 1000);
}

TEST_CASE("tshark decodes a captured Ethernet/IPv4/UDP frame") {
  TempDir dir;
  EthNet net(2);
  PcapWriter pcap(dir.path.string());
  net.seen.also = &pcap;
  std::vector<uint8_t> big = udp_frame(0, 1,
                                       "nicemu comet: VIA and FM over "
                                       "IP, one UDP datagram");
  std::vector<uint8_t> small = udp_frame(1, 0, "hi"); // padded on the wire
  REQUIRE(small.size() < 60);
  net.arm(0);
  net.arm(1);
  net.at(0, [&] {
    net.send(0, big);
    net.send(1, small);
  });
  net.run();
  net.fabric->flush_events();
  pcap.finish();
  CHECK(net.rx_status(0) == NICEMU_RX_DONE);
  CHECK(net.rx_status(1) == NICEMU_RX_DONE);
  CHECK(net.card(1, kRxBuf, uint32_t(big.size())) == big);

  for (const char *name :
       {"link-node0-switch0.p0.pcap", "link-node1-switch0.p1.pcap"}) {
    CAPTURE(name);
    fs::path file = dir.path / name;
    int status = -1;
    std::string bad = tshark(file,
                             "-o ip.check_checksum:TRUE -o "
                             "udp.check_checksum:TRUE -Y '_ws.malformed || "
                             "_ws.expert.severity >= warning'",
                             status);
    CHECK(status == 0);
    CHECK(bad.empty());
    std::string fields =
        tshark(file,
               "-o ip.check_checksum:TRUE -o udp.check_checksum:TRUE "
               "-T fields -E separator=, -e frame.protocols -e ip.src "
               "-e ip.dst -e ip.checksum.status -e udp.checksum.status",
               status);
    CHECK(status == 0);
    std::vector<std::string> rows;
    std::istringstream in(fields);
    for (std::string row; std::getline(in, row);)
      rows.push_back(row);
    // Each cable carries both frames, one each way.
    REQUIRE(rows.size() == 2);
    std::string to1 = "eth:ethertype:ip:udp:data,10.77.0.1,10.77.0.2,1,1";
    std::string to0 = "eth:ethertype:ip:udp:data,10.77.0.2,10.77.0.1,1,1";
    CHECK(std::count(rows.begin(), rows.end(), to1) == 1);
    CHECK(std::count(rows.begin(), rows.end(), to0) == 1);
  }
}
