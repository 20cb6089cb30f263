// AOTF round trip and a BOTF / AOTF / PUSH bandwidth sweep on DIMMnet-1,
// two nodes of the martini card with the dimmnet firmware:
//
//   nicemu run -n 2 --model martini:D
//       --firmware build/firmware/dimmnet/dimmnet.img
//       -- build/examples/dimmnet_bench [--quick]     (one line)
//
// prints a table. It is also the host program of `nicemu bench dimmnet`
// (docs/benchmarks.md), which passes --raw for lines "KEY VALUE..." instead:
//   rounds N           AOTF ping-pong round trips measured
//   rtt_us X           mean round trip of an 8-byte AOTF word
//   store_ns X         the host's own cost of one uncached store (AOTF)
//   load_ns X          ... of one uncached LLCM load (one polling turn)
//   bw SIZE BOTF AOTF PUSH
//                      MB/s of a stream of SIZE-byte messages sent by BOTF
//                      (464-byte pieces through two windows in turn), by
//                      AOTF (8-byte stores) and by PUSH (from SO-DIMM bank
//                      0, each waited for), up to the receiver's ack; 8 B to
//                      64 KiB (AOTF to 4 KiB only: 0 beyond)
// --quick: fewer rounds and messages. --rtt-only: the round trip alone;
// --interrupt: its words go by interrupt-AOTF (the receiving core writes
// them into LLCM: DIMM_CMD_INTERRUPT_WRITE) instead of the hardware path.
#include <nicemu/dimmnet.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr unsigned kRegionBase = 0x1000; // region 0: the rest of LLCM
constexpr unsigned kRegionBytes = 0x1F000;
constexpr unsigned kDataPage = 1;     // partner's region, from 0
constexpr unsigned kFlagPage = 2;     // partner's region, from kFlags
constexpr unsigned kPingWord = 0x000; // in the flag page
constexpr unsigned kHelloWord = 0x008;
constexpr unsigned kAckWord = 0x010;
constexpr unsigned kFlags = 0x1E000; // past 64 KiB of data

dimm_card *card;
int me;
unsigned partner;
bool raw = false; // KEY VALUE lines for the bench, not the table

void must(int code, const char *what) {
  if (code != DIMM_OK) {
    std::fprintf(stderr, "dimmnet_bench: %s: %s (%s)\n", what,
                 dimm_strerror(code), dimm_last_error());
    std::exit(1);
  }
}

uint64_t flag(unsigned word) {
  return dimm_llcm_load64(card, kRegionBase + kFlags + word);
}

void wait_flag(unsigned word, uint64_t value) {
  dimm_llcm_wait64(card, kRegionBase + kFlags + word, ~0ull, value);
}

void set_up(bool interrupt) {
  must(dimm_open(1, 0, &card), "dimm_open");
  me = dimm_node(card);
  if (dimm_nodes(card) != 2) {
    std::fprintf(stderr, "dimmnet_bench: run on 2 nodes\n");
    std::exit(1);
  }
  partner = unsigned(1 - me);
  must(dimm_open_region(card, 0, kRegionBase, kRegionBytes, DIMM_ANY_PID),
       "region");
  // PUSH reads bank 0, which must face the card, through region 1.
  must(dimm_open_region(card, 1, DIMM_ADDR(DIMM_SPACE_BANK0, 0), 1 << 20,
                        DIMM_ANY_PID),
       "bank region");
  dimm_header seed{};
  seed.dest_node = partner;
  must(dimm_set_seed(card, kDataPage, &seed), "seed");
  seed.address = kFlags;
  seed.command = interrupt ? DIMM_CMD_INTERRUPT_WRITE : DIMM_CMD_WRITE;
  must(dimm_set_seed(card, kFlagPage, &seed), "seed");
  // Hello until the partner's hello is here, then once more.
  while (flag(kHelloWord) != 1) {
    must(dimm_aotf_store64(card, kFlagPage, kHelloWord, 1), "hello");
    for (int i = 0; i < 16 && flag(kHelloWord) != 1; ++i)
      ;
  }
  must(dimm_aotf_store64(card, kFlagPage, kHelloWord, 1), "hello");
}

void ping_pong(int rounds) {
  double start = dimm_time_ns(card);
  for (int i = 1; i <= rounds; ++i) {
    if (me == 0) {
      must(dimm_aotf_store64(card, kFlagPage, kPingWord, uint64_t(i)), "ping");
      wait_flag(kPingWord, uint64_t(i));
    } else {
      wait_flag(kPingWord, uint64_t(i));
      must(dimm_aotf_store64(card, kFlagPage, kPingWord, uint64_t(i)), "pong");
    }
  }
  double elapsed = dimm_time_ns(card) - start;
  if (me == 0) {
    if (raw) {
      std::printf("rounds %d\n", rounds);
      std::printf("rtt_us %.6f\n", elapsed / rounds / 1000.0);
    } else {
      std::printf("AOTF 8-byte round trip %.3f us, one way %.3f us (mean of "
                  "%d)\n",
                  elapsed / rounds / 1000.0, elapsed / rounds / 2000.0, rounds);
    }
  }
}

// The host's own costs, as its clock charges them.
void host_costs() {
  if (me != 0)
    return;
  const int n = 64;
  double t0 = dimm_time_ns(card);
  for (int i = 0; i < n; ++i)
    (void)flag(kAckWord);
  double t1 = dimm_time_ns(card);
  std::printf(raw ? "load_ns %.3f\n" : "host: an LLCM load %.1f ns, ",
              (t1 - t0) / n);
  // Stores to a page with no seed would be rejected: send real ones to
  // the partner's flag page (nobody waits on this word).
  t0 = dimm_time_ns(card);
  for (int i = 0; i < n; ++i)
    must(dimm_aotf_store64(card, kFlagPage, 0x100, uint64_t(i)), "store");
  t1 = dimm_time_ns(card);
  std::printf(raw ? "store_ns %.3f\n" : "an AOTF store %.1f ns\n",
              (t1 - t0) / n);
}

// Waits for window `w` to be free (its last packet's tail has left).
void window_free(unsigned w) {
  unsigned status = 1;
  while (status & 1)
    must(dimm_botf_status(card, w, &status), "status");
}

// One message of `bytes` by BOTF: 464-byte pieces, windows 0 and 1 in turn.
void send_botf(const std::vector<uint8_t> &data, unsigned &window) {
  for (unsigned at = 0; at < data.size(); at += DIMM_BOTF_MAX) {
    unsigned n = std::min<unsigned>(DIMM_BOTF_MAX, unsigned(data.size()) - at);
    dimm_header h{};
    h.dest_node = partner;
    h.address = at;
    for (;;) {
      int code = dimm_botf_send(card, window, &h, data.data() + at, n);
      if (code == DIMM_OK)
        break;
      if (code != DIMM_EBUSY)
        must(code, "botf");
      window_free(window);
    }
    window ^= 1;
  }
}

void send_push(const std::vector<uint8_t> &data) {
  dimm_rdma t{DIMM_ADDR(DIMM_SPACE_BANK0, 0), 1, partner, kRegionBase, 0,
              uint32_t(data.size())};
  must(dimm_push(card, &t), "push");
  must(dimm_rdma_wait(card), "push");
}

void send_aotf(const std::vector<uint8_t> &data) {
  for (unsigned at = 0; at < data.size(); at += 8) {
    uint64_t v;
    std::memcpy(&v, data.data() + at, 8);
    must(dimm_aotf_store64(card, kDataPage + at / 4096, at % 4096, v), "aotf");
  }
}

// MB/s of `messages` messages of `bytes` each, from the first store to the
// receiver's ack (which it sends once the last message's tag is in).
enum class Method { Botf, Aotf, Push };

double stream(unsigned bytes, int messages, Method method, uint64_t tag) {
  std::vector<uint8_t> data(bytes);
  for (unsigned i = 0; i < bytes; ++i)
    data[i] = uint8_t(i * 13 + 1);
  if (me == 1) {
    wait_flag(kPingWord, tag);
    must(dimm_aotf_store64(card, kFlagPage, kAckWord, tag), "ack");
    return 0;
  }
  // Nothing of the last measurement still on its way: every credit back.
  unsigned credits = 0;
  while (credits != 2048)
    must(dimm_credits(card, &credits), "credits");
  unsigned window = 0;
  double start = dimm_time_ns(card);
  for (int m = 0; m < messages; ++m)
    switch (method) {
    case Method::Botf:
      send_botf(data, window);
      break;
    case Method::Aotf:
      send_aotf(data);
      break;
    case Method::Push:
      send_push(data);
      break;
    }
  must(dimm_aotf_store64(card, kFlagPage, kPingWord, tag), "tag");
  wait_flag(kAckWord, tag);
  double ns = dimm_time_ns(card) - start;
  return double(bytes) * messages / ns * 1000.0; // bytes/ns -> MB/s
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false, rtt_only = false, interrupt = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    quick |= a == "--quick";
    rtt_only |= a == "--rtt-only";
    raw |= a == "--raw";
    interrupt |= a == "--interrupt";
  }
  set_up(interrupt);
  ping_pong(quick ? 200 : 2000);
  if (rtt_only) {
    dimm_close(card);
    return 0;
  }
  host_costs();
  uint64_t tag = 1000;
  int messages = quick ? 4 : 16;
  // The PUSH source: bank 0 filled by the host, then switched to the card.
  if (me == 0) {
    std::vector<uint8_t> fill(65536);
    for (unsigned i = 0; i < fill.size(); ++i)
      fill[i] = uint8_t(i * 13 + 1);
    must(dimm_bank_write(card, 0, 0, fill.data(), fill.size()), "bank");
    must(dimm_bank_switch(card, 0, DIMM_SIDE_NIC), "bank switch");
  }
  if (me == 0 && !raw)
    std::printf("MB/s of %d messages (%d above 4 KiB) to the receiver's "
                "ack\n%8s %10s %10s %10s\n",
                messages, std::max(2, messages / 4), "bytes", "BOTF", "AOTF",
                "PUSH");
  for (unsigned bytes = 8; bytes <= 65536; bytes *= 2) {
    int n = bytes > 4096 ? std::max(2, messages / 4) : messages;
    double b = stream(bytes, n, Method::Botf, ++tag);
    double a = bytes <= 4096 ? stream(bytes, n, Method::Aotf, ++tag) : 0;
    double p = stream(bytes, n, Method::Push, ++tag);
    if (me == 0 && raw)
      std::printf("bw %u %.3f %.3f %.3f\n", bytes, b, a, p);
    else if (me == 0) {
      char aotf[32] = "-"; // not measured above 4 KiB
      if (a > 0)
        std::snprintf(aotf, sizeof aotf, "%.1f", a);
      std::printf("%8u %10.1f %10s %10.1f\n", bytes, b, aotf, p);
    }
  }
  dimm_close(card);
  return 0;
}
