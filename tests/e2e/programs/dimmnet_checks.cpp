// DIMMnet-1 scenarios for test_dimmnet.cpp, one per run (argv[1]); run on
// two nodes with --model martini:D --firmware dimmnet.img (loopback: one).
// Each rank prints "rank R: SCENARIO: ok", or what failed and exits 1.
// Data are checked byte by byte, with guard bytes around them.
#include <nicemu/dimmnet.h>
#include <nicemu/host.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int me = 0;
std::string scenario;
int failures = 0;

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("rank %d: %s: FAILED: %s\n", int(nicemu::host::rank()),
                scenario.c_str(), what.c_str());
    ++failures;
  }
}

void must(int code, const char *what) {
  if (code != DIMM_OK) {
    std::printf("rank %d: %s: FAILED: %s: %s (%s)\n", me, scenario.c_str(),
                what, dimm_strerror(code), dimm_last_error());
    std::exit(1);
  }
}

constexpr unsigned kRegionBase = 0x1000; // region 0: 4 KiB of LLCM
constexpr unsigned kRegionBytes = 0x1000;
constexpr unsigned kDataPage = 1; // -> the partner's region, address 0
constexpr unsigned kHelloWord = 0xFF8;
constexpr unsigned kDoneWord = 0xFF0;
constexpr uint8_t kGuard = 0xA5;

dimm_header to(unsigned node, uint32_t address = 0, unsigned region = 0) {
  dimm_header h{};
  h.dest_node = node;
  h.region = region;
  h.address = address;
  h.command = DIMM_CMD_WRITE;
  return h;
}

// Fills region 0 with guard bytes, 8 at a time.
void guard_region(dimm_card *card) {
  uint64_t g;
  std::memset(&g, kGuard, 8);
  for (unsigned o = 0; o < kRegionBytes; o += 8)
    must(dimm_llcm_store64(card, kRegionBase + o, g), "guard");
}

std::vector<uint8_t> read_region(dimm_card *card) {
  std::vector<uint8_t> bytes(kRegionBytes);
  for (unsigned o = 0; o < kRegionBytes; o += 8)
    must(dimm_llcm_load(card, kRegionBase + o, bytes.data() + o, 8), "load");
  return bytes;
}

// Opens region 0, seeds kDataPage for the partner, and shakes hands: a
// packet sent before the partner opened its region is dropped, so hello
// goes until the partner's hello is here, then once more.
void start(dimm_card *card, unsigned partner) {
  // The region first: a process reaches only its group's regions.
  must(dimm_open_region(card, 0, kRegionBase, kRegionBytes, DIMM_ANY_PID),
       "open region");
  guard_region(card);
  dimm_header seed = to(partner);
  must(dimm_set_seed(card, kDataPage, &seed), "seed");
  for (;;) {
    must(dimm_aotf_store64(card, kDataPage, kHelloWord, 1), "hello");
    uint64_t v = 0;
    for (int i = 0; i < 16 && v != 1; ++i)
      must(dimm_llcm_load(card, kRegionBase + kHelloWord, &v, 8), "load");
    if (v == 1)
      break;
  }
  must(dimm_aotf_store64(card, kDataPage, kHelloWord, 1), "hello");
}

void finish(dimm_card *card, unsigned partner, uint64_t tag) {
  (void)partner;
  must(dimm_aotf_store64(card, kDataPage, kDoneWord, tag), "done");
}

void wait_done(dimm_card *card, uint64_t tag) {
  dimm_llcm_wait64(card, kRegionBase + kDoneWord, ~0ull, tag);
}

// The expected region: guards, then what was sent.
struct Image {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(kRegionBytes, kGuard);
  void put(unsigned at, const void *data, unsigned n) {
    std::memcpy(bytes.data() + at, data, n);
  }
};

void compare(const std::vector<uint8_t> &got, const Image &want,
             unsigned skip_from) {
  for (unsigned i = 0; i < skip_from; ++i)
    if (got[i] != want.bytes[i]) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "byte %u is 0x%02x, expected 0x%02x", i,
                    got[i], want.bytes[i]);
      expect(false, buf);
      return;
    }
}

// AOTF stores of every size at aligned offsets: exactly those bytes land.
void aotf(dimm_card *card, unsigned partner) {
  start(card, partner);
  Image want;
  const unsigned sizes[] = {1, 2, 4, 8, 8, 4, 2, 1};
  unsigned at = 16;
  for (unsigned round = 0; round < 8; ++round)
    for (unsigned size : sizes) {
      at = (at + size - 1) / size * size;
      uint64_t value = 0x0102030405060708ull * (round + 1) + at;
      if (me == 0)
        must(dimm_aotf_store(card, kDataPage, at, &value, size), "store");
      want.put(at, &value, size);
      at += size + 3; // a guard gap after each
    }
  if (me == 0) {
    finish(card, partner, 77);
    // Bad stores are refused by the library, not sent.
    uint64_t v = 1;
    expect(dimm_aotf_store(card, kDataPage, 3, &v, 3) == DIMM_EINVAL,
           "3-byte store");
    expect(dimm_aotf_store(card, kDataPage, 4, &v, 8) == DIMM_EINVAL,
           "misaligned store");
    expect(dimm_aotf_store(card, kDataPage, 4096, &v, 4) == DIMM_EINVAL,
           "offset past the page");
    dimm_header with_status = to(partner);
    with_status.status_address = 1;
    expect(dimm_set_seed(card, 40, &with_status) == DIMM_EINVAL,
           "a receive-status address without the model option");
  } else {
    wait_done(card, 77);
    compare(read_region(card), want, kDoneWord);
  }
}

// BOTF packets of 1-464 bytes through two windows used in turn.
void botf(dimm_card *card, unsigned partner) {
  start(card, partner);
  Image want;
  const unsigned lengths[] = {1, 7, 8, 9, 100, 463, 464, 2};
  unsigned at = 8;
  for (unsigned i = 0; i < 8; ++i) {
    std::vector<uint8_t> data(lengths[i]);
    for (unsigned b = 0; b < data.size(); ++b)
      data[b] = uint8_t(i * 31 + b * 7 + 1);
    want.put(at, data.data(), lengths[i]);
    if (me == 0) {
      dimm_header h = to(partner, at);
      for (;;) {
        int code = dimm_botf_send(card, i % 2, &h, data.data(), lengths[i]);
        if (code == DIMM_OK)
          break;
        expect(code == DIMM_EBUSY,
               "botf_send: " + std::string(dimm_last_error()));
        if (code != DIMM_EBUSY)
          break;
      }
    }
    at += lengths[i] + 5;
  }
  // A window is busy until its packet's tail has left: sending through it
  // again at once is refused, and works once it is free.
  std::vector<uint8_t> last(464);
  for (unsigned b = 0; b < last.size(); ++b)
    last[b] = uint8_t(b ^ 0x5A);
  want.put(0xB00, last.data(), 464);
  if (me == 0) {
    dimm_header h = to(partner, 0xB00);
    must(dimm_botf_send(card, 2, &h, last.data(), 464), "window 2");
    expect(dimm_botf_send(card, 2, &h, last.data(), 464) == DIMM_EBUSY,
           "window 2 again at once");
    unsigned status = 1;
    while (status & 1)
      must(dimm_botf_status(card, 2, &status), "status");
    expect(status == 0, "status " + std::to_string(status));
    must(dimm_botf_send(card, 2, &h, last.data(), 464), "window 2, free");
    std::vector<uint8_t> big(465, 1);
    expect(dimm_botf_send(card, 0, &h, big.data(), 465) == DIMM_EINVAL,
           "465 bytes");
    expect(dimm_botf_send(card, 64, &h, big.data(), 8) == DIMM_EINVAL,
           "window 64");
    expect(dimm_botf_windows(card) == 64, "64 windows");
    finish(card, partner, 78);
  } else {
    wait_done(card, 78);
    compare(read_region(card), want, kDoneWord);
  }
}

// Five kick pages of one HTLB set (4 ways): every first use misses and is
// refilled by the firmware; the fifth evicts the first, which misses again.
// A page without a seed is rejected, and nothing is sent for it.
void htlb(dimm_card *card, unsigned partner) {
  start(card, partner);
  dimm_counters before{}, after{};
  must(dimm_firmware_counters(card, &before), "counters");
  const unsigned pages[] = {5, 5 + 256, 5 + 512, 5 + 768, 5 + 1024};
  if (me == 0) {
    for (unsigned i = 0; i < 5; ++i) {
      dimm_header seed = to(partner, 0);
      must(dimm_set_seed(card, pages[i], &seed), "seed");
    }
    for (unsigned i = 0; i < 5; ++i)
      must(dimm_aotf_store64(card, pages[i], 8 * i + 64, 100 + i), "store");
    must(dimm_aotf_store64(card, pages[0], 8 * 5 + 64, 105), "again");
    must(dimm_aotf_store64(card, 9, 0, 1), "no seed");       // rejected
    must(dimm_aotf_store64(card, 3000, 0, 1), "past table"); // rejected
    must(dimm_aotf_store64(card, pages[2], 8 * 6 + 64, 106), "hit");
    finish(card, partner, 79);
    unsigned rejected = 0;
    for (int i = 0; i < 1000 && rejected < 2; ++i)
      must(dimm_rejected(card, &rejected), "rejected");
    expect(rejected == 2, "rejected " + std::to_string(rejected));
    must(dimm_firmware_counters(card, &after), "counters");
    // 5 first uses, page 0 again (evicted by the fifth), the two pages
    // without a seed; page 2 and the done word's page hit.
    expect(after.misses - before.misses == 8,
           "misses " + std::to_string(after.misses - before.misses));
    expect(after.rejects - before.rejects == 2, "rejects");
  } else {
    wait_done(card, 79);
    for (unsigned i = 0; i < 7; ++i) {
      uint64_t v = dimm_llcm_load64(card, kRegionBase + 8 * i + 64);
      expect(v == 100 + i,
             "word " + std::to_string(i) + " is " + std::to_string(v));
    }
    uint64_t zero_word = dimm_llcm_load64(card, kRegionBase);
    uint64_t g;
    std::memset(&g, kGuard, 8);
    expect(zero_word == g, "a rejected store was delivered");
  }
}

// More stores than credits: the card holds the store that finds none, the
// host with it, and the credits come back as packets leave.
void credits(dimm_card *card, unsigned partner) {
  start(card, partner);
  const unsigned stores = 4000;
  if (me == 0) {
    unsigned full = 0, low = 0;
    for (int i = 0; i < 100 && full != 2048; ++i) // the last hello leaves
      must(dimm_credits(card, &full), "credits");
    expect(full == 2048, "2048 credits at rest, not " + std::to_string(full));
    double t0 = dimm_time_ns(card);
    for (unsigned i = 1; i <= stores; ++i)
      must(dimm_aotf_store64(card, kDataPage, 0, i), "store");
    double spent = dimm_time_ns(card) - t0;
    must(dimm_credits(card, &low), "credits");
    expect(low < 16, "credits after the burst: " + std::to_string(low));
    // Unheld, 4000 stores take 4000 x 53 ns; held, the link's pace.
    expect(spent > 1.5 * stores * 53.0,
           "the burst took only " + std::to_string(spent) + " ns");
    unsigned back = 0;
    for (int i = 0; i < 100000 && back != 2048; ++i)
      must(dimm_credits(card, &back), "credits");
    expect(back == 2048, "credits came back to " + std::to_string(back));
  } else {
    dimm_llcm_wait64(card, kRegionBase, ~0ull, stores);
  }
}

// Two processes per node (--procs-per-node 2): the first of each node in
// group 1, the second in group 2. Group 1 checks the receiver's refusals
// of out-of-region packets; node 0's group-2 process, once group 1 is set
// up (at 1.5 ms of virtual time), tries what another group may not: load
// group 1's LLCM, send through group 1's kick page (rejected), send into
// group 1's region with its own seed, by BOTF and by PUSH (dropped there),
// and reach the bank group 1 claimed. Group 1 counts the drops at 3 ms.
constexpr uint64_t kIntruderAt = 1'500'000'000; // ps
constexpr uint64_t kCountAt = 3'000'000'000;

void wait_until(uint64_t ps) {
  uint64_t now = nicemu::host::now_ps();
  if (ps > now)
    nicemu::host::compute(ps - now);
}

void intruder(dimm_card *card, unsigned partner) {
  if (me != 0)
    return; // node 1's second process only opens the card
  wait_until(kIntruderAt);
  uint64_t v = 0;
  expect(dimm_llcm_load(card, kRegionBase, &v, 8) == DIMM_EINVAL,
         "a load of another group's region");
  expect(dimm_llcm_store64(card, kRegionBase, 1) == DIMM_EINVAL,
         "a store into another group's region");
  must(dimm_aotf_store64(card, kDataPage, 0x40, 0xBAD), "group 1's page");
  dimm_header own = to(partner, 0);
  must(dimm_set_seed(card, 20, &own), "seed 20");
  must(dimm_aotf_store64(card, 20, 0x48, 0xBAD), "into group 1's region");
  uint8_t data[16] = {1, 2, 3};
  dimm_header h = to(partner, 0x50);
  must(dimm_botf_send(card, 5, &h, data, sizeof data), "botf");
  must(dimm_open_region(card, 5, 0x6000, 0x100, DIMM_ANY_PID), "region 5");
  dimm_rdma push{0x6000, 5, partner, kRegionBase + 0x60, 0, 64};
  must(dimm_push(card, &push), "push");
  expect(dimm_rdma_wait(card) == DIMM_EREFUSED, "a PUSH into group 1");
  uint8_t b[8];
  expect(dimm_bank_read(card, 0, 0, b, 8) == DIMM_EINVAL,
         "a read of group 1's bank");
  expect(dimm_bank_switch(card, 0, DIMM_SIDE_NIC) == DIMM_EINVAL,
         "a switch of group 1's bank");
}

void protection(dimm_card *card, unsigned partner) {
  start(card, partner);
  unsigned dropped_before = 0, dropped_after = 0;
  must(dimm_dropped(card, &dropped_before), "dropped");
  if (me == 1)
    must(dimm_open_region(card, 1, 0x3000, 256, 7), "region 1");
  // Both sides' set-up is done before rank 0 sends (hello again).
  must(dimm_aotf_store64(card, kDataPage, kHelloWord, 2), "hello 2");
  dimm_llcm_wait64(card, kRegionBase + kHelloWord, ~0ull, 2);
  if (me == 0) {
    dimm_card *other = nullptr;
    expect(dimm_open(3, 0, &other) == DIMM_EINVAL,
           "a process opening the card as another group");
    uint8_t b[8] = {};
    must(dimm_bank_write(card, 0, 0, b, 8), "claim bank 0");
    dimm_header past = to(partner, kRegionBytes);
    must(dimm_set_seed(card, 21, &past), "seed 21");
    must(dimm_aotf_store64(card, 21, 0, 0xBAD), "past the region");
    dimm_header skip = to(partner, 0x2000);
    skip.skip_translation = 1;
    must(dimm_set_seed(card, 22, &skip), "seed 22");
    must(dimm_aotf_store64(card, 22, 0, 0xBAD), "skip outside");
    dimm_header pid = to(partner, 0, 1);
    must(dimm_set_seed(card, 23, &pid), "seed 23");
    must(dimm_aotf_store64(card, 23, 0, 0xBAD), "wrong process");
    dimm_header inside = to(partner, kRegionBase);
    inside.skip_translation = 1;
    must(dimm_set_seed(card, 24, &inside), "seed 24");
    must(dimm_aotf_store64(card, 24, 0x10, 0x600D), "skip inside");
    wait_until(kCountAt); // the other group has tried by now
    unsigned rejected = 0;
    must(dimm_rejected(card, &rejected), "rejected");
    expect(rejected == 1, "rejected " + std::to_string(rejected) +
                              " (the other group's store through our page)");
    finish(card, partner, 80);
  } else {
    wait_done(card, 80);
    must(dimm_dropped(card, &dropped_after), "dropped");
    // 3 of ours, and the other group's AOTF, BOTF and PUSH packets.
    expect(dropped_after - dropped_before == 6,
           "dropped " + std::to_string(dropped_after - dropped_before));
    expect(dimm_llcm_load64(card, kRegionBase + 0x10) == 0x600D,
           "the legal packet");
    uint64_t g;
    std::memset(&g, kGuard, 8);
    for (unsigned o : {0x0u, 0x40u, 0x48u, 0x50u, 0x60u})
      expect(dimm_llcm_load64(card, kRegionBase + o) == g,
             "region 0 at " + std::to_string(o) + " untouched");
  }
}

// Commands for the core: ADD64 adds into an LLCM word; an unknown code is
// counted by the firmware.
void commands(dimm_card *card, unsigned partner) {
  start(card, partner);
  dimm_counters before{}, after{};
  must(dimm_firmware_counters(card, &before), "counters");
  if (me == 0) {
    dimm_header add = to(partner, 0);
    add.command = DIMM_CMD_ADD64;
    must(dimm_set_seed(card, 30, &add), "seed add");
    dimm_header odd = to(partner, 0);
    odd.command = 0x77;
    must(dimm_set_seed(card, 31, &odd), "seed odd");
    for (uint64_t v = 1; v <= 10; ++v)
      must(dimm_aotf_store64(card, 30, 0x100, v), "add");
    must(dimm_aotf_store64(card, 31, 0x100, 1000), "unknown");
    finish(card, partner, 81);
  } else {
    // The word starts as guard bytes; the core adds 1..10 to it.
    uint64_t g;
    std::memset(&g, kGuard, 8);
    wait_done(card, 81);
    uint64_t sum = dimm_llcm_wait64(card, kRegionBase + 0x100, ~0ull, g + 55);
    expect(sum == g + 55, "sum " + std::to_string(sum - g));
    // The core serves commands in order, slower than the hardware path:
    // the unknown one may still be waiting when the sum is complete.
    for (int i = 0; i < 1000; ++i) {
      must(dimm_firmware_counters(card, &after), "counters");
      if (after.commands - before.commands == 11)
        break;
    }
    expect(after.commands - before.commands == 11, "commands");
    expect(after.unknown_commands - before.unknown_commands == 1,
           "unknown " + std::to_string(after.unknown_commands) + " - " +
               std::to_string(before.unknown_commands));
  }
}

// With the model option otf.status_address: the receiver writes the
// packet's length with bit 31 set at the status address once the data is
// in, for AOTF and BOTF alike.
void status(dimm_card *card, unsigned partner) {
  start(card, partner);
  if (me == 0) {
    dimm_header seed = to(partner);
    seed.status_address = 1;
    seed.status_offset = 0x800;
    must(dimm_set_seed(card, 50, &seed), "seed");
    must(dimm_aotf_store64(card, 50, 0x100, 0x1122334455667788ull), "aotf");
    std::vector<uint8_t> data(300);
    for (unsigned i = 0; i < data.size(); ++i)
      data[i] = uint8_t(i * 3);
    dimm_header h = to(partner, 0x200);
    h.status_address = 1;
    h.status_offset = 0x808;
    must(dimm_botf_send(card, 0, &h, data.data(), 300), "botf");
  } else {
    uint64_t a = dimm_llcm_wait64(card, kRegionBase + 0x800, 0xFFFFFFFFull,
                                  0x80000008ull);
    expect((a & 0xFFFFFFFF) == 0x80000008, "aotf status");
    expect(dimm_llcm_load64(card, kRegionBase + 0x100) == 0x1122334455667788ull,
           "aotf data");
    dimm_llcm_wait64(card, kRegionBase + 0x808, 0xFFFFFFFFull,
                     0x80000000ull | 300);
    std::vector<uint8_t> got(304);
    for (unsigned o = 0; o < 304; o += 8)
      must(dimm_llcm_load(card, kRegionBase + 0x200 + o, got.data() + o, 8),
           "load");
    for (unsigned i = 0; i < 300; ++i)
      if (got[i] != uint8_t(i * 3)) {
        expect(false, "botf byte " + std::to_string(i));
        break;
      }
    expect(got[300] == kGuard, "guard after the botf data");
  }
}

// Any number of nodes (through RHiNET-2/SW switches beyond two): each
// sends a word to the next, by the hardware path and by interrupt-AOTF,
// and waits for the previous one's. Everybody opens its region first and
// waits 200 us of virtual time (all set-ups take far less) before sending.
void ring(dimm_card *card) {
  unsigned n = unsigned(dimm_nodes(card));
  unsigned next = (unsigned(me) + 1) % n, prev = (unsigned(me) + n - 1) % n;
  // The region first: a process reaches only its group's regions.
  must(dimm_open_region(card, 0, kRegionBase, kRegionBytes, DIMM_ANY_PID),
       "open region");
  guard_region(card);
  dimm_header seed = to(next);
  must(dimm_set_seed(card, 1, &seed), "seed");
  seed.command = DIMM_CMD_INTERRUPT_WRITE;
  must(dimm_set_seed(card, 2, &seed), "seed interrupt");
  nicemu::host::compute(200'000'000);
  must(dimm_aotf_store64(card, 1, 0x40, 1000 + unsigned(me)), "word");
  must(dimm_aotf_store(card, 2, 0x48, "\x11\x22\x33\x44", 4), "interrupt");
  uint64_t w = dimm_llcm_wait64(card, kRegionBase + 0x40, ~0ull, 1000 + prev);
  expect(w == 1000 + prev, "word from " + std::to_string(prev));
  uint64_t g;
  std::memset(&g, kGuard, 8);
  uint64_t want = (g & ~0xFFFFFFFFull) | 0x44332211ull;
  uint64_t i = dimm_llcm_wait64(card, kRegionBase + 0x48, ~0ull, want);
  expect(i == want, "interrupt-AOTF word");
}

uint8_t pattern(size_t i) {
  return uint8_t(i * 7 + 3);
}

std::vector<uint8_t> llcm_bytes(dimm_card *card, uint32_t offset,
                                uint32_t len) {
  std::vector<uint8_t> out((len + 7) / 8 * 8);
  for (uint32_t o = 0; o < out.size(); o += 8)
    must(dimm_llcm_load(card, offset + o, out.data() + o, 8), "llcm load");
  out.resize(len);
  return out;
}

bool is_pattern(const std::vector<uint8_t> &got, size_t len) {
  if (got.size() < len)
    return false;
  for (size_t i = 0; i < len; ++i)
    if (got[i] != pattern(i))
      return false;
  return true;
}

// PUSH and PULL between SO-DIMM banks and LLCM: a bank is the host's only
// while it faces the host, the card's only while it faces the card; each
// side's range must lie in a region of the group.
void rdma(dimm_card *card, unsigned partner) {
  start(card, partner);
  const uint32_t bank0 = DIMM_ADDR(DIMM_SPACE_BANK0, 0);
  const uint32_t bank1 = DIMM_ADDR(DIMM_SPACE_BANK1, 0);
  must(dimm_open_region(card, 1, bank0, 1 << 20, DIMM_ANY_PID), "region 1");
  must(dimm_open_region(card, 2, bank1, 1 << 20, DIMM_ANY_PID), "region 2");
  must(dimm_open_region(card, 3, 0x8000, 0x8000, DIMM_ANY_PID), "region 3");
  expect(dimm_open_region(card, 4, DIMM_ADDR(3, 0), 16, DIMM_ANY_PID) ==
             DIMM_EINVAL,
         "a region in no space");
  if (me == 1)
    must(dimm_bank_switch(card, 1, DIMM_SIDE_NIC), "bank 1 to the card");
  must(dimm_aotf_store64(card, kDataPage, kHelloWord, 2), "hello 2");
  dimm_llcm_wait64(card, kRegionBase + kHelloWord, ~0ull, 2);
  const size_t n = 10000;
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i)
    data[i] = pattern(i);
  if (me == 0) {
    unsigned side = 9;
    must(dimm_bank_side(card, 0, &side), "side");
    expect(side == DIMM_SIDE_HOST, "bank 0 starts on the host side");
    must(dimm_bank_write(card, 0, 0x100, data.data(), n), "bank write");
    std::vector<uint8_t> back(n);
    must(dimm_bank_read(card, 0, 0x100, back.data(), n), "bank read");
    expect(back == data, "bank 0 read back");
    dimm_rdma from_host{bank0 + 0x100, 1, partner, bank1 + 0x200, 2, 64};
    must(dimm_push(card, &from_host), "push");
    expect(dimm_rdma_wait(card) == DIMM_EREFUSED,
           "a PUSH from a bank facing the host");
    must(dimm_bank_switch(card, 0, DIMM_SIDE_NIC), "bank 0 to the card");
    expect(dimm_bank_read(card, 0, 0x100, back.data(), 8) == DIMM_EINVAL,
           "a host read of a bank facing the card");
    dimm_rdma to_bank{bank0 + 0x100, 1, partner, bank1 + 0x200, 2, uint32_t(n)};
    must(dimm_push(card, &to_bank), "push to bank");
    expect(dimm_push(card, &to_bank) == DIMM_EBUSY, "a second PUSH at once");
    must(dimm_rdma_wait(card), "push to bank");
    dimm_rdma to_llcm{bank0 + 0x100, 1, partner, 0x8010, 3, 3000};
    must(dimm_push(card, &to_llcm), "push to llcm");
    must(dimm_rdma_wait(card), "push to llcm");
    dimm_rdma outside{bank0 + 0x100, 1, partner, kRegionBase + 0xF00, 0, 512};
    must(dimm_push(card, &outside), "push outside");
    expect(dimm_rdma_wait(card) == DIMM_EREFUSED, "a PUSH past the region");
    dimm_rdma pull{0x9000, 3, partner, bank1 + 0x200, 2, 5000};
    must(dimm_pull(card, &pull), "pull");
    must(dimm_rdma_wait(card), "pull");
    expect(is_pattern(llcm_bytes(card, 0x9000, 5000), 5000),
           "the PULLed bytes in LLCM");
    finish(card, partner, 82);
  } else {
    wait_done(card, 82);
    must(dimm_bank_switch(card, 1, DIMM_SIDE_HOST), "bank 1 to the host");
    std::vector<uint8_t> got(n + 2);
    must(dimm_bank_read(card, 1, 0x1FF, got.data(), n + 2), "bank read");
    expect(got[0] == 0 && got[n + 1] == 0, "bank 1 around the data");
    expect(std::vector<uint8_t>(got.begin() + 1, got.end() - 1) == data,
           "the PUSHed bytes in bank 1");
    std::vector<uint8_t> l = llcm_bytes(card, 0x8008, 3016);
    expect(std::all_of(l.begin(), l.begin() + 8, [](uint8_t b) { return !b; }),
           "LLCM before the PUSHed bytes");
    expect(is_pattern(std::vector<uint8_t>(l.begin() + 8, l.end()), 3000),
           "the PUSHed bytes in LLCM");
    expect(l[3008] == 0, "LLCM after the PUSHed bytes");
  }
}

// One node: a seed naming this node turns around in the SWIF.
void loopback(dimm_card *card) {
  // The region first: a process reaches only its group's regions.
  must(dimm_open_region(card, 0, kRegionBase, kRegionBytes, DIMM_ANY_PID),
       "open region");
  guard_region(card);
  dimm_header self = to(0, 0);
  must(dimm_set_seed(card, 1, &self), "seed");
  must(dimm_aotf_store64(card, 1, 0x20, 0x1234), "store");
  uint64_t v = dimm_llcm_wait64(card, kRegionBase + 0x20, ~0ull, 0x1234);
  expect(v == 0x1234, "loopback word");
}

} // namespace

int main(int argc, char **argv) {
  scenario = argc > 1 ? argv[1] : "";
  // With several processes per node, the second of each is in group 2.
  unsigned local = nicemu::host::node_process();
  dimm_card *card = nullptr;
  must(dimm_open(local == 1 ? 2 : 1, 0, &card), "dimm_open");
  me = dimm_node(card);
  unsigned partner = unsigned(1 - me);
  if (local == 1 && scenario == "protection")
    intruder(card, partner);
  else if (scenario == "loopback")
    loopback(card);
  else if (scenario == "ring")
    ring(card);
  else if (dimm_nodes(card) != 2)
    expect(false, "needs two nodes");
  else if (scenario == "aotf")
    aotf(card, partner);
  else if (scenario == "botf")
    botf(card, partner);
  else if (scenario == "htlb")
    htlb(card, partner);
  else if (scenario == "credits")
    credits(card, partner);
  else if (scenario == "protection")
    protection(card, partner);
  else if (scenario == "commands")
    commands(card, partner);
  else if (scenario == "status")
    status(card, partner);
  else if (scenario == "rdma")
    rdma(card, partner);
  else
    expect(false, "no such scenario");
  dimm_close(card);
  if (failures == 0)
    std::printf("rank %d: %s: ok\n", int(nicemu::host::rank()),
                scenario.c_str());
  return failures ? 1 : 0;
}
