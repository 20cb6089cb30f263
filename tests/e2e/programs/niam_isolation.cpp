// NI-AM's protection under attack (issue 24, part 2; docs/niam.md, "Page
// table"; docs/reliability.md, section 6). Run on 2 lanai4 nodes with the
// niam firmware: `niam_isolation_prog`.
//
//   rank 0  the victim: memory it exported (am_alloc), memory it registered
//           with its card but did not export (alloc), and memory of its
//           arena it never registered, each filled with a known pattern.
//   rank 1  the attacker, with raw requests to its own card (no library
//           checks): transfers into the victim's unexported and unmapped
//           addresses, past the end of the virtual space, with a flag
//           outside the exported memory, a read of the victim's unexported
//           memory, and forged page-table entries on its own card (naming
//           memory it never registered) used as the source of a transfer
//           into the victim's exported memory.
// Every transfer must be refused (sync() counts them), and not a byte of
// the victim's memory may change. Each rank prints "rank R: isolation: ok"
// or its failed checks.
#include <nicemu/host.hpp>
#include <nicemu/niam_protocol.h>

#include <cstdio>
#include <cstring>

namespace host = nicemu::host;

namespace {

constexpr uint32_t kPage = NIAM_PAGE_BYTES;
int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      std::printf("rank %u: isolation: line %d: %s does not hold\n",           \
                  host::rank(), __LINE__, #cond);                              \
    }                                                                          \
  } while (0)

uint8_t pattern(size_t i) {
  return uint8_t(i * 31 + 5);
}

void fill(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    p[i] = pattern(i);
}
bool intact(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != pattern(i))
      return false;
  return true;
}

// A raw transfer request: `bytes` from `src` (NIC virtual address) on
// `src_node` to `dst` on `dst_node`, with a flag word if `flag` is not 0.
void raw_bcopy(uint32_t src_node, uint32_t src, uint32_t dst_node, uint32_t dst,
               uint32_t bytes, uint32_t flag = 0) {
  const uint32_t args[6] = {src,
                            dst,
                            bytes,
                            dst_node | src_node << 16,
                            flag ? flag | NIAM_NOTIFY : 0u,
                            1};
  host::am_request(NIAM_H_BCOPY, args);
}

} // namespace

int main() {
  if (host::size() != 2) {
    std::printf("usage: nicemu run -n 2 --firmware niam.img -- "
                "niam_isolation_prog\n");
    return 2;
  }
  const uint32_t me = host::rank();
  // The same calls on both ranks: the same addresses name the same memory.
  auto *exported = static_cast<uint8_t *>(host::am_alloc(2 * kPage));
  auto *registered = static_cast<uint8_t *>(host::alloc(2 * kPage));
  // Arena memory nobody registered: well past every allocation.
  uint8_t *unregistered = registered + 1024 * kPage;
  const uint32_t exported_va = host::am_address(exported);
  const uint32_t registered_va = host::am_address(registered);
  const uint32_t unregistered_bus = host::bus_address(unregistered);
  if (me == 0) {
    fill(exported, 2 * kPage);
    fill(registered, 2 * kPage);
    fill(unregistered, kPage);
  } else {
    std::memset(exported, 0xEE, 2 * kPage);
  }
  host::barrier(); // every page table is in place
  if (me == 1) {
    // Into the victim's memory that it registered but did not export, and
    // past its exported pages.
    raw_bcopy(1, exported_va, 0, registered_va, 64);
    raw_bcopy(1, exported_va, 0, exported_va + 2 * kPage, 64);
    // Across the end of the virtual space, and far past it.
    raw_bcopy(1, exported_va, 0, NIAM_VIRT_BYTES - 32, 64);
    raw_bcopy(1, exported_va, 0, 0xFFFFF000u, 64);
    // Into exported memory, with the flag in unexported memory: refused
    // whole (the data too).
    raw_bcopy(1, exported_va, 0, exported_va, 64, registered_va);
    // Read the victim's unexported memory into the attacker's.
    raw_bcopy(0, registered_va, 1, exported_va, 64);
    // Forged page-table entries on its own card, naming host memory it
    // never registered and memory below the arena, as the source of a
    // transfer into the victim's exported memory.
    const uint32_t forged_va = 32u << 20; // a page nobody allocated
    const uint32_t map1[6] = {forged_va, 1, unregistered_bus, 0, 0, 0};
    host::am_request(NIAM_H_MAP, map1);
    raw_bcopy(1, forged_va, 0, exported_va, 64);
    const uint32_t map2[6] = {forged_va + kPage, 1, 0x1000, 0, 0, 0};
    host::am_request(NIAM_H_MAP, map2);
    raw_bcopy(1, forged_va + kPage, 0, exported_va + kPage, 64);
    uint32_t refused = host::sync();
    std::printf("rank 1: isolation: %u of 8 transfers refused; its own "
                "card refused %u addresses\n",
                refused, host::am_protection_errors());
    CHECK(refused == 8);
    // The read brought nothing back.
    bool untouched = true;
    for (uint32_t i = 0; i < 2 * kPage; ++i)
      untouched &= exported[i] == 0xEE;
    CHECK(untouched);
  }
  host::barrier(); // the attacks are over
  if (me == 0) {
    CHECK(intact(exported, 2 * kPage));
    CHECK(intact(registered, 2 * kPage));
    CHECK(intact(unregistered, kPage));
    std::printf("rank 0: isolation: card refused %u addresses\n",
                host::am_protection_errors());
  }
  // A transfer the victim allows still works: its exported memory, read.
  if (me == 1) {
    host::bcopy(0, exported, 1, exported, 2 * kPage);
    CHECK(host::sync() == 8); // no new failure
    CHECK(intact(exported, 2 * kPage));
  }
  host::barrier();
  if (failures)
    std::printf("rank %u: isolation: %d failures\n", me, failures);
  else
    std::printf("rank %u: isolation: ok\n", me);
  return failures ? 1 : 0;
}
