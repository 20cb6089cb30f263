// VIPL between two nodes (the via firmware on comet): `vipl_pair_prog
// SCENARIO`, run on 2 nodes. Rank 0 is the server (or the first peer), rank 1
// the client. Every rank prints "rank R: SCENARIO: ok" when all its checks
// held, or the failed checks and "rank R: SCENARIO: N failures" (exit 1).
//
// Scenarios:
//   connect      connect/accept, attributes, states, the remote address, a
//                message between buffers of the programs' own (malloc)
//   reject       VIP_REJECT, then a connection that is accepted
//   timeout      no listener: VIP_TIMEOUT at the deadline; an accept after
//                the requester gave up returns VIP_TIMEOUT; the queued
//                request is gone; a connection afterwards works
//   peer         peer connections: one side first (queued request), both at
//                once (crossing requests), a timeout, then a retry after it
//   transfer-unreliable, transfer-delivery, transfer-reception
//                messages of 0..65536 bytes in 1..16 segments each side,
//                immediate data, guard bytes, Done and Wait; the sums of
//                all bytes sent and received are printed
//   cq           the same over completion queues, two VIs on one CQ
//   waits        Wait timeouts while the peer is late, Done polling
//   disconnect   the peer's VI goes idle, its posted receives are flushed
//   errors       refused calls, each explained on stderr (a VI, CQ or
//                memory handle that names nothing, a send on an idle VI,
//                destroying a connected VI or a CQ in use, a second FM VI
//                the card refuses); descriptor errors: bad handle, other
//                Ptag, past the region, too many segments, reserved bits,
//                too long, receive too small (unreliable: the receive
//                fails; reliable: both VIs go to the error state, the error
//                callback runs and calls VIPL itself), then disconnect and
//                reconnect
//   rdma         RDMA write (with immediate data), RDMA read, the
//                protection errors
#include <nicemu/host.hpp>
#include <nicemu/vipl.h>

#include "vipl_checks.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace host = nicemu::host;

namespace {

constexpr uint64_t kMs = 1'000'000'000ull;

// ---- One node's VIPL setup
// ---------------------------------------------------

struct Node {
  VIP_NIC_HANDLE nic = nullptr;
  VIP_PROTECTION_HANDLE tag = nullptr;
  uint8_t *mem = nullptr;
  size_t bytes = 0, used = 0;
  VIP_MEM_HANDLE mh = 0;

  // Registered memory, `align`-aligned plus `skew` bytes.
  uint8_t *take(size_t n, size_t align = 64, size_t skew = 0) {
    used = (used + align - 1) / align * align + skew;
    uint8_t *p = mem + used;
    used += n;
    if (used > bytes) {
      std::printf("rank %u: out of test memory\n", rank_);
      std::exit(2);
    }
    return p;
  }
  VIP_DESCRIPTOR *desc() {
    auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(take(32 + 16 * 17));
    std::memset(d, 0, 32 + 16 * 17);
    return d;
  }
};

Node open_node(size_t bytes, bool rdma = false) {
  Node n;
  RC(VipOpenNic("/dev/via0", &n.nic), VIP_SUCCESS);
  RC(VipCreatePtag(n.nic, &n.tag), VIP_SUCCESS);
  n.mem = static_cast<uint8_t *>(host::alloc(bytes));
  n.bytes = bytes;
  VIP_MEM_ATTRIBUTES ma{n.tag, rdma ? VIP_TRUE : VIP_FALSE,
                        rdma ? VIP_TRUE : VIP_FALSE};
  RC(VipRegisterMem(n.nic, n.mem, VIP_ULONG(bytes), &ma, &n.mh), VIP_SUCCESS);
  return n;
}

VIP_VI_ATTRIBUTES attributes(const Node &n, VIP_RELIABILITY_LEVEL level,
                             bool rdma = false) {
  VIP_VI_ATTRIBUTES a{};
  a.ReliabilityLevel = level;
  a.MaxTransferSize = 65536;
  a.Ptag = n.tag;
  a.EnableRdmaWrite = rdma ? VIP_TRUE : VIP_FALSE;
  a.EnableRdmaRead =
      rdma && level != VIP_SERVICE_UNRELIABLE ? VIP_TRUE : VIP_FALSE;
  return a;
}

VIP_VI_HANDLE make_vi(Node &n, VIP_RELIABILITY_LEVEL level, bool rdma = false,
                      VIP_CQ_HANDLE scq = nullptr,
                      VIP_CQ_HANDLE rcq = nullptr) {
  VIP_VI_ATTRIBUTES a = attributes(n, level, rdma);
  VIP_VI_HANDLE vi = nullptr;
  RC(VipCreateVi(n.nic, &a, scq, rcq, &vi), VIP_SUCCESS);
  return vi;
}

// A network address (malloc'd, as programs do): a host and a discriminator.
VIP_NET_ADDRESS *address(Node &n, const char *hostname, const char *disc) {
  return net_address(n.nic, hostname, disc);
}

const char *me() {
  return rank_ == 0 ? "node0" : "node1";
}
const char *other() {
  return rank_ == 0 ? "node1" : "node0";
}

// Rank 0 accepts on `disc`, rank 1 requests it.
void connect_pair(Node &n, VIP_VI_HANDLE vi, const char *disc,
                  VIP_VI_ATTRIBUTES *remote_out = nullptr) {
  VIP_VI_ATTRIBUTES remote{};
  if (rank_ == 0) {
    VIP_NET_ADDRESS *local = address(n, me(), disc);
    VIP_NET_ADDRESS *remote_addr = address(n, other(), "");
    VIP_CONN_HANDLE conn = nullptr;
    RC(VipConnectWait(n.nic, local, VIP_INFINITE, remote_addr, &remote, &conn),
       VIP_SUCCESS);
    RC(VipConnectAccept(conn, vi), VIP_SUCCESS);
    std::free(local);
    std::free(remote_addr);
  } else {
    VIP_NET_ADDRESS *local = address(n, me(), "");
    VIP_NET_ADDRESS *server = address(n, other(), disc);
    RC(VipConnectRequest(vi, local, server, 5000, &remote), VIP_SUCCESS);
    std::free(local);
    std::free(server);
  }
  if (remote_out)
    *remote_out = remote;
}

VIP_VI_STATE state_of(VIP_VI_HANDLE vi) {
  VIP_VI_STATE s = VIP_STATE_ERROR;
  VIP_VI_ATTRIBUTES a;
  VIP_BOOLEAN se, re;
  RC(VipQueryVi(vi, &s, &a, &se, &re), VIP_SUCCESS);
  return s;
}

// ---- Descriptors
// ------------------------------------------------------------------

// Segment i lies after the control segment, past DS[1] for i >= 2 (in the
// memory laid out after the descriptor), so it is reached by address.
void set_segment(VIP_DESCRIPTOR *d, int i, void *p, VIP_MEM_HANDLE h,
                 uint32_t len) {
  auto *bytes = reinterpret_cast<uint8_t *>(d) + sizeof(VIP_CONTROL_SEGMENT) +
                size_t(i) * sizeof(VIP_DESCRIPTOR_SEGMENT);
  VIP_DATA_SEGMENT seg{};
  seg.Data.Address = p;
  seg.Handle = h;
  seg.Length = len;
  std::memcpy(bytes, &seg, sizeof seg);
}

// A send or receive of one buffer.
VIP_DESCRIPTOR *simple(Node &n, void *p, uint32_t len) {
  VIP_DESCRIPTOR *d = n.desc();
  d->CS.SegCount = 1;
  d->CS.Length = len;
  set_segment(d, 0, p, n.mh, len);
  return d;
}

VIP_DESCRIPTOR *wait_send(VIP_VI_HANDLE vi) {
  VIP_DESCRIPTOR *d = nullptr;
  RC(VipSendWait(vi, 5000, &d), VIP_SUCCESS);
  return d;
}
VIP_DESCRIPTOR *wait_recv(VIP_VI_HANDLE vi) {
  VIP_DESCRIPTOR *d = nullptr;
  RC(VipRecvWait(vi, 5000, &d), VIP_SUCCESS);
  return d;
}

// A word sent as a message and received as one (synchronisation).
void send_word(Node &n, VIP_VI_HANDLE vi, uint32_t w) {
  auto *p = reinterpret_cast<uint32_t *>(n.take(4));
  *p = w;
  RC(VipPostSend(vi, simple(n, p, 4), n.mh), VIP_SUCCESS);
  VIP_DESCRIPTOR *d = wait_send(vi);
  if (!d || d->CS.Status != VIP_STATUS_DONE)
    fail(__LINE__, "sending word 0x%x: status 0x%x", w, d ? d->CS.Status : 0);
}
VIP_DESCRIPTOR *post_word(Node &n, VIP_VI_HANDLE vi) {
  auto *p = n.take(4);
  VIP_DESCRIPTOR *d = simple(n, p, 4);
  RC(VipPostRecv(vi, d, n.mh), VIP_SUCCESS);
  return d;
}
uint32_t word_of(VIP_DESCRIPTOR *d) {
  if (d && d->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE))
    fail(__LINE__, "receiving a word: status 0x%x", d->CS.Status);
  uint32_t w;
  std::memcpy(&w, d->DS[0].Local.Data.Address, 4);
  return w;
}

uint8_t pattern(uint32_t msg, uint32_t i) {
  return uint8_t(msg * 131 + i * 7 + (i >> 8) + (i >> 16));
}

uint32_t fnv(uint32_t h, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 16777619u;
  return h;
}

// `total` bytes in `n` pieces of nearly equal size (some may be 0).
std::vector<uint32_t> split(uint32_t total, uint32_t n) {
  std::vector<uint32_t> parts(n, total / n);
  for (uint32_t i = 0; i < total % n; ++i)
    ++parts[i];
  return parts;
}

// ---- connect
// ----------------------------------------------------------------------

// Memory of the program's own (not from nicemu::host::alloc), registered:
// a descriptor and a buffer after it.
constexpr uint32_t kOwnBytes = 5000;
struct OwnMemory {
  uint8_t *base = nullptr, *data = nullptr;
  VIP_MEM_HANDLE handle = 0;
  explicit OwnMemory(Node &n) {
    base = static_cast<uint8_t *>(std::aligned_alloc(64, 8192));
    std::memset(base, 0, 8192);
    data = base + 256;
    VIP_MEM_ATTRIBUTES ma{n.tag, VIP_FALSE, VIP_FALSE};
    RC(VipRegisterMem(n.nic, base, 8192, &ma, &handle), VIP_SUCCESS);
  }
  ~OwnMemory() { std::free(base); } // its pages stay pinned: that is fine
  OwnMemory(const OwnMemory &) = delete;
  OwnMemory &operator=(const OwnMemory &) = delete;
  VIP_DESCRIPTOR *descriptor(uint32_t len) {
    auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(base);
    d->CS.SegCount = 1;
    d->CS.Length = len;
    set_segment(d, 0, data, handle, len);
    return d;
  }
};

void run_connect() {
  Node n = open_node(1 << 16);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  CHECK(state_of(vi) == VIP_STATE_IDLE);
  VIP_VI_ATTRIBUTES remote{};
  if (rank_ == 0) {
    VIP_NET_ADDRESS *local = address(n, me(), "svc");
    auto *from = static_cast<VIP_NET_ADDRESS *>(
        std::malloc(sizeof(VIP_NET_ADDRESS) + 32));
    VIP_CONN_HANDLE conn = nullptr;
    RC(VipConnectWait(n.nic, local, VIP_INFINITE, from, &remote, &conn),
       VIP_SUCCESS);
    CHECK(from->HostAddressLen == 6 && from->HostAddress[5] == 1);
    char name[32];
    VIP_ULONG len = sizeof name;
    RC(VipNSGetHostByAddr(n.nic, from, name, &len), VIP_SUCCESS);
    CHECK(std::strcmp(name, "node1") == 0);
    CHECK(remote.ReliabilityLevel == VIP_SERVICE_RELIABLE_DELIVERY);
    CHECK(remote.MaxTransferSize == 65536);
    RC(VipConnectAccept(conn, vi), VIP_SUCCESS);
    RC(VipConnectAccept(conn, vi), VIP_INVALID_PARAMETER); // used up
    VIP_DESCRIPTOR *d = post_word(n, vi);
    // Then 5000 bytes into memory of the program's own (pinned), the
    // descriptor there too.
    OwnMemory own(n);
    VIP_DESCRIPTOR *od = own.descriptor(kOwnBytes);
    RC(VipPostRecv(vi, od, own.handle), VIP_SUCCESS);
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
    d = wait_recv(vi);
    CHECK(d && word_of(d) == 0x600DF00D);
    d = wait_recv(vi);
    CHECK(d == od);
    CHECK_EQ(od->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE);
    CHECK_EQ(od->CS.Length, kOwnBytes);
    bool same = true;
    for (uint32_t i = 0; i < kOwnBytes; ++i)
      same &= own.data[i] == pattern(5, i);
    CHECK(same);
    // Connected VIs are not destroyed, nor connected again.
    RC(VipDestroyVi(vi), VIP_INVALID_STATE);
    RC(VipConnectWait(n.nic, local, 0, from, &remote, &conn), VIP_TIMEOUT);
    std::free(local);
    std::free(from);
  } else {
    VIP_NET_ADDRESS *local = address(n, me(), "client");
    VIP_NET_ADDRESS *server = address(n, other(), "svc");
    RC(VipConnectRequest(vi, local, server, 5000, &remote), VIP_SUCCESS);
    CHECK(remote.ReliabilityLevel == VIP_SERVICE_RELIABLE_DELIVERY);
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
    RC(VipConnectRequest(vi, local, server, 10, &remote), VIP_INVALID_STATE);
    host::compute(100'000'000); // the server posts its receive first
    send_word(n, vi, 0x600DF00D);
    OwnMemory own(n);
    for (uint32_t i = 0; i < kOwnBytes; ++i)
      own.data[i] = pattern(5, i);
    VIP_DESCRIPTOR *od = own.descriptor(kOwnBytes);
    RC(VipPostSend(vi, od, own.handle), VIP_SUCCESS);
    VIP_DESCRIPTOR *d = wait_send(vi);
    CHECK(d == od);
    CHECK_EQ(od->CS.Status, VIP_STATUS_DONE);
    std::free(local);
    std::free(server);
  }
  RC(VipDisconnect(vi), VIP_SUCCESS);
  CHECK(state_of(vi) == VIP_STATE_IDLE);
  RC(VipDestroyVi(vi), VIP_SUCCESS);
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- reject
// ----------------------------------------------------------------------------

void run_reject() {
  Node n = open_node(1 << 16);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  if (rank_ == 0) {
    VIP_NET_ADDRESS *local = address(n, me(), "svc");
    VIP_VI_ATTRIBUTES remote;
    VIP_CONN_HANDLE conn = nullptr;
    RC(VipConnectWait(n.nic, local, VIP_INFINITE, nullptr, &remote, &conn),
       VIP_SUCCESS);
    RC(VipConnectReject(conn), VIP_SUCCESS);
    RC(VipConnectReject(conn), VIP_INVALID_PARAMETER);
    // The second request: a VI of another level is refused, then the right
    // one accepts.
    RC(VipConnectWait(n.nic, local, VIP_INFINITE, nullptr, &remote, &conn),
       VIP_SUCCESS);
    VIP_VI_HANDLE unreliable = make_vi(n, VIP_SERVICE_UNRELIABLE);
    RC(VipConnectAccept(conn, unreliable), VIP_INVALID_RELIABILITY_LEVEL);
    RC(VipConnectAccept(conn, vi), VIP_SUCCESS);
    CHECK(state_of(unreliable) == VIP_STATE_IDLE);
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
    RC(VipDestroyVi(unreliable), VIP_SUCCESS);
    std::free(local);
  } else {
    VIP_NET_ADDRESS *local = address(n, me(), "");
    VIP_NET_ADDRESS *server = address(n, other(), "svc");
    RC(VipConnectRequest(vi, local, server, 5000, nullptr), VIP_REJECT);
    CHECK(state_of(vi) == VIP_STATE_IDLE);
    RC(VipConnectRequest(vi, local, server, 5000, nullptr), VIP_SUCCESS);
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
    std::free(local);
    std::free(server);
  }
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- timeout
// --------------------------------------------------------------------------------

void run_timeout() {
  Node n = open_node(1 << 16);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  if (rank_ == 0) {
    VIP_VI_ATTRIBUTES remote;
    VIP_CONN_HANDLE conn = nullptr;
    // Nobody waits on "nobody": rank 1 times out. Its request was
    // withdrawn, so a wait on it long after finds nothing.
    host::compute(30 * kMs);
    VIP_NET_ADDRESS *nobody = address(n, me(), "nobody");
    RC(VipConnectWait(n.nic, nobody, 1, nullptr, &remote, &conn), VIP_TIMEOUT);
    // "late": taken at once, accepted after the requester gave up.
    VIP_NET_ADDRESS *late = address(n, me(), "late");
    RC(VipConnectWait(n.nic, late, VIP_INFINITE, nullptr, &remote, &conn),
       VIP_SUCCESS);
    host::compute(20 * kMs);
    RC(VipConnectAccept(conn, vi), VIP_TIMEOUT);
    CHECK(state_of(vi) == VIP_STATE_IDLE);
    // Then a connection that works.
    connect_pair(n, vi, "fine");
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
    std::free(nobody);
    std::free(late);
  } else {
    VIP_NET_ADDRESS *local = address(n, me(), "");
    VIP_NET_ADDRESS *nobody = address(n, other(), "nobody");
    uint64_t t0 = host::now_ps();
    RC(VipConnectRequest(vi, local, nobody, 10, nullptr), VIP_TIMEOUT);
    uint64_t t1 = host::now_ps();
    // The deadline is 10 ms after the call; the call returns then, after
    // sending the withdraw (one command, about 12 us).
    if (t1 - t0 < 10 * kMs || t1 - t0 > 10 * kMs + 50'000'000)
      fail(__LINE__, "the request took %llu ps", (unsigned long long)(t1 - t0));
    CHECK(state_of(vi) == VIP_STATE_IDLE);
    VIP_NET_ADDRESS *late = address(n, other(), "late");
    host::compute(40 * kMs);
    RC(VipConnectRequest(vi, local, late, 10, nullptr), VIP_TIMEOUT);
    CHECK(state_of(vi) == VIP_STATE_IDLE);
    host::compute(30 * kMs);
    connect_pair(n, vi, "fine");
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
    std::free(local);
    std::free(nobody);
    std::free(late);
  }
  // Both ends agree: a word goes through (sent once rank 1 has surely
  // posted its receive: a reliable VI breaks on a message that finds none).
  if (rank_ == 0) {
    VIP_DESCRIPTOR *d = post_word(n, vi);
    host::compute(1 * kMs);
    send_word(n, vi, 1);
    d = wait_recv(vi);
    CHECK(d && word_of(d) == 2);
  } else {
    VIP_DESCRIPTOR *d = post_word(n, vi);
    d = wait_recv(vi);
    CHECK(d && word_of(d) == 1);
    send_word(n, vi, 2);
  }
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- peer
// ---------------------------------------------------------------------------------------

void exchange(Node &n, VIP_VI_HANDLE vi, uint32_t tag) {
  VIP_DESCRIPTOR *d = post_word(n, vi);
  host::compute(1 * kMs); // both have posted
  send_word(n, vi, tag + rank_);
  d = wait_recv(vi);
  CHECK(d && word_of(d) == tag + (1 - rank_));
}

void run_peer() {
  Node n = open_node(1 << 16);
  VIP_VI_HANDLE a = make_vi(n, VIP_SERVICE_RELIABLE_RECEPTION);
  VIP_VI_HANDLE b = make_vi(n, VIP_SERVICE_RELIABLE_RECEPTION);
  VIP_VI_HANDLE c = make_vi(n, VIP_SERVICE_RELIABLE_RECEPTION);
  VIP_NET_ADDRESS *la = address(n, me(), "pa"), *ra = address(n, other(), "pa");
  VIP_NET_ADDRESS *lb = address(n, me(), "pb"), *rb = address(n, other(), "pb");
  VIP_VI_ATTRIBUTES remote{};

  // 1. Rank 0 asks first; rank 1 asks 2 ms later and finds its request.
  if (rank_ == 1)
    host::compute(2 * kMs);
  RC(VipConnectPeerRequest(a, la, ra, 1000), VIP_SUCCESS);
  RC(VipConnectPeerRequest(a, la, ra, 1000), VIP_INVALID_STATE);
  if (rank_ == 0) {
    VIP_RETURN r;
    int polls = 0;
    while ((r = VipConnectPeerDone(a, &remote)) == VIP_NOT_DONE)
      ++polls;
    RC(r, VIP_SUCCESS);
    CHECK(polls > 0);
  } else {
    RC(VipConnectPeerWait(a, &remote), VIP_SUCCESS);
  }
  CHECK(remote.ReliabilityLevel == VIP_SERVICE_RELIABLE_RECEPTION);
  CHECK(state_of(a) == VIP_STATE_CONNECTED);
  RC(VipConnectPeerDone(a, &remote), VIP_INVALID_STATE); // reported already
  exchange(n, a, 100);

  // 2. Both at once: the requests cross.
  host::compute(5 * kMs);
  RC(VipConnectPeerRequest(b, lb, rb, VIP_INFINITE), VIP_SUCCESS);
  RC(VipConnectPeerWait(b, &remote), VIP_SUCCESS);
  CHECK(state_of(b) == VIP_STATE_CONNECTED);
  exchange(n, b, 200);

  // 3. Rank 0 asks alone on "pc" and times out at its deadline; rank 1
  // asks long after, gets bound to the request rank 0 gave up, is told so
  // and waits on; rank 0 asks again: they connect.
  VIP_NET_ADDRESS *lc = address(n, me(), "pc"), *rc = address(n, other(), "pc");
  host::compute(5 * kMs);
  if (rank_ == 0) {
    uint64_t t0 = host::now_ps();
    RC(VipConnectPeerRequest(c, lc, rc, 5), VIP_SUCCESS);
    RC(VipConnectPeerWait(c, &remote), VIP_TIMEOUT);
    uint64_t t1 = host::now_ps();
    CHECK(t1 - t0 >= 5 * kMs && t1 - t0 < 5 * kMs + 5'000'000);
    CHECK(state_of(c) == VIP_STATE_IDLE);
    host::compute(20 * kMs);
    RC(VipConnectPeerRequest(c, lc, rc, 1000), VIP_SUCCESS);
    RC(VipConnectPeerWait(c, &remote), VIP_SUCCESS);
  } else {
    host::compute(15 * kMs);
    RC(VipConnectPeerRequest(c, lc, rc, 1000), VIP_SUCCESS);
    RC(VipConnectPeerWait(c, &remote), VIP_SUCCESS);
  }
  CHECK(state_of(c) == VIP_STATE_CONNECTED);
  exchange(n, c, 300);
  for (VIP_NET_ADDRESS *p : {la, ra, lb, rb, lc, rc})
    std::free(p);
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- transfer and cq
// ---------------------------------------------------------------------------

const uint32_t kSizes[] = {0,    1,    3,    4,     5,     63,   64,
                           65,   1467, 1468, 1469,  2936,  2937, 4095,
                           4096, 4097, 9999, 32768, 65535, 65536};
constexpr uint32_t kPerRound = 16; // one per segment count 1..16
// Done loops compute a little between polls (as programs do), so that a
// long wait is not a million round trips to the emulator.
constexpr uint64_t kPollGap = 20'000'000; // 20 us

struct Piece {
  uint8_t *p;
  uint32_t len;
};

// Receives of one round: descriptors and their pieces, between guards.
struct Posted {
  VIP_DESCRIPTOR *d;
  std::vector<Piece> pieces;
  uint32_t msg, size;
};

constexpr uint32_t kGuard = 16;
constexpr uint8_t kGuardByte = 0xA5;

Posted post_receive(Node &n, VIP_VI_HANDLE vi, uint32_t msg, uint32_t size,
                    uint32_t segs, uint8_t *&area) {
  Posted r;
  r.msg = msg;
  r.size = size;
  r.d = n.desc();
  r.d->CS.SegCount = uint16_t(segs);
  std::vector<uint32_t> parts = split(size, segs);
  for (uint32_t i = 0; i < segs; ++i) {
    // An odd place: guard, the piece at a skew of 0..3, guard.
    area += (i * 3 + msg) % 4;
    std::memset(area, kGuardByte, kGuard + parts[i] + kGuard);
    uint8_t *p = area + kGuard;
    set_segment(r.d, int(i), p, n.mh, parts[i]);
    r.pieces.push_back({p, parts[i]});
    area += kGuard + parts[i] + kGuard;
  }
  RC(VipPostRecv(vi, r.d, n.mh), VIP_SUCCESS);
  return r;
}

// Checks a completed receive; adds its bytes to `sum`.
void check_receive(const Posted &r, uint32_t &sum) {
  VIP_DESCRIPTOR *d = r.d;
  bool imm = r.msg % 2 == 1;
  uint32_t want = VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE |
                  (imm ? VIP_STATUS_IMMEDIATE : 0u);
  if (d->CS.Status != want)
    fail(__LINE__, "message %u (%u bytes): status 0x%x, want 0x%x", r.msg,
         r.size, d->CS.Status, want);
  if (d->CS.Length != r.size)
    fail(__LINE__, "message %u: length %u, want %u", r.msg, d->CS.Length,
         r.size);
  if (imm && d->CS.ImmediateData != (0xC0DE0000u | r.msg))
    fail(__LINE__, "message %u: immediate data 0x%x", r.msg,
         d->CS.ImmediateData);
  uint32_t at = 0;
  for (const Piece &p : r.pieces) {
    for (uint32_t g = 1; g <= kGuard; ++g)
      if (p.p[-int(g)] != kGuardByte || p.p[p.len + g - 1] != kGuardByte) {
        fail(__LINE__, "message %u: a guard byte changed", r.msg);
        break;
      }
    for (uint32_t i = 0; i < p.len; ++i, ++at)
      if (p.p[i] != pattern(r.msg, at)) {
        fail(__LINE__, "message %u: byte %u is 0x%02x, want 0x%02x", r.msg, at,
             p.p[i], pattern(r.msg, at));
        return;
      }
    sum = fnv(sum, p.p, p.len);
  }
}

VIP_DESCRIPTOR *build_send(Node &n, uint32_t msg, uint32_t size, uint32_t segs,
                           uint8_t *&area, uint32_t &sum) {
  VIP_DESCRIPTOR *d = n.desc();
  d->CS.SegCount = uint16_t(segs);
  d->CS.Length = size;
  if (msg % 2) {
    d->CS.Control = VIP_CONTROL_IMMEDIATE;
    d->CS.ImmediateData = 0xC0DE0000u | msg;
  }
  std::vector<uint32_t> parts = split(size, segs);
  uint32_t at = 0;
  for (uint32_t i = 0; i < segs; ++i) {
    area += (i + msg) % 4;
    for (uint32_t k = 0; k < parts[i]; ++k)
      area[k] = pattern(msg, at + k);
    sum = fnv(sum, area, parts[i]);
    set_segment(d, int(i), area, n.mh, parts[i]);
    at += parts[i];
    area += parts[i];
  }
  return d;
}

// Which queue of which VI a CQ entry named.
void cq_entry(VIP_CQ_HANDLE cq, bool wait, VIP_VI_HANDLE &vi, bool &recv) {
  VIP_BOOLEAN r = VIP_FALSE;
  vi = nullptr;
  if (wait) {
    RC(VipCQWait(cq, 5000, &vi, &r), VIP_SUCCESS);
  } else {
    VIP_RETURN rc;
    while ((rc = VipCQDone(cq, &vi, &r)) == VIP_NOT_DONE)
      host::compute(kPollGap);
    RC(rc, VIP_SUCCESS);
  }
  recv = r == VIP_TRUE;
}

void run_transfer(VIP_RELIABILITY_LEVEL level, bool use_cq) {
  const uint32_t rounds = sizeof kSizes / sizeof kSizes[0];
  Node n = open_node(4u << 20);
  VIP_CQ_HANDLE cq = nullptr;
  if (use_cq)
    RC(VipCreateCQ(n.nic, 64, &cq), VIP_SUCCESS);
  VIP_VI_HANDLE vi = make_vi(n, level, false, cq, cq);
  // With a CQ, a second VI shares it: entries must name the right VI.
  VIP_VI_HANDLE side = use_cq ? make_vi(n, level, false, cq, cq) : nullptr;
  uint32_t sum = 2166136261u, bytes = 0, messages = 0;
  // Each round: the data of 16 messages (with guards and skews) in `area`,
  // then descriptors.
  constexpr size_t kArea = kPerRound * (65536 + 16 * (2 * kGuard + 4)) + 64;
  size_t mark = n.used;
  if (rank_ == 0) {
    uint8_t *area = n.take(kArea);
    std::vector<Posted> posted;
    for (uint32_t j = 0; j < kPerRound; ++j)
      posted.push_back(post_receive(n, vi, j, kSizes[0], 16 - j, area));
    connect_pair(n, vi, "data");
    if (side)
      connect_pair(n, side, "side");
    for (uint32_t r = 0; r < rounds; ++r) {
      bool waits = r % 2 == 0;
      for (uint32_t j = 0; j < kPerRound; ++j) {
        VIP_DESCRIPTOR *d = nullptr;
        if (use_cq) {
          VIP_VI_HANDLE which;
          bool recv;
          cq_entry(cq, waits, which, recv);
          CHECK(which == vi && recv);
          RC(VipRecvDone(vi, &d), VIP_SUCCESS);
        } else if (waits) {
          RC(VipRecvWait(vi, 5000, &d), VIP_SUCCESS);
        } else {
          VIP_RETURN rc;
          while ((rc = VipRecvDone(vi, &d)) == VIP_NOT_DONE)
            host::compute(kPollGap);
          RC(rc, VIP_SUCCESS);
        }
        CHECK(d == posted[j].d);
        check_receive(posted[j], sum);
        bytes += posted[j].size;
        ++messages;
      }
      if (r + 1 == rounds)
        break;
      // The next round's receives, then "ready" on the side VI (or the
      // data VI).
      n.used = mark;
      area = n.take(kArea);
      posted.clear();
      for (uint32_t j = 0; j < kPerRound; ++j)
        posted.push_back(post_receive(n, vi, (r + 1) * kPerRound + j,
                                      kSizes[r + 1], 16 - j, area));
      VIP_VI_HANDLE control = side ? side : vi;
      auto *w = reinterpret_cast<uint32_t *>(n.take(4));
      *w = r + 1;
      RC(VipPostSend(control, simple(n, w, 4), n.mh), VIP_SUCCESS);
      VIP_DESCRIPTOR *sd = nullptr;
      if (use_cq) {
        VIP_VI_HANDLE which;
        bool recv;
        cq_entry(cq, true, which, recv);
        CHECK(which == control && !recv);
        RC(VipSendDone(control, &sd), VIP_SUCCESS);
      } else {
        sd = wait_send(control);
      }
      CHECK(sd && sd->CS.Status == VIP_STATUS_DONE);
    }
  } else {
    connect_pair(n, vi, "data");
    if (side)
      connect_pair(n, side, "side");
    VIP_VI_HANDLE control = side ? side : vi;
    for (uint32_t r = 0; r < rounds; ++r) {
      n.used = mark;
      uint8_t *area = n.take(kArea);
      VIP_DESCRIPTOR *ready = nullptr;
      if (r + 1 < rounds) {
        ready = simple(n, n.take(4), 4);
        RC(VipPostRecv(control, ready, n.mh), VIP_SUCCESS);
      }
      std::vector<VIP_DESCRIPTOR *> sent;
      for (uint32_t j = 0; j < kPerRound; ++j) {
        uint32_t msg = r * kPerRound + j;
        VIP_DESCRIPTOR *d = build_send(n, msg, kSizes[r], j + 1, area, sum);
        RC(VipPostSend(vi, d, n.mh), VIP_SUCCESS);
        sent.push_back(d);
        bytes += kSizes[r];
        ++messages;
      }
      for (uint32_t j = 0; j < kPerRound; ++j) {
        VIP_DESCRIPTOR *d = nullptr;
        if (use_cq) {
          VIP_VI_HANDLE which;
          bool recv;
          cq_entry(cq, j % 2 == 0, which, recv);
          CHECK(which == vi && !recv);
          RC(VipSendDone(vi, &d), VIP_SUCCESS);
        } else if (r % 2) {
          VIP_RETURN rc;
          while ((rc = VipSendDone(vi, &d)) == VIP_NOT_DONE)
            host::compute(kPollGap);
          RC(rc, VIP_SUCCESS);
        } else {
          d = wait_send(vi);
        }
        CHECK(d == sent[j]);
        if (d && (d->CS.Status & ~VIP_STATUS_IMMEDIATE) != VIP_STATUS_DONE)
          fail(__LINE__, "send %u: status 0x%x", r * kPerRound + j,
               d->CS.Status);
      }
      if (ready) {
        VIP_DESCRIPTOR *d = nullptr;
        if (use_cq) {
          VIP_VI_HANDLE which;
          bool recv;
          cq_entry(cq, true, which, recv);
          CHECK(which == control && recv);
          RC(VipRecvDone(control, &d), VIP_SUCCESS);
        } else {
          d = wait_recv(control);
        }
        CHECK(d == ready && word_of(d) == r + 1);
      }
    }
  }
  std::printf("rank %u: %s: %u messages, %u bytes, sum 0x%08x\n", rank_,
              scenario, messages, bytes, sum);
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- prepost: a layer that posts 200 receives per VI before it talks
// ------------------------------------------------------------------------------------------

void run_prepost() {
  constexpr uint32_t kPosted = 200; // more than the old 64-deep queues
  Node n = open_node(1 << 17);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  std::vector<VIP_DESCRIPTOR *> posted;
  std::vector<uint32_t *> words;
  if (rank_ == 1)
    for (uint32_t i = 0; i < kPosted; ++i) {
      words.push_back(reinterpret_cast<uint32_t *>(n.take(4)));
      posted.push_back(simple(n, words.back(), 4));
      RC(VipPostRecv(vi, posted.back(), n.mh), VIP_SUCCESS);
    }
  connect_pair(n, vi, "prepost");
  if (rank_ == 0) {
    std::vector<VIP_DESCRIPTOR *> sent;
    for (uint32_t i = 0; i < kPosted; ++i) {
      auto *w = reinterpret_cast<uint32_t *>(n.take(4));
      *w = 0xC0DE0000u + i;
      sent.push_back(simple(n, w, 4));
      RC(VipPostSend(vi, sent.back(), n.mh), VIP_SUCCESS);
    }
    for (uint32_t i = 0; i < kPosted; ++i)
      CHECK(wait_send(vi) == sent[i]);
  } else {
    for (uint32_t i = 0; i < kPosted; ++i) {
      VIP_DESCRIPTOR *d = wait_recv(vi);
      CHECK(d == posted[i]);
      if (*words[i] != 0xC0DE0000u + i)
        fail(__LINE__, "receive %u holds 0x%x", i, *words[i]);
    }
  }
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- waits
// ------------------------------------------------------------------------------------------

void run_waits() {
  Node n = open_node(1 << 16);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  if (rank_ == 0) {
    VIP_DESCRIPTOR *posted = post_word(n, vi);
    connect_pair(n, vi, "w");
    // Rank 1 sends 10 ms after connecting.
    uint64_t t0 = host::now_ps();
    VIP_DESCRIPTOR *d = nullptr;
    RC(VipRecvWait(vi, 2, &d), VIP_TIMEOUT);
    CHECK(host::now_ps() - t0 >= 2 * kMs);
    RC(VipRecvDone(vi, &d), VIP_NOT_DONE);
    RC(VipRecvWait(vi, 50, &d), VIP_SUCCESS);
    uint64_t t1 = host::now_ps();
    CHECK(d == posted && word_of(d) == 7);
    // It came about 10 ms after the connection, well before 50 ms.
    CHECK(t1 - t0 > 9 * kMs && t1 - t0 < 12 * kMs);
    // Done polls: each costs virtual time, so polling ends.
    posted = post_word(n, vi);
    int polls = 0;
    VIP_RETURN r;
    while ((r = VipRecvDone(vi, &d)) == VIP_NOT_DONE)
      ++polls;
    RC(r, VIP_SUCCESS);
    CHECK(polls > 100 && d == posted && word_of(d) == 8);
  } else {
    connect_pair(n, vi, "w");
    host::compute(10 * kMs);
    send_word(n, vi, 7);
    host::compute(5 * kMs);
    send_word(n, vi, 8);
  }
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- disconnect
// --------------------------------------------------------------------------------------

void run_disconnect() {
  Node n = open_node(1 << 16);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  if (rank_ == 0) {
    VIP_DESCRIPTOR *first = post_word(n, vi);
    connect_pair(n, vi, "d");
    VIP_DESCRIPTOR *d = wait_recv(vi);
    CHECK(d == first && word_of(d) == 1);
    VIP_DESCRIPTOR *left[3];
    for (auto &p : left)
      p = post_word(n, vi);
    // Rank 1 disconnects: this VI goes idle and its receives are flushed.
    for (VIP_DESCRIPTOR *p : left) {
      RC(VipRecvWait(vi, 100, &d), VIP_SUCCESS);
      CHECK(d == p);
      CHECK_EQ(d->CS.Status, VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
                                 VIP_STATUS_OP_RECEIVE);
    }
    // The disconnection event follows the flushed receives.
    host::compute(100'000'000);
    CHECK(state_of(vi) == VIP_STATE_IDLE);
    // Idle: sends are refused, and the VI may connect again.
    auto *w = n.take(4);
    RC(VipPostSend(vi, simple(n, w, 4), n.mh), VIP_INVALID_STATE);
    connect_pair(n, vi, "again");
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
  } else {
    connect_pair(n, vi, "d");
    VIP_DESCRIPTOR *mine = post_word(n, vi);
    host::compute(1 * kMs);
    send_word(n, vi, 1);
    host::compute(1 * kMs);
    RC(VipDisconnect(vi), VIP_SUCCESS);
    CHECK(state_of(vi) == VIP_STATE_IDLE);
    VIP_DESCRIPTOR *d = nullptr;
    RC(VipRecvDone(vi, &d), VIP_SUCCESS);
    CHECK(d == mine);
    CHECK(d &&
          d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
                           VIP_STATUS_OP_RECEIVE));
    host::compute(5 * kMs);
    connect_pair(n, vi, "again");
    CHECK(state_of(vi) == VIP_STATE_CONNECTED);
  }
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- errors
// -------------------------------------------------------------------------------------------

int errors_seen = 0;
VIP_ERROR_DESCRIPTOR last_error;
VIP_VI_STATE state_in_handler = VIP_STATE_IDLE;

void on_error(VIP_PVOID context, VIP_ERROR_DESCRIPTOR *e) {
  ++*static_cast<int *>(context);
  last_error = *e;
  // A handler may call VIPL (the library's lock is released by then).
  VIP_VI_ATTRIBUTES a;
  VIP_BOOLEAN se, re;
  RC(VipQueryVi(e->ViHandle, &state_in_handler, &a, &se, &re), VIP_SUCCESS);
}

// Calls the library refuses; each prints "nicemu: Function: reason", which
// tests/e2e/test_vipl.cpp reads. The polling outcomes print nothing.
void refusals(Node &n) {
  VIP_DESCRIPTOR *d = simple(n, n.take(4), 4);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  // A handle of another kind, and one that names nothing any more.
  RC(VipPostSend(n.nic, d, n.mh), VIP_INVALID_PARAMETER);
  VIP_VI_HANDLE gone = make_vi(n, VIP_SERVICE_UNRELIABLE);
  RC(VipDestroyVi(gone), VIP_SUCCESS);
  RC(VipDestroyVi(gone), VIP_INVALID_PARAMETER);
  VIP_CQ_HANDLE cq = nullptr;
  RC(VipCreateCQ(n.nic, 4, &cq), VIP_SUCCESS);
  RC(VipDestroyCQ(cq), VIP_SUCCESS);
  VIP_VI_HANDLE which;
  VIP_BOOLEAN recv;
  RC(VipCQDone(cq, &which, &recv), VIP_INVALID_PARAMETER);
  // A memory handle that is not registered.
  RC(VipPostRecv(vi, d, 250), VIP_INVALID_PARAMETER);
  // Sends need a connection.
  RC(VipPostSend(vi, d, n.mh), VIP_INVALID_STATE);
  // A CQ with a VI on it.
  RC(VipCreateCQ(n.nic, 4, &cq), VIP_SUCCESS);
  VIP_VI_HANDLE on_cq = make_vi(n, VIP_SERVICE_UNRELIABLE, false, cq, nullptr);
  RC(VipDestroyCQ(cq), VIP_INVALID_STATE);
  RC(VipDestroyVi(on_cq), VIP_SUCCESS);
  RC(VipDestroyCQ(cq), VIP_SUCCESS);
  // The card serves one FM VI: it refuses a second.
  VIP_VI_ATTRIBUTES a = attributes(n, VIP_SERVICE_UNRELIABLE);
  VIP_VI_HANDLE fm = nullptr, fm2 = nullptr;
  RC(VipCreateViKind(n.nic, &a, VIP_VI_KIND_FM_IP, nullptr, nullptr, &fm),
     VIP_SUCCESS);
  RC(VipCreateViKind(n.nic, &a, VIP_VI_KIND_FM_IP, nullptr, nullptr, &fm2),
     VIP_ERROR_RESOURCE);
  RC(VipDestroyVi(fm), VIP_SUCCESS);
  // Nothing completed yet: not refusals, so quiet.
  VIP_DESCRIPTOR *out = nullptr;
  RC(VipRecvDone(vi, &out), VIP_NOT_DONE);
  RC(VipRecvWait(vi, 0, &out), VIP_TIMEOUT);
  RC(VipDestroyVi(vi), VIP_SUCCESS);
}

// Posts `d` and returns its status once done.
uint32_t send_status(VIP_VI_HANDLE vi, Node &n, VIP_DESCRIPTOR *d) {
  RC(VipPostSend(vi, d, n.mh), VIP_SUCCESS);
  VIP_DESCRIPTOR *out = wait_send(vi);
  CHECK(out == d);
  return out ? out->CS.Status : 0;
}

void run_errors() {
  Node n = open_node(1 << 17);
  RC(VipErrorCallback(n.nic, &errors_seen, on_error), VIP_SUCCESS);
  // Memory of another Ptag, and a region that ends early.
  VIP_PROTECTION_HANDLE other_tag;
  RC(VipCreatePtag(n.nic, &other_tag), VIP_SUCCESS);
  uint8_t *foreign = static_cast<uint8_t *>(host::alloc(4096));
  VIP_MEM_ATTRIBUTES ma{other_tag, VIP_FALSE, VIP_FALSE};
  VIP_MEM_HANDLE foreign_h;
  RC(VipRegisterMem(n.nic, foreign, 4096, &ma, &foreign_h), VIP_SUCCESS);
  uint8_t *small = static_cast<uint8_t *>(host::alloc(4096));
  ma.Ptag = n.tag;
  VIP_MEM_HANDLE small_h;
  RC(VipRegisterMem(n.nic, small, 100, &ma, &small_h), VIP_SUCCESS);
  refusals(n); // before u and rel: it uses all three VIs of the card

  VIP_VI_HANDLE u = make_vi(n, VIP_SERVICE_UNRELIABLE);
  VIP_VI_HANDLE rel = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY);
  if (rank_ == 0) {
    // Unreliable: a receive too small fails alone.
    VIP_DESCRIPTOR *tiny = simple(n, n.take(8), 8);
    RC(VipPostRecv(u, tiny, n.mh), VIP_SUCCESS);
    VIP_DESCRIPTOR *fine = post_word(n, u);
    connect_pair(n, u, "u");
    VIP_DESCRIPTOR *d = wait_recv(u);
    CHECK(d == tiny);
    CHECK_EQ(d ? d->CS.Status : 0,
             VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR | VIP_STATUS_OP_RECEIVE);
    d = wait_recv(u);
    CHECK(d == fine && word_of(d) == 5);
    CHECK(state_of(u) == VIP_STATE_CONNECTED);
    CHECK(errors_seen == 0);
    RC(VipDestroyVi(u), VIP_INVALID_STATE); // connected: disconnect first

    // Reliable: a receive too small breaks the connection on both sides.
    tiny = simple(n, n.take(8), 8);
    RC(VipPostRecv(rel, tiny, n.mh), VIP_SUCCESS);
    connect_pair(n, rel, "r");
    d = wait_recv(rel);
    CHECK(d == tiny);
    CHECK(d && (d->CS.Status & VIP_STATUS_LENGTH_ERROR));
    host::compute(1 * kMs);
    CHECK(state_of(rel) == VIP_STATE_ERROR);
    CHECK(errors_seen == 1);
    CHECK(last_error.ViHandle == rel &&
          last_error.ResourceCode == VIP_RESOURCE_VI);
    CHECK(state_in_handler == VIP_STATE_ERROR);
    // In the error state a posted receive completes as flushed.
    VIP_DESCRIPTOR *late = post_word(n, rel);
    d = wait_recv(rel);
    CHECK(d == late && d && (d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR));
    RC(VipDisconnect(rel), VIP_SUCCESS);
    CHECK(state_of(rel) == VIP_STATE_IDLE);
    VIP_DESCRIPTOR *again = post_word(n, rel);
    connect_pair(n, rel, "r2");
    d = wait_recv(rel);
    CHECK(d == again && word_of(d) == 9);
  } else {
    connect_pair(n, u, "u");
    uint8_t *buf = n.take(256);
    std::memset(buf, 1, 256);
    auto bad = [&](uint32_t want, const char *what,
                   void (*shape)(VIP_DESCRIPTOR *, uint8_t *, Node &,
                                 VIP_MEM_HANDLE, VIP_MEM_HANDLE, uint8_t *,
                                 uint8_t *)) {
      VIP_DESCRIPTOR *d = simple(n, buf, 16);
      shape(d, buf, n, foreign_h, small_h, foreign, small);
      uint32_t s = send_status(u, n, d);
      if (s != want)
        fail(__LINE__, "%s: status 0x%x, want 0x%x", what, s, want);
    };
    const uint32_t done = VIP_STATUS_DONE;
    bad(done | VIP_STATUS_PROTECTION_ERROR, "unknown handle",
        [](VIP_DESCRIPTOR *d, uint8_t *, Node &, VIP_MEM_HANDLE, VIP_MEM_HANDLE,
           uint8_t *, uint8_t *) { d->DS[0].Local.Handle = 200; });
    bad(done | VIP_STATUS_PROTECTION_ERROR, "memory of another Ptag",
        [](VIP_DESCRIPTOR *d, uint8_t *, Node &, VIP_MEM_HANDLE fh,
           VIP_MEM_HANDLE, uint8_t *f,
           uint8_t *) { set_segment(d, 0, f, fh, 16); });
    bad(done | VIP_STATUS_PROTECTION_ERROR, "past the end of the region",
        [](VIP_DESCRIPTOR *d, uint8_t *, Node &, VIP_MEM_HANDLE,
           VIP_MEM_HANDLE sh, uint8_t *,
           uint8_t *s) { set_segment(d, 0, s + 90, sh, 16); });
    bad(done | VIP_STATUS_FORMAT_ERROR, "17 segments",
        [](VIP_DESCRIPTOR *d, uint8_t *, Node &, VIP_MEM_HANDLE, VIP_MEM_HANDLE,
           uint8_t *, uint8_t *) { d->CS.SegCount = 17; });
    bad(done | VIP_STATUS_FORMAT_ERROR, "reserved control bits",
        [](VIP_DESCRIPTOR *d, uint8_t *, Node &, VIP_MEM_HANDLE, VIP_MEM_HANDLE,
           uint8_t *, uint8_t *) { d->CS.Control = 0x0100; });
    bad(done | VIP_STATUS_LENGTH_ERROR, "over MaxTransferSize",
        [](VIP_DESCRIPTOR *d, uint8_t *, Node &n, VIP_MEM_HANDLE,
           VIP_MEM_HANDLE, uint8_t *,
           uint8_t *) { set_segment(d, 0, n.mem, n.mh, 65537); });
    bad(done | VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RDMA_READ,
        "RDMA read on an unreliable VI",
        [](VIP_DESCRIPTOR *d, uint8_t *b, Node &n, VIP_MEM_HANDLE,
           VIP_MEM_HANDLE, uint8_t *, uint8_t *) {
          d->CS.Control = VIP_CONTROL_OP_RDMAREAD;
          d->CS.SegCount = 2;
          d->DS[0].Remote.Data.Address = b;
          d->DS[0].Remote.Handle = n.mh;
          set_segment(d, 1, b + 64, n.mh, 16);
        });
    CHECK(state_of(u) == VIP_STATE_CONNECTED);
    // The receiver's buffer is too small: unreliable, the send completes.
    VIP_DESCRIPTOR *d = simple(n, buf, 64);
    CHECK_EQ(send_status(u, n, d), done);
    host::compute(1 * kMs);
    send_word(n, u, 5);

    // Reliable: the send fails with the receiver's error, the VI breaks.
    connect_pair(n, rel, "r");
    d = simple(n, buf, 64);
    uint32_t s = send_status(rel, n, d);
    CHECK(s & VIP_STATUS_REMOTE_DESC_ERROR);
    host::compute(1 * kMs);
    CHECK(state_of(rel) == VIP_STATE_ERROR);
    CHECK(errors_seen == 1);
    // Sends in the error state are flushed.
    d = simple(n, buf, 4);
    s = send_status(rel, n, d);
    CHECK(s & VIP_STATUS_DESC_FLUSHED_ERROR);
    RC(VipDisconnect(rel), VIP_SUCCESS);
    host::compute(2 * kMs);
    connect_pair(n, rel, "r2");
    host::compute(1 * kMs);
    send_word(n, rel, 9);
  }
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

// ---- rdma
// ---------------------------------------------------------------------------------------------------

void run_rdma() {
  Node n = open_node(1 << 18, true);
  VIP_VI_HANDLE vi = make_vi(n, VIP_SERVICE_RELIABLE_DELIVERY, true);
  // A region remote VIs may not write or read.
  uint8_t *closed = static_cast<uint8_t *>(host::alloc(4096));
  VIP_MEM_ATTRIBUTES ma{n.tag, VIP_FALSE, VIP_FALSE};
  VIP_MEM_HANDLE closed_h;
  RC(VipRegisterMem(n.nic, closed, 4096, &ma, &closed_h), VIP_SUCCESS);
  uint8_t *target = n.take(20000, 64, 3);
  std::memset(target - 3, kGuardByte, 20000 + 6);
  // Rank 0 owns the target; it tells rank 1 where it is (address, handle).
  if (rank_ == 0) {
    for (uint32_t i = 0; i < 20000; ++i)
      target[i] = pattern(99, i);
    VIP_DESCRIPTOR *imm = post_word(n, vi); // for the write with immediate
    VIP_DESCRIPTOR *go = post_word(n, vi);
    connect_pair(n, vi, "rdma");
    auto *where = reinterpret_cast<uint64_t *>(n.take(24));
    where[0] = reinterpret_cast<uintptr_t>(target);
    where[1] = n.mh;
    where[2] = reinterpret_cast<uintptr_t>(closed) | uint64_t(closed_h) << 48;
    RC(VipPostSend(vi, simple(n, where, 24), n.mh), VIP_SUCCESS);
    wait_send(vi);
    // The write with immediate data consumes a receive.
    VIP_DESCRIPTOR *d = wait_recv(vi);
    CHECK(d == imm);
    CHECK_EQ(d ? d->CS.Status : 0, VIP_STATUS_DONE |
                                       VIP_STATUS_OP_REMOTE_RDMA_WRITE |
                                       VIP_STATUS_IMMEDIATE);
    CHECK(d && d->CS.ImmediateData == 0xFEED);
    d = wait_recv(vi); // rank 1 is done
    CHECK(d == go);
    bool same = true;
    for (uint32_t i = 0; i < 10000; ++i)
      same &= target[i] == pattern(7, i);
    for (uint32_t i = 10000; i < 20000; ++i)
      same &= target[i] == pattern(99, i);
    CHECK(same);
    CHECK(target[-1] == kGuardByte && target[20000] == kGuardByte);
    // rank 1's write to the closed region breaks the connection.
    host::compute(2 * kMs);
    CHECK(state_of(vi) == VIP_STATE_ERROR);
  } else {
    uint8_t *where_buf = n.take(24);
    VIP_DESCRIPTOR *info = simple(n, where_buf, 24);
    RC(VipPostRecv(vi, info, n.mh), VIP_SUCCESS);
    connect_pair(n, vi, "rdma");
    VIP_DESCRIPTOR *d = wait_recv(vi);
    CHECK(d == info);
    uint64_t where[3];
    std::memcpy(where, where_buf, 24);
    uint8_t *src = n.take(10000, 64, 1);
    for (uint32_t i = 0; i < 10000; ++i)
      src[i] = pattern(7, i);
    // RDMA write of 10000 bytes in two local segments, with immediate data.
    d = n.desc();
    d->CS.Control = VIP_CONTROL_OP_RDMAWRITE | VIP_CONTROL_IMMEDIATE;
    d->CS.ImmediateData = 0xFEED;
    d->CS.SegCount = 3;
    d->CS.Length = 10000;
    d->DS[0].Remote.Data.AddressBits = where[0];
    d->DS[0].Remote.Handle = VIP_MEM_HANDLE(where[1]);
    set_segment(d, 1, src, n.mh, 4000);
    set_segment(d, 2, src + 4000, n.mh, 6000);
    CHECK_EQ(send_status(vi, n, d), VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE);
    // RDMA read of the untouched half back, into an odd place.
    uint8_t *back = n.take(10000, 64, 2);
    d = n.desc();
    d->CS.Control = VIP_CONTROL_OP_RDMAREAD;
    d->CS.SegCount = 2;
    d->CS.Length = 10000;
    d->DS[0].Remote.Data.AddressBits = where[0] + 10000;
    d->DS[0].Remote.Handle = VIP_MEM_HANDLE(where[1]);
    set_segment(d, 1, back, n.mh, 10000);
    CHECK_EQ(send_status(vi, n, d), VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ);
    bool same = true;
    for (uint32_t i = 0; i < 10000; ++i)
      same &= back[i] == pattern(99, 10000 + i);
    CHECK(same);
    send_word(n, vi, 1); // "done" (its "go" receive)
    // An RDMA write to a region without the RDMA write enable: a remote
    // protection error, and the VI breaks.
    d = n.desc();
    d->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
    d->CS.SegCount = 2;
    d->DS[0].Remote.Data.AddressBits = where[2] & 0xFFFFFFFFFFFFull;
    d->DS[0].Remote.Handle = VIP_MEM_HANDLE(where[2] >> 48);
    set_segment(d, 1, src, n.mh, 64);
    uint32_t s = send_status(vi, n, d);
    CHECK(s & VIP_STATUS_RDMA_PROT_ERROR);
    host::compute(1 * kMs);
    CHECK(state_of(vi) == VIP_STATE_ERROR);
  }
  RC(VipCloseNic(n.nic), VIP_SUCCESS);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: vipl_pair_prog SCENARIO\n");
    return 2;
  }
  scenario = argv[1];
  rank_ = host::rank();
  std::string s = scenario;
  if (s == "connect")
    run_connect();
  else if (s == "reject")
    run_reject();
  else if (s == "timeout")
    run_timeout();
  else if (s == "peer")
    run_peer();
  else if (s == "transfer-unreliable")
    run_transfer(VIP_SERVICE_UNRELIABLE, false);
  else if (s == "transfer-delivery")
    run_transfer(VIP_SERVICE_RELIABLE_DELIVERY, false);
  else if (s == "transfer-reception")
    run_transfer(VIP_SERVICE_RELIABLE_RECEPTION, false);
  else if (s == "cq")
    run_transfer(VIP_SERVICE_RELIABLE_DELIVERY, true);
  else if (s == "waits")
    run_waits();
  else if (s == "prepost")
    run_prepost();
  else if (s == "disconnect")
    run_disconnect();
  else if (s == "errors")
    run_errors();
  else if (s == "rdma")
    run_rdma();
  else {
    std::fprintf(stderr, "unknown scenario %s\n", scenario);
    return 2;
  }
  return verdict();
}
