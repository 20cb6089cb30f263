// Fuzz target: the VI provider as the card sees a hostile host. A host
// program is untrusted: it may write any bytes into its memory as
// descriptors and command blocks, and ring any doorbell FIFO with any
// value, bypassing the VIPL library. Node 1 of two comet cards runs via.img
// and serves such a host; whatever it does, the card must not fault, must
// answer a last command (the command path still works), and must not write
// host memory the host never gave it.
//
// The host's arena (1 MiB, all of it open to the card's DMA) has two
// halves. Everything the host writes (commands, descriptors, doorbell
// values, scribbles) is kept in the low half, with every word that is a bus
// address of the high half folded into the low one, and the rings and
// regions that commands give are cut to end there. So the high half is
// named nowhere but in the last command, which lies at its start: any other
// byte of it that changes is a card bug.
//
// The input is a list of steps, each a selector byte and its operands:
//   0: a command block: its offset, op, then 12 argument words
//   1: a descriptor: its offset, a FIFO, then 32 + 16 x 16 bytes
//   2: a doorbell: a FIFO byte and a 32-bit value
//   3: a scribble: offset, length byte, then the bytes
//   4: a pause: 1 to 256 us of virtual time
#include "devices/host_port.hpp"
#include "fuzz_support.hpp"
#include "nicemu/error.hpp"
#include "nicemu/regs.h"
#include "nicemu/via_protocol.h"

using namespace nicemu;
using namespace nicemu::fuzz;

namespace {

constexpr uint64_t kArena = 1 << 20;
constexpr uint32_t kHalf = kArena / 2;
constexpr uint32_t kBus = uint32_t(channel::kArenaBusBase);
constexpr size_t kMaxSteps = 48;
constexpr uint32_t kDescriptorBytes =
    VIAFW_CS_BYTES + VIAFW_MAX_SEGMENTS * VIAFW_SEG_BYTES;

[[noreturn]] void violated(const char *what) {
  fuzz::violated("fuzz_via_descriptors", what);
}

// A bus address of the high half becomes the same offset in the low half.
uint32_t fold(uint32_t word) {
  return word - kBus >= kHalf && word - kBus < kArena ? word - kHalf : word;
}

void fold_words(uint8_t *p, size_t n) {
  for (size_t i = 0; i + 4 <= n; i += 4) {
    uint32_t w;
    std::memcpy(&w, p + i, 4);
    w = fold(w);
    std::memcpy(p + i, &w, 4);
  }
}

// The bus address `a` (folded) with room for `bytes` before the high half;
// if there is none, the low half's start.
uint32_t room_for(uint32_t a, uint64_t bytes) {
  a = fold(a);
  if (a - kBus < kHalf && bytes <= kHalf - (a - kBus))
    return a;
  return kBus;
}

// Cuts what a command names so it ends in the low half: rings, regions.
void keep_low(viafw_command &c) {
  switch (c.op) {
  case VIAFW_CMD_HELLO: // event ring: arg0, arg1 entries of 64 bytes
    c.arg[1] = std::min<uint32_t>(c.arg[1], 1024);
    c.arg[0] = room_for(c.arg[0], uint64_t(c.arg[1]) * VIAFW_EVENT_BYTES);
    break;
  case VIAFW_CMD_REGISTER: // region: bus arg4, arg3 bytes
    c.arg[3] = std::min<uint32_t>(c.arg[3], kHalf);
    c.arg[4] = room_for(c.arg[4], c.arg[3]);
    break;
  case VIAFW_CMD_CREATE_CQ: // ring: arg1, arg2 entries of 8 bytes
    c.arg[2] = std::min<uint32_t>(c.arg[2], 4096);
    c.arg[1] = room_for(c.arg[1], uint64_t(c.arg[2]) * VIAFW_CQ_ENTRY_BYTES);
    break;
  default:
    break;
  }
}

class HostileHost {
public:
  HostileHost(Simulation &sim, Node &card, HostAgent &host)
      : sim_(sim), card_(card), arena_(host.channel().arena()) {}

  // One step of the input, done at virtual time `at`; returns the time of
  // the next.
  Time step(FuzzInput &in, Time at) {
    switch (in.take<uint8_t>() % 5) {
    case 0: {
      uint32_t offset = block_offset(in, VIAFW_COMMAND_BYTES);
      viafw_command c{};
      c.op = in.take<uint8_t>() % 14;
      c.seq = ++seq_;
      in.bytes(c.arg, sizeof c.arg);
      fold_words(reinterpret_cast<uint8_t *>(c.arg), sizeof c.arg);
      keep_low(c);
      command(c, offset, at);
      break;
    }
    case 1: {
      uint32_t offset = block_offset(in, kDescriptorBytes);
      uint32_t fifo = in.take<uint8_t>() % 34;
      in.bytes(arena_ + offset, kDescriptorBytes);
      fold_words(arena_ + offset, kDescriptorBytes);
      ring(fifo, kBus + offset, at);
      break;
    }
    case 2: {
      uint32_t fifo = in.take<uint8_t>() % 34;
      ring(fifo, room_for(in.take<uint32_t>(), kDescriptorBytes), at);
      break;
    }
    case 3: {
      uint32_t offset = in.take<uint32_t>() % kHalf;
      uint32_t n = std::min<uint32_t>(in.take<uint8_t>(), kHalf - offset);
      in.bytes(arena_ + offset, n);
      fold_words(arena_ + offset, n);
      break;
    }
    default:
      return at + (Time(in.take<uint8_t>()) + 1) * 1'000'000;
    }
    return at + 1'000'000;
  }

  // A command the card must answer, whatever came before: an unknown op.
  uint32_t last_command(Time at) {
    viafw_command c{};
    c.op = 99;
    c.seq = ++seq_;
    command(c, kHalf, at);
    return c.seq;
  }
  uint32_t answered(uint32_t offset) const {
    uint32_t done;
    std::memcpy(&done, arena_ + offset + VIAFW_COMMAND_BYTES - 4, 4);
    return done;
  }

private:
  uint32_t block_offset(FuzzInput &in, uint32_t bytes) {
    return (in.take<uint16_t>() * uint32_t(VIAFW_DESC_ALIGN)) %
           (kHalf - bytes + 1) / VIAFW_DESC_ALIGN * VIAFW_DESC_ALIGN;
  }
  void command(const viafw_command &c, uint32_t offset, Time at) {
    std::memcpy(arena_ + offset, &c, sizeof c);
    commands_.push_back({offset, c.seq});
    ring(VIAFW_FIFO_COMMAND, kBus + offset, at);
  }
  // The doorbell write, as the host's PIO at `at`.
  void ring(uint32_t fifo, uint32_t value, Time at) {
    Node *card = &card_;
    sim_.scheduler().schedule(at, "fuzz: doorbell", [card, fifo, value, at] {
      card->host_port().write(NICEMU_HOST_DOORBELLS + 4 * fifo, 4, value, at,
                              [](const HostBusResult &) { return true; });
    });
  }

public:
  // With NICEMU_FUZZ_VERBOSE set: how many commands the card answered with
  // which results (to see that the seeds reach the card's logic).
  void report() const {
    if (!std::getenv("NICEMU_FUZZ_VERBOSE"))
      return;
    for (const auto &[offset, seq] : commands_) {
      viafw_command c;
      std::memcpy(&c, arena_ + offset, sizeof c);
      std::fprintf(stderr,
                   "command at 0x%x op %u seq %u (args %x %x %x %x %x): %s, "
                   "result %u\n",
                   offset, c.op, seq, c.arg[0], c.arg[1], c.arg[2], c.arg[3],
                   c.arg[4], c.done == seq ? "answered" : "not answered",
                   c.result);
    }
  }

private:
  Simulation &sim_;
  Node &card_;
  uint8_t *arena_;
  uint32_t seq_ = 0;
  std::vector<std::pair<uint32_t, uint32_t>> commands_; // offset, seq
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const Model model = load_model("comet");
  static const auto flash = shipped_flash(model, "via/via.img");
  FuzzInput in(data, size);
  TwoCards cards(model, flash, kArena);
  Simulation &sim = cards.sim;
  Node *card = cards.card;
  HostileHost hostile(sim, *card, cards.host);
  // After 200 us of boot, the steps; then the last command.
  Time at = 200'000'000;
  for (size_t n = 0; n < kMaxSteps && in.left() > 0; ++n)
    at = hostile.step(in, at);
  uint32_t seq = hostile.last_command(at);
  try {
    // The card's work ends in a sleep with nothing pending (the run ends
    // there); a HELLO clears every VI, region and CQ, which takes the
    // card about 2 ms. So 10 ms a step is plenty; more is a wedged card.
    sim.run(at + Time(kMaxSteps) * 10'000'000'000);
  } catch (const Error &) {
    violated("the run threw an error");
  }
  hostile.report();
  if (std::getenv("NICEMU_FUZZ_VERBOSE"))
    std::fprintf(stderr, "card: %s at pc 0x%x, %llu cycles, %llu asleep\n",
                 state_name(card->state()), card->cpu().pc(),
                 (unsigned long long)card->cpu().cycles(),
                 (unsigned long long)card->sleep_cycles());
  if (card->state() == NodeState::Faulted)
    violated("the card faulted");
  if (hostile.answered(kHalf) != seq)
    violated("the card no longer answers commands");
  const uint8_t *arena = cards.host.channel().arena();
  for (size_t i = kHalf + VIAFW_COMMAND_BYTES; i < kArena; ++i)
    if (arena[i] != 0)
      violated("the card wrote host memory the host never named");
  return 0;
}
