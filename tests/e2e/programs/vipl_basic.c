/* VIPL, the calls that need no other node, in the classic C of VIPL
 * programs (builds as GNU C89): opening, querying and closing the NIC,
 * protection tags, memory registration, VIs and their limit, posting on an
 * idle VI, memory of the program's own (stack, malloc: pinned), Done and
 * Wait on queues where nothing completes (with Wait's
 * timeout in virtual time), completion queues, the name service, the FM
 * kind of VI, and bad arguments of every kind. Run on 2 nodes with the via
 * firmware; each rank prints "rank R: vipl_basic: N failures" and exits 1
 * if N is not 0. */
#include <nicemu/host.h>
#include <nicemu/vipl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
static uint32_t my_rank;

static void check_rc(int line, const char *what, VIP_RETURN got,
                     VIP_RETURN want) {
  if (got == want)
    return;
  failures++;
  printf("rank %u: line %d: %s: got %d, want %d\n", (unsigned)my_rank, line,
         what, (int)got, (int)want);
}

static void check(int line, const char *what, int ok) {
  if (ok)
    return;
  failures++;
  printf("rank %u: line %d: %s does not hold\n", (unsigned)my_rank, line, what);
}

#define RC(call, want) check_rc(__LINE__, #call, (call), (want))
#define CHECK(cond) check(__LINE__, #cond, (cond))

static uint64_t now_ps(void) {
  uint64_t t = 0;
  nicemu_now_ps(&t);
  return t;
}

static void *dma_memory(size_t bytes) {
  void *p = NULL;
  if (nicemu_alloc(bytes, &p) != NICEMU_OK) {
    printf("nicemu_alloc: %s\n", nicemu_last_error());
    exit(2);
  }
  memset(p, 0, bytes);
  return p;
}

static VIP_VI_ATTRIBUTES vi_attributes(VIP_PROTECTION_HANDLE ptag) {
  VIP_VI_ATTRIBUTES a;
  memset(&a, 0, sizeof a);
  a.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
  a.MaxTransferSize = 65536;
  a.QoS = NULL;
  a.Ptag = ptag;
  a.EnableRdmaWrite = VIP_FALSE;
  a.EnableRdmaRead = VIP_FALSE;
  return a;
}

static void test_nic(void) {
  VIP_NIC_HANDLE nic, second;
  VIP_NIC_ATTRIBUTES a;
  RC(VipOpenNic("eth0", &nic), VIP_INVALID_PARAMETER);
  RC(VipOpenNic("/dev/via0", NULL), VIP_INVALID_PARAMETER);
  RC(VipOpenNic("/dev/via_eth0", &nic), VIP_SUCCESS);
  RC(VipOpenNic(NULL, &second), VIP_SUCCESS);
  CHECK(nic != second);
  RC(VipQueryNic(nic, &a), VIP_SUCCESS);
  CHECK(a.NicAddressLen == 6);
  CHECK(a.LocalNicAddress != NULL && a.LocalNicAddress[0] == 0x02 &&
        a.LocalNicAddress[1] == 0x4E && a.LocalNicAddress[2] == 0x4D &&
        a.LocalNicAddress[3] == 0 && a.LocalNicAddress[4] == 0 &&
        a.LocalNicAddress[5] == my_rank);
  CHECK(a.MaxVI == 3);
  CHECK(a.MaxTransferSize == 65536);
  CHECK(a.NativeMTU == 1468);
  CHECK(a.MaxSegmentsPerDesc == 16);
  CHECK(a.MaxDiscriminatorLen == 16);
  CHECK(a.MaxCQ == 8);
  CHECK(a.MaxDescriptorsPerQueue == 1024);
  CHECK(a.MaxRegisterRegions == 255);
  CHECK(a.ThreadSafe == VIP_TRUE);
  CHECK((a.ReliabilityLevelSupport & 7) == 7);
  CHECK(strlen(a.Name) > 0);
  RC(VipQueryNic(nic, NULL), VIP_INVALID_PARAMETER);
  RC(VipQueryNic((VIP_NIC_HANDLE)0x1234, &a), VIP_INVALID_PARAMETER);
  RC(VipQueryNic(NULL, &a), VIP_INVALID_PARAMETER);
  RC(VipQuerySystemManagementInfo(nic, VIP_SMI_AUTODISCOVERY, NULL),
     VIP_ERROR_NOT_SUPPORTED);
  RC(VipCloseNic(second), VIP_SUCCESS);
  RC(VipCloseNic(second), VIP_INVALID_PARAMETER);
  RC(VipQueryNic(nic, &a), VIP_SUCCESS);
  RC(VipCloseNic(nic), VIP_SUCCESS);
  /* Opened again, afresh. */
  RC(VipOpenNic("nicemu0", &nic), VIP_SUCCESS);
  RC(VipCloseNic(nic), VIP_SUCCESS);
}

static void test_ptags_and_memory(VIP_NIC_HANDLE nic) {
  VIP_PROTECTION_HANDLE tag, other;
  VIP_MEM_ATTRIBUTES ma, got;
  VIP_MEM_HANDLE h, h2, h3, many[256];
  char *buf = dma_memory(8192);
  char on_stack[256];
  char *heap = malloc(4096);
  int i, n;

  RC(VipCreatePtag(nic, NULL), VIP_INVALID_PARAMETER);
  RC(VipCreatePtag(NULL, &tag), VIP_INVALID_PARAMETER);
  RC(VipCreatePtag(nic, &tag), VIP_SUCCESS);
  RC(VipCreatePtag(nic, &other), VIP_SUCCESS);
  CHECK(tag != other);

  ma.Ptag = tag;
  ma.EnableRdmaWrite = VIP_FALSE;
  ma.EnableRdmaRead = VIP_FALSE;
  RC(VipRegisterMem(nic, buf, 8192, &ma, &h), VIP_SUCCESS);
  CHECK(h != 0);
  RC(VipQueryMem(nic, buf, h, &got), VIP_SUCCESS);
  CHECK(got.Ptag == tag && got.EnableRdmaWrite == VIP_FALSE &&
        got.EnableRdmaRead == VIP_FALSE);
  /* Any address inside the region names it. */
  RC(VipQueryMem(nic, buf + 100, h, &got), VIP_SUCCESS);
  RC(VipQueryMem(nic, buf + 8192, h, &got), VIP_INVALID_PARAMETER);
  ma.EnableRdmaWrite = VIP_TRUE;
  ma.Ptag = other;
  RC(VipSetMemAttributes(nic, buf, h, &ma), VIP_SUCCESS);
  RC(VipQueryMem(nic, buf, h, &got), VIP_SUCCESS);
  CHECK(got.Ptag == other && got.EnableRdmaWrite == VIP_TRUE);
  ma.Ptag = (VIP_PROTECTION_HANDLE)0x77;
  RC(VipSetMemAttributes(nic, buf, h, &ma), VIP_INVALID_PTAG);
  ma.Ptag = tag;

  /* A region may overlap another. */
  RC(VipRegisterMem(nic, buf + 64, 64, &ma, &h2), VIP_SUCCESS);
  CHECK(h2 != h);

  /* Bad registrations. */
  RC(VipRegisterMem(nic, buf, 0, &ma, &h2), VIP_INVALID_PARAMETER);
  RC(VipRegisterMem(nic, NULL, 64, &ma, &h2), VIP_INVALID_PARAMETER);
  RC(VipRegisterMem(nic, buf, 64, NULL, &h2), VIP_INVALID_PARAMETER);
  RC(VipRegisterMem(nic, buf, 64, &ma, NULL), VIP_INVALID_PARAMETER);
  RC(VipRegisterMem((VIP_NIC_HANDLE)0x99, buf, 64, &ma, &h2),
     VIP_INVALID_PARAMETER);
  ma.Ptag = NULL;
  RC(VipRegisterMem(nic, buf, 64, &ma, &h2), VIP_INVALID_PTAG);
  ma.Ptag = tag;
  /* Memory of the program's own (stack, malloc) is pinned; memory that is
   * not there is refused. */
  RC(VipRegisterMem(nic, on_stack, sizeof on_stack, &ma, &h3), VIP_SUCCESS);
  RC(VipDeregisterMem(nic, on_stack, h3), VIP_SUCCESS);
  heap[0] = 42;
  heap[4095] = 43;
  RC(VipRegisterMem(nic, heap, 4096, &ma, &h3), VIP_SUCCESS);
  CHECK(heap[0] == 42 && heap[4095] == 43); /* the data stays */
  RC(VipDeregisterMem(nic, heap, h3), VIP_SUCCESS);
  RC(VipRegisterMem(nic, (VIP_PVOID)0x1000, 64, &ma, &h3),
     VIP_INVALID_PARAMETER);

  /* A tag that guards memory cannot go. */
  RC(VipDestroyPtag(nic, other), VIP_ERROR_RESOURCE);

  /* Deregistration names the region by its start and handle. */
  RC(VipDeregisterMem(nic, buf + 64, h), VIP_INVALID_PARAMETER);
  RC(VipDeregisterMem(nic, buf, h + 100), VIP_INVALID_PARAMETER);
  RC(VipDeregisterMem(nic, buf, h), VIP_SUCCESS);
  RC(VipDeregisterMem(nic, buf, h), VIP_INVALID_PARAMETER);
  RC(VipQueryMem(nic, buf, h, &got), VIP_INVALID_PARAMETER);
  RC(VipDeregisterMem(nic, buf + 64, h2), VIP_SUCCESS);
  RC(VipDestroyPtag(nic, other), VIP_SUCCESS);
  RC(VipDestroyPtag(nic, other), VIP_INVALID_PARAMETER);

  /* 255 regions at once, and not one more. */
  n = 0;
  for (i = 0; i < 256; ++i) {
    VIP_RETURN r = VipRegisterMem(nic, buf + i * 16, 16, &ma, &many[i]);
    if (r != VIP_SUCCESS) {
      check_rc(__LINE__, "the 256th registration", r, VIP_ERROR_RESOURCE);
      break;
    }
    n++;
  }
  CHECK(n == 255);
  for (i = 0; i < n; ++i)
    RC(VipDeregisterMem(nic, buf + i * 16, many[i]), VIP_SUCCESS);
  RC(VipDestroyPtag(nic, tag), VIP_SUCCESS);
  free(heap);
}

static void test_vis(VIP_NIC_HANDLE nic) {
  VIP_PROTECTION_HANDLE tag;
  VIP_VI_ATTRIBUTES va, got;
  VIP_VI_HANDLE vi[4];
  VIP_VI_STATE state;
  VIP_BOOLEAN send_empty, recv_empty;
  VIP_MEM_ATTRIBUTES ma;
  VIP_MEM_HANDLE mh;
  VIP_DESCRIPTOR *d, *out;
  VIP_CQ_HANDLE cq;
  VIP_NET_ADDRESS *local, *remote;
  char *buf = dma_memory(4096);
  uint64_t t0, t1;
  int i;

  RC(VipCreatePtag(nic, &tag), VIP_SUCCESS);
  va = vi_attributes(tag);
  RC(VipCreateVi(nic, NULL, NULL, NULL, &vi[0]), VIP_INVALID_PARAMETER);
  RC(VipCreateVi(nic, &va, NULL, NULL, NULL), VIP_INVALID_PARAMETER);
  RC(VipCreateVi(nic, &va, (VIP_CQ_HANDLE)0x42, NULL, &vi[0]),
     VIP_INVALID_PARAMETER);
  va.ReliabilityLevel = 3;
  RC(VipCreateVi(nic, &va, NULL, NULL, &vi[0]), VIP_INVALID_RELIABILITY_LEVEL);
  va = vi_attributes(tag);
  va.MaxTransferSize = 65537;
  RC(VipCreateVi(nic, &va, NULL, NULL, &vi[0]), VIP_INVALID_MTU);
  va = vi_attributes(tag);
  va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
  va.EnableRdmaRead = VIP_TRUE;
  RC(VipCreateVi(nic, &va, NULL, NULL, &vi[0]), VIP_INVALID_RDMAREAD);
  va = vi_attributes(NULL);
  RC(VipCreateVi(nic, &va, NULL, NULL, &vi[0]), VIP_INVALID_PTAG);

  /* Three VIs, and not a fourth (two doorbell FIFOs each). */
  va = vi_attributes(tag);
  for (i = 0; i < 3; ++i)
    RC(VipCreateVi(nic, &va, NULL, NULL, &vi[i]), VIP_SUCCESS);
  RC(VipCreateVi(nic, &va, NULL, NULL, &vi[3]), VIP_ERROR_RESOURCE);
  RC(VipDestroyVi(vi[1]), VIP_SUCCESS);
  RC(VipDestroyVi(vi[1]), VIP_INVALID_PARAMETER);
  RC(VipCreateVi(nic, &va, NULL, NULL, &vi[1]), VIP_SUCCESS);
  RC(VipCreateVi(nic, &va, NULL, NULL, &vi[3]), VIP_ERROR_RESOURCE);
  RC(VipDestroyPtag(nic, tag), VIP_ERROR_RESOURCE); /* the VIs' */

  RC(VipQueryVi(vi[0], &state, &got, &send_empty, &recv_empty), VIP_SUCCESS);
  CHECK(state == VIP_STATE_IDLE);
  CHECK(got.ReliabilityLevel == VIP_SERVICE_RELIABLE_DELIVERY &&
        got.MaxTransferSize == 65536 && got.Ptag == tag &&
        got.EnableRdmaWrite == VIP_FALSE);
  CHECK(send_empty == VIP_TRUE && recv_empty == VIP_TRUE);
  RC(VipQueryVi(vi[0], NULL, &got, &send_empty, &recv_empty),
     VIP_INVALID_PARAMETER);
  RC(VipQueryVi(NULL, &state, &got, &send_empty, &recv_empty),
     VIP_INVALID_PARAMETER);

  /* Attributes: the RDMA enables in place; the level and the size by
   * making the idle VI again. */
  va.EnableRdmaWrite = VIP_TRUE;
  RC(VipSetViAttributes(vi[0], &va), VIP_SUCCESS);
  va.MaxTransferSize = 4096;
  va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
  RC(VipSetViAttributes(vi[0], &va), VIP_SUCCESS);
  RC(VipQueryVi(vi[0], &state, &got, &send_empty, &recv_empty), VIP_SUCCESS);
  CHECK(got.EnableRdmaWrite == VIP_TRUE && got.MaxTransferSize == 4096 &&
        got.ReliabilityLevel == VIP_SERVICE_UNRELIABLE);
  va.MaxTransferSize = 1u << 20;
  RC(VipSetViAttributes(vi[0], &va), VIP_INVALID_MTU);
  RC(VipSetViAttributes(vi[0], NULL), VIP_INVALID_PARAMETER);
  va = vi_attributes(tag);

  /* Posting on an idle VI: receives yes, sends no. */
  ma.Ptag = tag;
  ma.EnableRdmaWrite = VIP_FALSE;
  ma.EnableRdmaRead = VIP_FALSE;
  RC(VipRegisterMem(nic, buf, 4096, &ma, &mh), VIP_SUCCESS);
  d = (VIP_DESCRIPTOR *)buf;
  d->CS.SegCount = 1;
  d->CS.Control = VIP_CONTROL_OP_SENDRECV;
  d->CS.Length = 64;
  d->DS[0].Local.Data.Address = buf + 1024;
  d->DS[0].Local.Handle = mh;
  d->DS[0].Local.Length = 64;
  RC(VipPostSend(vi[1], d, mh), VIP_INVALID_STATE);
  RC(VipPostRecv(vi[1], (VIP_DESCRIPTOR *)(buf + 32), mh),
     VIP_INVALID_PARAMETER); /* not 64-byte aligned */
  RC(VipPostRecv(vi[1], d, mh + 1), VIP_INVALID_PARAMETER);
  RC(VipPostRecv(vi[1], NULL, mh), VIP_INVALID_PARAMETER);
  RC(VipPostRecv(NULL, d, mh), VIP_INVALID_PARAMETER);
  ((VIP_DESCRIPTOR *)(buf + 4096 - 64))->CS.SegCount = 4;
  RC(VipPostRecv(vi[1], (VIP_DESCRIPTOR *)(buf + 4096 - 64), mh),
     VIP_INVALID_PARAMETER); /* its segments leave the region */
  RC(VipPostRecv(vi[1], d, mh), VIP_SUCCESS);
  RC(VipPostRecv(vi[1], d, mh), VIP_INVALID_PARAMETER); /* posted already */
  CHECK(d->CS.Status == 0);
  RC(VipQueryVi(vi[1], &state, &got, &send_empty, &recv_empty), VIP_SUCCESS);
  CHECK(send_empty == VIP_TRUE && recv_empty == VIP_FALSE);

  /* Nothing completes: Done says so, Wait times out on the virtual
   * clock. */
  RC(VipRecvDone(vi[1], &out), VIP_NOT_DONE);
  RC(VipRecvDone(vi[1], NULL), VIP_INVALID_PARAMETER);
  RC(VipSendDone(vi[1], &out), VIP_NOT_DONE);
  t0 = now_ps();
  RC(VipRecvWait(vi[1], 5, &out), VIP_TIMEOUT);
  t1 = now_ps();
  CHECK(t1 - t0 >= 5000000000ull && t1 - t0 < 5000000000ull + 2000000);
  t0 = now_ps();
  RC(VipSendWait(vi[1], 3, &out), VIP_TIMEOUT); /* nothing posted */
  t1 = now_ps();
  CHECK(t1 - t0 >= 3000000000ull && t1 - t0 < 3000000000ull + 2000000);
  RC(VipSendWait(vi[1], VIP_INFINITE, &out), VIP_INVALID_STATE);
  RC(VipRecvWait(vi[1], 0, &out), VIP_TIMEOUT);

  /* Destroying the VI flushes what it held, in the arena or in pinned
   * memory of the program's own, also a descriptor posted just before. */
  {
    VIP_DESCRIPTOR *own = NULL;
    VIP_MEM_HANDLE own_h;
    CHECK(posix_memalign((void **)&own, 64, 4 * sizeof *own) == 0);
    memset(own, 0, 4 * sizeof *own);
    RC(VipRegisterMem(nic, own, 4 * sizeof *own, &ma, &own_h), VIP_SUCCESS);
    RC(VipPostRecv(vi[1], own, own_h), VIP_SUCCESS);
    RC(VipDestroyVi(vi[1]), VIP_SUCCESS);
    CHECK(own->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
                             VIP_STATUS_OP_RECEIVE));
    RC(VipDeregisterMem(nic, own, own_h), VIP_SUCCESS);
    free(own);
  }
  CHECK(d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
                         VIP_STATUS_OP_RECEIVE));

  /* Notify calls are not provided. */
  RC(VipSendNotify(vi[0], NULL, NULL), VIP_ERROR_NOT_SUPPORTED);
  RC(VipRecvNotify(vi[0], NULL, NULL), VIP_ERROR_NOT_SUPPORTED);
  RC(VipSendNotify(NULL, NULL, NULL), VIP_INVALID_PARAMETER);

  /* Connection calls on bad arguments. */
  local = malloc(sizeof(VIP_NET_ADDRESS) + 32);
  remote = malloc(sizeof(VIP_NET_ADDRESS) + 32);
  local->HostAddressLen = 6;
  local->DiscriminatorLen = 0;
  RC(VipNSGetHostByName(nic, "localhost", local, 0), VIP_SUCCESS);
  remote->HostAddressLen = 6;
  remote->DiscriminatorLen = 0;
  memset(remote->HostAddress, 0x55, 6);
  RC(VipConnectRequest(vi[0], local, remote, 10, NULL), VIP_INVALID_PARAMETER);
  RC(VipConnectRequest(vi[0], NULL, local, 10, NULL), VIP_INVALID_PARAMETER);
  RC(VipConnectPeerRequest(vi[0], local, remote, 10), VIP_INVALID_PARAMETER);
  RC(VipConnectPeerDone(vi[0], NULL), VIP_INVALID_STATE);
  RC(VipConnectPeerWait(vi[0], NULL), VIP_INVALID_STATE);
  RC(VipConnectAccept(NULL, vi[0]), VIP_INVALID_PARAMETER);
  RC(VipConnectReject((VIP_CONN_HANDLE)0x5000001), VIP_INVALID_PARAMETER);
  local->DiscriminatorLen = 17;
  RC(VipConnectWait(nic, local, 0, remote, NULL, NULL), VIP_INVALID_PARAMETER);
  {
    VIP_CONN_HANDLE conn;
    local->DiscriminatorLen = 1;
    local->HostAddress[6] = 'x';
    t0 = now_ps();
    RC(VipConnectWait(nic, local, 2, remote, &got, &conn), VIP_TIMEOUT);
    t1 = now_ps();
    CHECK(t1 - t0 >= 2000000000ull && t1 - t0 < 2000000000ull + 2000000);
  }
  RC(VipDisconnect(vi[0]), VIP_SUCCESS); /* idle: nothing to end */
  RC(VipDisconnect(NULL), VIP_INVALID_PARAMETER);
  free(local);
  free(remote);

  /* Completion queues. */
  RC(VipCreateCQ(nic, 0, &cq), VIP_INVALID_PARAMETER);
  RC(VipCreateCQ(nic, 100000, &cq), VIP_ERROR_RESOURCE);
  RC(VipCreateCQ(nic, 16, NULL), VIP_INVALID_PARAMETER);
  RC(VipCreateCQ(nic, 100, &cq), VIP_SUCCESS);
  {
    VIP_VI_HANDLE which;
    VIP_BOOLEAN recv;
    VIP_CQ_HANDLE more[8];
    int made = 0;
    RC(VipCQDone(cq, &which, &recv), VIP_NOT_DONE);
    RC(VipCQDone(cq, NULL, &recv), VIP_INVALID_PARAMETER);
    RC(VipCQDone(NULL, &which, &recv), VIP_INVALID_PARAMETER);
    t0 = now_ps();
    RC(VipCQWait(cq, 4, &which, &recv), VIP_TIMEOUT);
    t1 = now_ps();
    CHECK(t1 - t0 >= 4000000000ull && t1 - t0 < 4000000000ull + 2000000);
    RC(VipResizeCQ(cq, 200), VIP_ERROR_NOT_SUPPORTED);
    RC(VipCQNotify(cq, NULL, NULL), VIP_ERROR_NOT_SUPPORTED);
    /* Eight CQs in all. */
    for (i = 0; i < 8; ++i) {
      VIP_RETURN r = VipCreateCQ(nic, 4, &more[made]);
      if (r != VIP_SUCCESS) {
        check_rc(__LINE__, "the 9th CQ", r, VIP_ERROR_RESOURCE);
        break;
      }
      made++;
    }
    CHECK(made == 7);
    for (i = 0; i < made; ++i)
      RC(VipDestroyCQ(more[i]), VIP_SUCCESS);
    /* A CQ that VIs report to stays. */
    RC(VipCreateVi(nic, &va, cq, cq, &vi[1]), VIP_SUCCESS);
    RC(VipDestroyCQ(cq), VIP_INVALID_STATE);
    RC(VipDestroyVi(vi[1]), VIP_SUCCESS);
    RC(VipDestroyCQ(cq), VIP_SUCCESS);
    RC(VipDestroyCQ(cq), VIP_INVALID_PARAMETER);
  }

  /* The FM kind: usable at once, never connected. */
  {
    VIP_VI_HANDLE fm;
    VIP_NET_ADDRESS *a = malloc(sizeof(VIP_NET_ADDRESS) + 16);
    a->HostAddressLen = 6;
    a->DiscriminatorLen = 0;
    RC(VipNSGetHostByName(nic, "node0", a, 0), VIP_SUCCESS);
    RC(VipCreateViKind(nic, &va, (VIP_VI_KIND)7, NULL, NULL, &fm),
       VIP_INVALID_PARAMETER);
    RC(VipCreateViKind(nic, &va, VIP_VI_KIND_FM_IP, NULL, NULL, &fm),
       VIP_SUCCESS);
    RC(VipQueryVi(fm, &state, &got, &send_empty, &recv_empty), VIP_SUCCESS);
    CHECK(state == VIP_STATE_CONNECTED);
    RC(VipConnectRequest(fm, a, a, 10, NULL), VIP_INVALID_STATE);
    RC(VipConnectPeerRequest(fm, a, a, 10), VIP_INVALID_STATE);
    RC(VipDisconnect(fm), VIP_INVALID_STATE);
    RC(VipDestroyVi(fm), VIP_SUCCESS);
    free(a);
  }

  RC(VipDestroyVi(vi[0]), VIP_SUCCESS);
  RC(VipDestroyVi(vi[2]), VIP_SUCCESS);
  RC(VipDeregisterMem(nic, buf, mh), VIP_SUCCESS);
  RC(VipDestroyPtag(nic, tag), VIP_SUCCESS);
}

static void test_names(VIP_NIC_HANDLE nic) {
  VIP_NET_ADDRESS *a = malloc(sizeof(VIP_NET_ADDRESS) + 32);
  char name[64], host[256];
  VIP_ULONG len;
  RC(VipNSInit(nic, NULL), VIP_SUCCESS);
  RC(VipNSInit(NULL, NULL), VIP_INVALID_PARAMETER);
  a->HostAddressLen = 0;
  a->DiscriminatorLen = 2;
  RC(VipNSGetHostByName(nic, "node1", a, 0), VIP_SUCCESS);
  CHECK(a->HostAddressLen == 6 && a->DiscriminatorLen == 2);
  CHECK(a->HostAddress[0] == 0x02 && a->HostAddress[1] == 0x4E &&
        a->HostAddress[2] == 0x4D && a->HostAddress[3] == 0 &&
        a->HostAddress[4] == 0 && a->HostAddress[5] == 1);
  RC(VipNSGetHostByName(nic, "n0", a, 0), VIP_SUCCESS);
  CHECK(a->HostAddress[5] == 0);
  RC(VipNSGetHostByName(nic, "localhost", a, 0), VIP_SUCCESS);
  CHECK(a->HostAddress[5] == my_rank);
  if (gethostname(host, sizeof host) == 0) {
    RC(VipNSGetHostByName(nic, host, a, 0), VIP_SUCCESS);
    CHECK(a->HostAddress[5] == my_rank);
  }
  RC(VipNSGetHostByName(nic, "node2", a, 0), VIP_ERROR_NAMESERVICE);
  RC(VipNSGetHostByName(nic, "node1x", a, 0), VIP_ERROR_NAMESERVICE);
  RC(VipNSGetHostByName(nic, "example.org", a, 0), VIP_ERROR_NAMESERVICE);
  RC(VipNSGetHostByName(nic, "node1", a, 1), VIP_ERROR_NAMESERVICE);
  RC(VipNSGetHostByName(nic, NULL, a, 0), VIP_INVALID_PARAMETER);
  RC(VipNSGetHostByName(nic, "node1", NULL, 0), VIP_INVALID_PARAMETER);

  RC(VipNSGetHostByName(nic, "node1", a, 0), VIP_SUCCESS);
  len = sizeof name;
  RC(VipNSGetHostByAddr(nic, a, name, &len), VIP_SUCCESS);
  CHECK(strcmp(name, "node1") == 0 && len == 6);
  len = 3;
  RC(VipNSGetHostByAddr(nic, a, name, &len), VIP_INVALID_PARAMETER);
  CHECK(len == 6);
  a->HostAddress[5] = 9;
  len = sizeof name;
  RC(VipNSGetHostByAddr(nic, a, name, &len), VIP_ERROR_NAMESERVICE);
  RC(VipNSShutdown(nic), VIP_SUCCESS);
  free(a);
}

static void on_error(VIP_PVOID context, VIP_ERROR_DESCRIPTOR *e) {
  (void)context;
  (void)e;
}

int main(void) {
  VIP_NIC_HANDLE nic;
  VIP_PROTECTION_HANDLE tag;
  if (nicemu_rank(&my_rank) != NICEMU_OK) {
    printf("%s\n", nicemu_last_error());
    return 2;
  }
  test_nic();
  RC(VipOpenNic("/dev/via0", &nic), VIP_SUCCESS);
  RC(VipErrorCallback(nic, NULL, on_error), VIP_SUCCESS);
  RC(VipErrorCallback(nic, NULL, NULL), VIP_SUCCESS);
  RC(VipErrorCallback(NULL, NULL, on_error), VIP_INVALID_PARAMETER);
  test_ptags_and_memory(nic);
  test_vis(nic);
  test_names(nic);
  /* Closing ends everything the NIC still had; its handles die. */
  RC(VipCreatePtag(nic, &tag), VIP_SUCCESS);
  RC(VipCloseNic(nic), VIP_SUCCESS);
  RC(VipDestroyPtag(nic, tag), VIP_INVALID_PARAMETER);
  RC(VipCloseNic(nic), VIP_INVALID_PARAMETER);
  printf("rank %u: vipl_basic: %d failures\n", (unsigned)my_rank, failures);
  return failures ? 1 : 0;
}
