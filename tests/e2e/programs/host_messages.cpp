// Host messages (nicemu::host::am_send / am_send_bulk) on every rank:
// each rank sends kCount small messages and a run of bulk messages of many
// sizes to every rank (itself included) *without polling*, so receive rings
// fill and the NICs hold packets back; then it polls until everything has
// arrived. Checked here: per-sender order, every bulk byte (a checksum that
// depends on sender, sequence and size), nothing dropped; then a message
// naming no handler is dropped and counted, never called. Prints
// "rank R of N: ok" (or what went wrong) and exits 0 when all is well.
#include "nicemu/niam_protocol.h"
#include <nicemu/host.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

namespace host = nicemu::host;

namespace {

constexpr uint32_t kCount = 100;
const size_t kBulkSizes[] = {0, 1, 4, 31, 100, 4064, 4096, 5000, 12345};
constexpr size_t kBulks = sizeof kBulkSizes / sizeof kBulkSizes[0];

std::vector<uint32_t> small_next; // by sender: the next sequence number
std::vector<uint32_t> bulk_next;  // by sender: the next bulk index
int errors;

uint8_t pattern(uint32_t src, size_t index, size_t i) {
  return uint8_t(src * 131 + index * 17 + i * 7 + (i >> 8));
}

void small_handler(uint32_t src, uint32_t seq, uint32_t a1, uint32_t a2,
                   uint32_t a3) {
  if (seq != small_next[src] || a1 != src * 1000 + seq || a2 != ~seq ||
      a3 != 0xA5A5A5A5u) {
    std::printf("rank %u: small message %u from %u out of order or "
                "corrupt (expected %u)\n",
                host::rank(), seq, src, small_next[src]);
    ++errors;
  }
  small_next[src] = seq + 1;
}

void bulk_handler(uint32_t src, void *data, size_t bytes, uint64_t index,
                  uint64_t tag) {
  bool ok = index == bulk_next[src] && index < kBulks &&
            bytes == kBulkSizes[index] && tag == (uint64_t(src) << 40 | index);
  for (size_t i = 0; ok && i < bytes; ++i)
    ok = static_cast<uint8_t *>(data)[i] == pattern(src, index, i);
  if (!ok) {
    std::printf("rank %u: bulk message %llu from %u (%zu bytes) wrong\n",
                host::rank(), static_cast<unsigned long long>(index), src,
                bytes);
    ++errors;
  }
  bulk_next[src] = uint32_t(index + 1);
}

bool all_in() {
  for (uint32_t r = 0; r < host::size(); ++r)
    if (small_next[r] != kCount || bulk_next[r] != kBulks)
      return false;
  return true;
}

} // namespace

int main() {
  uint32_t me = host::rank(), n = host::size();
  small_next.assign(n, 0);
  bulk_next.assign(n, 0);
  host::barrier();
  std::vector<uint8_t> buf(16384);
  for (uint32_t seq = 0; seq < kCount; ++seq) {
    for (uint32_t k = 0; k < n; ++k) {
      uint32_t to = (me + k) % n;
      host::am_send(to, small_handler, seq, me * 1000 + seq, ~seq, 0xA5A5A5A5u);
      // Bulk messages interleaved with the small ones, in their own order.
      if (seq % 10 == 0 && seq / 10 < kBulks) {
        size_t index = seq / 10;
        for (size_t i = 0; i < kBulkSizes[index]; ++i)
          buf[i] = pattern(me, index, i);
        host::am_send_bulk(to, bulk_handler, buf.data(), kBulkSizes[index],
                           index, uint64_t(me) << 40 | index);
      }
    }
  }
  while (!all_in())
    host::am_wait();
  host::barrier();

  // A message whose handler offset names no code: dropped, counted.
  if (me == 0) {
    uint32_t args[6] = {(n - 1) % n, 0xFFFFFFF0u, 0, 0, 0, 0};
    host::am_request(NIAM_H_HOST_SEND, args);
  }
  host::barrier();
  if (me == (n - 1) % n) {
    // The bad message arrived before the barrier's result: it is in the
    // ring now (or was run by the barrier's wait already).
    host::am_poll();
    if (host::am_dropped_messages() != 1) {
      std::printf("rank %u: %u messages dropped, expected 1\n", me,
                  host::am_dropped_messages());
      ++errors;
    }
  } else if (host::am_dropped_messages() != 0) {
    ++errors;
  }
  // A handler that is not a function of the program is refused at the API.
  try {
    host::am_send(0, reinterpret_cast<host::AmHandler>(buf.data()));
    ++errors;
  } catch (const host::Error &) {
  }
  host::barrier();
  if (errors == 0)
    std::printf("rank %u of %u: ok\n", me, n);
  return errors ? 1 : 0;
}
