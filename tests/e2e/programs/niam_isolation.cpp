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
//
// `niam_isolation_prog rogue FILE`, with `--node-firmware
// 1=niam_rogue.img`: node 1 is a rogue card (firmware/samples/
// niam_rogue.cpp). Rank 0, the victim, tells FILE its exported and
// unexported addresses; rank 1 hands them to its card, which sends forged
// packets at the victim's card. The victim's unexported memory must not
// change, and its card must count what it refused.
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

// The victim of the rogue card, and the rogue's host.
int rogue_run(const char *file) {
  const uint32_t me = host::rank();
  if (me == 0) {
    auto *exported = static_cast<uint8_t *>(host::am_alloc(kPage));
    auto *unexported = static_cast<uint8_t *>(host::alloc(kPage));
    fill(exported, kPage);
    fill(unexported, kPage);
    FILE *f = std::fopen(file, "w");
    CHECK(f != nullptr);
    if (f) {
      std::fprintf(f, "%u %u\n", host::am_address(exported),
                   host::am_address(unexported));
      std::fclose(f);
    }
    host::compute(50'000'000'000ull); // 50 ms: the rogue's packets
    CHECK(intact(unexported, kPage));
    CHECK(intact(exported, kPage)); // the rogue wrote nothing even here
    std::printf("rank 0: isolation: card refused %u addresses, %u bad "
                "packets, %u unknown handlers\n",
                host::am_protection_errors(), host::am_bad_packets(),
                host::am_unknown_handlers());
  } else {
    host::compute(5'000'000'000ull); // 5 ms: the victim has written FILE
    uint32_t exported = 0, unexported = 0;
    FILE *f = std::fopen(file, "r");
    CHECK(f != nullptr);
    if (f) {
      CHECK(std::fscanf(f, "%u %u", &exported, &unexported) == 2);
      std::fclose(f);
    }
    // The rogue card's mailbox (firmware/samples/niam_rogue.cpp).
    const uint32_t box = host::mailbox();
    host::pio_write(box + 4 * 1, 0); // the victim's node
    host::pio_write(box + 4 * 2, exported);
    host::pio_write(box + 4 * 3, unexported);
    host::pio_write(box + 4 * 0, 1); // go
    for (int i = 0; i < 100 && host::pio_read(box + 4 * 5) != 0x524F4755u; ++i)
      host::compute(100'000'000); // 100 us
    CHECK(host::pio_read(box + 4 * 5) == 0x524F4755u);
    std::printf("rank 1: isolation: rogue card sent %u packets\n",
                host::pio_read(box + 4 * 4));
  }
  if (failures)
    std::printf("rank %u: isolation: %d failures\n", me, failures);
  else
    std::printf("rank %u: isolation: ok\n", me);
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (host::size() != 2 ||
      (argc > 1 && (argc != 3 || std::strcmp(argv[1], "rogue") != 0))) {
    std::printf("usage: nicemu run -n 2 --firmware niam.img -- "
                "niam_isolation_prog [rogue FILE]\n");
    return 2;
  }
  if (argc == 3)
    return rogue_run(argv[2]);
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
