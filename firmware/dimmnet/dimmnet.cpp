// dimmnet: the firmware of DIMMnet-1's Martini core (docs/dimmnet.md).
// Simple transfers never reach it: the on-the-fly hardware sends and
// receives them alone. The core serves what the hardware hands it:
// - HTLB misses: it refills the entry from the header translation table
//   (one seed per kick page, set up by the host's privileged requests) or
//   rejects the store;
// - packets with a command the hardware does not know: a handler per
//   command code (DIMMNET_CMD_*: add, interrupt-AOTF, the dynamic
//   registration of a Send/Receive flag entry), or a count when there is
//   none;
// - the host's privileged requests in the mailbox: seeds and regions.
// It sleeps whenever none of these waits.
#include <nicemu/dimmnet_protocol.h>
#include <nicemu/fw.hpp>
#include <nicemu/martini.h>

namespace fw = nicemu::fw;

namespace {

volatile uint32_t &otf(uint32_t offset) {
  return fw::reg(NICEMU_OTF_BASE, offset);
}

uint64_t otf64(uint32_t offset) {
  uint32_t lo = otf(offset), hi = otf(offset + 4);
  return uint64_t(hi) << 32 | lo;
}

struct Seed {
  uint32_t words[NICEMU_MARTINI_SEED_BYTES / 4];
};
Seed htt[DIMMNET_HTT_PAGES];
bool htt_valid[DIMMNET_HTT_PAGES];

volatile uint32_t *box;
uint32_t served[DIMMNET_BOX_SLOTS]; // per slot: the last request answered

uint32_t &stat(uint32_t offset) {
  return const_cast<uint32_t &>(box[offset / 4]);
}

NICEMU_HANDLER void on_htlb_miss() {
  uint32_t page = otf(NICEMU_OTF_MISS_PAGE);
  ++stat(DIMMNET_BOX_STAT_MISSES);
  if (page >= DIMMNET_HTT_PAGES || !htt_valid[page]) {
    ++stat(DIMMNET_BOX_STAT_REJECTS);
    otf(NICEMU_OTF_RESOLVE) = NICEMU_OTF_REJECT;
    return;
  }
  for (uint32_t i = 0; i < NICEMU_MARTINI_SEED_BYTES / 4; ++i)
    otf(NICEMU_OTF_SEED + 4 * i) = htt[page].words[i];
  otf(NICEMU_OTF_RESOLVE) = NICEMU_OTF_REFILL;
}

// The packet waiting for the core, as the OTF device shows it.
struct Command {
  uint8_t header[32];
  uint64_t data;
  uint8_t flags() const { return header[NICEMU_MARTINI_HDR_FLAGS]; }
  uint8_t code() const { return header[NICEMU_MARTINI_HDR_COMMAND]; }
  uint32_t address() const {
    const uint8_t *a = header + NICEMU_MARTINI_HDR_ADDRESS;
    return a[0] | a[1] << 8 | a[2] << 16 | uint32_t(a[3]) << 24;
  }
  uint32_t length() const {
    const uint8_t *l = header + NICEMU_MARTINI_HDR_LENGTH;
    return l[0] | l[1] << 8;
  }
};

// The receiver's checks, as the hardware makes them for its own writes:
// the region is open, owned by the packet's group (and process), and holds
// [address, address + bytes). Returns the LLCM offset, or -1.
int32_t checked_llcm_offset(const Command &c, uint32_t bytes) {
  otf(NICEMU_OTF_REGION_SELECT) = c.header[NICEMU_MARTINI_HDR_REGION];
  uint32_t base = otf(NICEMU_OTF_REGION_BASE);
  uint32_t size = otf(NICEMU_OTF_REGION_SIZE);
  uint32_t owner = otf(NICEMU_OTF_REGION_OWNER);
  uint32_t pid = (owner >> 8) & 0xFF;
  if (c.header[NICEMU_MARTINI_HDR_REGION] >= NICEMU_OTF_REGIONS || size == 0 ||
      (owner & 0xFF) != c.header[NICEMU_MARTINI_HDR_PGID] ||
      (pid != NICEMU_OTF_ANY_PID && pid != c.header[NICEMU_MARTINI_HDR_PID]))
    return -1;
  uint32_t offset =
      (c.flags() & NICEMU_MARTINI_F_SKIP) ? c.address() : base + c.address();
  if (offset < base || offset + bytes > base + size || offset + bytes < offset)
    return -1;
  return int32_t(offset);
}

NICEMU_HANDLER void on_add64(const Command &c) {
  int32_t offset = checked_llcm_offset(c, 8);
  if (offset < 0 || offset % 8 != 0 || c.length() != 8) {
    ++stat(DIMMNET_BOX_STAT_REFUSED);
    return;
  }
  auto *word = reinterpret_cast<volatile uint64_t *>(NICEMU_MARTINI_LLCM +
                                                     uint32_t(offset));
  *word = *word + c.data;
}

NICEMU_HANDLER void on_interrupt_write(const Command &c) {
  uint32_t n = c.length();
  int32_t offset = n >= 1 && n <= 8 ? checked_llcm_offset(c, n) : -1;
  if (offset < 0) {
    ++stat(DIMMNET_BOX_STAT_REFUSED);
    return;
  }
  auto *to = reinterpret_cast<volatile uint8_t *>(NICEMU_MARTINI_LLCM +
                                                  uint32_t(offset));
  for (uint32_t i = 0; i < n; ++i)
    to[i] = uint8_t(c.data >> (8 * i));
}

// Which nodes have a line in each region's flag region (dynamic
// registration); forgotten when the region is opened again.
uint32_t registered[NICEMU_OTF_REGIONS][DIMMNET_REGISTER_NODES / 32];

NICEMU_HANDLER void on_register(const Command &c) {
  uint32_t node = c.header[NICEMU_MARTINI_HDR_SOURCE];
  uint32_t region = c.header[NICEMU_MARTINI_HDR_REGION];
  int32_t head = c.length() == 8 ? checked_llcm_offset(c, 8) : -1;
  // The node's line must lie in the region too: check it as if the packet
  // had named it.
  Command line = c;
  uint32_t at = c.address() + DIMMNET_FLAG_LINE * (1 + node);
  for (uint32_t b = 0; b < 4; ++b)
    line.header[NICEMU_MARTINI_HDR_ADDRESS + b] = uint8_t(at >> (8 * b));
  int32_t entry =
      head >= 0 && head % 8 == 0 ? checked_llcm_offset(line, 8) : -1;
  if (entry < 0 || region >= NICEMU_OTF_REGIONS) {
    ++stat(DIMMNET_BOX_STAT_REFUSED);
    return;
  }
  auto *to = reinterpret_cast<volatile uint64_t *>(NICEMU_MARTINI_LLCM +
                                                   uint32_t(entry));
  *to = c.data;
  uint32_t &bits = registered[region][node / 32];
  if (!(bits & (1u << (node % 32)))) {
    bits |= 1u << (node % 32);
    auto *count = reinterpret_cast<volatile uint32_t *>(NICEMU_MARTINI_LLCM +
                                                        uint32_t(head));
    *count = *count + 1;
  }
}

void on_command() {
  Command c;
  for (uint32_t i = 0; i < 8; ++i) {
    uint32_t w = otf(NICEMU_OTF_CMD_HEADER + 4 * i);
    for (uint32_t b = 0; b < 4; ++b)
      c.header[4 * i + b] = uint8_t(w >> (8 * b));
  }
  c.data = otf64(NICEMU_OTF_CMD_DATA);
  switch (c.code()) {
  case DIMMNET_CMD_ADD64:
    on_add64(c);
    break;
  case DIMMNET_CMD_INTERRUPT_WRITE:
    on_interrupt_write(c);
    break;
  case DIMMNET_CMD_REGISTER:
    on_register(c);
    break;
  default:
    ++stat(DIMMNET_BOX_STAT_UNKNOWN);
    break;
  }
  ++stat(DIMMNET_BOX_STAT_COMMANDS); // counted once handled
  otf(NICEMU_OTF_CMD_DONE) = 1;
}

uint32_t serve(uint32_t op, const volatile uint32_t *arg) {
  switch (op) {
  case DIMMNET_OP_SET_SEED:
  case DIMMNET_OP_CLEAR_SEED: {
    uint32_t page = arg[0];
    if (page >= DIMMNET_HTT_PAGES)
      return DIMMNET_EPAGE;
    if (op == DIMMNET_OP_SET_SEED)
      for (uint32_t i = 0; i < NICEMU_MARTINI_SEED_BYTES / 4; ++i)
        htt[page].words[i] = arg[1 + i];
    htt_valid[page] = op == DIMMNET_OP_SET_SEED;
    otf(NICEMU_OTF_HTLB_FLUSH) = page; // a stale entry must miss
    return DIMMNET_OK;
  }
  case DIMMNET_OP_OPEN_REGION:
  case DIMMNET_OP_CLOSE_REGION: {
    uint32_t region = arg[0];
    if (region >= NICEMU_OTF_REGIONS)
      return DIMMNET_EREGION;
    bool open = op == DIMMNET_OP_OPEN_REGION;
    uint32_t base = open ? arg[1] : 0, size = open ? arg[2] : 0;
    // Inside one space: LLCM, or a bank (nicemu/martini.h).
    uint32_t space = base >> NICEMU_MARTINI_SPACE_SHIFT;
    uint32_t offset = base & (NICEMU_MARTINI_SPACE_BYTES - 1);
    uint32_t limit = space == NICEMU_MARTINI_SPACE_LLCM ? 0x20000u
                     : space <= NICEMU_MARTINI_SPACE_BANK1
                         ? NICEMU_MARTINI_SPACE_BYTES
                         : 0u;
    if (open && (size == 0 || size > limit || offset > limit - size))
      return DIMMNET_EREGION;
    for (uint32_t &bits : registered[region])
      bits = 0;
    otf(NICEMU_OTF_REGION_SELECT) = region;
    otf(NICEMU_OTF_REGION_SIZE) = 0; // closed while it changes
    otf(NICEMU_OTF_REGION_BASE) = base;
    otf(NICEMU_OTF_REGION_OWNER) = open ? arg[3] : 0;
    otf(NICEMU_OTF_REGION_SIZE) = size;
    return DIMMNET_OK;
  }
  default:
    return DIMMNET_EOP;
  }
}

volatile uint32_t *slot(uint32_t k) {
  return box + k * DIMMNET_BOX_SLOT_BYTES / 4;
}

NICEMU_HANDLER void on_host_request(uint32_t k) {
  volatile uint32_t *b = slot(k);
  uint32_t seq = b[DIMMNET_BOX_SEQ / 4];
  uint32_t result = serve(b[DIMMNET_BOX_OP / 4], b + DIMMNET_BOX_ARG / 4);
  b[DIMMNET_BOX_RESULT / 4] = result;
  b[DIMMNET_BOX_DONE / 4] = seq;
  served[k] = seq;
}

constexpr uint32_t kLines = NICEMU_IRQ_OTF | NICEMU_IRQ_HOST;

} // namespace

int main() {
  box = fw::mailbox();
  for (uint32_t k = 0; k < DIMMNET_BOX_SLOTS; ++k) {
    served[k] = slot(k)[DIMMNET_BOX_SEQ / 4];
    slot(k)[DIMMNET_BOX_DONE / 4] = served[k];
  }
  box[DIMMNET_BOX_READY / 4] = DIMMNET_READY;
  fw::irq_master(false);
  fw::irq_enable(kLines);
  for (;;) {
    // Lines are cleared before the look, so whatever comes after it
    // wakes the core at once.
    fw::irq_clear(kLines);
    uint32_t status = otf(NICEMU_OTF_STATUS);
    bool busy = false;
    if (status & NICEMU_OTF_MISS) {
      on_htlb_miss();
      busy = true;
    }
    if (status & NICEMU_OTF_CMD) {
      on_command();
      busy = true;
    }
    for (uint32_t k = 0; k < DIMMNET_BOX_SLOTS; ++k)
      if (slot(k)[DIMMNET_BOX_SEQ / 4] != served[k]) {
        on_host_request(k);
        busy = true;
      }
    if (!busy)
      fw::sleep();
  }
}
