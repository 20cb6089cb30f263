// nicemu/uzura.h: the UZURA card's endpoint (docs/uzura.md). The rings
// live in the arena; the card reads commands from it and writes
// completions and arrivals into it. Translations: the library keeps a
// shadow of the card's direct-mapped SRAM table, enters a page there when
// its slot is free (by a MAP command: the card DMAs the entries in) and in
// the overflow table in its own memory otherwise.
#include "nicemu/uzura.h"

#include "am_internal.hpp"
#include "nicemu/host.hpp"
#include "nicemu/uzura_card.h"
#include "pinned.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace host = nicemu::host;

namespace {

constexpr uint64_t kOpenWaitPs = 10'000'000'000ull; // 10 ms of virtual time
constexpr uint64_t kOpenPollPs = 1'000'000;         // 1 us between looks
constexpr uint32_t kMapBatch = 512;                 // entries per MAP
constexpr uint64_t kRingFullPollPs = 1'000'000;     // a full command ring:
constexpr uint64_t kRingFullPollMaxPs = 16'000'000; // looks 1 us to 16 us apart

thread_local std::string last_error;

int fail(int code, std::string why) {
  last_error = std::move(why);
  return code;
}

uint32_t reg(uint32_t r) {
  return UZ_HOST_REGS + r;
}

struct Registered {
  uintptr_t start;
  size_t len;
  unsigned access;
};

struct Endpoint {
  bool open = false;
  uz_endpoint *block = nullptr;
  uint8_t *cmds = nullptr;
  uz_cqe *cq = nullptr;
  uint8_t *rx = nullptr;
  uz_overflow_entry *overflow = nullptr;
  uint64_t *map_staging = nullptr;
  uz_sge *sg_lists = nullptr;   // one list per command slot
  uz_datatype *types = nullptr; // the layouts given to the card, by id
  uint32_t type_bytes[UZ_MAX_DATATYPES] = {}; // bytes of one item, 0: free
  uint32_t cmd_entries = 0, cq_entries = 0, rx_entries = 0;
  uint32_t overflow_entries = 0;
  unsigned notify_in = 0, notify_cq = 0, notify_rx = 0;
  uint32_t next_cmd = 0;    // the last command number used
  uint32_t fetched = 0;     // the card's UZ_REG_CMD_FETCHED, last read
  uint32_t cq_taken = 0;    // completions taken from the ring
  uint32_t outstanding = 0; // commands whose completion is not in the ring
  // The card's cookie of a command is its number; the program's cookie of
  // each outstanding command of the program's is kept here. The library's
  // own commands (uz_register, uz_type_create) have none: they wait for
  // their completion, and keep the program's completions that come first
  // in `stashed`, for uz_poll and uz_wait.
  std::unordered_map<uint32_t, uint64_t> cookies;
  std::deque<uz_completion> stashed;
  uint32_t rx_taken = 0;    // arrivals handed out
  uint32_t rx_released = 0; // arrivals freed
  // The card's SRAM table as this library filled it: slot -> page.
  std::unordered_map<uint32_t, uint64_t> sram;
  std::vector<Registered> registered;
  uint64_t epoch = 0;
};

Endpoint ep;

template <class F> int guarded(F f) {
  try {
    return f();
  } catch (const host::Error &e) {
    switch (e.code()) {
    case host::ErrorCode::OutOfMemory:
      return fail(UZ_ENOMEM, e.what());
    case host::ErrorCode::BadArgument:
      return fail(UZ_EINVAL, e.what());
    case host::ErrorCode::NotRun:
      return fail(UZ_ENOCARD, e.what());
    default:
      return fail(UZ_ESTOPPED, e.what());
    }
  } catch (const std::exception &e) {
    return fail(UZ_ENOCARD, e.what());
  }
}

bool power_of_two(unsigned n) {
  return n && !(n & (n - 1));
}

// ---- Commands
// ----------------------------------------------------------------

// Puts a command in the ring (its number last) and rings the card; the
// program's cookie is kept until its completion (`own`: a command of the
// library's, which has none).
int post(uz_cmd c, bool own = false) {
  if (ep.outstanding >= ep.cq_entries)
    return fail(UZ_EBUSY, "as many operations are outstanding as the "
                          "completion ring holds: take completions first");
  uint32_t seq = ep.next_cmd + 1;
  if (!own)
    ep.cookies[seq] = c.cookie;
  c.cookie = seq;
  if (seq - ep.fetched > ep.cmd_entries) {
    // The ring is full: look again after 1 us, then backing off to 16 us
    // (the card may hold commands back until operations end).
    uint64_t pause = kRingFullPollPs;
    ep.fetched = host::pio_read(reg(UZ_REG_CMD_FETCHED));
    while (seq - ep.fetched > ep.cmd_entries) {
      host::compute(pause);
      pause = std::min(2 * pause, kRingFullPollMaxPs);
      ep.fetched = host::pio_read(reg(UZ_REG_CMD_FETCHED));
    }
  }
  ep.next_cmd = seq;
  auto *slot = reinterpret_cast<uz_cmd *>(
      ep.cmds + ((seq - 1) % ep.cmd_entries) * UZ_CMD_BYTES);
  c.seq = 0;
  std::memcpy(slot, &c, sizeof c);
  std::atomic_thread_fence(std::memory_order_release);
  reinterpret_cast<volatile uint32_t *>(slot)[0] = seq;
  ++ep.outstanding;
  if (ep.notify_in == UZ_IN_CARD_POLLS)
    host::pio_write(reg(UZ_REG_CMD_WRITTEN), seq); // free: for determinism
  else
    host::pio_write(reg(UZ_REG_DOORBELL), UZ_QUEUE_COMMANDS | (seq << 8));
  return UZ_OK;
}

// Waits until `*word` is `expect`, the way `mode` says: polling this
// process's memory, sleeping until the card interrupts, or polling the
// card's count register `count_reg` (each read holds the bus).
void wait_for(volatile uint32_t *word, uint32_t expect, unsigned mode,
              uint32_t count_reg) {
  switch (mode) {
  case UZ_OUT_INTERRUPT:
    host::wait_interrupt(word, ~0u, expect);
    return;
  case UZ_OUT_REGISTER:
    while (int32_t(host::pio_read(reg(count_reg)) - expect) < 0) {
    }
    return;
  default:
    host::wait_word(word, ~0u, expect);
  }
}

const volatile uz_rx_header *slot_header(uint32_t seq) {
  return reinterpret_cast<const volatile uz_rx_header *>(
      ep.rx + uint64_t((seq - 1) % ep.rx_entries) * UZ_RX_SLOT_BYTES);
}

volatile uz_cqe *next_cqe() {
  return &ep.cq[ep.cq_taken % ep.cq_entries];
}

// The next completion in the ring: its command's number and status.
bool take_from_ring(uint32_t &seq, uint32_t &status, bool wait) {
  uint32_t expect = ep.cq_taken + 1;
  volatile uz_cqe *e = next_cqe();
  if (e->seq != expect) {
    if (!wait)
      return false;
    wait_for(reinterpret_cast<volatile uint32_t *>(&e->seq), expect,
             ep.notify_cq, UZ_REG_CQ_COUNT);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  seq = uint32_t(e->cookie);
  status = e->status;
  ep.cq_taken = expect;
  --ep.outstanding;
  return true;
}

// A completion of the program's, with its cookie; false for the library's.
bool programs(uint32_t seq, uint32_t status, uz_completion &out) {
  auto it = ep.cookies.find(seq);
  if (it == ep.cookies.end())
    return false;
  out = {it->second, status};
  ep.cookies.erase(it);
  return true;
}

int take_completion(uz_completion *out, bool wait) {
  uz_completion c{};
  if (!ep.stashed.empty()) {
    c = ep.stashed.front();
    ep.stashed.pop_front();
  } else {
    uint32_t seq = 0, status = 0;
    do {
      if (!take_from_ring(seq, status, wait))
        return 0;
    } while (!programs(seq, status, c));
  }
  if (out)
    *out = c;
  return 1;
}

// Runs a command of the library's and waits for its completion; the
// program's completions that come meanwhile are kept for it.
int run_and_wait(const uz_cmd &c) {
  uint32_t seq = 0, status = 0;
  while (ep.outstanding >= ep.cq_entries) { // make room in the ring
    take_from_ring(seq, status, true);
    uz_completion kept{};
    if (programs(seq, status, kept))
      ep.stashed.push_back(kept);
  }
  if (int r = post(c, true))
    return r;
  uint32_t mine = ep.next_cmd;
  for (;;) {
    take_from_ring(seq, status, true);
    if (seq == mine)
      break;
    uz_completion kept{};
    if (programs(seq, status, kept))
      ep.stashed.push_back(kept);
  }
  if (status != UZ_S_OK)
    return fail(UZ_EINVAL, "the card refused a set-up command (status " +
                               std::to_string(status) + ")");
  return UZ_OK;
}

// What can be taken now: UZ_READY_* bits.
int ready_now() {
  int bits = 0;
  if (!ep.stashed.empty() || next_cqe()->seq == ep.cq_taken + 1)
    bits |= UZ_READY_COMPLETION;
  if (slot_header(ep.rx_taken + 1)->seq == ep.rx_taken + 1)
    bits |= UZ_READY_ARRIVAL;
  return bits;
}

// ---- Translation
// ---------------------------------------------------------------

uint64_t entry_for(uint64_t page, uint32_t bus_page, unsigned access) {
  uint64_t e = UZ_TE_VALID;
  if (access & UZ_REMOTE_WRITE)
    e |= UZ_TE_WRITE;
  if (access & UZ_REMOTE_READ)
    e |= UZ_TE_READ;
  e |= uint64_t((page >> 19) & ((1u << UZ_TE_TAG_BITS) - 1)) << UZ_TE_TAG_SHIFT;
  e |= uint64_t(bus_page) << 32;
  return e;
}

int overflow_insert(uint64_t page, uint64_t entry) {
  if (!ep.overflow_entries)
    return fail(UZ_ENOMEM, "the card's translation slot is taken and there "
                           "is no overflow table");
  uint32_t slot = UZ_OVERFLOW_SLOT(page, ep.overflow_entries);
  for (uint32_t probe = 0; probe < UZ_OVERFLOW_PROBES; ++probe) {
    uz_overflow_entry &o =
        ep.overflow[(slot + probe) & (ep.overflow_entries - 1)];
    if (o.page == 0 || o.page == page + 1) {
      o.entry = entry;
      std::atomic_thread_fence(std::memory_order_release);
      o.page = page + 1;
      return UZ_OK;
    }
  }
  return fail(UZ_ENOMEM, "the overflow translation table has no free slot "
                         "for this page (make it larger: uz_options)");
}

// Enters every page of [start, start + len): SRAM slots by MAP commands
// (runs of consecutive slots), the rest into the overflow table.
int map_range(uintptr_t start, size_t len, unsigned access) {
  uint32_t bus = host::pinned::pin(reinterpret_cast<const void *>(start), len);
  uint64_t first = start / UZ_PAGE_BYTES;
  uint64_t last = (start + len - 1) / UZ_PAGE_BYTES;
  uint32_t bus_first =
      uint32_t((bus - (start % UZ_PAGE_BYTES)) / UZ_PAGE_BYTES);
  uint32_t run_slot = 0, run = 0;
  auto flush = [&]() -> int {
    if (!run)
      return UZ_OK;
    uz_cmd c{};
    c.op = UZ_OP_MAP;
    c.local = host::bus_address(ep.map_staging);
    c.remote = run_slot;
    c.count = run;
    run = 0;
    return run_and_wait(c);
  };
  for (uint64_t page = first; page <= last; ++page) {
    // A page shared with other registrations allows what any of them does.
    unsigned page_access = access;
    for (const Registered &r : ep.registered)
      if (r.start / UZ_PAGE_BYTES <= page &&
          page <= (r.start + r.len - 1) / UZ_PAGE_BYTES)
        page_access |= r.access;
    uint64_t entry =
        entry_for(page, bus_first + uint32_t(page - first), page_access);
    uint32_t slot = uint32_t(page) & (UZ_SRAM_ENTRIES - 1);
    auto it = ep.sram.find(slot);
    if (it != ep.sram.end() && it->second != page) {
      if (int r = overflow_insert(page, entry))
        return r;
      continue;
    }
    ep.sram[slot] = page;
    if (run && (slot != run_slot + run || run == kMapBatch)) {
      if (int r = flush())
        return r;
    }
    if (!run)
      run_slot = slot;
    ep.map_staging[run++] = entry;
  }
  return flush();
}

// ---- Arrivals
// --------------------------------------------------------------------

int take_arrival(uz_arrival *out, bool wait) {
  uint32_t expect = ep.rx_taken + 1;
  const volatile uz_rx_header *h = slot_header(expect);
  if (h->seq != expect) {
    if (!wait)
      return 0;
    wait_for(const_cast<volatile uint32_t *>(&h->seq), expect, ep.notify_rx,
             UZ_REG_RX_COUNT);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  ep.rx_taken = expect;
  if (out) {
    out->src = h->src;
    out->tag = h->tag;
    out->imm = h->imm;
    out->len = h->len;
    out->data =
        reinterpret_cast<const uint8_t *>(const_cast<const uz_rx_header *>(h)) +
        UZ_RX_HEADER_BYTES;
    out->seq = expect;
  }
  return 1;
}

int check_open() {
  if (!ep.open)
    return fail(UZ_ENOCARD, "no endpoint: call uz_open first");
  return UZ_OK;
}

} // namespace

extern "C" {

void uz_default_options(uz_options *out) {
  uz_options o{32, 256, 64, 4096, UZ_IN_DOORBELL, UZ_OUT_MEMORY, UZ_OUT_MEMORY};
  if (const char *in = std::getenv("NICEMU_UZURA_IN"))
    o.notify_in =
        std::strcmp(in, "card-polls") == 0 ? UZ_IN_CARD_POLLS : UZ_IN_DOORBELL;
  if (const char *mode = std::getenv("NICEMU_UZURA_OUT")) {
    unsigned m = std::strcmp(mode, "interrupt") == 0  ? UZ_OUT_INTERRUPT
                 : std::strcmp(mode, "register") == 0 ? UZ_OUT_REGISTER
                                                      : UZ_OUT_MEMORY;
    o.notify_completions = o.notify_arrivals = m;
  }
  if (out)
    *out = o;
}

int uz_open(const uz_options *options) {
  return guarded([&]() -> int {
    if (ep.open)
      return UZ_OK;
    uz_options o;
    uz_default_options(&o);
    if (options) {
      o = *options;
      if (!power_of_two(o.commands) || o.commands > 64 ||
          !power_of_two(o.completions) || !power_of_two(o.arrivals) ||
          (o.overflow && !power_of_two(o.overflow)))
        return fail(UZ_EINVAL, "ring sizes must be powers of two (commands "
                               "at most 64)");
      if (o.notify_in > UZ_IN_CARD_POLLS ||
          o.notify_completions > UZ_OUT_REGISTER ||
          o.notify_arrivals > UZ_OUT_REGISTER)
        return fail(UZ_EINVAL, "unknown notification mode");
    }
    ep.notify_in = o.notify_in;
    ep.notify_cq = o.notify_completions;
    ep.notify_rx = o.notify_arrivals;
    ep.cmd_entries = o.commands;
    ep.cq_entries = o.completions;
    ep.rx_entries = o.arrivals;
    ep.overflow_entries = o.overflow;
    ep.block = static_cast<uz_endpoint *>(host::alloc(UZ_ENDPOINT_BYTES));
    ep.cmds = static_cast<uint8_t *>(host::alloc(o.commands * UZ_CMD_BYTES));
    ep.cq = static_cast<uz_cqe *>(host::alloc(o.completions * UZ_CQE_BYTES));
    ep.rx = static_cast<uint8_t *>(
        host::alloc(size_t(o.arrivals) * UZ_RX_SLOT_BYTES));
    if (o.overflow)
      ep.overflow = static_cast<uz_overflow_entry *>(
          host::alloc(o.overflow * sizeof(uz_overflow_entry)));
    ep.map_staging = static_cast<uint64_t *>(host::alloc(kMapBatch * 8));
    ep.types = static_cast<uz_datatype *>(
        host::alloc(UZ_MAX_DATATYPES * sizeof(uz_datatype)));
    ep.sg_lists = static_cast<uz_sge *>(
        host::alloc(size_t(o.commands) * UZ_MAX_SGE * sizeof(uz_sge)));
    std::memset(ep.cmds, 0, o.commands * UZ_CMD_BYTES);
    std::memset(ep.cq, 0, o.completions * UZ_CQE_BYTES);
    std::memset(ep.rx, 0, size_t(o.arrivals) * UZ_RX_SLOT_BYTES);
    if (ep.overflow)
      std::memset(ep.overflow, 0, o.overflow * sizeof(uz_overflow_entry));
    uz_endpoint &b = *ep.block;
    b = {};
    b.cmd_ring = host::bus_address(ep.cmds);
    b.cmd_entries = o.commands;
    b.cq_ring = host::bus_address(ep.cq);
    b.cq_entries = o.completions;
    b.rx_ring = host::bus_address(ep.rx);
    b.rx_entries = o.arrivals;
    b.overflow = ep.overflow ? host::bus_address(ep.overflow) : 0;
    b.overflow_entries = o.overflow;
    b.notify_in = o.notify_in; // the same numbers as UZ_NOTIFY_*
    b.notify_out = o.notify_completions;
    b.eager_limit = UZ_EAGER_MAX;
    // The firmware says it runs; then it takes the endpoint block.
    uint64_t give_up = host::now_ps() + kOpenWaitPs;
    auto wait_status = [&](uint32_t bit) {
      while (!(host::pio_read(reg(UZ_REG_STATUS)) & bit)) {
        if (host::now_ps() >= give_up)
          return false;
        host::compute(kOpenPollPs);
      }
      return true;
    };
    const char *no_card = "the card did not take the endpoint: run with "
                          "--model uzura --firmware uzura.img";
    if (!wait_status(UZ_STATUS_ALIVE))
      return fail(UZ_ENOCARD, no_card);
    host::pio_write(reg(UZ_REG_ENDPOINT), host::bus_address(ep.block));
    host::pio_write(reg(UZ_REG_DOORBELL), UZ_QUEUE_SETUP);
    if (!wait_status(UZ_STATUS_READY))
      return fail(UZ_ENOCARD, no_card);
    ep.open = true;
    // The card reads gather lists from this process's memory: enter them.
    if (int r =
            map_range(reinterpret_cast<uintptr_t>(ep.sg_lists),
                      size_t(o.commands) * UZ_MAX_SGE * sizeof(uz_sge), 0)) {
      ep.open = false;
      return r;
    }
    return UZ_OK;
  });
}

int uz_close(void) {
  ep.open = false;
  return UZ_OK;
}

uint32_t uz_node(void) {
  return host::rank();
}

uint32_t uz_nodes(void) {
  return host::size();
}

int uz_register(const void *addr, size_t len, unsigned access) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    if (!addr || len == 0 || (access & ~(UZ_REMOTE_WRITE | UZ_REMOTE_READ)))
      return fail(UZ_EINVAL, "uz_register: a null address, no bytes or "
                             "unknown access bits");
    auto start = reinterpret_cast<uintptr_t>(addr);
    if (int r = map_range(start, len, access))
      return r;
    ep.registered.push_back({start, len, access});
    // Pinning may have moved pages pinned before: enter those again.
    uint64_t now = host::pinned::epoch();
    if (now != ep.epoch) {
      ep.epoch = now;
      for (const Registered &r : ep.registered)
        if (int e = map_range(r.start, r.len, r.access))
          return e;
    }
    return UZ_OK;
  });
}

int uz_send(uint32_t node, const void *buf, size_t len, uint32_t tag,
            uint32_t imm, uint64_t cookie) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    if (len > UZ_SEND_MAX || (len && !buf))
      return fail(UZ_EINVAL, "uz_send: at most UZ_SEND_MAX bytes");
    uz_cmd c{};
    c.op = UZ_OP_SEND;
    c.node = node;
    c.len = uint32_t(len);
    c.local = reinterpret_cast<uintptr_t>(buf);
    c.tag = tag;
    c.imm = imm;
    c.cookie = cookie;
    return post(c);
  });
}

int uz_write(uint32_t node, const void *local, uint64_t remote, size_t len,
             uint64_t cookie) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    if (!local || len == 0 || len > 0xFFFFFFFFu)
      return fail(UZ_EINVAL, "uz_write: no data");
    uz_cmd c{};
    c.op = UZ_OP_WRITE;
    c.node = node;
    c.len = uint32_t(len);
    c.local = reinterpret_cast<uintptr_t>(local);
    c.remote = remote;
    c.cookie = cookie;
    return post(c);
  });
}

int uz_read(uint32_t node, void *local, uint64_t remote, size_t len,
            uint64_t cookie) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    if (!local || len == 0 || len > 0xFFFFFFFFu)
      return fail(UZ_EINVAL, "uz_read: no buffer");
    uz_cmd c{};
    c.op = UZ_OP_READ;
    c.node = node;
    c.len = uint32_t(len);
    c.local = reinterpret_cast<uintptr_t>(local);
    c.remote = remote;
    c.cookie = cookie;
    return post(c);
  });
}

namespace {

// A SEND or WRITE whose data is gathered: the list goes into the slot's
// own list area, which the card reads with the command.
static_assert(UZ_MAX_IOV == UZ_MAX_SGE, "one gather list per command slot");

int post_gathered(uint16_t op, uint32_t node, const uz_iov *iov, unsigned count,
                  uint64_t remote, uint32_t tag, uint32_t imm,
                  uint64_t cookie) {
  if (int r = check_open())
    return r;
  if (!iov || count == 0 || count > UZ_MAX_SGE)
    return fail(UZ_EINVAL, "a gather list of 1 to UZ_MAX_IOV pieces");
  uint64_t total = 0;
  uz_sge *list =
      ep.sg_lists + size_t(ep.next_cmd % ep.cmd_entries) * UZ_MAX_SGE;
  for (unsigned i = 0; i < count; ++i) {
    if (!iov[i].base || iov[i].len == 0 || iov[i].len > 0xFFFFFFFFu)
      return fail(UZ_EINVAL, "a gather piece with no memory or no bytes");
    list[i] = {reinterpret_cast<uintptr_t>(iov[i].base), uint32_t(iov[i].len),
               0};
    total += iov[i].len;
  }
  if (total > 0xFFFFFFFFu || (op == UZ_OP_SEND && total > UZ_SEND_MAX))
    return fail(UZ_EINVAL, "the pieces add up to too many bytes");
  uz_cmd c{};
  c.op = op;
  c.flags = UZ_F_SG;
  c.node = node;
  c.len = uint32_t(total);
  c.count = count;
  c.local = reinterpret_cast<uintptr_t>(list);
  c.remote = remote;
  c.tag = tag;
  c.imm = imm;
  c.cookie = cookie;
  return post(c);
}

} // namespace

int uz_type_create(uint32_t count, uint32_t block, int32_t stride,
                   uint32_t extent, uint16_t *id) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    if (!id || count == 0 || block == 0 ||
        uint64_t(count) * block > 0xFFFFFFFFu)
      return fail(UZ_EINVAL, "uz_type_create: no blocks, or too many bytes");
    uint16_t free_id = 0;
    for (uint16_t i = 1; i < UZ_MAX_DATATYPES && !free_id; ++i)
      if (!ep.type_bytes[i])
        free_id = i;
    if (!free_id)
      return fail(UZ_ENOMEM, "the card holds 63 datatypes at most");
    ep.types[free_id] = {count, block, stride, extent};
    uz_cmd c{};
    c.op = UZ_OP_DATATYPE;
    c.local = host::bus_address(&ep.types[free_id]);
    c.tag = free_id;
    if (int r = run_and_wait(c))
      return r;
    ep.type_bytes[free_id] = count * block;
    *id = free_id;
    return UZ_OK;
  });
}

int uz_send_typed(uint32_t node, const void *base, uint16_t type,
                  uint32_t items, uint32_t tag, uint32_t imm, uint64_t cookie) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    if (type == 0 || type >= UZ_MAX_DATATYPES || !ep.type_bytes[type] ||
        !base || items == 0)
      return fail(UZ_EINVAL, "uz_send_typed: no such type, or no items");
    uint64_t len = uint64_t(ep.type_bytes[type]) * items;
    if (len > UZ_SEND_MAX)
      return fail(UZ_EINVAL, "uz_send_typed: at most UZ_SEND_MAX bytes");
    uz_cmd c{};
    c.op = UZ_OP_SEND;
    c.node = node;
    c.len = uint32_t(len);
    c.local = reinterpret_cast<uintptr_t>(base);
    c.local_type = type;
    c.count = items;
    c.tag = tag;
    c.imm = imm;
    c.cookie = cookie;
    return post(c);
  });
}

namespace {

// An RDMA write or read with a layout on either side.
int post_typed(uint16_t op, uint32_t node, const void *local,
               uint16_t local_type, uint32_t count, uint64_t remote,
               uint16_t remote_type, uint64_t cookie) {
  if (int r = check_open())
    return r;
  auto known = [](uint16_t t) {
    return t == 0 || (t < UZ_MAX_DATATYPES && ep.type_bytes[t]);
  };
  const char *name = op == UZ_OP_WRITE ? "uz_write_typed" : "uz_read_typed";
  if (!local || count == 0 || !known(local_type) || !known(remote_type))
    return fail(UZ_EINVAL, std::string(name) + ": no data, or no such type");
  uint64_t len =
      local_type ? uint64_t(ep.type_bytes[local_type]) * count : count;
  if (len > 0xFFFFFFFFu)
    return fail(UZ_EINVAL, std::string(name) + ": too many bytes");
  uz_cmd c{};
  c.op = op;
  c.node = node;
  c.len = uint32_t(len);
  c.local = reinterpret_cast<uintptr_t>(local);
  c.local_type = local_type;
  c.count = local_type ? count : 0;
  c.remote = remote;
  c.remote_type = remote_type;
  c.cookie = cookie;
  return post(c);
}

} // namespace

int uz_write_typed(uint32_t node, const void *local, uint16_t local_type,
                   uint32_t count, uint64_t remote, uint16_t remote_type,
                   uint64_t cookie) {
  return guarded([&]() -> int {
    return post_typed(UZ_OP_WRITE, node, local, local_type, count, remote,
                      remote_type, cookie);
  });
}

int uz_read_typed(uint32_t node, void *local, uint16_t local_type,
                  uint32_t count, uint64_t remote, uint16_t remote_type,
                  uint64_t cookie) {
  return guarded([&]() -> int {
    return post_typed(UZ_OP_READ, node, local, local_type, count, remote,
                      remote_type, cookie);
  });
}

int uz_sendv(uint32_t node, const uz_iov *iov, unsigned count, uint32_t tag,
             uint32_t imm, uint64_t cookie) {
  return guarded([&]() -> int {
    return post_gathered(UZ_OP_SEND, node, iov, count, 0, tag, imm, cookie);
  });
}

int uz_writev(uint32_t node, const uz_iov *iov, unsigned count, uint64_t remote,
              uint64_t cookie) {
  return guarded([&]() -> int {
    return post_gathered(UZ_OP_WRITE, node, iov, count, remote, 0, 0, cookie);
  });
}

int uz_readv(uint32_t node, const uz_iov *iov, unsigned count, uint64_t remote,
             uint64_t cookie) {
  return guarded([&]() -> int {
    return post_gathered(UZ_OP_READ, node, iov, count, remote, 0, 0, cookie);
  });
}

int uz_poll(uz_completion *out) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    return take_completion(out, false);
  });
}

int uz_wait(uz_completion *out) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    if (ep.outstanding == 0 && ep.stashed.empty())
      return fail(UZ_EINVAL, "uz_wait: no operation is outstanding");
    return take_completion(out, true);
  });
}

int uz_wait_any(void) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    for (;;) {
      if (int bits = ready_now())
        return bits;
      auto *cq = reinterpret_cast<volatile uint32_t *>(&next_cqe()->seq);
      auto *rx =
          const_cast<volatile uint32_t *>(&slot_header(ep.rx_taken + 1)->seq);
      if (ep.notify_cq != UZ_OUT_REGISTER && ep.notify_rx != UZ_OUT_REGISTER) {
        // Both in memory: one wait for either word; woken by the card's
        // interrupt when either queue asked for one.
        bool irq = ep.notify_cq == UZ_OUT_INTERRUPT ||
                   ep.notify_rx == UZ_OUT_INTERRUPT;
        host::detail::wait_either(cq, ep.cq_taken + 1, rx, ep.rx_taken + 1,
                                  irq);
        continue;
      }
      // A queue polled by its count register: each read holds the bus.
      if (ep.notify_cq == UZ_OUT_REGISTER &&
          host::pio_read(reg(UZ_REG_CQ_COUNT)) != ep.cq_taken)
        continue;
      if (ep.notify_rx == UZ_OUT_REGISTER &&
          host::pio_read(reg(UZ_REG_RX_COUNT)) != ep.rx_taken)
        continue;
    }
  });
}

int uz_poll_arrival(uz_arrival *out) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    return take_arrival(out, false);
  });
}

int uz_wait_arrival(uz_arrival *out) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    return take_arrival(out, true);
  });
}

int uz_release(const uz_arrival *arrival) {
  return guarded([&]() -> int {
    if (int r = check_open())
      return r;
    if (!arrival || arrival->seq != ep.rx_released + 1 ||
        arrival->seq > ep.rx_taken)
      return fail(UZ_EINVAL, "uz_release: arrivals are freed in order, each "
                             "once");
    ep.rx_released = arrival->seq;
    host::pio_write(reg(UZ_REG_RX_FREED), ep.rx_released);
    return UZ_OK;
  });
}

const char *uz_strerror(int code) {
  switch (code) {
  case UZ_OK:
    return "success";
  case UZ_EINVAL:
    return "invalid argument";
  case UZ_ENOCARD:
    return "no UZURA endpoint (not on a uzura card with its firmware?)";
  case UZ_ESTOPPED:
    return "the emulator is stopping";
  case UZ_ENOMEM:
    return "out of registered memory or translation slots";
  case UZ_EBUSY:
    return "too many operations outstanding";
  default:
    return "unknown error";
  }
}

const char *uz_last_error(void) {
  return last_error.c_str();
}

} // extern "C"
