// VIPL over a lossy network (the via firmware on comet, `nicemu run
// --link-loss P --link-corrupt P`): `vipl_loss_prog SCENARIO`, run on 2
// nodes. Rank 0 receives, rank 1 sends. Every rank prints "rank R:
// SCENARIO: ok" when all its checks held, or the failed checks and "rank R:
// SCENARIO: N failures" (exit 1), and what it saw (tests/e2e/test_via_loss.cpp
// reads those lines).
//
// Scenarios:
//   reliable-delivery, reliable-reception
//                kMessages messages of 0..65536 bytes (many of several
//                fragments), each filled with its own pattern and carrying
//                its number as immediate data, in rounds of kRound (the
//                receiver says "go" after reposting its receives); then RDMA
//                writes of 1..20000 bytes into the receiver's memory, an RDMA
//                read of it back, and a last message. Every send must
//                complete without error, every message arrive once, in
//                order, whole; the receiver checks the written memory.
//   unreliable   kMessages messages on an unreliable VI, then "done" on a
//                reliable one: the receiver checks each message it got
//                (whole, its pattern, numbers rising) and counts them.
//   unreachable  a reliable VI whose peer goes away without a word (its card
//                forgets its VIs: a raw HELLO, as a card that restarted):
//                the send completes with VIP_STATUS_TRANSPORT_ERROR after
//                the retries, the VI is in the error state, the error
//                handler hears of it.
#include <nicemu/host.hpp>
#include <nicemu/via_protocol.h>
#include <nicemu/vipl.h>

#include "vipl_checks.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace host = nicemu::host;

namespace {

constexpr uint32_t kMessages = 240;
constexpr uint32_t kRound = 16; // messages between two "go"s
constexpr uint32_t kMaxSize = 65536;
constexpr uint32_t kTarget = 20000; // RDMA target bytes

// Message m's size: mostly small and medium, many of several fragments
// (VIAFW_FRAG_BYTES is 1468), a few of the largest.
uint32_t size_of(uint32_t m) {
  static const uint32_t sizes[] = {4,    0,    100,  1467, 1468,  1469,
                                   2936, 2937, 4000, 64,   9999,  1,
                                   5000, 300,  7340, 16,   20000, 65536};
  return sizes[m % (sizeof sizes / sizeof sizes[0])];
}

uint8_t pattern(uint32_t msg, uint32_t i) {
  return uint8_t(msg * 151 + i * 13 + (i >> 8) + (i >> 16) + 1);
}

// ---- One node's VIPL setup
// ---------------------------------------------------

struct Node {
  VIP_NIC_HANDLE nic = nullptr;
  VIP_PROTECTION_HANDLE tag = nullptr;
  uint8_t *mem = nullptr;
  size_t bytes = 0, used = 0;
  VIP_MEM_HANDLE mh = 0;

  uint8_t *take(size_t n, size_t align = 64) {
    used = (used + align - 1) / align * align;
    uint8_t *p = mem + used;
    used += n;
    if (used > bytes) {
      std::printf("rank %u: out of test memory\n", rank_);
      std::exit(2);
    }
    return p;
  }
  VIP_DESCRIPTOR *desc() {
    auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(take(sizeof(VIP_DESCRIPTOR)));
    std::memset(d, 0, sizeof(VIP_DESCRIPTOR));
    return d;
  }
};

Node open_node(size_t bytes) {
  Node n;
  RC(VipOpenNic("/dev/via0", &n.nic), VIP_SUCCESS);
  RC(VipCreatePtag(n.nic, &n.tag), VIP_SUCCESS);
  n.mem = static_cast<uint8_t *>(host::alloc(bytes));
  n.bytes = bytes;
  VIP_MEM_ATTRIBUTES ma{n.tag, VIP_TRUE, VIP_TRUE};
  RC(VipRegisterMem(n.nic, n.mem, VIP_ULONG(bytes), &ma, &n.mh), VIP_SUCCESS);
  return n;
}

VIP_VI_HANDLE make_vi(Node &n, VIP_RELIABILITY_LEVEL level) {
  VIP_VI_ATTRIBUTES a{};
  a.ReliabilityLevel = level;
  a.MaxTransferSize = kMaxSize;
  a.Ptag = n.tag;
  a.EnableRdmaWrite = VIP_TRUE;
  a.EnableRdmaRead = level != VIP_SERVICE_UNRELIABLE ? VIP_TRUE : VIP_FALSE;
  VIP_VI_HANDLE vi = nullptr;
  RC(VipCreateVi(n.nic, &a, nullptr, nullptr, &vi), VIP_SUCCESS);
  return vi;
}

VIP_NET_ADDRESS *address(Node &n, const char *hostname, const char *disc) {
  return net_address(n.nic, hostname, disc);
}

// Rank 0 accepts on `disc`, rank 1 requests it (connection management goes
// through the same lossy network: the card delivers it reliably).
void connect_pair(Node &n, VIP_VI_HANDLE vi, const char *disc) {
  VIP_VI_ATTRIBUTES remote{};
  const char *me = rank_ == 0 ? "node0" : "node1";
  const char *other = rank_ == 0 ? "node1" : "node0";
  if (rank_ == 0) {
    VIP_NET_ADDRESS *local = address(n, me, disc);
    VIP_NET_ADDRESS *from = address(n, other, "");
    VIP_CONN_HANDLE conn = nullptr;
    RC(VipConnectWait(n.nic, local, VIP_INFINITE, from, &remote, &conn),
       VIP_SUCCESS);
    RC(VipConnectAccept(conn, vi), VIP_SUCCESS);
    std::free(local);
    std::free(from);
  } else {
    VIP_NET_ADDRESS *local = address(n, me, "");
    VIP_NET_ADDRESS *server = address(n, other, disc);
    RC(VipConnectRequest(vi, local, server, 5000, &remote), VIP_SUCCESS);
    std::free(local);
    std::free(server);
  }
}

VIP_VI_STATE state_of(VIP_VI_HANDLE vi) {
  VIP_VI_STATE s = VIP_STATE_ERROR;
  VIP_VI_ATTRIBUTES a;
  VIP_BOOLEAN se, re;
  RC(VipQueryVi(vi, &s, &a, &se, &re), VIP_SUCCESS);
  return s;
}

void one_segment(VIP_DESCRIPTOR *d, void *p, VIP_MEM_HANDLE h, uint32_t len) {
  d->CS.SegCount = 1;
  d->CS.Length = len;
  d->DS[0].Local.Data.Address = p;
  d->DS[0].Local.Handle = h;
  d->DS[0].Local.Length = len;
}

// Posts `d` on the send queue and waits for it (up to 10 s of virtual
// time: the retries give up far sooner); its status.
uint32_t send_and_wait(Node &n, VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d) {
  RC(VipPostSend(vi, d, n.mh), VIP_SUCCESS);
  VIP_DESCRIPTOR *got = nullptr;
  RC(VipSendWait(vi, 10000, &got), VIP_SUCCESS);
  CHECK(got == d);
  return got ? got->CS.Status : 0;
}

// A 4-byte word as a message (synchronisation), and its receive.
void send_word(Node &n, VIP_VI_HANDLE vi, uint32_t w) {
  auto *p = reinterpret_cast<uint32_t *>(n.take(4));
  *p = w;
  VIP_DESCRIPTOR *d = n.desc();
  one_segment(d, p, n.mh, 4);
  CHECK_EQ(send_and_wait(n, vi, d), VIP_STATUS_DONE);
}
VIP_DESCRIPTOR *post_word(Node &n, VIP_VI_HANDLE vi) {
  VIP_DESCRIPTOR *d = n.desc();
  one_segment(d, n.take(4), n.mh, 4);
  RC(VipPostRecv(vi, d, n.mh), VIP_SUCCESS);
  return d;
}
uint32_t wait_word(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *want) {
  VIP_DESCRIPTOR *d = nullptr;
  RC(VipRecvWait(vi, 10000, &d), VIP_SUCCESS);
  CHECK(d == want);
  if (!d)
    return 0;
  return received_word(d);
}

void print_counters() {
  std::printf("rank %u: %s: card: retransmitted %u, duplicates %u, "
              "dropped %u, broken %u\n",
              rank_, scenario, card_counter(VIAFW_BOX_STAT_RETRANSMITS),
              card_counter(VIAFW_BOX_STAT_DUPLICATES),
              card_counter(VIAFW_BOX_STAT_DROPPED),
              card_counter(VIAFW_BOX_STAT_BROKEN));
}

// ---- reliable-delivery, reliable-reception
// -------------------------------------------------

// Checks a received message: its number (immediate data), length and bytes.
void check_message(VIP_DESCRIPTOR *d, uint32_t m, const uint8_t *buf,
                   uint64_t &bytes) {
  uint32_t want =
      VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE;
  if (d->CS.Status != want || d->CS.ImmediateData != m ||
      d->CS.Length != size_of(m)) {
    fail(__LINE__, "message %u: status 0x%x, number %u, length %u", m,
         d->CS.Status, d->CS.ImmediateData, d->CS.Length);
    return;
  }
  for (uint32_t i = 0; i < size_of(m); ++i)
    if (buf[i] != pattern(m, i)) {
      fail(__LINE__, "message %u: byte %u is 0x%02x, not 0x%02x", m, i, buf[i],
           pattern(m, i));
      return;
    }
  bytes += size_of(m);
}

void run_reliable(VIP_RELIABILITY_LEVEL level) {
  Node n = open_node(kRound * kMaxSize + 4 * kMaxSize);
  VIP_VI_HANDLE vi = make_vi(n, level);
  if (rank_ == 0) {
    // kRound receive buffers, reposted as messages arrive; "go" words.
    VIP_DESCRIPTOR *recv[kRound];
    uint8_t *bufs = n.take(kRound * kMaxSize);
    for (uint32_t i = 0; i < kRound; ++i) {
      recv[i] = n.desc();
      one_segment(recv[i], bufs + i * kMaxSize, n.mh, kMaxSize);
      RC(VipPostRecv(vi, recv[i], n.mh), VIP_SUCCESS);
    }
    uint8_t *target = n.take(kTarget);
    std::memset(target, 0, kTarget);
    VIP_DESCRIPTOR *last = nullptr;
    connect_pair(n, vi, "loss");
    auto *where = reinterpret_cast<uint64_t *>(n.take(16));
    where[0] = reinterpret_cast<uintptr_t>(target);
    where[1] = n.mh;
    VIP_DESCRIPTOR *wd = n.desc();
    one_segment(wd, where, n.mh, 16);
    CHECK_EQ(send_and_wait(n, vi, wd), VIP_STATUS_DONE);
    uint64_t bytes = 0;
    uint32_t got = 0;
    for (uint32_t m = 0; m < kMessages; ++m) {
      VIP_DESCRIPTOR *d = nullptr;
      RC(VipRecvWait(vi, 10000, &d), VIP_SUCCESS);
      if (!d)
        break;
      CHECK(d == recv[m % kRound]);
      check_message(d, m, bufs + (m % kRound) * kMaxSize, bytes);
      ++got;
      if (m % kRound == kRound - 1) { // the round is in: repost, say go
        if (m + 1 < kMessages) {
          for (uint32_t i = 0; i < kRound; ++i) {
            std::memset(bufs + i * kMaxSize, 0, size_of(m - kRound + 1 + i));
            RC(VipPostRecv(vi, recv[i], n.mh), VIP_SUCCESS);
          }
        } else {
          last = post_word(n, vi); // for the word after the RDMA
        }
        send_word(n, vi, m + 1);
      }
    }
    CHECK(last != nullptr);
    CHECK_EQ(last ? wait_word(vi, last) : 0, 0x600DF00Du); // after the RDMA
    send_word(n, vi, 0xB1E); // rank 1 leaves once it has this
    bool same = true;
    for (uint32_t i = 0; i < kTarget; ++i)
      same &= target[i] == pattern(1000 + i / 2000, i);
    CHECK(same);
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
    std::printf(
        "rank 0: %s: %u messages, %llu bytes in order, RDMA target %s\n",
        scenario, got, (unsigned long long)bytes, same ? "right" : "wrong");
  } else {
    uint8_t *src = n.take(kMaxSize);
    auto *where = reinterpret_cast<uint64_t *>(n.take(16));
    VIP_DESCRIPTOR *wd = n.desc();
    one_segment(wd, where, n.mh, 16);
    RC(VipPostRecv(vi, wd, n.mh), VIP_SUCCESS);
    VIP_DESCRIPTOR *go = n.desc();
    one_segment(go, n.take(4), n.mh, 4);
    connect_pair(n, vi, "loss");
    VIP_DESCRIPTOR *got = nullptr;
    RC(VipRecvWait(vi, 10000, &got), VIP_SUCCESS);
    CHECK(got == wd);
    uint32_t sent = 0, bad = 0;
    VIP_DESCRIPTOR *d = n.desc();
    for (uint32_t m = 0; m < kMessages; ++m) {
      if (m % kRound == 0 && m) { // wait for "go"
        CHECK_EQ(wait_word(vi, go), m);
      }
      if (m % kRound == kRound - 1) {
        go->CS.Status = 0;
        RC(VipPostRecv(vi, go, n.mh), VIP_SUCCESS);
      }
      for (uint32_t i = 0; i < size_of(m); ++i)
        src[i] = pattern(m, i);
      std::memset(d, 0, sizeof *d);
      one_segment(d, src, n.mh, size_of(m));
      d->CS.Control = VIP_CONTROL_OP_SENDRECV | VIP_CONTROL_IMMEDIATE;
      d->CS.ImmediateData = m;
      uint32_t s = send_and_wait(n, vi, d);
      if (s != VIP_STATUS_DONE) {
        fail(__LINE__, "send %u: status 0x%x", m, s);
        ++bad;
        break;
      }
      ++sent;
    }
    CHECK_EQ(wait_word(vi, go), kMessages);
    // RDMA writes of 2000 bytes each, ten of them, across the target, the
    // source filled per write; then read the whole target back.
    uint8_t *back = n.take(kTarget);
    VIP_DESCRIPTOR *bye = post_word(n, vi);
    uint32_t rdma_bad = 0;
    for (uint32_t w = 0; w < kTarget / 2000 && !bad; ++w) {
      for (uint32_t i = 0; i < 2000; ++i)
        src[i] = pattern(1000 + w, w * 2000 + i);
      std::memset(d, 0, sizeof *d);
      d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
      d->CS.SegCount = 2;
      d->CS.Length = 2000;
      d->DS[0].Remote.Data.AddressBits = where[0] + w * 2000;
      d->DS[0].Remote.Handle = VIP_MEM_HANDLE(where[1]);
      d->DS[1].Local.Data.Address = src;
      d->DS[1].Local.Handle = n.mh;
      d->DS[1].Local.Length = 2000;
      uint32_t s = send_and_wait(n, vi, d);
      if (s != (VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE)) {
        fail(__LINE__, "RDMA write %u: status 0x%x", w, s);
        ++rdma_bad;
      }
    }
    std::memset(d, 0, sizeof *d);
    d->CS.Control = VIP_CONTROL_OP_RDMAREAD;
    d->CS.SegCount = 2;
    d->CS.Length = kTarget;
    d->DS[0].Remote.Data.AddressBits = where[0];
    d->DS[0].Remote.Handle = VIP_MEM_HANDLE(where[1]);
    d->DS[1].Local.Data.Address = back;
    d->DS[1].Local.Handle = n.mh;
    d->DS[1].Local.Length = kTarget;
    uint32_t s = send_and_wait(n, vi, d);
    CHECK_EQ(s, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ);
    bool same = true;
    for (uint32_t i = 0; i < kTarget; ++i)
      same &= back[i] == pattern(1000 + i / 2000, i);
    CHECK(same);
    send_word(n, vi, 0x600DF00D);
    CHECK_EQ(wait_word(vi, bye), 0xB1Eu);
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
    std::printf("rank 1: %s: %u sends completed, %u failed, RDMA writes "
                "failed %u, RDMA read %s\n",
                scenario, sent, bad, rdma_bad, same ? "right" : "wrong");
  }
  print_counters();
  // The last word's sender (rank 0) disconnects once it is acknowledged;
  // rank 1 does not: its disconnect could overtake an ACK of that word that
  // was lost and is being asked for again, flushing rank 0's send.
  if (rank_ == 0)
    RC(VipDisconnect(vi), VIP_SUCCESS);
}

// ---- unreliable
// ------------------------------------------------------------------------------

void run_unreliable() {
  Node n = open_node(kMessages * 8192 + 4 * kMaxSize);
  VIP_VI_HANDLE u = make_vi(n, VIP_SERVICE_UNRELIABLE);
  VIP_VI_HANDLE r = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  // Sizes up to 7340 bytes (6 fragments): every message has a receive.
  auto size = [](uint32_t m) {
    uint32_t s = size_of(m);
    return s > 8192 ? 7340u : s;
  };
  if (rank_ == 0) {
    VIP_DESCRIPTOR *recv[kMessages];
    uint8_t *bufs = n.take(kMessages * 8192);
    std::memset(bufs, 0, kMessages * 8192);
    for (uint32_t i = 0; i < kMessages; ++i) {
      recv[i] = n.desc();
      one_segment(recv[i], bufs + i * 8192, n.mh, 8192);
      RC(VipPostRecv(u, recv[i], n.mh), VIP_SUCCESS);
    }
    VIP_DESCRIPTOR *done = post_word(n, r);
    connect_pair(n, u, "data");
    connect_pair(n, r, "done");
    CHECK_EQ(wait_word(r, done), kMessages);
    // Every frame sent before "done" has been handled: take what came.
    uint32_t got = 0, last = 0;
    bool first = true;
    for (;;) {
      VIP_DESCRIPTOR *d = nullptr;
      if (VipRecvDone(u, &d) != VIP_SUCCESS)
        break;
      CHECK(d == recv[got]);
      uint32_t m = d->CS.ImmediateData;
      const uint8_t *buf = bufs + got * 8192;
      uint32_t want =
          VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE;
      if (d->CS.Status != want || m >= kMessages || d->CS.Length != size(m) ||
          (!first && m <= last)) {
        fail(__LINE__, "receive %u: status 0x%x, number %u, length %u", got,
             d->CS.Status, m, d->CS.Length);
      } else {
        for (uint32_t i = 0; i < size(m); ++i)
          if (buf[i] != pattern(m, i)) {
            fail(__LINE__, "message %u: byte %u is 0x%02x, not 0x%02x", m, i,
                 buf[i], pattern(m, i));
            break;
          }
      }
      first = false;
      last = m;
      ++got;
    }
    std::printf("rank 0: %s: %u of %u messages arrived, each whole\n", scenario,
                got, kMessages);
    send_word(n, r, 0xB1E); // rank 1 leaves once it has this
  } else {
    uint8_t *src = n.take(8192);
    VIP_DESCRIPTOR *bye = post_word(n, r);
    connect_pair(n, u, "data");
    connect_pair(n, r, "done");
    VIP_DESCRIPTOR *d = n.desc();
    for (uint32_t m = 0; m < kMessages; ++m) {
      for (uint32_t i = 0; i < size(m); ++i)
        src[i] = pattern(m, i);
      std::memset(d, 0, sizeof *d);
      one_segment(d, src, n.mh, size(m));
      d->CS.Control = VIP_CONTROL_OP_SENDRECV | VIP_CONTROL_IMMEDIATE;
      d->CS.ImmediateData = m;
      // An unreliable send completes once its frames have left.
      CHECK_EQ(send_and_wait(n, u, d), VIP_STATUS_DONE);
    }
    send_word(n, r, kMessages);
    CHECK_EQ(wait_word(r, bye), 0xB1Eu);
  }
  print_counters();
  if (rank_ == 0) { // as in run_reliable
    RC(VipDisconnect(u), VIP_SUCCESS);
    RC(VipDisconnect(r), VIP_SUCCESS);
  }
}

// ---- unreachable
// -----------------------------------------------------------------------------

int errors_seen = 0;
VIP_ERROR_DESCRIPTOR last_error{};
void on_error(VIP_PVOID context, VIP_ERROR_DESCRIPTOR *e) {
  ++*static_cast<int *>(context);
  last_error = *e;
}

// Makes the card forget every VI, region and CQ without telling anyone, as
// a card that restarted does: a HELLO of its own, with an event ring of its
// own (the library's is left alone; this process makes no VIPL call after).
void restart_card() {
  auto *ring = static_cast<uint8_t *>(host::alloc(64 * VIAFW_EVENT_BYTES));
  auto *c = static_cast<viafw_command *>(host::alloc(VIAFW_COMMAND_BYTES));
  std::memset(c, 0, VIAFW_COMMAND_BYTES);
  c->op = VIAFW_CMD_HELLO;
  c->seq = 0x5EED;
  c->arg[0] = host::bus_address(ring);
  c->arg[1] = 64;
  host::doorbell(VIAFW_FIFO_COMMAND, host::bus_address(c));
  host::wait_word(&c->done, ~0u, 0x5EED);
  CHECK_EQ(c->result, VIAFW_R_OK);
}

void run_unreachable() {
  Node n = open_node(1 << 16);
  RC(VipErrorCallback(n.nic, &errors_seen, on_error), VIP_SUCCESS);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_RECEPTION);
  if (rank_ == 0) {
    VIP_DESCRIPTOR *bye = post_word(n, vi);
    connect_pair(n, vi, "gone");
    CHECK_EQ(wait_word(vi, bye), 0xB1Eu);
    host::compute(1'000'000'000ull); // 1 ms: the peer's card restarts
    uint8_t *buf = n.take(5000);
    VIP_DESCRIPTOR *d = n.desc();
    one_segment(d, buf, n.mh, 5000);
    double t0 = host::now_us();
    uint32_t s = send_and_wait(n, vi, d);
    double waited_ms = (host::now_us() - t0) / 1000;
    CHECK_EQ(s, VIP_STATUS_DONE | VIP_STATUS_TRANSPORT_ERROR);
    // The error event follows the completion into the event ring: a call
    // that polls a little later sees it.
    host::compute(100'000'000ull); // 100 us
    VIP_DESCRIPTOR *none = nullptr;
    VipRecvDone(vi, &none);
    CHECK(state_of(vi) == VIP_STATE_ERROR);
    CHECK_EQ(errors_seen, 1);
    CHECK_EQ(last_error.ResourceCode, VIP_RESOURCE_VI);
    CHECK_EQ(last_error.ErrorCode, VIP_ERROR_CONN_LOST);
    // In the error state, a send is flushed at once.
    VIP_DESCRIPTOR *d2 = n.desc();
    one_segment(d2, buf, n.mh, 4);
    CHECK_EQ(send_and_wait(n, vi, d2),
             VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR);
    std::printf("rank 0: %s: status 0x%x after %.1f ms, VI state %s, "
                "%d error callback\n",
                scenario, s, waited_ms,
                state_of(vi) == VIP_STATE_ERROR ? "error" : "not error",
                errors_seen);
    print_counters();
    RC(VipDisconnect(vi), VIP_SUCCESS);
    CHECK(state_of(vi) == VIP_STATE_IDLE);
  } else {
    connect_pair(n, vi, "gone");
    send_word(n, vi, 0xB1E);
    restart_card();
    std::printf("rank 1: %s: card restarted\n", scenario);
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: vipl_loss_prog SCENARIO\n");
    return 2;
  }
  scenario = argv[1];
  rank_ = host::rank();
  std::string s = scenario;
  if (s == "reliable-delivery")
    run_reliable(VIP_SERVICE_RELIABLE_DELIVERY);
  else if (s == "reliable-reception")
    run_reliable(VIP_SERVICE_RELIABLE_RECEPTION);
  else if (s == "unreliable")
    run_unreliable();
  else if (s == "unreachable")
    run_unreachable();
  else {
    std::fprintf(stderr, "unknown scenario %s\n", scenario);
    return 2;
  }
  return verdict();
}
