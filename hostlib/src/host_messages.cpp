// Host messages: Active Messages whose handlers run on the host. The NIC
// delivers them into a receive ring in this process's registered memory
// (niam_protocol.h, "Host messages"); this file sends them, takes them out
// of the ring and runs their handlers. docs/niam.md.
#include "am_internal.hpp"
#include "nicemu/host.hpp"

#include "nicemu/niam_protocol.h"

#include <link.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace nicemu::host {

namespace {

constexpr uint32_t kSlots = 32;
constexpr size_t kStagingBytes = 256 * 1024;
constexpr size_t kMaxBulk = 64 * 1024 - 64; // with its header, 16 pages
constexpr uint32_t kHeaderBytes = 32;
constexpr uint32_t kBulkMagic = 0x4B4C5542; // "BULK" in memory order

// A staged message: the header the library puts in front of bulk data.
struct BulkHeader {
  uint32_t magic, object, offset, bytes;
  uint64_t a0, a1;
};
static_assert(sizeof(BulkHeader) == kHeaderBytes);

struct Messages {
  uint8_t *ring = nullptr, *landing = nullptr, *staging = nullptr;
  uint32_t consumed = 0, reported = 0; // ring entries taken, told to the NIC
  uint32_t dropped = 0;
  // Staged messages posted and not yet read by the NIC: [start, end) of the
  // staging area, and the value NIAM_BLOCK_SENT reaches when it is read.
  struct InFlight {
    size_t start, end;
    uint32_t sent;
  };
  std::deque<InFlight> in_flight;
  size_t staging_head = 0;
  uint32_t staged = 0;
  // Bulk messages being reassembled, by sender.
  std::unordered_map<uint32_t, std::vector<uint8_t>> partial;
  // Handlers never nest (as in Berkeley AM): a message taken from the ring
  // while a handler runs (a send inside it that waits for room serves the
  // ring, so the NIC is never stuck behind a full ring) is held here and
  // runs once that handler has returned, in arrival order.
  struct Held {
    bool bulk = false;
    niam_packet small{};
    uint32_t src = 0;
    std::vector<uint8_t> msg;
  };

  std::deque<Held> held;
  bool in_handler = false;
};

Messages &messages() {
  static Messages m;
  return m;
}

// Reaching the NIC through am.cpp sets the ring up on first use.
Messages &ready() {
  detail::request_block();
  return messages();
}

const volatile uint32_t *word_at(const uint8_t *base, size_t offset) {
  return reinterpret_cast<const volatile uint32_t *>(base + offset);
}

const volatile uint32_t *next_tag(const Messages &m) {
  return word_at(m.ring, (m.consumed % kSlots) * NIAM_PACKET_BYTES);
}

[[noreturn]] void refuse(const char *what, const std::string &why) {
  throw Error(std::string("nicemu: ") + what + ": " + why,
              ErrorCode::BadArgument);
}

// ---- Handler tokens ---------------------------------------------------------

struct Object {
  uintptr_t bias; // load bias
  struct Segment {
    uintptr_t start, end;
    bool code;
  };
  std::vector<Segment> segments;
};

std::vector<Object> loaded_objects() {
  std::vector<Object> out;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        Object o{info->dlpi_addr, {}};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto &ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD)
            o.segments.push_back({info->dlpi_addr + ph.p_vaddr,
                                  info->dlpi_addr + ph.p_vaddr + ph.p_memsz,
                                  (ph.p_flags & PF_X) != 0});
        }
        static_cast<std::vector<Object> *>(data)->push_back(std::move(o));
        return 0;
      },
      &out);
  return out;
}

// Whether [a, a + bytes) lies in one segment of `o` (a code segment when
// `code`).
bool in_segment(const Object &o, uintptr_t a, size_t bytes, bool code) {
  for (const Object::Segment &s : o.segments)
    if ((s.code || !code) && a >= s.start && a < s.end && bytes <= s.end - a)
      return true;
  return false;
}

// The objects as first seen; looked up again when a pointer is in none of
// them (a library loaded later).
std::vector<Object> &objects(bool refresh) {
  static std::vector<Object> cache = loaded_objects();
  if (refresh)
    cache = loaded_objects();
  return cache;
}

template <typename Fn> detail::Token token_of(Fn fn, const char *what) {
  detail::Token t;
  if (!detail::to_token(reinterpret_cast<const void *>(fn), t))
    refuse(what, "the handler is not a function of this program");
  return t;
}

// ---- Receiving --------------------------------------------------------------

void report_consumed(Messages &m) {
  if (m.consumed - m.reported < kSlots / 2)
    return;
  m.reported = m.consumed;
  pio_write(mailbox() + 4 * NIAM_BOX_RING_FREED, m.consumed);
}

// The words go to the handler as 64 bits each, so that it may take any of
// them as an int or as a pointer (as GAM handlers do).
using WordHandler = void (*)(uint32_t src, uint64_t w0, uint64_t w1,
                             uint64_t w2, uint64_t w3);

// A word travels as its lower 32 bits; the receiver gives it back the
// upper half of the first of its own mappings that holds it. Host programs
// run without address randomisation (nicemu run), so every rank of one
// executable has the same mappings, and a pointer another rank sent (or
// one this rank sent out and got back) names the same place here. A word
// that is no address here is zero-extended; a handler that takes it as an
// int reads the lower half alone either way. Deterministic: it depends on
// this process's mappings only, never on what the sender's unused argument
// registers held.
bool page_mapped(uint64_t address) {
  unsigned char resident;
  return mincore(reinterpret_cast<void *>(address & ~uint64_t(4095)), 1,
                 &resident) == 0;
}

const std::vector<uint32_t> &upper_halves() {
  static const std::vector<uint32_t> halves = [] {
    std::vector<uint32_t> found;
    dl_iterate_phdr(
        [](dl_phdr_info *info, size_t, void *data) {
          auto &out = *static_cast<std::vector<uint32_t> *>(data);
          uint32_t upper = uint32_t(uint64_t(info->dlpi_addr) >> 32);
          if (upper && std::find(out.begin(), out.end(), upper) == out.end())
            out.push_back(upper);
          return 0;
        },
        &found);
    int local = 0; // the stack's
    uint32_t stack = uint32_t(reinterpret_cast<uintptr_t>(&local) >> 32);
    if (stack && std::find(found.begin(), found.end(), stack) == found.end())
      found.push_back(stack);
    return found;
  }();
  return halves;
}

uint64_t widen(uint32_t low) {
  if (low >= 4096 && page_mapped(low))
    return low;
  for (uint32_t upper : upper_halves())
    if (uint64_t address = uint64_t(upper) << 32 | low; page_mapped(address))
      return address;
  return low;
}

void run_small(const Messages::Held &h) {
  const niam_packet &e = h.small;
  uint32_t src = e.arg[0] & 0xFFFF;
  detail::Token t{(e.arg[0] >> 16) & 0xFFF, e.arg[1]};
  auto *fn = reinterpret_cast<WordHandler>(detail::from_token(t));
  if (!fn) {
    ++messages().dropped;
    return;
  }
  fn(src, widen(e.arg[2]), widen(e.arg[3]), widen(e.arg[4]), widen(e.arg[5]));
}

void run_bulk(uint32_t src, std::vector<uint8_t> msg) {
  BulkHeader h;
  std::memcpy(&h, msg.data(), sizeof h);
  void *fn = h.magic == kBulkMagic && h.bytes <= msg.size() - kHeaderBytes
                 ? detail::from_token({h.object, h.offset})
                 : nullptr;
  if (!fn) {
    ++messages().dropped;
    return;
  }
  reinterpret_cast<AmBulkHandler>(fn)(src, msg.data() + kHeaderBytes, h.bytes,
                                      h.a0, h.a1);
}

void run_held(Messages::Held h) {
  if (h.bulk)
    run_bulk(h.src, std::move(h.msg));
  else
    run_small(h);
}

// Runs `h` now, or holds it if a handler is running (Messages::held).
void deliver(Messages::Held h) {
  Messages &m = messages();
  if (m.in_handler) {
    m.held.push_back(std::move(h));
    return;
  }
  m.in_handler = true;
  struct Reset {
    bool &flag;
    ~Reset() { flag = false; } // a handler may throw
  } reset{m.in_handler};
  run_held(std::move(h));
}

// Takes the next ring entry, if it has arrived, and delivers what it
// completes.
bool serve_one() {
  Messages &m = messages();
  if (*next_tag(m) != m.consumed + 1)
    return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  uint32_t slot = m.consumed % kSlots;
  niam_packet e;
  std::memcpy(&e, m.ring + slot * NIAM_PACKET_BYTES, sizeof e);
  if (e.handler == NIAM_RING_SMALL) {
    ++m.consumed;
    report_consumed(m);
    Messages::Held h;
    h.small = e;
    deliver(std::move(h));
    return true;
  }
  // A chunk: offset, bytes, message bytes. Chunks of one sender arrive in
  // order; the message runs when its last chunk is in.
  uint32_t src = e.arg[0], off = e.arg[1], len = e.arg[2], total = e.arg[3];
  std::vector<uint8_t> &buf = m.partial[src];
  bool fits = e.handler == NIAM_RING_CHUNK && off == buf.size() &&
              len <= NIAM_PAGE_BYTES && total >= kHeaderBytes &&
              len <= total - off;
  if (fits)
    buf.insert(buf.end(), m.landing + slot * NIAM_PAGE_BYTES,
               m.landing + slot * NIAM_PAGE_BYTES + len);
  ++m.consumed;
  report_consumed(m);
  if (!fits) {
    ++m.dropped;
    m.partial.erase(src);
  } else if (buf.size() == total) {
    Messages::Held h;
    h.bulk = true;
    h.src = src;
    h.msg = std::move(buf);
    m.partial.erase(src);
    deliver(std::move(h));
  }
  return true;
}

// Runs the held messages first (they arrived before anything still in the
// ring), then the ring. Inside a handler it only takes entries, to hold.
int serve_all() {
  Messages &m = messages();
  int n = 0;
  for (;; ++n) {
    if (!m.in_handler && !m.held.empty()) {
      Messages::Held h = std::move(m.held.front());
      m.held.pop_front();
      deliver(std::move(h));
    } else if (!serve_one()) {
      return n;
    }
  }
}

// ---- Sending ----------------------------------------------------------------

// Room for `bytes` in the staging area, waiting for the NIC to read older
// messages when it is full.
size_t stage(Messages &m, size_t bytes) {
  bytes = (bytes + 63) & ~size_t(63);
  if (m.staging_head + bytes > kStagingBytes)
    m.staging_head = 0;
  size_t start = m.staging_head, end = start + bytes;
  const volatile uint32_t *sent =
      word_at(detail::request_block(), NIAM_BLOCK_SENT);
  while (!m.in_flight.empty()) {
    const Messages::InFlight &f = m.in_flight.front();
    bool overlaps = f.start < end && start < f.end;
    if (!overlaps && m.in_flight.size() < 64)
      break;
    detail::wait_serving(sent, f.sent);
    m.in_flight.pop_front();
  }
  m.staging_head = end;
  m.in_flight.push_back({start, end, ++m.staged});
  return start;
}

} // namespace

// ---- detail: shared with am.cpp and gam.cpp ---------------------------------

detail::HostMessageMemory detail::host_message_memory() {
  return {kSlots, kSlots * NIAM_PACKET_BYTES, kSlots * NIAM_PAGE_BYTES,
          kStagingBytes};
}

void detail::host_messages_attach(uint8_t *ring, uint8_t *landing,
                                  uint8_t *staging) {
  Messages &m = messages();
  m.ring = ring;
  m.landing = landing;
  m.staging = staging;
}

void detail::wait_serving(const volatile uint32_t *word, uint32_t expected) {
  Messages &m = ready();
  for (;;) {
    if (int32_t(*word - expected) >= 0)
      return;
    if (serve_all())
      continue;
    // Wait for the word or the next ring entry, whichever comes first.
    wait_either(word, expected, next_tag(m), m.consumed + 1);
  }
}

namespace {

bool find_token(const void *p, size_t bytes, bool code, detail::Token &out) {
  auto a = reinterpret_cast<uintptr_t>(p);
  for (bool refresh : {false, true}) {
    std::vector<Object> &objs = objects(refresh);
    for (size_t i = 0; i < objs.size() && i < 0x1000; ++i)
      if (in_segment(objs[i], a, bytes, code)) {
        out = {uint32_t(i), uint32_t(a - objs[i].bias)};
        return a - objs[i].bias <= UINT32_MAX;
      }
  }
  return false;
}

void *find_address(detail::Token t, size_t bytes, bool code) {
  for (bool refresh : {false, true}) {
    std::vector<Object> &objs = objects(refresh);
    if (t.object < objs.size()) {
      uintptr_t a = objs[t.object].bias + t.offset;
      if (in_segment(objs[t.object], a, bytes, code))
        return reinterpret_cast<void *>(a);
    }
  }
  return nullptr;
}

} // namespace

int detail::serve_messages() {
  return messages().ring ? serve_all() : 0;
}

bool detail::to_token(const void *fn, Token &out) {
  return find_token(fn, 1, true, out);
}

void *detail::from_token(Token t) {
  return find_address(t, 1, true);
}

bool detail::to_image_token(const void *p, size_t bytes, Token &out) {
  return find_token(p, bytes, false, out);
}

void *detail::from_image_token(Token t, size_t bytes) {
  return find_address(t, bytes, false);
}

// ---- The API
// ------------------------------------------------------------------

void am_send(uint32_t node, AmHandler handler, uint32_t a0, uint32_t a1,
             uint32_t a2, uint32_t a3) {
  ready();
  if (node >= size())
    refuse("am_send",
           "node " + std::to_string(node) + " of " + std::to_string(size()));
  detail::Token t = token_of(handler, "am_send");
  uint32_t args[6] = {node | (t.object << 16), t.offset, a0, a1, a2, a3};
  detail::post(NIAM_H_HOST_SEND, args);
}

void detail::am_send_words(uint32_t node, AmHandler handler,
                           const uint64_t (&w)[4]) {
  ready();
  if (node >= size())
    refuse("am_send",
           "node " + std::to_string(node) + " of " + std::to_string(size()));
  detail::Token t = token_of(handler, "am_send");
  uint32_t args[6] = {node | (t.object << 16), t.offset,       uint32_t(w[0]),
                      uint32_t(w[1]),          uint32_t(w[2]), uint32_t(w[3])};
  detail::post(NIAM_H_HOST_SEND, args);
}

size_t am_max_bulk() {
  return kMaxBulk;
}

void am_send_bulk(uint32_t node, AmBulkHandler handler, const void *data,
                  size_t bytes, uint64_t a0, uint64_t a1) {
  Messages &m = ready();
  if (node >= size())
    refuse("am_send_bulk",
           "node " + std::to_string(node) + " of " + std::to_string(size()));
  if (bytes > kMaxBulk)
    refuse("am_send_bulk", std::to_string(bytes) + " bytes (at most " +
                               std::to_string(kMaxBulk) + ")");
  if (bytes && !data)
    refuse("am_send_bulk", "null data");
  detail::Token t = token_of(handler, "am_send_bulk");
  size_t total = kHeaderBytes + ((bytes + 3) & ~size_t(3));
  size_t at = stage(m, total);
  BulkHeader h{kBulkMagic, t.object, t.offset, uint32_t(bytes), a0, a1};
  std::memcpy(m.staging + at, &h, sizeof h);
  if (bytes)
    std::memcpy(m.staging + at + kHeaderBytes, data, bytes);
  std::atomic_thread_fence(std::memory_order_release);
  uint32_t args[6] = {
      am_address(m.staging + at), uint32_t(total), node, 0, 0, 0};
  detail::post(NIAM_H_HOST_MSG, args);
}

int am_poll() {
  Messages &m = ready();
  // The poll itself: one read of host memory.
  wait_word(next_tag(m), 0, 0);
  return serve_all();
}

int am_wait() {
  Messages &m = ready();
  for (;;) {
    if (int n = serve_all())
      return n;
    wait_word(next_tag(m), ~0u, m.consumed + 1);
  }
}

uint32_t am_dropped_messages() {
  return ready().dropped;
}

} // namespace nicemu::host
