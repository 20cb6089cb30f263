// Host side of the niam firmware's remote memory transfers, run on every
// rank: data integrity (checksums, guard words) across sizes, alignments
// and page crossings; forwarded bcopy (the issuer is neither source nor
// destination); bcopy_notify (the data is checked the moment the flag is
// seen); sync (a pull is complete when it returns); errors refused by the
// host (Error) and by the NICs (counted, nothing written). Exit status 0
// when everything held.
#include <nicemu/host.hpp>

#include "niam_checks.hpp"

#include "nicemu/niam_protocol.h" // raw requests only

#include <cstdio>
#include <cstring>

namespace host = nicemu::host;

namespace {

constexpr uint32_t kGuard = 0xEEEEEEEE;
constexpr size_t kSrcBytes = 72 << 10, kDstBytes = 80 << 10;

// Word i of what node `src` sends in case `c`: every rank can compute it.
uint32_t word(uint32_t src, uint32_t c, uint32_t i) {
  uint32_t x = src * 0x9E3779B1u ^ c * 0x85EBCA77u ^ i * 0xC2B2AE3Du;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  return x ^ (x >> 12);
}

uint32_t fnv(const uint32_t *p, size_t words) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < words; ++i)
    h = (h ^ p[i]) * 16777619u;
  return h;
}

void fill(uint32_t *p, uint32_t src, uint32_t c, size_t words) {
  for (size_t i = 0; i < words; ++i)
    p[i] = word(src, c, uint32_t(i));
}

void guard(void *p, size_t bytes) {
  std::memset(p, 0xEE, bytes);
}

// `buf` (kDstBytes) holds case c's data from `src` at `off`, `bytes` long,
// and guard words everywhere else.
void check_landed(const uint32_t *buf, uint32_t off, uint32_t bytes,
                  uint32_t src, uint32_t c, const char *what) {
  uint32_t want[kSrcBytes / 4];
  fill(want, src, c, bytes / 4);
  const uint32_t *got = buf + off / 4;
  expect(fnv(got, bytes / 4) == fnv(want, bytes / 4), what, long(bytes),
         long(off));
  uint32_t touched = 0;
  for (uint32_t i = 0; i < kDstBytes / 4; ++i)
    if ((i < off / 4 || i >= (off + bytes) / 4) && buf[i] != kGuard)
      ++touched;
  expect(touched == 0, "guard words touched", touched, 0);
}

struct Bufs {
  uint32_t *src, *dst, *fwd, *pull;
  volatile uint32_t *flag;
};

// Every rank r sends to r + 1 (to itself on one node), for every size and
// alignment; the receiver checks after the sender's sync and a barrier.
void check_sizes(const Bufs &b) {
  const uint32_t sizes[] = {4,    8,    64,   252,   4092,
                            4096, 4100, 8188, 12292, 65536};
  const uint32_t offs[][2] = {
      {0, 0}, {4, 0}, {0, 4}, {4092, 4}, {2052, 4088}}; // {src, dst}
  uint32_t p = host::size(), r = host::rank(), c = 0;
  for (uint32_t n : sizes)
    for (auto &o : offs) {
      ++c;
      fill(b.src + o[0] / 4, r, c, n / 4);
      guard(b.dst, kDstBytes);
      host::barrier();
      host::bcopy(r, b.src + o[0] / 4, (r + 1) % p, b.dst + (4096 + o[1]) / 4,
                  n);
      expect(host::sync() == 0, "refused transfers", 1, 0);
      host::barrier();
      check_landed(b.dst, 4096 + o[1], n, (r + p - 1) % p, c, "bcopy data");
    }
}

// Issuer r moves r+1's buffer to r+2: on 3+ nodes neither is the issuer.
void check_forwarded(const Bufs &b) {
  uint32_t p = host::size(), r = host::rank();
  for (uint32_t n : {4u, 4100u, 65536u}) {
    fill(b.src, r, 1000 + n, n / 4);
    guard(b.fwd, kDstBytes);
    host::barrier();
    host::bcopy((r + 1) % p, b.src, (r + 2) % p, b.fwd + 1024, n);
    expect(host::sync() == 0, "refused forwarded transfers", 1, 0);
    host::barrier();
    check_landed(b.fwd, 4096, n, (r + p - 1) % p, 1000 + n, "forwarded data");
  }
}

// The flag comes after the data: check every word the moment it is seen.
// Issued by r - 1 from r + 1's memory (forwarded when 3+ nodes).
void check_notify(const Bufs &b) {
  uint32_t p = host::size(), r = host::rank();
  for (uint32_t round = 1; round <= 3; ++round) {
    uint32_t n = 65536 - 4 * round, c = 2000 + round;
    fill(b.src, r, c, n / 4);
    guard(b.fwd, kDstBytes);
    *b.flag = 0;
    host::barrier();
    // As issuer: source r + 1, destination r + 2 (whose issuer is r).
    host::bcopy_notify((r + 1) % p, b.src, (r + 2) % p, b.fwd + 1024, n, b.flag,
                       c);
    host::wait_word(b.flag, ~0u, c);
    check_landed(b.fwd, 4096, n, (r + p - 1) % p, c, "data when flag seen");
    expect(host::sync() == 0, "refused notify transfers", 1, 0);
    host::barrier();
  }
}

// A pull: this rank fetches from r + 1 into itself; once sync returns the
// data is in place, without any other message.
void check_sync(const Bufs &b) {
  uint32_t p = host::size(), r = host::rank();
  fill(b.src, r, 3000, 65536 / 4);
  guard(b.pull, kDstBytes);
  host::barrier();
  host::bcopy((r + 1) % p, b.src, r, b.pull + 1024, 65536);
  expect(host::sync() == 0, "refused pull", 1, 0);
  check_landed(b.pull, 4096, 65536, (r + 1) % p, 3000, "pulled data");
  host::barrier();
}

template <class F> void expect_error(const char *what, F f) {
  bool threw = false;
  try {
    f();
  } catch (const host::Error &) {
    threw = true;
  }
  expect(threw, what, threw, 1);
}

void check_host_errors(const Bufs &b) {
  uint32_t p = host::size(), r = host::rank();
  uint32_t on_stack[4] = {};
  auto *plain = static_cast<uint32_t *>(host::alloc(64));
  expect_error("unknown node", [&] { host::bcopy(r, b.src, p, b.dst, 4); });
  expect_error("unknown source node",
               [&] { host::bcopy(p + 7, b.src, r, b.dst, 4); });
  expect_error("not registered memory",
               [&] { host::bcopy(r, on_stack, r, b.dst, 4); });
  expect_error("alloc'd, not am_alloc'd",
               [&] { host::bcopy(r, plain, r, b.dst, 4); });
  expect_error("length past the region",
               [&] { host::bcopy(r, b.src, r, b.dst, kDstBytes + 4); });
  expect_error("unaligned address", [&] {
    host::bcopy(r, reinterpret_cast<uint8_t *>(b.src) + 1, r, b.dst, 4);
  });
  expect_error("unaligned size", [&] { host::bcopy(r, b.src, r, b.dst, 6); });
  expect_error("empty transfer", [&] { host::bcopy(r, b.src, r, b.dst, 0); });
  expect_error("flag outside registered memory",
               [&] { host::bcopy_notify(r, b.src, r, b.dst, 4, plain); });
}

void raw_bcopy(uint32_t src, uint32_t dst, uint32_t bytes, uint32_t dst_node,
               uint32_t src_node) {
  const uint32_t args[6] = {src, dst, bytes, dst_node | src_node << 16, 0, 0};
  host::am_request(NIAM_H_BCOPY, args);
}

// Rank 0 registers 8 KB where the other ranks register 4 KB then plain
// memory (the same offsets): the NICs of ranks 1.. must refuse what their
// page tables do not map, write nothing, count it, and ack it as failed.
// Raw requests reach what the library refuses: an address beyond the page
// table (NIC 1's range check) and an unknown node (NIC 0, a bad request).
void check_nic_refusals(const Bufs &b) {
  uint32_t p = host::size(), r = host::rank();
  auto *prot = static_cast<uint32_t *>(host::am_alloc(r == 0 ? 8192 : 4096));
  if (r != 0)
    host::alloc(4096);
  guard(prot, 8192);
  guard(b.dst, kDstBytes);
  host::barrier();
  if (r == 0 && p >= 2) {
    fill(b.src, 0, 4000, 8192 / 4);
    host::bcopy(0, b.src, 1, prot, 8192);               // 2nd page unmapped
    host::bcopy(0, b.src, 1, prot + 1024, 4096);        // page unmapped
    host::bcopy(1, prot + 1024, 0, b.dst + 1024, 4096); // source refuses
    raw_bcopy(host::am_address(b.src), NIAM_VIRT_BYTES - 4096, 8192, 1, 0);
    raw_bcopy(host::am_address(b.src), host::am_address(b.dst), 64, 99, 0);
    uint32_t refused = host::sync();
    expect(refused == 5, "transfers refused by NICs", refused, 5);
    expect(host::am_bad_packets() == 1, "NIC 0 bad requests",
           host::am_bad_packets(), 1);
  }
  host::barrier();
  uint32_t touched = 0;
  for (uint32_t i = 0; i < 8192 / 4; ++i)
    touched += prot[i] != kGuard;
  for (uint32_t i = 0; i < kDstBytes / 4; ++i)
    touched += b.dst[i] != kGuard;
  expect(touched == 0, "refused data written", touched, 0);
  uint32_t want = r == 1 ? 4 : 0;
  expect(host::am_protection_errors() == want, "NIC protection count",
         host::am_protection_errors(), want);
}

} // namespace

int main() {
  Bufs b;
  b.src = static_cast<uint32_t *>(host::am_alloc(kSrcBytes));
  b.dst = static_cast<uint32_t *>(host::am_alloc(kDstBytes));
  b.fwd = static_cast<uint32_t *>(host::am_alloc(kDstBytes));
  b.pull = static_cast<uint32_t *>(host::am_alloc(kDstBytes));
  b.flag = static_cast<uint32_t *>(host::am_alloc(4));
  host::barrier(); // every NIC has its pages mapped
  check_sizes(b);
  check_forwarded(b);
  check_notify(b);
  check_sync(b);
  check_host_errors(b);
  check_nic_refusals(b);
  std::printf("rank %u of %u: %s\n", host::rank(), host::size(),
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
