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
#include <nicemu/host.hpp>
#include <nicemu/uzura.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
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

} // namespace

int main(int argc, char **argv) {
  bool raw = false, quick = false, rtt_only = false;
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
  const size_t max = quick ? (64 << 10) : (1 << 20);
  auto *buf = static_cast<uint8_t *>(host::alloc(max));
  std::memset(buf, me + 1, max);
  ok(uz_register(buf, max, UZ_REMOTE_WRITE | UZ_REMOTE_READ), "register");

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

  // The other rank's buffer, then writes of growing size into it.
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
