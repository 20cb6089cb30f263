// link_check: node 0 sends 100 numbered 32-byte packets to node 1, which
// checks each one (its Rx engine's CRC status, then the contents) and, once
// no packet has come for 1 ms of virtual time, prints what it got. A sample
// for fault injection (`nicemu run --link-corrupt P --link-loss P`): a
// damaged packet shows as a CRC error, a lost one as missing.
// Expect, on 2+ nodes without faults: "100 of 100 packets good, 0 with CRC
// errors, 0 with bad contents, 0 missing" from node 1, and exit code 0 (1
// when any packet was not good). Other nodes just exit.
#include "nicemu/fw.hpp"

namespace fw = nicemu::fw;

namespace {

constexpr uint32_t kPackets = 100;
constexpr uint32_t kWords = 8;

struct alignas(4) Packet {
  uint8_t route[8]; // right-aligned: the route ends where the words start
  uint32_t words[kWords];
};

Packet out;
uint32_t in[kWords];
bool seen[kPackets];

// Word 0 is the packet's number; the others follow from it, so a flipped
// bit anywhere shows.
uint32_t word_of(uint32_t packet, uint32_t w) {
  return w == 0 ? packet : packet * 0x9E3779B1u + w;
}

void send_all() {
  uint8_t route[8];
  uint32_t n = fw::route_to(1, route, sizeof route);
  uint8_t *start = out.route + sizeof out.route - n;
  for (uint32_t i = 0; i < n; ++i)
    start[i] = route[i];
  for (uint32_t p = 0; p < kPackets; ++p) {
    for (uint32_t w = 0; w < kWords; ++w)
      out.words[w] = word_of(p, w);
    fw::tx_start(start, n + sizeof out.words, n);
    while (!(fw::tx_status() & NICEMU_DMA_DONE)) {
    }
  }
}

bool contents_ok() {
  uint32_t p = in[0];
  if (p >= kPackets || seen[p])
    return false;
  for (uint32_t w = 1; w < kWords; ++w)
    if (in[w] != word_of(p, w))
      return false;
  seen[p] = true;
  return true;
}

int receive_all() {
  uint32_t good = 0, crc_errors = 0, bad = 0;
  const uint64_t quiet = fw::clock_hz() / 1000; // 1 ms
  uint64_t last = fw::cycles();
  fw::rx_arm(in, sizeof in);
  for (;;) {
    uint32_t status = fw::rx_status();
    if (!(status & NICEMU_RX_DONE)) {
      if (fw::cycles() - last > quiet)
        break;
      continue;
    }
    if (status & NICEMU_RX_CRC_ERROR)
      ++crc_errors;
    else if (contents_ok())
      ++good;
    else
      ++bad;
    fw::rx_arm(in, sizeof in);
    last = fw::cycles();
  }
  uint32_t missing = kPackets - good - crc_errors - bad;
  fw::printf("%u of %u packets good, %u with CRC errors, %u with bad "
             "contents, %u missing\n",
             unsigned(good), unsigned(kPackets), unsigned(crc_errors),
             unsigned(bad), unsigned(missing));
  return good == kPackets ? 0 : 1;
}

} // namespace

int main() {
  if (fw::node_count() < 2) {
    fw::puts("link_check needs at least 2 nodes");
    return 1;
  }
  if (fw::node_id() == 0)
    send_all();
  if (fw::node_id() == 1)
    return receive_all();
  return 0;
}
