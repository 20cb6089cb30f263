// via_rogue: a hostile Comet card for the isolation tests (nicemu run
// --node-firmware N=via_rogue.img; tests/e2e/test_via_isolation.cpp). It
// speaks the via firmware's wire format but obeys none of its rules: once
// its host has named a block of its memory in its mailbox word
// (NICEMU_MAILBOX_PROCESS_WORDS + its place on the node), it reads the
// target from there (the victim's node and VI, the victim's peer node and
// VI, a memory handle and virtual address) and sends forged frames at the
// victim:
//   - RDMA writes into the handle and SENDs, claiming to come from the
//     peer's VI, with every message number from 0 to kSeqs - 1;
//   - read requests for the handle's memory;
//   - control messages: a DISCONNECT of the victim's VI, a stray
//     CONNECT_ACCEPT naming it;
// first from its own MAC address, then from the peer's (a forged source).
// It writes back into the block (at kReport) what it sent, how many of
// those with a forged address, and kDoneMagic. Nothing it sends may change the
// victim's memory or connection. It takes in and throws away every frame sent
// to it: a card that takes none would hold the switch port to it, and with it
// every sender that tries it (docs/reliability.md, section 6).
#include "nicemu/fw.hpp"
#include "nicemu/via_protocol.h"

namespace fw = nicemu::fw;

namespace {

// Words of the host's block: the target, then what the card reports.
constexpr uint32_t kVictimNode = 0, kVictimVi = 1, kPeerNode = 2, kPeerVi = 3;
constexpr uint32_t kHandle = 4, kVaLo = 5, kVaHi = 6;
constexpr uint32_t kReport = 8;              // sent, of them forged, kDoneMagic
constexpr uint32_t kDoneMagic = 0x524F4755u; // "ROGU"
constexpr uint32_t kSeqs = 8;
constexpr uint32_t kData = 64;

volatile uint32_t *box;
uint32_t block[7]; // the host's block, as read: the target
uint32_t sent;
uint32_t sink[400]; // frames sent to this card land here, unread
uint8_t frame[2 + 14 + VIAFW_HEADER_BYTES + 32 + kData]
    __attribute__((aligned(4)));

void mac_of(uint32_t node, uint8_t *mac) {
  fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_DEST) = node;
  uint32_t lo = fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_MAC_LO);
  uint32_t hi = fw::reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_MAC_HI);
  for (int i = 0; i < 4; ++i)
    mac[i] = uint8_t(lo >> (8 * i));
  mac[4] = uint8_t(hi);
  mac[5] = uint8_t(hi >> 8);
}

void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = uint8_t(v >> (8 * i));
}

// Sends frame[2..2 + bytes) and waits for the Tx engine.
void send(uint32_t bytes) {
  fw::tx_start(frame + 2, bytes, 0);
  while (fw::tx_status() & NICEMU_DMA_BUSY) {
  }
  ++sent;
}

// Host memory <-> `card`, waiting for the engine; false if refused.
bool host_dma(uint32_t bus, uint32_t *card, uint32_t words, bool to_host) {
  if (!fw::hdma_start(bus, card, 4 * words, to_host))
    return false;
  while (!(fw::hdma_status() & (NICEMU_DMA_DONE | NICEMU_DMA_ERROR))) {
  }
  return !(fw::hdma_status() & NICEMU_DMA_ERROR);
}

// The bus address of the block a host named, or 0.
uint32_t named_block() {
  for (uint32_t p = 0; p < 16; ++p)
    if (uint32_t bus = box[NICEMU_MAILBOX_PROCESS_WORDS + p])
      return bus;
  return 0;
}

// A frame to `victim` from `source`'s address: the Ethernet header and a
// via header of `type`; returns where the data goes.
uint8_t *start_frame(uint32_t victim, uint32_t source, uint8_t type) {
  memset(frame, 0, sizeof frame);
  uint8_t *f = frame + 2;
  mac_of(victim, f);
  mac_of(source, f + 6);
  f[12] = uint8_t(VIAFW_ETHERTYPE >> 8);
  f[13] = uint8_t(VIAFW_ETHERTYPE);
  uint8_t *h = f + 14;
  h[0] = type;
  return h;
}

// Throws away the frame taken in, if any, and takes the next.
void swallow() {
  fw::irq_clear(NICEMU_IRQ_RX);
  if (fw::rx_status() & NICEMU_RX_DONE)
    fw::rx_arm(sink, sizeof sink, true);
}

void attack(uint32_t source) {
  const uint32_t victim = block[kVictimNode], victim_vi = block[kVictimVi];
  const uint32_t peer_vi = block[kPeerVi], handle = block[kHandle];
  const uint32_t va_lo = block[kVaLo], va_hi = block[kVaHi];
  constexpr uint32_t kFrame = 14 + VIAFW_HEADER_BYTES + kData;
  static const uint8_t kTypes[] = {VIAFW_PKT_RDMA_WRITE, VIAFW_PKT_SEND,
                                   VIAFW_PKT_READ_REQUEST};
  for (uint8_t type : kTypes)
    for (uint32_t seq = 0; seq < kSeqs; ++seq) {
      uint8_t *h = start_frame(victim, source, type);
      h[1] = VIAFW_F_FIRST | VIAFW_F_LAST;
      h[2] = uint8_t(peer_vi);
      h[3] = uint8_t(victim_vi);
      put32(h + 4, seq);
      put32(h + 8, kData);
      put32(h + 20, va_lo);
      put32(h + 24, va_hi);
      put32(h + 28, handle);
      memset(h + VIAFW_HEADER_BYTES, 0xEE, kData);
      send(kFrame);
    }
  // Control messages, numbered as the first few from this node would be.
  for (uint32_t seq = 1; seq <= 4; ++seq) {
    uint8_t *h = start_frame(victim, source, VIAFW_PKT_CONTROL);
    h[3] = uint8_t(victim_vi);
    put32(h + 4, seq);
    uint8_t *m = h + VIAFW_HEADER_BYTES;
    if (seq % 2) { // DISCONNECT: w1 = sender's VI, w2 = receiver's VI
      put32(m, VIAFW_CTL_DISCONNECT);
      put32(m + 4, peer_vi);
      put32(m + 8, victim_vi);
    } else { // a CONNECT_ACCEPT nobody asked for, naming the victim's VI
      put32(m, VIAFW_CTL_CONNECT_ACCEPT);
      put32(m + 4, 1 | peer_vi << 16);
      put32(m + 8, 4096);
      put32(m + 12, victim_vi);
    }
    send(14 + VIAFW_HEADER_BYTES + 32);
  }
}

} // namespace

int main() {
  box = fw::mailbox();
  // A host's PIO write into the mailbox raises NICEMU_IRQ_HOST; a frame
  // taken in, NICEMU_IRQ_RX.
  fw::irq_master(false);
  fw::irq_enable(NICEMU_IRQ_HOST | NICEMU_IRQ_RX);
  fw::rx_arm(sink, sizeof sink, true);
  for (;;) {
    fw::irq_clear(NICEMU_IRQ_HOST);
    swallow();
    if (named_block())
      break;
    fw::sleep();
  }
  const uint32_t bus = named_block();
  if (!host_dma(bus, block, 7, false))
    return 1;
  attack(fw::node_id());
  const uint32_t own = sent;
  attack(block[kPeerNode]); // the peer's address: forged
  uint32_t report[3] = {sent, sent - own, kDoneMagic};
  host_dma(bus + 4 * kReport, report, 3, true);
  fw::irq_disable(NICEMU_IRQ_HOST);
  for (;;) {
    swallow();
    fw::sleep();
  }
}
