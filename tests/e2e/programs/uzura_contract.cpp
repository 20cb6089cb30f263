// Host program of test_uzura.cpp: what nicemu/uzura.h promises when the
// rings fill and wrap, each case a bug once.
//   uzura_contract_prog wrap     300 messages through a 4-command ring: each
//                                arrives once, in order, intact
//   uzura_contract_prog noroom   a receiver's full arrival ring refuses a
//                                message: its sender hears UZ_STATUS_NO_ROOM
//                                and may send it again
//   uzura_contract_prog setup    uz_register and uz_type_create leave the
//                                program's completions to the program
//   uzura_contract_prog manyops  600 operations outstanding at once (more
//                                than the card's table of ops): each ends
//                                once, with its own cookie
//   uzura_contract_prog self     messages, RDMA write and read to this node
//   uzura_contract_prog any      uz_wait_any wakes for an arrival or a
//                                completion, in every notification mode
//   uzura_contract_prog enomem   registering more than the arena holds is
//                                UZ_ENOMEM
// Run with: nicemu run -n 2 --model uzura --firmware uzura.img -- ...
#include <nicemu/host.hpp>
#include <nicemu/uzura.h>

#include "uzura_checks.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace host = nicemu::host;

using namespace uzura_checks;

namespace {

uint64_t word_buffer;

void send_word(uint64_t value) {
  word_buffer = value;
  check(uz_send(peer, &word_buffer, 8, 0, 0, 0xC0FFEE), "uz_send word");
  uz_completion c{};
  expect(uz_wait(&c) == 1 && c.cookie == 0xC0FFEE && c.status == 0, "word sent",
         (long long)c.cookie, 0xC0FFEE);
}

uint64_t receive_word() {
  uz_arrival a{};
  expect(uz_wait_arrival(&a) == 1 && a.len == 8, "word arrives", a.len, 8);
  uint64_t v = 0;
  std::memcpy(&v, a.data, 8);
  check(uz_release(&a), "uz_release");
  return v;
}

constexpr uint32_t kWrapMessages = 300, kWrapBytes = 100;

void wrap() {
  if (me == 0) {
    static uint8_t out[kWrapMessages][kWrapBytes];
    check(uz_register(out, sizeof out, 0), "register");
    std::vector<int> seen(kWrapMessages);
    uint32_t taken = 0;
    auto take = [&] {
      uz_completion c{};
      expect(uz_wait(&c) == 1 && c.status == UZ_STATUS_OK, "completion",
             c.status, 0);
      if (c.cookie < kWrapMessages)
        ++seen[c.cookie];
      ++taken;
    };
    for (uint32_t i = 0; i < kWrapMessages; ++i) {
      for (uint32_t b = 0; b < kWrapBytes; ++b)
        out[i][b] = pattern(i, b);
      int r;
      while ((r = uz_send(peer, out[i], kWrapBytes, i, 0, i)) == UZ_EBUSY)
        take();
      check(r, "uz_send");
    }
    while (taken < kWrapMessages)
      take();
    int once = 0;
    for (int n : seen)
      once += n == 1;
    expect(once == int(kWrapMessages), "each message completed once", once,
           kWrapMessages);
    return;
  }
  for (uint32_t i = 0; i < kWrapMessages; ++i) {
    uz_arrival a{};
    expect(uz_wait_arrival(&a) == 1, "arrival", 0, 1);
    expect(a.tag == i && a.len == kWrapBytes, "message in order", a.tag, i);
    const auto *d = static_cast<const uint8_t *>(a.data);
    int bad = 0;
    for (uint32_t b = 0; b < kWrapBytes; ++b)
      bad += d[b] != pattern(i, b);
    expect(bad == 0, "message intact", bad, 0);
    check(uz_release(&a), "uz_release");
  }
}

void noroom() {
  static uint8_t msgs[6][64];
  check(uz_register(msgs, sizeof msgs, 0), "register");
  if (me == 0) {
    for (uint32_t i = 0; i < 6; ++i) {
      std::memset(msgs[i], int(i + 1), sizeof msgs[i]);
      check(uz_send(peer, msgs[i], 64, i, 0, i), "uz_send");
    }
    uint32_t status[6] = {9, 9, 9, 9, 9, 9};
    for (int i = 0; i < 6; ++i) {
      uz_completion c{};
      expect(uz_wait(&c) == 1 && c.cookie < 6, "completion", c.cookie, 0);
      if (c.cookie < 6)
        status[c.cookie] = c.status;
    }
    for (uint32_t i = 0; i < 6; ++i)
      expect(status[i] == (i < 4 ? UZ_STATUS_OK : UZ_STATUS_NO_ROOM),
             "a full ring refuses, and says so", status[i],
             i < 4 ? UZ_STATUS_OK : UZ_STATUS_NO_ROOM);
    receive_word(); // the receiver has made room
    for (uint32_t i = 4; i < 6; ++i) {
      check(uz_send(peer, msgs[i], 64, i, 0, i), "uz_send again");
      uz_completion c{};
      expect(uz_wait(&c) == 1 && c.status == UZ_STATUS_OK, "sent again",
             c.status, 0);
    }
    return;
  }
  host::compute(200'000'000); // 200 us: all six have come by now
  auto take = [](uint32_t from, uint32_t to) {
    for (uint32_t i = from; i < to; ++i) {
      uz_arrival a{};
      expect(uz_wait_arrival(&a) == 1 && a.tag == i, "arrival in order", a.tag,
             i);
      expect(static_cast<const uint8_t *>(a.data)[63] == i + 1, "its data",
             static_cast<const uint8_t *>(a.data)[63], i + 1);
      check(uz_release(&a), "uz_release");
    }
  };
  take(0, 4);
  uz_arrival none{};
  expect(uz_poll_arrival(&none) == 0, "the refused ones did not land", 1, 0);
  send_word(1);
  take(4, 6);
}

void setup() {
  if (me == 1) {
    expect(receive_word() == 42, "the word", 0, 42);
    return;
  }
  word_buffer = 42;
  check(uz_send(peer, &word_buffer, 8, 0, 0, 77), "uz_send");
  // Set-up commands while the send is outstanding: its completion stays
  // the program's.
  static std::vector<uint8_t> more(3 * 4096);
  check(uz_register(more.data(), more.size(), UZ_REMOTE_WRITE), "register");
  uint16_t type = 0;
  check(uz_type_create(4, 4, 16, 64, &type), "uz_type_create");
  uz_completion c{};
  expect(uz_wait(&c) == 1, "uz_wait", 0, 1);
  expect(c.cookie == 77 && c.status == UZ_STATUS_OK, "the send's completion",
         (long long)c.cookie, 77);
  expect(uz_poll(&c) == 0, "nothing else completed", 1, 0);
}

constexpr uint32_t kManyOps = 600, kBigOps = 280;
constexpr size_t kBigBytes = 256 << 10;

// 280 writes of 256 KB each (the card fetches the next command between
// their frames, far faster than they end) and 320 small ones: hundreds
// of operations are outstanding in the card at once.
void manyops() {
  alignas(4096) static uint64_t target[kManyOps], source[kManyOps];
  check(uz_register(target, sizeof target, UZ_REMOTE_WRITE), "register");
  check(uz_register(source, sizeof source, 0), "register");
  std::vector<uint8_t> big(kBigBytes);
  for (size_t i = 0; i < kBigBytes; ++i)
    big[i] = pattern(0, i);
  check(uz_register(big.data(), kBigBytes, UZ_REMOTE_WRITE), "register");
  if (me == 1) {
    std::vector<uint8_t> want = big;
    std::fill(big.begin(), big.end(), 0);
    send_word(reinterpret_cast<uintptr_t>(target));
    send_word(reinterpret_cast<uintptr_t>(big.data()));
    receive_word(); // done
    int bad = 0;
    for (uint32_t i = kBigOps; i < kManyOps; ++i)
      bad += target[i] != 0xAB00000000ull + i;
    expect(bad == 0, "every small write landed", bad, 0);
    expect(big == want, "the big writes landed", 0, 1);
    return;
  }
  uint64_t remote = receive_word(), remote_big = receive_word();
  for (uint32_t i = 0; i < kManyOps; ++i) {
    source[i] = 0xAB00000000ull + i;
    if (i < kBigOps)
      check(uz_write(peer, big.data(), remote_big, kBigBytes, 5000 + i),
            "uz_write");
    else
      check(uz_write(peer, &source[i], remote + 8 * i, 8, 5000 + i),
            "uz_write");
  }
  std::vector<int> seen(kManyOps);
  for (uint32_t i = 0; i < kManyOps; ++i) {
    uz_completion c{};
    int r = uz_wait(&c);
    expect(r == 1, "uz_wait", r, 1);
    expect(c.status == UZ_STATUS_OK, "completion", c.status, 0);
    if (c.cookie >= 5000 && c.cookie < 5000 + kManyOps)
      ++seen[c.cookie - 5000];
  }
  int once = 0;
  for (int n : seen)
    once += n == 1;
  expect(once == int(kManyOps), "each operation completed once", once,
         kManyOps);
  send_word(0);
}

void self() {
  // (page-aligned: a page allows what any registration on it does)
  alignas(4096) static uint8_t a[10000], b[10000], c[10000];
  check(uz_register(a, sizeof a, UZ_REMOTE_READ), "register a");
  check(uz_register(b, sizeof b, UZ_REMOTE_WRITE), "register b");
  check(uz_register(c, sizeof c, 0), "register c");
  for (size_t i = 0; i < sizeof a; ++i)
    a[i] = pattern(me, i);
  // A message to this node lands in its own arrival ring.
  check(uz_send(me, a, 100, 9, 10, 1), "uz_send to itself");
  uz_completion done{};
  expect(uz_wait(&done) == 1 && done.status == UZ_STATUS_OK, "sent",
         done.status, 0);
  uz_arrival arr{};
  expect(uz_wait_arrival(&arr) == 1 && arr.src == me && arr.tag == 9 &&
             arr.imm == 10 && arr.len == 100,
         "arrived from itself", arr.src, me);
  expect(std::memcmp(arr.data, a, 100) == 0, "its data", 1, 0);
  check(uz_release(&arr), "uz_release");
  // RDMA write and read within the process.
  check(uz_write(me, a, reinterpret_cast<uintptr_t>(b), sizeof a, 2),
        "uz_write to itself");
  expect(uz_wait(&done) == 1 && done.status == UZ_STATUS_OK, "written",
         done.status, 0);
  expect(std::memcmp(a, b, sizeof a) == 0, "written data", 1, 0);
  check(uz_read(me, c, reinterpret_cast<uintptr_t>(a), sizeof a, 3),
        "uz_read from itself");
  expect(uz_wait(&done) == 1 && done.status == UZ_STATUS_OK, "read",
         done.status, 0);
  expect(std::memcmp(a, c, sizeof a) == 0, "read data", 1, 0);
  // Still refused: memory not registered for remote access.
  check(uz_write(me, a, reinterpret_cast<uintptr_t>(c), 8, 4), "uz_write");
  expect(uz_wait(&done) == 1 && done.status == UZ_STATUS_REMOTE_PAGE,
         "unwritable", done.status, UZ_STATUS_REMOTE_PAGE);
}

void any() {
  if (me == 1) {
    host::compute(50'000'000); // 50 us
    send_word(5);
    receive_word(); // rank 0's message
    host::compute(50'000'000);
    send_word(6);
    return;
  }
  word_buffer = 0;
  check(uz_register(&word_buffer, 8, 0), "register");
  uint64_t before = host::now_ps();
  int bits = uz_wait_any();
  expect(bits == UZ_READY_ARRIVAL, "an arrival", bits, UZ_READY_ARRIVAL);
  expect(host::now_ps() - before > 50'000'000, "after the peer sent", 0, 1);
  expect(receive_word() == 5, "its word", 0, 5);
  check(uz_send(peer, &word_buffer, 8, 0, 0, 11), "uz_send");
  bits = uz_wait_any();
  expect(bits == UZ_READY_COMPLETION, "a completion", bits,
         UZ_READY_COMPLETION);
  uz_completion c{};
  expect(uz_poll(&c) == 1 && c.cookie == 11, "its completion",
         (long long)c.cookie, 11);
  bits = uz_wait_any();
  expect(bits == UZ_READY_ARRIVAL, "the second arrival", bits,
         UZ_READY_ARRIVAL);
  expect(receive_word() == 6, "its word", 0, 6);
}

void enomem() {
  size_t huge = size_t(1) << 30; // more than any rank's arena
  void *p = std::malloc(huge);
  int r = uz_register(p, huge, 0);
  expect(r == UZ_ENOMEM, "uz_register of 1 GiB", r, UZ_ENOMEM);
  std::free(p);
  // The endpoint still works.
  static uint8_t small[64];
  check(uz_register(small, sizeof small, 0), "register after");
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  me = uz_node();
  peer = 1 - me;
  if (uz_nodes() != 2) {
    std::printf("needs 2 nodes\n");
    return 2;
  }
  std::string mode = argv[1];
  uz_options o;
  uz_default_options(&o);
  if (mode == "wrap") {
    o.commands = 4;
    o.completions = 16;
    o.arrivals = 512;
  } else if (mode == "noroom") {
    o.arrivals = 4;
  } else if (mode == "manyops") {
    o.completions = 1024;
  }
  if (uz_open(&o) != UZ_OK) {
    std::printf("rank %u: uz_open: %s\n", me, uz_last_error());
    return 1;
  }
  if (mode != "self" && mode != "enomem")
    check(uz_register(&word_buffer, 8, 0), "register the word");
  if (mode == "wrap")
    wrap();
  else if (mode == "noroom")
    noroom();
  else if (mode == "setup")
    setup();
  else if (mode == "manyops")
    manyops();
  else if (mode == "self")
    self();
  else if (mode == "any")
    any();
  else if (mode == "enomem")
    enomem();
  else
    return 2;
  std::printf("rank %u: %s: %s\n", me, mode.c_str(),
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
