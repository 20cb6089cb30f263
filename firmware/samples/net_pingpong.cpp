// net_pingpong: NIC-to-NIC round trips with no host involved. Node 0 sends a
// one-word packet to node 1, which sends it back; after 100 round trips node
// 0 prints the mean one-way time (half a round trip) in cycles and ns. Other
// nodes just exit. Written as tight NIC firmware is: the route and the Tx
// and Rx engines' addresses are set up once, so a send is one store of the
// payload and one register write, and a receive is a poll and a re-arm.
// Expect, on 2+ nodes: node 0 prints "one-way N ns (C cycles) over 100 round
// trips", every node exits 0, and the figures are the same on every run.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

namespace {

constexpr uint32_t kRounds = 100;
constexpr uint32_t kStop = 0xFFFFFFFFu;

struct alignas(4) Packet {
  uint8_t route[8]; // right-aligned: the route ends where the word starts
  uint32_t word;
};

Packet out;
volatile uint32_t in[4];

// Routes are fixed: look the peer's up once and program the engines once.
void setup(uint32_t peer) {
  uint8_t route[8];
  uint32_t n = fw::route_to(peer, route, sizeof route);
  uint8_t *start = out.route + sizeof out.route - n;
  for (uint32_t i = 0; i < n; ++i)
    start[i] = route[i];
  fw::reg(NICEMU_TX_BASE, NICEMU_TX_ADDR) = uint32_t(uintptr_t(start));
  fw::reg(NICEMU_TX_BASE, NICEMU_TX_LENGTH) = n + 4;
  fw::reg(NICEMU_TX_BASE, NICEMU_TX_ROUTE_LEN) = n;
  fw::rx_arm(const_cast<uint32_t *>(in), sizeof in);
}

void send_word(uint32_t word) {
  out.word = word;
  fw::reg(NICEMU_TX_BASE, NICEMU_TX_CTRL) = NICEMU_DMA_START;
}

uint32_t receive_word() {
  while (!(fw::rx_status() & NICEMU_RX_DONE)) {
  }
  uint32_t word = in[0];
  fw::reg(NICEMU_RX_BASE, NICEMU_RX_CTRL) = NICEMU_RX_ARM;
  return word;
}

} // namespace

int main() {
  uint32_t me = fw::node_id();
  if (fw::node_count() < 2) {
    fw::puts("net_pingpong needs at least 2 nodes");
    return 1;
  }
  if (me > 1)
    return 0;
  setup(me == 0 ? 1 : 0);
  if (me == 1) {
    for (uint32_t word; (word = receive_word()) != kStop;)
      send_word(word);
    return 0;
  }
  uint64_t start = fw::cycles();
  for (uint32_t i = 0; i < kRounds; ++i) {
    send_word(i);
    if (receive_word() != i)
      return 2;
  }
  uint64_t one_way = (fw::cycles() - start) / (2 * kRounds);
  uint32_t ns = uint32_t(one_way * 1'000'000'000ull / fw::clock_hz());
  fw::printf("one-way %u ns (%u cycles) over %u round trips\n", unsigned(ns),
             unsigned(one_way), unsigned(kRounds));
  while (fw::tx_status() & NICEMU_DMA_BUSY) {
  }
  send_word(kStop);
  return 0;
}
