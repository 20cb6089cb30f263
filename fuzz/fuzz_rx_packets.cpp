// Fuzz target: packets arriving at a card. Node 0 of a two-node network is
// the attacker: whatever bytes the input holds go onto the wire to node 1,
// which runs a shipped firmware (NI-AM on lanai4, VIA/FM on comet) or a
// card whose engine takes the packets itself (UZURA, DIMMnet-1's Martini).
// Node 1 has a host whose whole arena is registered (the emulator lets the
// card's DMA reach every byte of it), but the host told the card nothing:
// no page mapped, no memory region, no ring. So no packet may change a
// byte of it.
// Whatever arrives, node 1 must not fault and must keep taking packets (none
// is left in the network at the end), with one documented exception: NI-AM
// holds a host message until its host has a receive ring with room
// (docs/niam.md, "Flow control"), and this host never registers one, so
// after a host message the network may rightly back up. A violation aborts,
// which libFuzzer reports as a crash; AddressSanitizer watches the emulator
// itself.
//
// The input: one byte choosing the card, then packets, each a header of 4
// bytes (length: 2, gap before it in 100 ns: 1, flags: 1) and its bytes.
// Flags: bit 0 keeps the CRC wrong, bit 1 (Ethernet cards) keeps the
// destination MAC and EtherType as the input has them instead of node 1's
// MAC and the card's EtherType.
#include "fabric/ethernet.hpp"
#include "fabric/fabric.hpp"
#include "fuzz_support.hpp"
#include "nicemu/niam_protocol.h"
#include "nicemu/uzura_card.h"
#include "nicemu/via_protocol.h"

using namespace nicemu;
using namespace nicemu::fuzz;

namespace {

constexpr uint64_t kArena = 1 << 20;
constexpr size_t kMaxPackets = 32;
constexpr uint32_t kMaxPacketBytes = 2048;

struct Card {
  const char *model, *image;
  uint16_t ethertype; // 0: not an Ethernet card
};
const Card kCards[] = {{"lanai4", "niam/niam.img", 0},
                       {"comet", "via/via.img", VIAFW_ETHERTYPE},
                       {"uzura", "uzura/uzura.img", UZ_ETHERTYPE},
                       {"martini", "dimmnet/dimmnet.img", 0}};

// The card's model and the flash it boots, loaded once.
struct Loaded {
  Model model;
  std::shared_ptr<const std::vector<uint8_t>> flash;
};

const Loaded &loaded(size_t card) {
  static std::unique_ptr<Loaded> cache[std::size(kCards)];
  if (!cache[card]) {
    auto l = std::make_unique<Loaded>();
    l->model = load_model(kCards[card].model);
    l->flash = shipped_flash(l->model, kCards[card].image);
    cache[card] = std::move(l);
  }
  return *cache[card];
}

// An NI-AM packet the firmware holds for its host's receive ring: a small
// host message, or a chunk of a bulk one (niam_protocol.h).
bool niam_host_message(const std::vector<uint8_t> &payload) {
  if (payload.size() < NIAM_PACKET_BYTES)
    return false;
  niam_packet p;
  std::memcpy(&p, payload.data(), sizeof p);
  return p.handler == NIAM_H_HOST_AM ||
         (p.handler == NIAM_H_DATA && (p.arg[3] & NIAM_DATA_TO_HOST));
}

[[noreturn]] void violated(const char *what) {
  fuzz::violated("fuzz_rx_packets", what);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzInput in(data, size);
  const size_t card = in.take<uint8_t>() % std::size(kCards);
  const Loaded &l = loaded(card);
  const uint16_t ethertype = kCards[card].ethertype;
  TwoCards cards(l.model, l.flash, kArena);
  Simulation &sim = cards.sim;
  Fabric &fabric = *sim.fabric();
  Node *victim = cards.card;

  // The packets, sent from node 0 at the times the input says, after the
  // card has had 200 us to boot.
  const std::vector<uint8_t> route = fabric.route(0, 1);
  Time at = 200'000'000;
  uint64_t sequence = 0;
  bool may_back_up = false; // niam_host_message
  for (size_t n = 0; n < kMaxPackets && in.left() >= 4; ++n) {
    uint32_t length = in.take<uint16_t>() % kMaxPacketBytes;
    at += Time(in.take<uint8_t>()) * 100'000;
    uint8_t flags = in.take<uint8_t>();
    Packet p;
    p.source = 0;
    p.id = ++sequence;
    p.route = route;
    p.payload = in.up_to(length);
    if (ethertype) {
      if (p.payload.size() < kEthernetHeaderBytes)
        p.payload.resize(kEthernetHeaderBytes, 0);
      if (!(flags & 2)) {
        MacAddress to = mac_of(1);
        std::memcpy(p.payload.data(), to.data(), to.size());
        p.payload[12] = uint8_t(ethertype >> 8);
        p.payload[13] = uint8_t(ethertype);
      }
    } else if (p.payload.empty()) {
      p.payload.push_back(0);
    }
    if (card == 0 && niam_host_message(p.payload))
      may_back_up = true;
    uint32_t crc = packet_crc(p.payload.data(), p.payload.size());
    if (flags & 1)
      crc = ~crc;
    for (int i = 0; i < 4; ++i)
      p.payload.push_back(uint8_t(crc >> (8 * i)));
    p.source_ps_per_byte = 1000;
    sim.scheduler().schedule(at, "fuzz: packet", [&fabric, p, at]() mutable {
      fabric.send(std::move(p), at, [](Time) {});
    });
  }

  // Enough time after the last packet for the card to take them all.
  RunResult r;
  try {
    r = sim.run(at + 5'000'000'000);
  } catch (const Error &) {
    violated("the run threw an error");
  }
  if (victim->state() == NodeState::Faulted)
    violated("the card faulted");
  if (fabric.packets_in_network() != 0 && !may_back_up)
    violated("the card stopped taking packets");
  const uint8_t *memory = cards.host.channel().arena();
  for (size_t i = 0; i < kArena; ++i)
    if (memory[i] != 0)
      violated("a packet changed host memory the host never gave the card");
  return 0;
}
