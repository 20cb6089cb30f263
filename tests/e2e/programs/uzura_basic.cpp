// Host program of test_uzura.cpp: the UZURA endpoint on two nodes.
//   uzura_basic_prog messages  messages of 0 to UZ_SEND_MAX bytes, in order,
//                              with their tags and immediate words; a
//                              ping-pong whose round trip rank 0 prints
//   uzura_basic_prog rdma      RDMA write and read of 256 KiB to and from
//                              the other rank's registered memory, from
//                              memory of each kind (malloc, static, alloc)
//   uzura_basic_prog refusals  what the card refuses, each with its status
//   uzura_basic_prog gather    uz_sendv and uz_writev from pieces of three
//                              kinds of memory
//   uzura_basic_prog types     datatypes on the card: a column sent as one
//                              vector, a 100 x 100 matrix transposed by one
//                              typed RDMA write and by typed RDMA reads
//                              (either side's layout), a read scattered
//                              over a list
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

uz_completion wait_one() {
  uz_completion c{};
  int r = uz_wait(&c);
  expect(r == 1, "uz_wait", r, 1);
  return c;
}

uz_arrival arrive() {
  uz_arrival a{};
  int r = uz_wait_arrival(&a);
  expect(r == 1, "uz_wait_arrival", r, 1);
  return a;
}

void send_word(uint32_t tag, uint64_t value) {
  static uint64_t word;
  static bool registered = false;
  if (!registered) {
    check(uz_register(&word, sizeof word, 0), "register word");
    registered = true;
  }
  word = value;
  check(uz_send(peer, &word, sizeof word, tag, 0, tag), "uz_send word");
  uz_completion c = wait_one();
  expect(c.status == UZ_STATUS_OK, "word sent", c.status, 0);
}

uint64_t receive_word(uint32_t tag) {
  uz_arrival a = arrive();
  expect(a.tag == tag && a.len == 8, "word's tag", a.tag, tag);
  uint64_t v = 0;
  std::memcpy(&v, a.data, sizeof v);
  check(uz_release(&a), "uz_release");
  return v;
}

void messages() {
  static uint8_t buf[UZ_SEND_MAX];
  check(uz_register(buf, sizeof buf, 0), "register send buffer");
  const size_t sizes[] = {0, 1, 7, 64, 1000, 4000, UZ_SEND_MAX};
  int n = 0;
  if (me == 0) {
    for (size_t s : sizes) {
      for (size_t i = 0; i < s; ++i)
        buf[i] = pattern(uint32_t(s), i);
      check(uz_send(peer, buf, s, uint32_t(100 + n), uint32_t(s * 3), n),
            "uz_send");
      uz_completion c = wait_one();
      expect(c.cookie == uint64_t(n) && c.status == UZ_STATUS_OK,
             "send completion", long(c.status), 0);
      ++n;
    }
  } else {
    for (size_t s : sizes) {
      uz_arrival a = arrive();
      expect(a.src == peer, "source", a.src, peer);
      expect(a.tag == uint32_t(100 + n), "tag", a.tag, 100 + n);
      expect(a.len == s, "length", a.len, long(s));
      expect(a.imm == uint32_t(s * 3), "immediate", a.imm, long(s * 3));
      const auto *d = static_cast<const uint8_t *>(a.data);
      size_t bad = 0;
      for (size_t i = 0; i < a.len && i < s; ++i)
        bad += d[i] != pattern(uint32_t(s), i);
      expect(bad == 0, "payload bytes wrong", long(bad), 0);
      check(uz_release(&a), "uz_release");
      ++n;
    }
  }
  // Ping-pong of 64-byte messages.
  const int rounds = 20;
  double start = host::now_us();
  for (int i = 0; i < rounds; ++i) {
    if (me == 0) {
      check(uz_send(peer, buf, 64, 7, 0, 0), "ping");
      uz_arrival a = arrive();
      check(uz_release(&a), "uz_release");
      wait_one();
    } else {
      uz_arrival a = arrive();
      check(uz_release(&a), "uz_release");
      check(uz_send(peer, buf, 64, 7, 0, 0), "pong");
      wait_one();
    }
  }
  if (me == 0)
    std::printf("uzura 64-byte round trip %.3f us\n",
                (host::now_us() - start) / rounds);
}

uint8_t static_buffer[256 << 10];

void rdma() {
  const size_t bytes = 256 << 10;
  // The target: memory the other rank may write and read.
  auto *block = static_cast<uint8_t *>(std::malloc(bytes + 8192));
  uint8_t *target =
      block + 4096 - reinterpret_cast<uintptr_t>(block) % 4096 + 100;
  std::memset(target, 0, bytes);
  check(uz_register(target, bytes, UZ_REMOTE_WRITE | UZ_REMOTE_READ),
        "register target");
  send_word(1, reinterpret_cast<uintptr_t>(target));
  uint64_t remote = receive_word(1);
  if (me == 0) {
    uint8_t *from = static_buffer;
    for (size_t i = 0; i < bytes; ++i)
      from[i] = pattern(5, i);
    check(uz_register(from, bytes, 0), "register source");
    double start = host::now_us();
    check(uz_write(peer, from, remote, bytes, 11), "uz_write");
    uz_completion c = wait_one();
    double us = host::now_us() - start;
    expect(c.cookie == 11 && c.status == UZ_STATUS_OK, "write completion",
           long(c.status), 0);
    std::printf("uzura 256 KiB write %.3f us, %.1f MB/s\n", us, bytes / us);
    send_word(2, 0); // the data is there: look
    // Read it back into memory from the arena.
    auto *back = static_cast<uint8_t *>(host::alloc(bytes));
    check(uz_register(back, bytes, 0), "register read buffer");
    check(uz_read(peer, back, remote, bytes, 12), "uz_read");
    c = wait_one();
    expect(c.cookie == 12 && c.status == UZ_STATUS_OK, "read completion",
           long(c.status), 0);
    size_t bad = 0;
    for (size_t i = 0; i < bytes; ++i)
      bad += back[i] != pattern(5, i);
    expect(bad == 0, "bytes read back wrong", long(bad), 0);
    send_word(3, 0);
  } else {
    receive_word(2);
    size_t bad = 0;
    for (size_t i = 0; i < bytes; ++i)
      bad += target[i] != pattern(5, i);
    expect(bad == 0, "bytes written wrong", long(bad), 0);
    receive_word(3);
  }
  std::free(block);
}

void refusals() {
  static uint8_t buf[8192];
  check(uz_register(buf, sizeof buf, 0), "register");
  // Memory this rank registered without remote access.
  send_word(1, reinterpret_cast<uintptr_t>(buf));
  uint64_t remote = receive_word(1);
  if (me == 0) {
    auto status_of = [](int r) {
      expect(r == UZ_OK, "post", r, 0);
      return wait_one().status;
    };
    uint32_t s = status_of(uz_write(peer, buf, remote, 64, 1));
    expect(s == UZ_STATUS_REMOTE_PAGE,
           "write to memory not registered for "
           "remote writes",
           s, UZ_STATUS_REMOTE_PAGE);
    s = status_of(uz_read(peer, buf, remote, 64, 2));
    expect(s == UZ_STATUS_REMOTE_PAGE,
           "read of memory not registered for "
           "remote reads",
           s, UZ_STATUS_REMOTE_PAGE);
    s = status_of(uz_write(peer, buf, 0x1000, 64, 3));
    expect(s == UZ_STATUS_REMOTE_PAGE, "write to an unknown page", s,
           UZ_STATUS_REMOTE_PAGE);
    static uint8_t unregistered[4096 * 2];
    s = status_of(uz_send(peer, unregistered + 4096, 16, 0, 0, 4));
    expect(s == UZ_STATUS_LOCAL_PAGE, "send from an unregistered page", s,
           UZ_STATUS_LOCAL_PAGE);
    s = status_of(uz_send(9, buf, 16, 0, 0, 5));
    expect(s == UZ_STATUS_BAD_NODE, "send to no such node", s,
           UZ_STATUS_BAD_NODE);
    int r = uz_send(peer, buf, UZ_SEND_MAX + 1, 0, 0, 6);
    expect(r == UZ_EINVAL, "a message too long", r, UZ_EINVAL);
  }
  // Nothing reached the other rank's memory.
  send_word(2, 0);
  receive_word(2);
  uint32_t bad = 0;
  for (uint8_t b : buf)
    bad += b != 0;
  expect(bad == 0, "bytes changed by refused operations", bad, 0);
}

void gather() {
  // Three pieces: static, malloc'd and arena memory, odd sizes.
  static uint8_t a[1000];
  auto *b = static_cast<uint8_t *>(std::malloc(3000));
  auto *c = static_cast<uint8_t *>(host::alloc(64));
  for (size_t i = 0; i < sizeof a; ++i)
    a[i] = pattern(1, i);
  for (size_t i = 0; i < 3000; ++i)
    b[i] = pattern(2, i);
  for (size_t i = 0; i < 64; ++i)
    c[i] = pattern(3, i);
  check(uz_register(a, sizeof a, 0), "register a");
  check(uz_register(b, 3000, 0), "register b");
  check(uz_register(c, 64, 0), "register c");
  const uz_iov iov[3] = {{a, 999}, {b + 1, 2999}, {c, 64}};
  auto expected = [&](size_t i) {
    return i < 999 ? a[i] : i < 999 + 2999 ? b[i - 999 + 1] : c[i - 3998];
  };
  const size_t total = 999 + 2999 + 64;
  auto *target = static_cast<uint8_t *>(host::alloc(8192));
  std::memset(target, 0, 8192);
  check(uz_register(target, 8192, UZ_REMOTE_WRITE), "register target");
  send_word(1, reinterpret_cast<uintptr_t>(target));
  uint64_t remote = receive_word(1);
  if (me == 0) {
    check(uz_sendv(peer, iov, 3, 42, 0, 1), "uz_sendv");
    expect(wait_one().status == UZ_STATUS_OK, "sendv completion", 1, 0);
    check(uz_writev(peer, iov, 3, remote + 10, 2), "uz_writev");
    expect(wait_one().status == UZ_STATUS_OK, "writev completion", 1, 0);
    send_word(2, 0);
  } else {
    uz_arrival m = arrive();
    expect(m.tag == 42 && m.len == total, "gathered length", m.len,
           long(total));
    const auto *d = static_cast<const uint8_t *>(m.data);
    size_t bad = 0;
    for (size_t i = 0; i < total && i < m.len; ++i)
      bad += d[i] != expected(i);
    expect(bad == 0, "gathered message bytes wrong", long(bad), 0);
    check(uz_release(&m), "uz_release");
    receive_word(2);
    bad = 0;
    for (size_t i = 0; i < total; ++i)
      bad += target[10 + i] != expected(i);
    expect(bad == 0, "gathered write bytes wrong", long(bad), 0);
    expect(target[9] == 0 && target[10 + total] == 0, "bytes around", 1, 0);
  }
  std::free(b);
}

// Reads of the peer's 100 x 100 matrix `remote` (the same values as
// types() gives its own): gathered there by the transpose layout, which
// only this side knows; scattered here by it; and scattered over three
// pieces of a list.
void read_typed(uint64_t remote, uint16_t transpose) {
  const int n = 100;
  const size_t bytes = n * n * sizeof(float);
  auto *got = static_cast<float *>(host::alloc(bytes));
  auto value = [](int i) { return float(i) + 0.25f; };
  auto transposed_ok = [&] {
    int bad = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        bad += got[i * n + j] != value(j * n + i);
    return bad;
  };
  check(uz_register(got, bytes, 0), "register read target");
  std::memset(got, 0, bytes);
  check(uz_read_typed(peer, got, 0, uint32_t(bytes), remote, transpose, 3),
        "uz_read_typed, remote layout");
  expect(wait_one().status == UZ_STATUS_OK, "typed read", 1, 0);
  expect(transposed_ok() == 0, "read by the remote layout", transposed_ok(), 0);
  std::memset(got, 0, bytes);
  check(uz_read_typed(peer, got, transpose, n, remote, 0, 4),
        "uz_read_typed, local layout");
  expect(wait_one().status == UZ_STATUS_OK, "typed read", 1, 0);
  expect(transposed_ok() == 0, "read into the local layout", transposed_ok(),
         0);
  // A list: 3 pieces of `got`, out of order, 4062 bytes from byte 6.
  std::memset(got, 0, bytes);
  auto *base = reinterpret_cast<uint8_t *>(got);
  const uz_iov iov[3] = {
      {base + 8000, 1000}, {base + 100, 3000}, {base + 20000, 62}};
  check(uz_readv(peer, iov, 3, remote + 6, 5), "uz_readv");
  expect(wait_one().status == UZ_STATUS_OK, "scattered read", 1, 0);
  int bad = 0, k = 6;
  for (const uz_iov &v : iov)
    for (size_t i = 0; i < v.len; ++i, ++k) {
      float f = value(k / 4);
      bad += static_cast<const uint8_t *>(v.base)[i] !=
             reinterpret_cast<const uint8_t *>(&f)[k % 4];
    }
  expect(bad == 0, "scattered read bytes", bad, 0);
  expect(base[99] == 0 && base[3100] == 0 && base[9000] == 0, "bytes around", 1,
         0);
}

void types() {
  const int n = 100;
  static float m[n * n];
  for (int i = 0; i < n * n; ++i)
    m[i] = float(i) + 0.25f;
  check(uz_register(m, sizeof m, UZ_REMOTE_READ), "register matrix");
  auto *target = static_cast<float *>(host::alloc(sizeof m));
  std::memset(target, 0, sizeof m);
  check(uz_register(target, sizeof m, UZ_REMOTE_WRITE), "register target");
  send_word(1, reinterpret_cast<uintptr_t>(target));
  uint64_t remote = receive_word(1);
  // Column 7: 100 floats, one every row. The transpose: each source row
  // goes down a column of the target, the next row one float further.
  uint16_t column = 0, transpose = 0;
  check(uz_type_create(n, 4, n * 4, n * 4, &column), "column type");
  check(uz_type_create(n, 4, n * 4, 4, &transpose), "transpose type");
  if (me == 0) {
    check(uz_send_typed(peer, m + 7, column, 1, 9, 0, 1), "uz_send_typed");
    expect(wait_one().status == UZ_STATUS_OK, "typed send", 1, 0);
    double t0 = host::now_us();
    check(uz_write_typed(peer, m, 0, sizeof m, remote, transpose, 2),
          "uz_write_typed");
    expect(wait_one().status == UZ_STATUS_OK, "typed write", 1, 0);
    std::printf("uzura transpose of %dx%d floats by one typed write %.3f us\n",
                n, n, host::now_us() - t0);
    send_word(2, 0);
    read_typed(uint64_t(receive_word(3)), transpose);
  } else {
    uz_arrival a = arrive();
    expect(a.len == n * 4, "column bytes", a.len, n * 4);
    const auto *col = static_cast<const float *>(a.data);
    int bad = 0;
    for (int i = 0; i < n && i * 4 < int(a.len); ++i)
      bad += col[i] != m[i * n + 7];
    expect(bad == 0, "column values wrong", bad, 0);
    check(uz_release(&a), "uz_release");
    receive_word(2);
    bad = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        bad += target[j * n + i] != m[i * n + j];
    expect(bad == 0, "transposed values wrong", bad, 0);
    send_word(3, reinterpret_cast<uintptr_t>(m));
  }
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
  int r = uz_open(nullptr);
  if (r != UZ_OK) {
    std::printf("rank %u: uz_open: %s\n", me, uz_last_error());
    return 1;
  }
  std::string mode = argv[1];
  if (mode == "messages")
    messages();
  else if (mode == "rdma")
    rdma();
  else if (mode == "refusals")
    refusals();
  else if (mode == "gather")
    gather();
  else if (mode == "types")
    types();
  else
    return 2;
  std::printf("rank %u: %s: %s\n", me, mode.c_str(),
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
