// Processes sharing a Comet card attack each other (issue 24, part 2;
// docs/via.md, "Processes sharing a card"). Run as `nicemu run -n 2
// --procs-per-node 2 --model comet --firmware via.img -- vipl_isolation_prog
// FILE`: ranks 0 and 1 share node 0's card, ranks 2 and 3 node 1's.
//
//   rank 0  the victim: registers a buffer between guard bytes (all of it a
//           known pattern), connects to rank 2, tells FILE its buffer's
//           virtual address, memory handle and bus address, waits while it
//           is attacked, then checks that not a byte changed and that its
//           connection still works.
//   rank 1  the attacker beside it, with VIPL and with the raw channel:
//           commands on the victim's memory handle, VI and memory, the
//           victim's handle in a descriptor of its own VI (with the same Ptag
//           number, which VIPL gives both processes), the victim's doorbell,
//           descriptors and command blocks in the victim's memory, PIO to
//           the card's memory. Each attempt must be refused.
//   rank 2  the victim's partner on node 1.
//   rank 3  the remote attacker: connected to rank 1 twice, it RDMA-writes
//           into a memory handle nobody registered and into the victim's;
//           both writes must be refused.
// On 3 nodes, node 2 is a rogue card (`--node-firmware 2=via_rogue.img`,
// firmware/samples/via_rogue.cpp): rank 4 gives it the victim's connection,
// handle and address, and it sends forged frames at the victim, from its
// own address and then from the victim's peer's. Rank 5 does nothing.
// Every rank prints "rank R: isolation: ok" or its failed checks; ranks 0
// and 1 print the card's VIAFW_BOX_STAT_FOREIGN count.
#include <nicemu/host.hpp>
#include <nicemu/regs.h>
#include <nicemu/via_protocol.h>
#include <nicemu/vipl.h>

#include "vipl_checks.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace host = nicemu::host;

namespace {

constexpr uint64_t kMs = 1'000'000'000ull;
constexpr size_t kGuard = 256, kBuffer = 4096;
const char *shared_file = "";

uint8_t pattern(size_t i) {
  return uint8_t(i * 29 + 7);
}

struct Node {
  VIP_NIC_HANDLE nic = nullptr;
  VIP_PROTECTION_HANDLE tag = nullptr;
  uint8_t *mem = nullptr; // 64 KiB: [guard | buffer | guard | the rest]
  VIP_MEM_HANDLE mh = 0;  // the buffer's handle
  VIP_MEM_HANDLE rest_mh = 0;
  size_t used = 2 * kGuard + kBuffer;

  uint8_t *buffer() { return mem + kGuard; }
  uint8_t *take(size_t n) {
    used = (used + 63) / 64 * 64;
    uint8_t *p = mem + used;
    used += n;
    return p;
  }
  VIP_DESCRIPTOR *desc() {
    auto *d = reinterpret_cast<VIP_DESCRIPTOR *>(take(sizeof(VIP_DESCRIPTOR)));
    std::memset(d, 0, sizeof(VIP_DESCRIPTOR));
    return d;
  }
};

// Every rank makes the same allocations in the same order, so the victim's
// buffer is at the same arena offset as the attacker's own.
Node open_node() {
  Node n;
  RC(VipOpenNic("/dev/via0", &n.nic), VIP_SUCCESS);
  RC(VipCreatePtag(n.nic, &n.tag), VIP_SUCCESS);
  n.mem = static_cast<uint8_t *>(host::alloc(65536));
  for (size_t i = 0; i < 2 * kGuard + kBuffer; ++i)
    n.mem[i] = pattern(i);
  VIP_MEM_ATTRIBUTES ma{n.tag, VIP_TRUE, VIP_TRUE};
  RC(VipRegisterMem(n.nic, n.buffer(), kBuffer, &ma, &n.mh), VIP_SUCCESS);
  uint8_t *rest = n.mem + 2 * kGuard + kBuffer;
  RC(VipRegisterMem(n.nic, rest, VIP_ULONG(65536 - (rest - n.mem)), &ma,
                    &n.rest_mh),
     VIP_SUCCESS);
  return n;
}

VIP_VI_HANDLE make_vi(Node &n) {
  VIP_VI_ATTRIBUTES a{};
  a.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
  a.MaxTransferSize = 65536;
  a.Ptag = n.tag;
  a.EnableRdmaWrite = VIP_TRUE;
  VIP_VI_HANDLE vi = nullptr;
  RC(VipCreateVi(n.nic, &a, nullptr, nullptr, &vi), VIP_SUCCESS);
  return vi;
}

// Even ranks accept on `disc`, odd ones ask the other node for it.
void connect(Node &n, VIP_VI_HANDLE vi, const char *disc, bool server) {
  VIP_VI_ATTRIBUTES remote{};
  const char *me = host::node() == 0 ? "node0" : "node1";
  const char *other = host::node() == 0 ? "node1" : "node0";
  if (server) {
    VIP_NET_ADDRESS *local = net_address(n.nic, me, disc);
    VIP_CONN_HANDLE conn = nullptr;
    RC(VipConnectWait(n.nic, local, 20000, nullptr, &remote, &conn),
       VIP_SUCCESS);
    RC(VipConnectAccept(conn, vi), VIP_SUCCESS);
    std::free(local);
  } else {
    VIP_NET_ADDRESS *local = net_address(n.nic, me, "");
    VIP_NET_ADDRESS *server_address = net_address(n.nic, other, disc);
    RC(VipConnectRequest(vi, local, server_address, 20000, &remote),
       VIP_SUCCESS);
    std::free(local);
    std::free(server_address);
  }
}

void one_segment(VIP_DESCRIPTOR *d, void *va, VIP_MEM_HANDLE h, uint32_t len) {
  d->CS.SegCount = 1;
  d->CS.Length = len;
  d->DS[0].Local.Data.Address = va;
  d->DS[0].Local.Handle = h;
  d->DS[0].Local.Length = len;
}

void send_word(Node &n, VIP_VI_HANDLE vi, uint32_t w) {
  auto *p = reinterpret_cast<uint32_t *>(n.take(4));
  *p = w;
  VIP_DESCRIPTOR *d = n.desc();
  one_segment(d, p, n.rest_mh, 4);
  RC(VipPostSend(vi, d, n.rest_mh), VIP_SUCCESS);
  VIP_DESCRIPTOR *got = nullptr;
  RC(VipSendWait(vi, 10000, &got), VIP_SUCCESS);
  CHECK(got == d);
  if (got)
    CHECK_EQ(got->CS.Status, VIP_STATUS_DONE);
}
VIP_DESCRIPTOR *post_word(Node &n, VIP_VI_HANDLE vi) {
  VIP_DESCRIPTOR *d = n.desc();
  one_segment(d, n.take(4), n.rest_mh, 4);
  RC(VipPostRecv(vi, d, n.rest_mh), VIP_SUCCESS);
  return d;
}
uint32_t wait_word(VIP_VI_HANDLE vi) {
  VIP_DESCRIPTOR *d = nullptr;
  RC(VipRecvWait(vi, 20000, &d), VIP_SUCCESS);
  if (!d)
    return 0;
  return received_word(d);
}

// An RDMA write of 64 bytes to `va` in remote `handle` through `vi`; the
// send's completion status.
uint32_t rdma_write(Node &n, VIP_VI_HANDLE vi, uint64_t va, uint32_t handle) {
  uint8_t *junk = n.take(64);
  std::memset(junk, 0xEE, 64);
  VIP_DESCRIPTOR *w = n.desc();
  w->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
  w->CS.SegCount = 2;
  w->CS.Length = 64;
  w->DS[0].Remote.Data.AddressBits = va;
  w->DS[0].Remote.Handle = handle;
  w->DS[1].Local.Data.Address = junk;
  w->DS[1].Local.Handle = n.rest_mh;
  w->DS[1].Local.Length = 64;
  RC(VipPostSend(vi, w, n.rest_mh), VIP_SUCCESS);
  VIP_DESCRIPTOR *got = nullptr;
  RC(VipSendWait(vi, 10000, &got), VIP_SUCCESS);
  CHECK(got == w);
  return got ? got->CS.Status : 0;
}

// What the victim tells the attackers (through FILE: the victim writes it
// before its next library call, which the attacker's later virtual time
// waits for).
struct Target {
  uint64_t va = 0;
  uint32_t handle = 0, bus = 0;
};

// ---- The attacker's raw channel ---------------------------------------------

viafw_command *block = nullptr;
uint32_t block_seq = 0x5000;

// A command of its own, in its own memory; the card's result, or ~0u if it
// did not answer within 5 ms.
uint32_t raw_command(uint32_t op, std::initializer_list<uint32_t> args) {
  std::memset(block, 0, sizeof *block);
  block->op = op;
  block->seq = ++block_seq;
  uint32_t i = 0;
  for (uint32_t a : args)
    block->arg[i++] = a;
  host::doorbell(VIAFW_FIFO_COMMAND, host::bus_address(block));
  if (!host::wait_word_until(&block->done, ~0u, block_seq,
                             host::now_ps() + 5 * kMs))
    return ~0u;
  return block->result;
}

// The refusals a command on something of the victim's may get.
bool refused(uint32_t result) {
  return result == VIAFW_R_BAD_ARGUMENT || result == VIAFW_R_STATE;
}

void attack_beside(Node &n, VIP_VI_HANDLE vi, const Target &t) {
  block = reinterpret_cast<viafw_command *>(n.take(VIAFW_COMMAND_BYTES));
  const uint32_t victim_window = VIAFW_WINDOW(0);
  const uint32_t my_offset =
      host::bus_address(n.buffer()) - VIAFW_WINDOW(host::node_process());
  std::printf("rank %u: isolation: aims at handle %u bus 0x%x\n", rank_,
              t.handle, victim_window + my_offset);
  // 1. Its memory, named to the card as if it were the attacker's.
  CHECK(refused(raw_command(VIAFW_CMD_REGISTER,
                            {200, uint32_t(t.va), uint32_t(t.va >> 32),
                             uint32_t(kBuffer), t.bus, 1, 3})));
  CHECK(refused(raw_command(VIAFW_CMD_REGISTER,
                            {201, 0, 0, 64, victim_window + 0x100, 1, 3})));
  // 2. Its memory handle: deregistered, given the attacker's Ptag.
  CHECK(refused(raw_command(VIAFW_CMD_SET_MEM, {t.handle, 1, 3})));
  CHECK(refused(raw_command(VIAFW_CMD_DEREGISTER, {t.handle})));
  // 3. Its VI (number 0: it made the first): destroyed, retagged,
  //    disconnected, bound elsewhere.
  CHECK(refused(raw_command(VIAFW_CMD_SET_VI, {0, 1, 3})));
  CHECK(refused(raw_command(VIAFW_CMD_DISCONNECT_VI, {0, 1})));
  CHECK(refused(raw_command(VIAFW_CMD_CONNECT_VI, {0, 1, 1})));
  CHECK(refused(raw_command(VIAFW_CMD_DESTROY_VI, {0})));
  // 4. Rings and queues placed in its memory.
  CHECK(refused(raw_command(VIAFW_CMD_CREATE_CQ, {7, t.bus, 16})));
  CHECK(refused(raw_command(VIAFW_CMD_HELLO, {t.bus, 16})));
  // A command block in its memory: the card neither reads nor answers it.
  host::doorbell(VIAFW_FIFO_COMMAND, t.bus);
  // 5. Its handle in a descriptor of the attacker's own VI (VI 1). The
  //    attacker's Ptag has the victim's number (each library starts at 1):
  //    only the card's owner check stands in the way.
  VIP_DESCRIPTOR *d = n.desc();
  d->CS.Control = VIP_CONTROL_OP_SENDRECV;
  one_segment(d, reinterpret_cast<void *>(t.va), t.handle, 64);
  host::doorbell(VIAFW_FIFO_SEND(1), host::bus_address(d));
  CHECK(host::wait_word_until(&d->CS.Status, VIP_STATUS_DONE, VIP_STATUS_DONE,
                              host::now_ps() + 5 * kMs));
  std::printf("rank %u: isolation: descriptor with the victim's handle: "
              "status 0x%x\n",
              rank_, unsigned(d->CS.Status));
  CHECK(d->CS.Status & VIP_STATUS_PROTECTION_ERROR);
  // The same through VIPL: the library knows no such handle.
  VIP_DESCRIPTOR *v = n.desc();
  one_segment(v, reinterpret_cast<void *>(t.va), t.handle, 64);
  CHECK(VipPostSend(vi, v, t.handle) != VIP_SUCCESS);
  // 6. The victim's doorbell, with a descriptor of the attacker's.
  VIP_DESCRIPTOR *e = n.desc();
  e->CS.Control = VIP_CONTROL_OP_SENDRECV;
  one_segment(e, n.take(4), n.rest_mh, 4);
  host::doorbell(VIAFW_FIFO_SEND(0), host::bus_address(e));
  host::doorbell(VIAFW_FIFO_RECV(0), host::bus_address(e));
  // 7. Its own doorbell, with a descriptor in the victim's memory.
  host::doorbell(VIAFW_FIFO_SEND(1), t.bus);
  host::doorbell(VIAFW_FIFO_RECV(1), t.bus + 64);
  host::compute(5 * kMs);
  CHECK_EQ(e->CS.Status, 0); // never taken, never completed
  // 8. PIO: card memory beyond the mailbox page is the driver's, and of
  //    the page a process writes only its own word: not the victim's
  //    events-consumed word, nor the card's counters.
  auto refused_pio = [](uint32_t addr, bool write) {
    try {
      if (write)
        host::pio_write(addr, 0xDEADBEEF);
      else
        (void)host::pio_read(addr);
    } catch (const host::Error &) {
      return true;
    }
    return false;
  };
  const uint32_t box = host::mailbox();
  for (uint32_t addr : {0x0u, 0x1000u, box - 4}) {
    CHECK(refused_pio(addr, true));
    CHECK(refused_pio(addr, false));
  }
  for (uint32_t word : {uint32_t(VIAFW_BOX_EVENTS_FREED_BY(0)),
                        uint32_t(VIAFW_BOX_STAT_FOREIGN), 0u})
    CHECK(refused_pio(box + 4 * word, true));
  CHECK(!refused_pio(box + 4 * VIAFW_BOX_STAT_FOREIGN, false)); // reads: yes
}

// ---- The rogue card's host -------------------------------------------------

// The block via_rogue (firmware/samples/via_rogue.cpp) reads its target
// from and writes its report into, named in this process's mailbox word.
constexpr uint32_t kRogueSent = 8, kRogueForged = 9, kRogueDone = 10;
constexpr uint32_t kRogueDoneMagic = 0x524F4755u;

void rogue_host(const Target &t) {
  auto *block = static_cast<uint32_t *>(host::alloc(64));
  // Victim node 0, VI 0; its peer node 1, VI 0 (each made the first VI).
  const uint32_t target[7] = {
      0, 0, 1, 0, t.handle, uint32_t(t.va), uint32_t(t.va >> 32)};
  std::memcpy(block, target, sizeof target);
  host::pio_write(host::mailbox() +
                      4 * (NICEMU_MAILBOX_PROCESS_WORDS + host::node_process()),
                  host::bus_address(block));
  CHECK(host::wait_word_until(&block[kRogueDone], ~0u, kRogueDoneMagic,
                              host::now_ps() + 100 * kMs));
  std::printf("rank %u: isolation: rogue card sent %u frames, %u of them "
              "with the peer's address\n",
              rank_, block[kRogueSent], block[kRogueForged]);
}

Target read_target() {
  Target t;
  FILE *f = std::fopen(shared_file, "r");
  CHECK(f != nullptr);
  if (f) {
    CHECK(std::fscanf(f, "%" SCNu64 " %u %u", &t.va, &t.handle, &t.bus) == 3);
    std::fclose(f);
  }
  return t;
}

} // namespace

int main(int argc, char **argv) {
  rank_ = host::rank();
  scenario = "isolation";
  if (argc < 2 || host::processes_per_node() != 2 ||
      (host::size() != 4 && host::size() != 6)) {
    std::printf("usage: nicemu run -n 2 --procs-per-node 2 ... -- "
                "vipl_isolation_prog FILE\n");
    return 2;
  }
  shared_file = argv[1];
  if (host::node() == 2) { // the rogue card's hosts
    if (host::node_process() == 0) {
      host::compute(30 * kMs); // the victim is connected by then
      rogue_host(read_target());
    }
    return verdict();
  }
  // The victim and its partner make the first VI on each card.
  if (host::node_process() == 1)
    host::compute(20 * kMs);
  Node n = open_node();
  VIP_VI_HANDLE vi = make_vi(n);
  switch (rank_) {
  case 0: { // the victim
    FILE *f = std::fopen(shared_file, "w");
    CHECK(f != nullptr);
    if (f) {
      std::fprintf(f, "%" PRIu64 " %u %u\n",
                   uint64_t(reinterpret_cast<uintptr_t>(n.buffer())),
                   unsigned(n.mh), host::bus_address(n.buffer()));
      std::fclose(f);
    }
    std::printf("rank 0: isolation: handle %u bus 0x%x\n", unsigned(n.mh),
                host::bus_address(n.buffer()));
    connect(n, vi, "victim", true);
    host::compute(100 * kMs); // the attacks
    for (size_t i = 0; i < 2 * kGuard + kBuffer; ++i)
      if (n.mem[i] != pattern(i)) {
        fail(__LINE__, "byte %zu of the buffer and its guards changed", i);
        break;
      }
    post_word(n, vi);
    send_word(n, vi, 0x1234);
    CHECK_EQ(wait_word(vi), 0x5678);
    std::printf("rank 0: isolation: card refused %u foreign requests\n",
                card_counter(VIAFW_BOX_STAT_FOREIGN));
    std::printf("rank 0: isolation: card dropped %u frames\n",
                card_counter(VIAFW_BOX_STAT_DROPPED));
    break;
  }
  case 2: { // its partner
    connect(n, vi, "victim", false);
    post_word(n, vi);
    CHECK_EQ(wait_word(vi), 0x1234);
    send_word(n, vi, 0x5678);
    break;
  }
  case 1: { // the attacker beside it
    connect(n, vi, "attack", true);
    Target t = read_target();
    attack_beside(n, vi, t);
    // Tell rank 3 the victim's handle and address for its RDMA write.
    auto *word = reinterpret_cast<uint32_t *>(n.take(16));
    post_word(n, vi);
    std::memcpy(word, &t, sizeof t); // va, handle, bus
    VIP_DESCRIPTOR *d = n.desc();
    one_segment(d, word, n.rest_mh, 16);
    RC(VipPostSend(vi, d, n.rest_mh), VIP_SUCCESS);
    VIP_DESCRIPTOR *got = nullptr;
    RC(VipSendWait(vi, 10000, &got), VIP_SUCCESS);
    // A second connection with rank 3, for its RDMA write into a handle
    // nobody registered.
    VIP_VI_HANDLE second = make_vi(n);
    connect(n, second, "attack2", true);
    host::compute(20 * kMs);
    std::printf("rank 1: isolation: card refused %u foreign requests\n",
                card_counter(VIAFW_BOX_STAT_FOREIGN));
    break;
  }
  case 3: { // the remote attacker
    connect(n, vi, "attack", false);
    VIP_DESCRIPTOR *r = n.desc();
    auto *got_target = n.take(16);
    one_segment(r, got_target, n.rest_mh, 16);
    RC(VipPostRecv(vi, r, n.rest_mh), VIP_SUCCESS);
    VIP_DESCRIPTOR *got = nullptr;
    RC(VipRecvWait(vi, 20000, &got), VIP_SUCCESS);
    Target t;
    std::memcpy(&t, got_target, sizeof t);
    // RDMA writes through rank 1's VIs on node 0: into a handle nobody
    // registered, and into the victim's.
    VIP_VI_HANDLE second = make_vi(n);
    connect(n, second, "attack2", false);
    uint32_t unregistered = rdma_write(n, second, t.va, 200);
    std::printf("rank 3: isolation: RDMA write into unregistered handle 200: "
                "status 0x%x\n",
                unregistered);
    CHECK(unregistered & VIP_STATUS_RDMA_PROT_ERROR);
    uint32_t foreign = rdma_write(n, vi, t.va, t.handle);
    std::printf("rank 3: isolation: RDMA write into the victim's handle %u: "
                "status 0x%x\n",
                t.handle, foreign);
    CHECK(foreign & VIP_STATUS_RDMA_PROT_ERROR);
    break;
  }
  }
  return verdict();
}
