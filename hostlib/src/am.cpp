// NI Active Messages, host side: requests to the niam firmware
// (firmware/niam/niam.cpp). A request is built in registered memory and
// announced with one PIO write of its number into the mailbox; the NIC
// fetches it by DMA and, for a collective, DMAs the result and the
// collective's number back into the request block. docs/niam.md.
#include "nicemu/host.hpp"

#include "am_internal.hpp"

#include "host_end.hpp"
#include "nicemu/niam_protocol.h"

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

namespace nicemu::host {

namespace {

struct AmState {
  uint8_t *block = nullptr; // NIAM_BLOCK_BYTES of registered memory
  uint32_t seq = 0;         // the last request posted
  uint32_t fetched = 0;     // requests known to have been fetched by the NIC
  uint32_t collectives = 0; // the last collective posted
  uint32_t pending = 0;     // a collective posted and not waited for (or 0)
  uint32_t pending_seq = 0; // its request number
  bool pending_barrier = false;
  uint32_t syncs = 0; // the last sync posted
  struct Region {
    uint32_t start, end; // NIC virtual addresses (arena offsets)
  };
  std::vector<Region> regions; // what am_alloc entered in the page table
};

uint32_t post(uint32_t handler, const uint32_t (&args)[6]);
void map_pages(AmState &s, uint8_t *p, size_t span);

AmState &am() {
  static AmState s = [] {
    AmState made;
    made.block = static_cast<uint8_t *>(alloc(NIAM_BLOCK_BYTES));
    std::memset(made.block, 0, NIAM_BLOCK_BYTES);
    // Once: where the NIC finds the ring and puts results.
    pio_write(mailbox() + 4 * NIAM_BOX_BLOCK, bus_address(made.block));
    return made;
  }();
  static bool host_messages_ready = false;
  if (!host_messages_ready) {
    // Every rank sets these up at its first NI-AM call, before any user
    // am_alloc, so allocation offsets stay equal across ranks.
    host_messages_ready = true;
    detail::HostMessageMemory m = detail::host_message_memory();
    auto *ring = static_cast<uint8_t *>(alloc(m.ring_bytes));
    auto *landing = static_cast<uint8_t *>(alloc(m.landing_bytes + 4096 - 64));
    landing += (4096 - bus_address(landing) % 4096) % 4096;
    auto *staging = static_cast<uint8_t *>(alloc(m.staging_bytes + 4096 - 64));
    staging += (4096 - bus_address(staging) % 4096) % 4096;
    std::memset(ring, 0, m.ring_bytes);
    map_pages(s, staging, m.staging_bytes);
    uint32_t args[6] = {
        bus_address(ring), bus_address(landing), m.slots, 0, 0, 0};
    post(NIAM_H_RING, args);
    detail::host_messages_attach(ring, landing, staging);
  }
  return s;
}

uint32_t box_word(uint32_t index) {
  return pio_read(mailbox() + 4 * index);
}

// Before a ring slot is reused, the request that held it must have been
// fetched. Collectives prove it by completing; otherwise ask the NIC.
// Host messages are served meanwhile: the NIC may be waiting for this host
// to free its receive ring before it can take more requests.
void wait_for_slot(AmState &s) {
  while (s.seq + 1 - s.fetched > NIAM_RING_SLOTS) {
    s.fetched = box_word(NIAM_BOX_STAT_REQUESTS);
    if (s.seq + 1 - s.fetched > NIAM_RING_SLOTS)
      detail::serve_messages();
  }
}

} // namespace

uint32_t detail::post(uint32_t handler, const uint32_t (&args)[6]) {
  return nicemu::host::post(handler, args);
}

const uint8_t *detail::request_block() {
  return am().block;
}

namespace {

uint32_t post(uint32_t handler, const uint32_t (&args)[6]) {
  AmState &s = am();
  wait_for_slot(s);
  uint32_t seq = s.seq + 1;
  niam_packet p{seq, handler, {}};
  std::memcpy(p.arg, args, sizeof p.arg);
  uint8_t *slot =
      s.block + NIAM_BLOCK_RING + (seq % NIAM_RING_SLOTS) * NIAM_PACKET_BYTES;
  std::memcpy(slot, &p, sizeof p);
  std::atomic_thread_fence(std::memory_order_release);
  s.seq = seq;
  pio_write(mailbox() + 4 * NIAM_BOX_SEQ, seq); // the only PIO per request
  return seq;
}

void post_collective(uint32_t op, int32_t value, bool barrier,
                     const char *what) {
  AmState &s = am();
  if (s.pending)
    throw Error(std::string("nicemu: ") + what +
                    ": a collective is still pending (call barrier_wait first)",
                ErrorCode::State);
  uint32_t args[6] = {op, static_cast<uint32_t>(value), 0, 0, 0, 0};
  s.pending_seq = post(NIAM_H_COLLECTIVE, args);
  s.pending = ++s.collectives;
  s.pending_barrier = barrier;
}

int32_t wait_collective() {
  AmState &s = am();
  auto *done = reinterpret_cast<volatile uint32_t *>(s.block + NIAM_BLOCK_DONE);
  detail::wait_serving(done, s.pending);
  std::atomic_thread_fence(std::memory_order_acquire);
  int32_t result;
  std::memcpy(&result, s.block + NIAM_BLOCK_RESULT, sizeof result);
  s.fetched = s.pending_seq;
  s.pending = 0;
  return result;
}

int32_t allreduce(uint32_t op, int32_t value, const char *what) {
  post_collective(op, value, false, what);
  return wait_collective();
}

} // namespace

void barrier_post() {
  post_collective(NIAM_OP_BARRIER, 0, true, "barrier_post");
}

void barrier_wait() {
  AmState &s = am();
  if (!s.pending || !s.pending_barrier)
    throw Error("nicemu: barrier_wait without barrier_post", ErrorCode::State);
  wait_collective();
}

void barrier() {
  barrier_post();
  barrier_wait();
}

int32_t allreduce_sum(int32_t value) {
  return allreduce(NIAM_OP_SUM, value, "allreduce_sum");
}
int32_t allreduce_min(int32_t value) {
  return allreduce(NIAM_OP_MIN, value, "allreduce_min");
}
int32_t allreduce_max(int32_t value) {
  return allreduce(NIAM_OP_MAX, value, "allreduce_max");
}

void am_request(uint32_t handler, const uint32_t (&args)[6]) {
  post(handler, args);
}

uint32_t am_unknown_handlers() {
  return box_word(NIAM_BOX_STAT_UNKNOWN);
}
uint32_t am_bad_packets() {
  return box_word(NIAM_BOX_STAT_BAD);
}

// ---- Remote memory transfers ------------------------------------------------

namespace {

// The NIC virtual address of `p`: its offset in the registered arena.
uint32_t virt(const void *p) {
  return uint32_t(bus_address(p) -
                  channel::HostEnd::from_environment().bus_base());
}

[[noreturn]] void refuse(const char *what, const std::string &why,
                         ErrorCode code = ErrorCode::BadArgument) {
  throw Error(std::string("nicemu: ") + what + ": " + why, code);
}

// [p, p + bytes) must lie in one region this process am_alloc'd: by the
// allocation rule the same range is registered on every rank.
uint32_t checked(const void *p, size_t bytes, const char *what) {
  if (reinterpret_cast<uintptr_t>(p) % 4)
    refuse(what, "address not a multiple of 4");
  uint32_t v = virt(p);
  for (const AmState::Region &r : am().regions)
    if (v >= r.start && v < r.end && bytes <= r.end - v)
      return v;
  refuse(what, "range outside the memory am_alloc registered");
}

void check_node(uint32_t node, const char *what) {
  if (node >= size())
    refuse(what,
           "node " + std::to_string(node) + " of " + std::to_string(size()));
}

void post_bcopy(uint32_t src_node, const void *src, uint32_t dst_node,
                void *dst, size_t bytes, uint32_t flag, uint32_t value,
                const char *what) {
  check_node(src_node, what);
  check_node(dst_node, what);
  if (bytes == 0 || bytes % 4)
    refuse(what, "size " + std::to_string(bytes) +
                     " not a positive multiple "
                     "of 4");
  uint32_t args[6] = {checked(src, bytes, what),
                      checked(dst, bytes, what),
                      uint32_t(bytes),
                      dst_node | (src_node << 16),
                      flag,
                      value};
  post(NIAM_H_BCOPY, args);
}

} // namespace

void *am_alloc(size_t bytes) {
  AmState &s = am();
  if (bytes == 0 || bytes > NIAM_VIRT_BYTES)
    refuse("am_alloc", std::to_string(bytes) + " bytes",
           bytes == 0 ? ErrorCode::BadArgument : ErrorCode::OutOfMemory);
  size_t span =
      (bytes + NIAM_PAGE_BYTES - 1) / NIAM_PAGE_BYTES * NIAM_PAGE_BYTES;
  // alloc aligns to 64 bytes: over-allocate by the most alignment can cost,
  // the same on every rank, so offsets stay equal across ranks.
  auto *raw = static_cast<uint8_t *>(alloc(span + NIAM_PAGE_BYTES - 64));
  uint8_t *p =
      raw + (NIAM_PAGE_BYTES - virt(raw) % NIAM_PAGE_BYTES) % NIAM_PAGE_BYTES;
  map_pages(s, p, span);
  return p;
}

namespace {

// Enters the page-aligned [p, p + span) into the local NIC's page table.
void map_pages(AmState &s, uint8_t *p, size_t span) {
  uint32_t v = virt(p);
  if (v + span > NIAM_VIRT_BYTES)
    refuse("am_alloc", "beyond the NIC's 64 MB page table",
           ErrorCode::OutOfMemory);
  uint32_t args[6] = {v, uint32_t(span / NIAM_PAGE_BYTES), bus_address(p), 0, 0,
                      0};
  post(NIAM_H_MAP, args);
  s.regions.push_back({v, uint32_t(v + span)});
}

} // namespace

void bcopy(uint32_t src_node, const void *src, uint32_t dst_node, void *dst,
           size_t bytes) {
  post_bcopy(src_node, src, dst_node, dst, bytes, 0, 0, "bcopy");
}

void bcopy_notify(uint32_t src_node, const void *src, uint32_t dst_node,
                  void *dst, size_t bytes, volatile uint32_t *flag,
                  uint32_t value) {
  uint32_t f = checked(const_cast<const uint32_t *>(flag), 4, "bcopy_notify");
  post_bcopy(src_node, src, dst_node, dst, bytes, f | NIAM_NOTIFY, value,
             "bcopy_notify");
}

uint32_t sync() {
  AmState &s = am();
  uint32_t k = ++s.syncs;
  uint32_t args[6] = {k, 0, 0, 0, 0, 0};
  uint32_t seq = post(NIAM_H_SYNC, args);
  auto *done =
      reinterpret_cast<volatile uint32_t *>(s.block + NIAM_BLOCK_SYNC_DONE);
  detail::wait_serving(done, k);
  std::atomic_thread_fence(std::memory_order_acquire);
  s.fetched = seq; // the sync was served, so every request before it too
  uint32_t failed;
  std::memcpy(&failed, s.block + NIAM_BLOCK_SYNC_FAILED, sizeof failed);
  return failed;
}

uint32_t am_address(const void *p) {
  return virt(p);
}

uint32_t am_protection_errors() {
  return box_word(NIAM_BOX_STAT_PROTECTION);
}

} // namespace nicemu::host
