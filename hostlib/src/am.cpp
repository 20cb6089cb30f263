// NI Active Messages, host side: requests to the niam firmware
// (firmware/niam/niam.cpp). A request is built in registered memory and
// announced with one PIO write of its number into the mailbox; the NIC
// fetches it by DMA and, for a collective, DMAs the result and the
// collective's number back into the request block. docs/niam.md.
#include "nicemu/host.hpp"

#include "../../firmware/niam/niam_protocol.h"

#include <atomic>
#include <cstring>
#include <string>

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
};

AmState &am() {
  static AmState s = [] {
    AmState made;
    made.block = static_cast<uint8_t *>(alloc(NIAM_BLOCK_BYTES));
    std::memset(made.block, 0, NIAM_BLOCK_BYTES);
    // Once: where the NIC finds the ring and puts results.
    pio_write(mailbox() + 4 * NIAM_BOX_BLOCK, bus_address(made.block));
    return made;
  }();
  return s;
}

uint32_t box_word(uint32_t index) {
  return pio_read(mailbox() + 4 * index);
}

// Before a ring slot is reused, the request that held it must have been
// fetched. Collectives prove it by completing; otherwise ask the NIC.
void wait_for_slot(AmState &s) {
  while (s.seq + 1 - s.fetched > NIAM_RING_SLOTS)
    s.fetched = box_word(NIAM_BOX_STAT_REQUESTS);
}

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
                ": a collective is still pending (call barrier_wait first)");
  uint32_t args[6] = {op, static_cast<uint32_t>(value), 0, 0, 0, 0};
  s.pending_seq = post(NIAM_H_COLLECTIVE, args);
  s.pending = ++s.collectives;
  s.pending_barrier = barrier;
}

int32_t wait_collective() {
  AmState &s = am();
  auto *done = reinterpret_cast<volatile uint32_t *>(s.block + NIAM_BLOCK_DONE);
  wait_word(done, ~0u, s.pending);
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
    throw Error("nicemu: barrier_wait without barrier_post");
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

} // namespace nicemu::host
