// niam_rogue: a hostile lanai4 card for the NI-AM isolation test (nicemu
// run --node-firmware N=niam_rogue.img; tests/e2e/test_niam_isolation.cpp).
// It speaks NI-AM's wire format (niam_protocol.h) but obeys none of its
// rules. Once its host has written a target into the mailbox (the victim's
// node, an address the victim exported and one it did not), it sends the
// victim's card:
//   - requests only a host may make (map a page, start a transfer, start
//     a collective), as if from the network;
//   - bulk data into the unexported address and past the end of the
//     virtual space;
//   - a forwarded transfer that would read the unexported address back to
//     the rogue;
//   - a packet naming no handler, and one with a bad tag.
// It counts what it sent in mailbox word kBoxSent and sets kBoxDone. It
// takes in and throws away what it is sent (acknowledgements), so that it
// never holds the network. Nothing it sends may change the victim's memory
// outside what the victim exported.
#include "nicemu/fw.hpp"
#include "nicemu/niam_protocol.h"

namespace fw = nicemu::fw;

namespace {

constexpr uint32_t kBoxGo = 0, kBoxVictim = 1, kBoxExported = 2,
                   kBoxUnexported = 3, kBoxSent = 4, kBoxDone = 5;
constexpr uint32_t kDoneMagic = 0x524F4755u; // "ROGU"
constexpr uint32_t kData = 64;

volatile uint32_t *box;
uint32_t sink[1100]; // packets sent to this card land here, unread

struct alignas(4) Out {
  uint8_t route[8]; // right-aligned: the route ends where the packet starts
  niam_packet packet;
  uint32_t data[kData / 4];
};
Out out;

// Throws away the packet taken in, if any, and takes the next.
void swallow() {
  fw::irq_clear(NICEMU_IRQ_RX);
  if (fw::rx_status() & NICEMU_RX_DONE)
    fw::rx_arm(sink, sizeof sink, true);
}

// Sends `packet` (and `data_bytes` of 0xEE after it) to `node`.
void send(uint32_t node, const niam_packet &packet, uint32_t data_bytes = 0) {
  uint8_t route[8];
  uint32_t n = fw::route_to(node, route, sizeof route);
  uint8_t *start = out.route + sizeof out.route - n;
  for (uint32_t i = 0; i < n; ++i)
    start[i] = route[i];
  out.packet = packet;
  for (uint32_t i = 0; i < kData / 4; ++i)
    out.data[i] = 0xEEEEEEEEu;
  fw::tx_start(start, n + NIAM_PACKET_BYTES + data_bytes, n);
  while (fw::tx_status() & NICEMU_DMA_BUSY)
    swallow();
  box[kBoxSent] = box[kBoxSent] + 1;
}

niam_packet packet(uint32_t handler, uint32_t a0 = 0, uint32_t a1 = 0,
                   uint32_t a2 = 0, uint32_t a3 = 0, uint32_t a4 = 0,
                   uint32_t a5 = 0) {
  return niam_packet{NIAM_TAG, handler, {a0, a1, a2, a3, a4, a5}};
}

void attack() {
  const uint32_t me = fw::node_id(), victim = box[kBoxVictim];
  const uint32_t exported = box[kBoxExported];
  const uint32_t unexported = box[kBoxUnexported];
  // Requests only the victim's host may make. The map would point the
  // unexported page at itself (a NIC virtual address is the arena offset,
  // the arena at bus 0x10000000), so the data below would land there.
  send(victim, packet(NIAM_H_MAP, unexported & ~(NIAM_PAGE_BYTES - 1), 1,
                      0x10000000u + (unexported & ~(NIAM_PAGE_BYTES - 1))));
  send(victim,
       packet(NIAM_H_BCOPY, unexported, exported, kData, me | victim << 16));
  send(victim, packet(NIAM_H_COLLECTIVE, NIAM_OP_SUM, 1));
  // Bulk data into unexported memory, and across the end of the space.
  send(victim, packet(NIAM_H_DATA, unexported, unexported, kData, me), kData);
  send(victim,
       packet(NIAM_H_DATA, NIAM_VIRT_BYTES - 32, NIAM_VIRT_BYTES - 32, kData,
              me),
       kData);
  // Read unexported memory back to the rogue.
  send(victim,
       packet(NIAM_H_FORWARD, unexported, exported, kData, me | me << 16));
  // No such handler; a bad tag.
  send(victim, packet(77));
  niam_packet bad = packet(NIAM_H_NOP);
  bad.tag = 0xBAD0BAD0u;
  send(victim, bad);
}

} // namespace

int main() {
  box = fw::mailbox();
  // A host's PIO write into the mailbox raises NICEMU_IRQ_HOST; a packet
  // taken in, NICEMU_IRQ_RX.
  fw::irq_master(false);
  fw::irq_enable(NICEMU_IRQ_HOST | NICEMU_IRQ_RX);
  fw::rx_arm(sink, sizeof sink, true);
  for (;;) {
    fw::irq_clear(NICEMU_IRQ_HOST);
    swallow();
    if (box[kBoxGo] == 1)
      break;
    fw::sleep();
  }
  attack();
  box[kBoxDone] = kDoneMagic;
  fw::irq_disable(NICEMU_IRQ_HOST);
  for (;;) {
    swallow();
    fw::sleep();
  }
}
