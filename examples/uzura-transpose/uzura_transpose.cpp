// A 100 x 100 float matrix transposed on its way to the other node by one
// RDMA write with a datatype, on the UZURA card's native API
// (nicemu/uzura.h, docs/uzura.md): rank 0's matrix is 40 KB of contiguous
// rows; the card places them by a vector layout that only rank 0 knows,
// each row down a column of rank 1's matrix. No program copies anything.
//
//   nicemu run -n 2 --model uzura --firmware build/firmware/uzura/uzura.img
//       -- build/examples/uzura_transpose
//
// Rank 0 prints the write's virtual time, from the call to its completion
// (the target card has placed the last float); rank 1 checks every element
// and prints how many are right. Exit status 1 if any is not.
#include <nicemu/host.hpp>
#include <nicemu/uzura.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace host = nicemu::host;

namespace {

constexpr int kN = 100;
uint32_t me, peer;

void ok(int r, const char *what) {
  if (r >= 0)
    return;
  std::fprintf(stderr, "uzura_transpose rank %u: %s: %s\n", me, what,
               uz_last_error());
  std::exit(1);
}

void completed(const char *what) {
  uz_completion c{};
  ok(uz_wait(&c), "uz_wait");
  if (c.status != UZ_STATUS_OK) {
    std::fprintf(stderr, "uzura_transpose rank %u: %s: status %u\n", me, what,
                 c.status);
    std::exit(1);
  }
}

// A word to the other rank, as a message (its buffer registered once).
void send_word(uint64_t value) {
  static uint64_t word;
  static bool registered = false;
  if (!registered)
    ok(uz_register(&word, sizeof word, 0), "register word");
  registered = true;
  word = value;
  ok(uz_send(peer, &word, sizeof word, 0, 0, 0), "uz_send");
  completed("message");
}

uint64_t receive_word() {
  uz_arrival a{};
  ok(uz_wait_arrival(&a), "uz_wait_arrival");
  uint64_t value = 0;
  std::memcpy(&value, a.data, sizeof value);
  ok(uz_release(&a), "uz_release");
  return value;
}

float element(int row, int col) {
  return float(row * kN + col) + 0.25f;
}

void origin() {
  static float m[kN * kN];
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      m[i * kN + j] = element(i, j);
  ok(uz_register(m, sizeof m, 0), "register matrix");
  uint64_t remote = receive_word(); // where rank 1's matrix is
  // kN blocks of one float, a row of the target apart; the next item (the
  // next source row) one float further: row i lands in column i.
  uint16_t transpose = 0;
  ok(uz_type_create(kN, sizeof(float), kN * sizeof(float), sizeof(float),
                    &transpose),
     "uz_type_create");
  double t0 = host::now_us();
  ok(uz_write_typed(peer, m, 0, sizeof m, remote, transpose, 1),
     "uz_write_typed");
  completed("typed write");
  double us = host::now_us() - t0;
  std::printf("rank 0: %dx%d floats (%zu bytes) transposed by one typed RDMA "
              "write: %.3f us\n",
              kN, kN, sizeof m, us);
  send_word(1); // it is there
}

int target() {
  auto *t = static_cast<float *>(host::alloc(kN * kN * sizeof(float)));
  std::memset(t, 0, kN * kN * sizeof(float));
  ok(uz_register(t, kN * kN * sizeof(float), UZ_REMOTE_WRITE), "register");
  send_word(reinterpret_cast<uintptr_t>(t));
  receive_word();
  int right = 0;
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      right += t[j * kN + i] == element(i, j);
  std::printf("rank 1: %d of %d elements in their transposed places\n", right,
              kN * kN);
  return right == kN * kN ? 0 : 1;
}

} // namespace

int main() {
  me = uz_node();
  peer = 1 - me;
  if (uz_nodes() != 2) {
    std::fprintf(stderr, "uzura_transpose: run on 2 nodes\n");
    return 2;
  }
  ok(uz_open(nullptr), "uz_open");
  if (me == 1)
    return target();
  origin();
  return 0;
}
