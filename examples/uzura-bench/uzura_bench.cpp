// The 64-byte round trip and an RDMA-write sweep on UZURA, two nodes of the
// uzura card with the uzura firmware:
//
//   nicemu run -n 2 --model uzura --firmware build/firmware/uzura/uzura.img
//       -- build/examples/uzura_bench [--quick] [--in MODE] [--out MODE]
//
// prints a table. It is also the host program of `nicemu bench uzura`
// (docs/benchmarks.md), which passes --raw for lines "KEY VALUE..." instead:
//   rounds N        64-byte ping-pong round trips measured
//   rtt_us X        their mean round trip
//   bw SIZE US MBS  one RDMA write of SIZE bytes (64 B to 1 MiB), from the
//                   call to its completion, and its MB/s
// --in doorbell|card-polls, --out memory|interrupt|register: how the card
// learns of commands and the program of completions and arrivals
// (docs/uzura.md, "Notification"). --rtt-only: the round trip alone.
// --quick: fewer rounds, sizes up to 64 KiB.
// --transpose: instead, a 100 x 100 float matrix transposed on its way to
// the other node, by one typed RDMA write against pack, send and unpack
// (below, transpose()); with --raw, lines
//   transpose_n N                      the matrix is N x N floats
//   transpose_copy_ps_per_element PS   the host cost charged for a copy
//   transpose_typed_us CALL TARGET     typed: the call to its completion,
//                                      and to the target program told
//   transpose_packed_us TOTAL PACK SEND UNPACK
//   transpose_checked TYPED PACKED     elements found right at the target
// Either way the target checks every element, and exits 1 if one is wrong.
#include <nicemu/host.hpp>
#include <nicemu/uzura.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

namespace host = nicemu::host;

namespace {

uint32_t me, peer;

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "uzura_bench rank %u: %s: %s\n", me, what,
               uz_last_error());
  std::exit(1);
}

void ok(int r, const char *what) {
  if (r < 0)
    die(what);
}

uz_completion done() {
  uz_completion c{};
  ok(uz_wait(&c), "uz_wait");
  if (c.status != UZ_STATUS_OK)
    die("an operation failed");
  return c;
}

void arrival() {
  uz_arrival a{};
  ok(uz_wait_arrival(&a), "uz_wait_arrival");
  ok(uz_release(&a), "uz_release");
}

// Sends the address of this rank's `buf`; returns the other rank's.
uint64_t exchange_address(const void *buf) {
  static uint64_t word;
  ok(uz_register(&word, sizeof word, 0), "register word");
  word = reinterpret_cast<uintptr_t>(buf);
  ok(uz_send(peer, &word, sizeof word, 2, 0, 0), "address");
  done();
  uz_arrival a{};
  ok(uz_wait_arrival(&a), "address");
  uint64_t remote = 0;
  std::memcpy(&remote, a.data, sizeof remote);
  ok(uz_release(&a), "uz_release");
  return remote;
}

// ---- The transpose: one typed write against pack, send, unpack ----

// What the host pays to copy one 4-byte element in the program's own pack
// and unpack loops, charged to the virtual clock with host::compute (host
// work is otherwise free). Chosen before measuring: the profile's host is
// a Xeon at 3.4 GHz; a 40 KB matrix is resident in its L2 cache; a load, a
// store and the index arithmetic take about 3.4 cycles: 1 ns. The plain
// copy (pack) and the strided one (unpack) are charged alike.
constexpr uint64_t kHostCopyPsPerElement = 1000;

constexpr int kN = 100; // the matrix is kN x kN floats

float element(int row, int col) {
  return float(row * kN + col) + 0.25f;
}

// Up to four 64-bit words as one message, and back (registered once).
uint64_t words[4];

void send_words(uint32_t tag, std::initializer_list<uint64_t> values) {
  static bool registered = false;
  if (!registered)
    ok(uz_register(words, sizeof words, 0), "register words");
  registered = true;
  std::copy(values.begin(), values.end(), words);
  ok(uz_send(peer, words, sizeof words, tag, 0, 0), "uz_send words");
  done();
}

void receive_words(uint32_t tag, uint64_t (&out)[4]) {
  uz_arrival a{};
  ok(uz_wait_arrival(&a), "uz_wait_arrival");
  if (a.tag != tag || a.len != sizeof out)
    die("an unexpected message");
  std::memcpy(out, a.data, sizeof out);
  ok(uz_release(&a), "uz_release");
}

// Copies kN x kN elements, from[i][j] to to[j][i] when `strided`, and
// charges the host's time for them.
void copy_matrix(const float *from, float *to, bool strided) {
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      to[strided ? j * kN + i : i * kN + j] = from[i * kN + j];
  host::compute(uint64_t(kN) * kN * kHostCopyPsPerElement);
}

// The elements of `t` in their transposed places; exits unless all are.
uint64_t check_transposed(const float *t, const char *how) {
  uint64_t right = 0;
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      right += t[j * kN + i] == element(i, j);
  if (right != uint64_t(kN) * kN) {
    std::fprintf(stderr, "uzura_bench rank 1: %s: %llu of %d elements right\n",
                 how, static_cast<unsigned long long>(right), kN * kN);
    std::exit(1);
  }
  return right;
}

// Rank 1: a matrix for the typed write, a staging buffer the packed one is
// written into, and the matrix it is unpacked into.
void transpose_target() {
  const size_t bytes = kN * kN * sizeof(float);
  auto *typed = static_cast<float *>(host::alloc(bytes));
  auto *staging = static_cast<float *>(host::alloc(bytes));
  auto *unpacked = static_cast<float *>(host::alloc(bytes));
  std::memset(typed, 0, bytes);
  std::memset(unpacked, 0, bytes);
  ok(uz_register(typed, bytes, UZ_REMOTE_WRITE), "register typed");
  ok(uz_register(staging, bytes, UZ_REMOTE_WRITE), "register staging");
  send_words(10, {reinterpret_cast<uintptr_t>(typed),
                  reinterpret_cast<uintptr_t>(staging), 0, 0});
  uint64_t m[4];
  receive_words(11, m); // the typed write is complete
  uint64_t told = host::now_ps();
  uint64_t typed_right = check_transposed(typed, "typed");
  send_words(12, {told, typed_right, 0, 0});
  receive_words(13, m); // the packed matrix is in the staging buffer
  uint64_t arrived = host::now_ps();
  copy_matrix(staging, unpacked, true);
  uint64_t end = host::now_ps();
  send_words(14, {arrived, end, check_transposed(unpacked, "packed"), 0});
}

void transpose(bool raw) {
  static float m[kN * kN], pack[kN * kN];
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      m[i * kN + j] = element(i, j);
  ok(uz_register(m, sizeof m, 0), "register matrix");
  ok(uz_register(pack, sizeof pack, 0), "register pack");
  uint64_t at[4];
  receive_words(10, at); // the target's matrix and staging buffer
  // Row i down column i of the target: kN blocks of a float, a row apart;
  // the next row one float further.
  uint16_t type = 0;
  ok(uz_type_create(kN, sizeof(float), kN * sizeof(float), sizeof(float),
                    &type),
     "uz_type_create");
  uint64_t t0 = host::now_ps();
  ok(uz_write_typed(peer, m, 0, sizeof m, at[0], type, 1), "uz_write_typed");
  done();
  uint64_t typed_done = host::now_ps();
  send_words(11, {});
  uint64_t typed[4];
  receive_words(12, typed); // when the target was told; what it checked

  uint64_t p0 = host::now_ps();
  copy_matrix(m, pack, false);
  uint64_t packed = host::now_ps();
  ok(uz_write(peer, pack, at[1], sizeof pack, 2), "uz_write");
  done();
  send_words(13, {});
  uint64_t unpacked[4];
  receive_words(14, unpacked); // arrived, unpacked, checked
  auto us = [](uint64_t from, uint64_t to) { return double(to - from) / 1e6; };
  if (raw) {
    std::printf("transpose_n %d\ntranspose_copy_ps_per_element %llu\n", kN,
                static_cast<unsigned long long>(kHostCopyPsPerElement));
    std::printf("transpose_typed_us %.4f %.4f\n", us(t0, typed_done),
                us(t0, typed[0]));
    std::printf("transpose_packed_us %.4f %.4f %.4f %.4f\n",
                us(p0, unpacked[1]), us(p0, packed), us(packed, unpacked[0]),
                us(unpacked[0], unpacked[1]));
    std::printf("transpose_checked %llu %llu\n",
                static_cast<unsigned long long>(typed[1]),
                static_cast<unsigned long long>(unpacked[2]));
  } else {
    std::printf("%dx%d float transpose, until the target program has it: "
                "one typed write %.3f us (its completion %.3f us); pack, "
                "send, unpack %.3f us\n",
                kN, kN, us(t0, typed[0]), us(t0, typed_done),
                us(p0, unpacked[1]));
  }
}

} // namespace

int main(int argc, char **argv) {
  bool raw = false, quick = false, rtt_only = false, transpose_only = false;
  uz_options options;
  uz_default_options(&options);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--raw")
      raw = true;
    else if (a == "--quick")
      quick = true;
    else if (a == "--rtt-only")
      rtt_only = true;
    else if (a == "--transpose")
      transpose_only = true;
    else if (a == "--in" && i + 1 < argc) {
      std::string m = argv[++i];
      options.notify_in = m == "card-polls" ? UZ_IN_CARD_POLLS : UZ_IN_DOORBELL;
    } else if (a == "--out" && i + 1 < argc) {
      std::string m = argv[++i];
      unsigned out = m == "interrupt"  ? UZ_OUT_INTERRUPT
                     : m == "register" ? UZ_OUT_REGISTER
                                       : UZ_OUT_MEMORY;
      options.notify_completions = options.notify_arrivals = out;
    } else {
      std::fprintf(stderr, "uzura_bench: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  me = uz_node();
  peer = 1 - me;
  if (uz_nodes() != 2) {
    std::fprintf(stderr, "uzura_bench: needs 2 nodes\n");
    return 2;
  }
  ok(uz_open(&options), "uz_open");
  if (transpose_only) {
    if (me == 0)
      transpose(raw);
    else
      transpose_target();
    return 0;
  }
  const size_t max = quick ? (64 << 10) : (1 << 20);
  auto *buf = static_cast<uint8_t *>(host::alloc(max));
  std::memset(buf, me + 1, max);
  ok(uz_register(buf, max, UZ_REMOTE_WRITE | UZ_REMOTE_READ), "register");

  // The other rank's buffer, for the writes below. Exchanged first: the
  // last message of node 1 to node 0 must be the ping-pong's last 64-byte
  // one, whose stages `nicemu bench uzura` reads from the cards.
  uint64_t remote = rtt_only ? 0 : exchange_address(buf);

  // Ping-pong of 64-byte messages; the last message is node 1's to node 0.
  const int rounds = quick ? 20 : 100;
  double start = host::now_us();
  for (int i = 0; i < rounds; ++i) {
    if (me == 0) {
      ok(uz_send(peer, buf, 64, 1, 0, 0), "ping");
      done();
      arrival();
    } else {
      arrival();
      ok(uz_send(peer, buf, 64, 1, 0, 0), "pong");
      done();
    }
  }
  double rtt = (host::now_us() - start) / rounds;
  if (rtt_only) {
    if (me == 0)
      std::printf(raw ? "rounds %d\nrtt_us %.4f\n"
                      : "%d round trips of 64 bytes: %.3f us\n",
                  rounds, rtt);
    return 0;
  }

  // Writes of growing size into the other rank's buffer.
  if (me == 0) {
    if (raw)
      std::printf("rounds %d\nrtt_us %.4f\n", rounds, rtt);
    else
      std::printf("64-byte round trip %.3f us\n%10s %12s %10s\n", rtt, "bytes",
                  "us", "MB/s");
    for (size_t bytes = 64; bytes <= max; bytes *= 4) {
      double t0 = host::now_us();
      ok(uz_write(peer, buf, remote, bytes, 0), "uz_write");
      done();
      double us = host::now_us() - t0;
      std::printf(raw ? "bw %zu %.4f %.2f\n" : "%10zu %12.3f %10.1f\n", bytes,
                  us, double(bytes) / us);
    }
  }
  // Both stay until rank 0 is done: the last message says so.
  if (me == 0) {
    ok(uz_send(peer, buf, 8, 3, 0, 0), "bye");
    done();
  } else {
    arrival();
  }
  return 0;
}
