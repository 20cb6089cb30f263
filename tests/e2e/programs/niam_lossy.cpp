// NI-AM over links that lose, corrupt or duplicate packets (run with the
// niam_reliable image and --link-loss, --link-corrupt, --link-dup): on every
// rank, `rounds` rounds of
//   - a barrier and the three reductions, each result checked;
//   - a bcopy_notify to the next rank: it checks the data the moment the
//     flag says it is there, and that the flag went up once per round;
//   - a pull (a bcopy this rank issues from the rank after next into its own
//     memory, forwarded by the NICs) checked after sync, which must report
//     no refusals: an acknowledgement run twice would let sync return before
//     the data is in;
//   - small and bulk host messages to the previous rank, whose handlers
//     check that each arrives once, in order, whole.
// Then the totals, and one line per rank with the NIC's counters of the
// reliable mode. Exit status 0 when everything held.
#include <nicemu/host.hpp>

#include "niam_checks.hpp"

#include "nicemu/niam_protocol.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace host = nicemu::host;

namespace {

// Word i of what `src` sends in round r: every rank can compute it.
uint32_t word(uint32_t src, uint32_t r, uint32_t i) {
  uint32_t x = src * 0x9E3779B1u ^ r * 0x85EBCA77u ^ i * 0xC2B2AE3Du;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  return x ^ (x >> 12);
}

// A size per round: 4 bytes to three pages and a bit, so transfers cross
// page boundaries and travel as several packets.
uint32_t bytes_of(uint32_t r) {
  return 4 * (1 + (r * 977u) % 3300u);
}

constexpr uint32_t kMaxBytes = 4 * 3300;
constexpr uint32_t kBulkWords = 64;

// Host messages received, per sender: the next sequence number expected.
uint32_t small_next[64], bulk_next[64];
uint32_t small_bad, bulk_bad;

void on_small(uint32_t src, uint32_t seq, uint32_t check, uint32_t, uint32_t) {
  if (src >= 64 || seq != small_next[src] || check != word(src, seq, 7))
    ++small_bad;
  else
    ++small_next[src];
}

void on_bulk(uint32_t src, void *data, size_t bytes, uint64_t seq, uint64_t) {
  bool ok = src < 64 && seq == bulk_next[src] && bytes == kBulkWords * 4;
  const auto *w = static_cast<const uint32_t *>(data);
  for (uint32_t i = 0; ok && i < kBulkWords; ++i)
    ok = w[i] == word(src, uint32_t(seq), 100 + i);
  if (ok)
    ++bulk_next[src];
  else
    ++bulk_bad;
}

uint32_t stat(uint32_t index) {
  return host::pio_read(host::mailbox() + 4 * index);
}

} // namespace

int main(int argc, char **argv) {
  uint32_t rounds = argc > 1 ? uint32_t(std::atoi(argv[1])) : 20;
  uint32_t me = host::rank(), n = host::size();
  if (n > 64) {
    std::printf("niam_lossy: at most 64 ranks\n");
    return 2;
  }
  uint32_t next = (me + 1) % n, prev = (me + n - 1) % n;
  uint32_t far = (me + 2) % n;
  // The same allocations in the same order on every rank: a pointer here
  // names the same buffer on every node.
  auto *src = static_cast<uint32_t *>(host::am_alloc(kMaxBytes));
  auto *dst = static_cast<uint32_t *>(host::am_alloc(kMaxBytes));
  auto *pulled = static_cast<uint32_t *>(host::am_alloc(kMaxBytes));
  auto *flags = static_cast<volatile uint32_t *>(host::am_alloc(4096));
  host::barrier();

  uint32_t flag_value = 0;
  for (uint32_t r = 0; r < rounds; ++r) {
    int32_t sum = host::allreduce_sum(int32_t(me + r));
    expect(sum == int32_t(n * (n - 1) / 2 + n * r), "sum", sum,
           long(n * (n - 1) / 2 + n * r));
    int32_t lo = host::allreduce_min(int32_t(me * 3 + r) - 7);
    expect(lo == int32_t(r) - 7, "min", lo, long(r) - 7);
    int32_t hi = host::allreduce_max(int32_t(me * 3 + r));
    expect(hi == int32_t((n - 1) * 3 + r), "max", hi, long((n - 1) * 3 + r));

    // The next rank's data, with a flag; the pull from the rank after
    // next. Sources are rewritten only between barriers.
    uint32_t bytes = bytes_of(r);
    for (uint32_t i = 0; i < bytes / 4; ++i)
      src[i] = word(me, r, i);
    host::barrier();
    host::bcopy_notify(me, src, next, dst, bytes, &flags[0], r + 1);
    host::bcopy(far, src, me, pulled, bytes);
    // Host messages, small and bulk, to the previous rank.
    host::am_send(prev, on_small, 2 * r, word(me, 2 * r, 7));
    host::am_send(prev, on_small, 2 * r + 1, word(me, 2 * r + 1, 7));
    uint32_t bulk[kBulkWords];
    for (uint32_t i = 0; i < kBulkWords; ++i)
      bulk[i] = word(me, r, 100 + i);
    host::am_send_bulk(prev, on_bulk, bulk, sizeof bulk, r);

    // The flag, then the data it vouches for.
    host::wait_word(&flags[0], ~0u, r + 1);
    flag_value = flags[0];
    uint32_t bad = 0;
    uint32_t got_bytes = bytes_of(r);
    for (uint32_t i = 0; i < got_bytes / 4; ++i)
      bad += dst[i] != word(prev, r, i);
    expect(bad == 0, "words of the notified data wrong", bad, 0);
    expect(host::sync() == 0, "transfers refused", 1, 0);
    bad = 0;
    for (uint32_t i = 0; i < bytes / 4; ++i)
      bad += pulled[i] != word(far, r, i);
    expect(bad == 0, "words of the pulled data wrong", bad, 0);
    while (small_next[next] < 2 * (r + 1) || bulk_next[next] < r + 1) {
      if (small_bad || bulk_bad)
        break;
      host::am_wait();
    }
    host::barrier(); // nobody rewrites src before everyone has read
  }
  expect(flag_value == rounds, "last flag", flag_value, rounds);
  expect(small_next[next] == 2 * rounds, "small messages", small_next[next],
         2 * rounds);
  expect(bulk_next[next] == rounds, "bulk messages", bulk_next[next], rounds);
  expect(small_bad == 0, "small messages out of order or damaged", small_bad,
         0);
  expect(bulk_bad == 0, "bulk messages out of order or damaged", bulk_bad, 0);
  expect(host::am_dropped_messages() == 0, "dropped messages",
         host::am_dropped_messages(), 0);
  expect(host::am_protection_errors() == 0, "protection errors",
         host::am_protection_errors(), 0);
  host::barrier();
  std::printf("rank %u: resent %u duplicates %u out-of-order %u lost-peers %u "
              "untracked %u bad %u no-room %u\n",
              me, stat(NIAM_BOX_STAT_RESENT), stat(NIAM_BOX_STAT_DUPLICATE),
              stat(NIAM_BOX_STAT_OUT_OF_ORDER), stat(NIAM_BOX_STAT_PEER_LOST),
              stat(NIAM_BOX_STAT_UNTRACKED), stat(NIAM_BOX_STAT_BAD),
              stat(NIAM_BOX_STAT_NO_ROOM));
  std::printf("rank %u of %u: %s\n", me, n, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
