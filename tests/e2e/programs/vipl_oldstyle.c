/* A message-passing layer over VIPL written the way one was in 1998: K&R
 * definitions and implicit int, the nodes found through the name service,
 * buffers and descriptors from malloc registered with VipRegisterMem, one
 * reliable VI per peer, 200 receive descriptors pre-posted on every VI
 * before it is connected, one completion queue for all the receive queues,
 * messages with a header and immediate data, receives reposted as they are
 * consumed, then disconnection and a check that every receive still posted
 * comes back flushed. Built unchanged as gnu89, as a position-independent
 * executable and with -no-pie (test_vipl_oldstyle.cpp).
 *
 *   nicemu run -n N --model comet --firmware via.img -- \
 *       vipl_oldstyle [-k K] [--peer] [--expect-max-vi M]
 *
 * Every node sends K messages (default 300) of 16 to 2032 bytes to every
 * other node, in rounds of 100 (half of what is pre-posted, so a peer is
 * never more than two rounds ahead of the receives posted for it), and
 * checks what it receives: order, sender, length, every byte, the
 * immediate data. Connections are client/server (the lower node waits and
 * accepts, the higher one requests), or peer to peer with --peer.
 * VipQueryNic's MaxVI must be at least the number of VIs needed (one per
 * peer), and M exactly with --expect-max-vi. Each node prints
 * "node R: vipl_oldstyle: ok, N messages" (N received, as many sent) and
 * exits 0, or says what failed and exits 1: with more peers than the card
 * has VIs, the VipCreateVi that finds none left is reported by name.
 * clang-format does not know K&R definitions: it stays off here. */
/* clang-format off */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nicemu/vipl.h>

#define MAXNODES 16
#define POSTED 200            /* receives pre-posted per VI */
#define ROUND (POSTED / 2)    /* messages per peer and round */
#define MSGMAX 2048           /* bytes of a receive buffer */
#define HEADER 16             /* magic, sender, receiver, sequence number */
#define MAGIC 0x56495041      /* "VIPA" */
#define DISC "vmsg"           /* the discriminator of every connection */
#define CONNECT_TIMEOUT 10000 /* ms of virtual time */
#define PROGRESS_TIMEOUT 5000 /* ms of virtual time without progress */

char *rc_name();
void fail();
void die();

int me = -1, nodes, failures, peer_mode, expect_max_vi = -1;
long K = 300;
VIP_NIC_HANDLE nic;
VIP_NIC_ATTRIBUTES nattr;
VIP_PROTECTION_HANDLE ptag;
VIP_MEM_HANDLE desc_mh, buf_mh;
VIP_NET_ADDRESS *host_addr[MAXNODES];
VIP_VI_HANDLE vi[MAXNODES];
VIP_DESCRIPTOR *rdesc[MAXNODES], *sdesc[MAXNODES];
char *rbuf[MAXNODES], *sbuf[MAXNODES];
char *desc_mem, *buf_mem;
VIP_CQ_HANDLE cq;               /* of every receive queue */
long sent[MAXNODES], done[MAXNODES], got[MAXNODES], posted[MAXNODES];
long flushed[MAXNODES], repost_limit;

char *
rc_name(r)
VIP_RETURN r;
{
  static char other[32];
  switch (r) {
  case VIP_SUCCESS: return "VIP_SUCCESS";
  case VIP_NOT_DONE: return "VIP_NOT_DONE";
  case VIP_INVALID_PARAMETER: return "VIP_INVALID_PARAMETER";
  case VIP_ERROR_RESOURCE: return "VIP_ERROR_RESOURCE";
  case VIP_TIMEOUT: return "VIP_TIMEOUT";
  case VIP_REJECT: return "VIP_REJECT";
  case VIP_INVALID_RELIABILITY_LEVEL: return "VIP_INVALID_RELIABILITY_LEVEL";
  case VIP_INVALID_STATE: return "VIP_INVALID_STATE";
  case VIP_ERROR_NAMESERVICE: return "VIP_ERROR_NAMESERVICE";
  case VIP_ERROR_NOT_SUPPORTED: return "VIP_ERROR_NOT_SUPPORTED";
  default:
    sprintf(other, "VIP_RETURN %d", (int)r);
    return other;
  }
}

void
fail(what, node, r)
char *what;
int node;
VIP_RETURN r;
{
  printf("node %d: vipl_oldstyle: FAILED %s", me, what);
  if (node >= 0)
    printf(" (peer node%d)", node);
  if (r != VIP_SUCCESS)
    printf(": %s", rc_name(r));
  printf("\n");
  fflush(stdout);
  failures++;
}

/* Gives up: closing the NIC ends everything opened through it. */
void
die(what, node, r)
char *what;
int node;
VIP_RETURN r;
{
  fail(what, node, r);
  if (nic)
    VipCloseNic(nic);
  exit(1);
}

void
on_error(context, e)
VIP_PVOID context;
VIP_ERROR_DESCRIPTOR *e;
{
  int n;
  for (n = 0; n < nodes; n++)
    if (n != me && vi[n] == e->ViHandle)
      break;
  printf("node %d: vipl_oldstyle: FAILED asynchronous error, VI to node%d, "
         "resource %d, error %d, op 0x%lx\n", me, n, (int)e->ResourceCode,
         (int)e->ErrorCode, (unsigned long)e->OpCode);
  failures++;
}

/* A host's address from the name service, with room for a discriminator. */
VIP_NET_ADDRESS *
lookup(name)
char *name;
{
  VIP_NET_ADDRESS *a;
  a = (VIP_NET_ADDRESS *)malloc(sizeof(VIP_NET_ADDRESS) + 64);
  memset(a, 0, sizeof(VIP_NET_ADDRESS) + 64);
  a->HostAddressLen = 6;
  a->DiscriminatorLen = 0;
  if (VipNSGetHostByName(nic, name, a, 0) != VIP_SUCCESS) {
    free(a);
    return NULL;
  }
  return a;
}

/* Node n's address followed by the discriminator. */
VIP_NET_ADDRESS *
endpoint(n, disc)
int n;
char *disc;
{
  VIP_NET_ADDRESS *a;
  a = (VIP_NET_ADDRESS *)malloc(sizeof(VIP_NET_ADDRESS) + 64);
  memcpy(a, host_addr[n], sizeof(VIP_NET_ADDRESS) + 6);
  a->DiscriminatorLen = strlen(disc);
  memcpy(a->HostAddress + a->HostAddressLen, disc, strlen(disc));
  return a;
}

int
node_of(a)
VIP_NET_ADDRESS *a;
{
  int n;
  for (n = 0; n < nodes; n++)
    if (a->HostAddressLen == host_addr[n]->HostAddressLen &&
        !memcmp(a->HostAddress, host_addr[n]->HostAddress, a->HostAddressLen))
      return n;
  return -1;
}

/* What message `seq` from `from` to `to` holds: its length, and byte k. */
length_of(from, to, seq)
int from, to;
long seq;
{
  return HEADER + (int)((seq * 61 + from * 7 + to * 3) % 97) * 21;
}

#define BYTE(from, to, seq, k) \
  ((unsigned char)((from) * 31 + (to) * 17 + (seq) * 7 + (k)))

void
post_recv(p, i)
int p, i;
{
  VIP_DESCRIPTOR *d = rdesc[p] + i;
  VIP_RETURN r;
  memset(d, 0, sizeof *d);
  d->CS.SegCount = 1;
  d->CS.Length = MSGMAX;
  d->DS[0].Local.Data.Address = rbuf[p] + (long)i * MSGMAX;
  d->DS[0].Local.Handle = buf_mh;
  d->DS[0].Local.Length = MSGMAX;
  if ((r = VipPostRecv(vi[p], d, desc_mh)) != VIP_SUCCESS)
    die("VipPostRecv", p, r);
  posted[p]++;
}

void
post_send(p, i)
int p, i;
{
  VIP_DESCRIPTOR *d = sdesc[p] + i;
  unsigned int *w;
  unsigned char *b;
  long seq = sent[p];
  int len = length_of(me, p, seq), k;
  VIP_RETURN r;

  b = (unsigned char *)sbuf[p] + (long)i * MSGMAX;
  w = (unsigned int *)b;
  w[0] = MAGIC;
  w[1] = me;
  w[2] = p;
  w[3] = seq;
  for (k = HEADER; k < len; k++)
    b[k] = BYTE(me, p, seq, k);
  memset(d, 0, sizeof *d);
  d->CS.Control = VIP_CONTROL_OP_SENDRECV | VIP_CONTROL_IMMEDIATE;
  d->CS.ImmediateData = seq;
  d->CS.SegCount = 1;
  d->CS.Length = len;
  d->DS[0].Local.Data.Address = b;
  d->DS[0].Local.Handle = buf_mh;
  d->DS[0].Local.Length = len;
  if ((r = VipPostSend(vi[p], d, desc_mh)) != VIP_SUCCESS)
    die("VipPostSend", p, r);
  sent[p]++;
}

/* The next receive from p, checked: the oldest descriptor posted. */
void
check_recv(p, d)
int p;
VIP_DESCRIPTOR *d;
{
  long seq = got[p];
  int i = (int)(seq % POSTED), len = length_of(p, me, seq), k, bad = 0;
  unsigned int *w = (unsigned int *)(rbuf[p] + (long)i * MSGMAX);
  unsigned char *b = (unsigned char *)w;
  char what[160];

  if (d != rdesc[p] + i) {
    sprintf(what, "receive %ld completed descriptor %d, not %d", seq,
            (int)(d - rdesc[p]), i);
    die(what, p, VIP_SUCCESS);
  }
  if (d->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE |
                       VIP_STATUS_IMMEDIATE)) {
    sprintf(what, "receive %ld: status 0x%lx", seq,
            (unsigned long)d->CS.Status);
    die(what, p, VIP_SUCCESS);
  }
  if (d->CS.Length != len || d->CS.ImmediateData != seq) {
    sprintf(what, "receive %ld: length %lu (want %d), immediate %lu", seq,
            (unsigned long)d->CS.Length, len,
            (unsigned long)d->CS.ImmediateData);
    die(what, p, VIP_SUCCESS);
  }
  if (w[0] != MAGIC || w[1] != p || w[2] != me || w[3] != seq) {
    sprintf(what, "receive %ld: header %x %u %u %u", seq, w[0], w[1], w[2],
            w[3]);
    die(what, p, VIP_SUCCESS);
  }
  for (k = HEADER; k < len; k++)
    if (b[k] != BYTE(p, me, seq, k))
      bad++;
  if (bad) {
    sprintf(what, "receive %ld: %d of %d bytes wrong", seq, bad, len);
    die(what, p, VIP_SUCCESS);
  }
  got[p]++;
}

void
check_send(p, d)
int p;
VIP_DESCRIPTOR *d;
{
  char what[120];
  if (d != sdesc[p] + done[p] % ROUND ||
      d->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_SEND)) {
    sprintf(what, "send %ld: descriptor %d, status 0x%lx", done[p],
            (int)(d - sdesc[p]), (unsigned long)d->CS.Status);
    die(what, p, VIP_SUCCESS);
  }
  done[p]++;
}

/* Client/server: the lower node of a pair waits, the higher requests. Each
 * node makes its requests first (to every lower node, in order), then
 * takes the requests of the higher ones in whatever order they come. */
void
connect_client_server()
{
  VIP_VI_ATTRIBUTES remote_attrs;
  VIP_NET_ADDRESS *local, *remote;
  VIP_CONN_HANDLE conn;
  VIP_RETURN r;
  int p, n, accepted;

  local = endpoint(me, "");
  for (p = 0; p < me; p++) {
    remote = endpoint(p, DISC);
    r = VipConnectRequest(vi[p], local, remote, CONNECT_TIMEOUT,
                          &remote_attrs);
    if (r != VIP_SUCCESS)
      die("VipConnectRequest", p, r);
    free(remote);
  }
  free(local);
  local = endpoint(me, DISC);
  remote = (VIP_NET_ADDRESS *)malloc(sizeof(VIP_NET_ADDRESS) + 64);
  for (accepted = 0; accepted < nodes - 1 - me; accepted++) {
    remote->HostAddressLen = 0;
    remote->DiscriminatorLen = 0;
    r = VipConnectWait(nic, local, CONNECT_TIMEOUT, remote, &remote_attrs,
                       &conn);
    if (r != VIP_SUCCESS)
      die("VipConnectWait", -1, r);
    n = node_of(remote);
    if (n <= me) {
      VipConnectReject(conn);
      die("a connection request from an unexpected host", n, VIP_SUCCESS);
    }
    if (remote_attrs.ReliabilityLevel != VIP_SERVICE_RELIABLE_DELIVERY)
      fail("the requester's reliability level", n, VIP_SUCCESS);
    if ((r = VipConnectAccept(conn, vi[n])) != VIP_SUCCESS)
      die("VipConnectAccept", n, r);
  }
  free(local);
  free(remote);
}

/* Peer to peer: a request to every peer at once, then wait for each. */
void
connect_peers()
{
  VIP_VI_ATTRIBUTES remote_attrs;
  VIP_NET_ADDRESS *local, *remote;
  VIP_RETURN r;
  int p;

  local = endpoint(me, DISC);
  for (p = 0; p < nodes; p++) {
    if (p == me)
      continue;
    remote = endpoint(p, DISC);
    r = VipConnectPeerRequest(vi[p], local, remote, CONNECT_TIMEOUT);
    if (r != VIP_SUCCESS)
      die("VipConnectPeerRequest", p, r);
    free(remote);
  }
  for (p = 0; p < nodes; p++) {
    if (p == me)
      continue;
    if ((r = VipConnectPeerWait(vi[p], &remote_attrs)) != VIP_SUCCESS)
      die("VipConnectPeerWait", p, r);
  }
  free(local);
}

/* The peer whose VI a completion queue entry names. */
int
peer_of(v)
VIP_VI_HANDLE v;
{
  int p;
  for (p = 0; p < nodes; p++)
    if (p != me && vi[p] == v)
      return p;
  return -1;
}

/* Takes the next receive completion off the completion queue: a message
 * while more are due from that peer, else a receive flushed because the
 * peer, done with us, disconnected. Reposts a consumed receive while the
 * messages of the rounds before the last still need it; no later, so
 * nothing is posted once the peer may be disconnecting. */
void
take_one(wait_ms)
unsigned long wait_ms;
{
  VIP_VI_HANDLE v;
  VIP_BOOLEAN is_recv;
  VIP_DESCRIPTOR *d;
  VIP_RETURN r;
  int p, i;
  char what[120];

  if ((r = VipCQWait(cq, wait_ms, &v, &is_recv)) != VIP_SUCCESS) {
    if (r != VIP_TIMEOUT)
      die("VipCQWait", -1, r);
    for (p = 0; p < nodes; p++)
      if (p != me) {
        sprintf(what, "nothing for %lu ms: %ld of %ld messages received, "
                "%ld flushed", wait_ms, got[p], K, flushed[p]);
        fail(what, p, VIP_SUCCESS);
      }
    die("no progress", -1, VIP_SUCCESS);
  }
  if ((p = peer_of(v)) < 0 || !is_recv)
    die("a completion queue entry for no receive queue of ours", -1,
        VIP_SUCCESS);
  if ((r = VipRecvDone(vi[p], &d)) != VIP_SUCCESS)
    die("VipRecvDone after its completion queue entry", p, r);
  if (got[p] < K) {
    i = (int)(got[p] % POSTED);
    check_recv(p, d);
    if (posted[p] < repost_limit)
      post_recv(p, i);
    return;
  }
  if (d->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR |
                       VIP_STATUS_OP_RECEIVE)) {
    sprintf(what, "a receive left posted: status 0x%lx",
            (unsigned long)d->CS.Status);
    die(what, p, VIP_SUCCESS);
  }
  flushed[p]++;
}

/* One round: n messages to every peer; then the n messages of this round
 * from every peer (a peer a round ahead may send more: taken too); then
 * the completions of the sends. */
void
exchange(n)
int n;
{
  VIP_DESCRIPTOR *d;
  VIP_RETURN r;
  long target;
  int p, i, pending;

  for (p = 0; p < nodes; p++)
    if (p != me)
      for (i = 0; i < n; i++)
        post_send(p, i);
  target = sent[me == 0 ? 1 : 0]; /* the same for every peer */
  do {
    pending = 0;
    for (p = 0; p < nodes; p++)
      if (p != me && got[p] < target)
        pending = 1;
    if (pending)
      take_one((unsigned long)PROGRESS_TIMEOUT);
  } while (pending);
  for (p = 0; p < nodes; p++)
    while (p != me && done[p] < sent[p]) {
      if ((r = VipSendWait(vi[p], PROGRESS_TIMEOUT, &d)) != VIP_SUCCESS)
        die("VipSendWait", p, r);
      check_send(p, d);
    }
}

main(argc, argv)
int argc;
char **argv;
{
  VIP_MEM_ATTRIBUTES mattr;
  VIP_VI_ATTRIBUTES vattr;
  VIP_DESCRIPTOR *d;
  VIP_VI_STATE state;
  VIP_BOOLEAN sq_empty, rq_empty;
  VIP_RETURN r;
  char name[32], what[200];
  long round, rounds, left, want_flushed, total = 0;
  int i, p, peers, made;
  unsigned long desc_bytes, buf_bytes;

  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-k") && i + 1 < argc)
      K = atol(argv[++i]);
    else if (!strcmp(argv[i], "--peer"))
      peer_mode = 1;
    else if (!strcmp(argv[i], "--expect-max-vi") && i + 1 < argc)
      expect_max_vi = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [-k K] [--peer] [--expect-max-vi M]\n",
              argv[0]);
      exit(2);
    }
  }
  if (K < 1) {
    fprintf(stderr, "vipl_oldstyle: -k needs at least 1 message\n");
    exit(2);
  }

  if ((r = VipOpenNic("/dev/via0", &nic)) != VIP_SUCCESS)
    die("VipOpenNic", -1, r);
  if ((r = VipQueryNic(nic, &nattr)) != VIP_SUCCESS)
    die("VipQueryNic", -1, r);
  VipErrorCallback(nic, NULL, on_error);
  VipNSInit(nic, NULL);

  /* The cluster: node0, node1, ... as far as the name service knows. */
  for (nodes = 0; nodes < MAXNODES; nodes++) {
    sprintf(name, "node%d", nodes);
    if (!(host_addr[nodes] = lookup(name)))
      break;
    if (!memcmp(host_addr[nodes]->HostAddress, nattr.LocalNicAddress,
                nattr.NicAddressLen))
      me = nodes;
  }
  if (me < 0)
    die("this NIC's address is none of the nodes'", -1, VIP_SUCCESS);
  gethostname(name, sizeof name);
  sprintf(what, "node%d", me);
  if (strcmp(name, what))
    fail("gethostname names another node", -1, VIP_SUCCESS);
  peers = nodes - 1;
  if (peers < 1)
    die("no other node to talk to", -1, VIP_SUCCESS);
  if (expect_max_vi >= 0 && nattr.MaxVI != (unsigned long)expect_max_vi) {
    sprintf(what, "MaxVI is %lu, expected %d", (unsigned long)nattr.MaxVI,
            expect_max_vi);
    fail(what, -1, VIP_SUCCESS);
  }
  if (nattr.MaxDescriptorsPerQueue < POSTED + ROUND)
    fail("MaxDescriptorsPerQueue below what is posted", -1, VIP_SUCCESS);

  /* Memory: descriptors (64-byte aligned by hand) and buffers, from
   * malloc, each registered as one region. */
  if ((r = VipCreatePtag(nic, &ptag)) != VIP_SUCCESS)
    die("VipCreatePtag", -1, r);
  desc_bytes = (unsigned long)nodes * (POSTED + ROUND) * sizeof(VIP_DESCRIPTOR);
  buf_bytes = (unsigned long)nodes * (POSTED + ROUND) * MSGMAX;
  desc_mem = malloc(desc_bytes + VIP_DESCRIPTOR_ALIGNMENT);
  buf_mem = malloc(buf_bytes);
  if (!desc_mem || !buf_mem)
    die("out of memory", -1, VIP_SUCCESS);
  d = (VIP_DESCRIPTOR *)(((unsigned long)desc_mem + VIP_DESCRIPTOR_ALIGNMENT - 1)
                         & ~(unsigned long)(VIP_DESCRIPTOR_ALIGNMENT - 1));
  memset(d, 0, desc_bytes);
  memset(buf_mem, 0, buf_bytes);
  mattr.Ptag = ptag;
  mattr.EnableRdmaWrite = VIP_FALSE;
  mattr.EnableRdmaRead = VIP_FALSE;
  if ((r = VipRegisterMem(nic, d, desc_bytes, &mattr, &desc_mh)) != VIP_SUCCESS)
    die("VipRegisterMem (descriptors)", -1, r);
  if ((r = VipRegisterMem(nic, buf_mem, buf_bytes, &mattr, &buf_mh))
      != VIP_SUCCESS)
    die("VipRegisterMem (buffers)", -1, r);
  for (p = 0; p < nodes; p++) {
    rdesc[p] = d + (long)p * (POSTED + ROUND);
    sdesc[p] = rdesc[p] + POSTED;
    rbuf[p] = buf_mem + (long)p * (POSTED + ROUND) * MSGMAX;
    sbuf[p] = rbuf[p] + (long)POSTED * MSGMAX;
  }

  /* One completion queue for every receive queue, and one VI per peer. */
  if ((r = VipCreateCQ(nic, (unsigned long)peers * POSTED, &cq))
      != VIP_SUCCESS)
    die("VipCreateCQ", -1, r);
  memset(&vattr, 0, sizeof vattr);
  vattr.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
  vattr.MaxTransferSize = MSGMAX;
  vattr.QoS = NULL;
  vattr.Ptag = ptag;
  vattr.EnableRdmaWrite = VIP_FALSE;
  vattr.EnableRdmaRead = VIP_FALSE;
  made = 0;
  for (p = 0; p < nodes; p++) {
    if (p == me)
      continue;
    r = VipCreateVi(nic, &vattr, NULL, cq, &vi[p]);
    if (r != VIP_SUCCESS) {
      sprintf(what, "VipCreateVi for VI %d of %d: %s; the NIC has MaxVI %lu, "
              "one VI per peer needs %d", made + 1, peers, rc_name(r),
              (unsigned long)nattr.MaxVI, peers);
      if (r == VIP_ERROR_RESOURCE && made != (int)nattr.MaxVI)
        strcat(what, " (and it refused fewer than MaxVI)");
      die(what, p, VIP_SUCCESS);
    }
    made++;
  }
  if (nattr.MaxVI < (unsigned long)peers) {
    sprintf(what, "%d VIs were made but MaxVI is %lu", peers,
            (unsigned long)nattr.MaxVI);
    fail(what, -1, VIP_SUCCESS);
  }

  /* Pre-post every receive before connecting. */
  for (p = 0; p < nodes; p++)
    if (p != me)
      for (i = 0; i < POSTED; i++)
        post_recv(p, i);

  if (peer_mode)
    connect_peers();
  else
    connect_client_server();
  for (p = 0; p < nodes; p++) {
    if (p == me)
      continue;
    r = VipQueryVi(vi[p], &state, &vattr, &sq_empty, &rq_empty);
    if (r != VIP_SUCCESS || state != VIP_STATE_CONNECTED)
      fail("the VI is not connected", p, r);
  }

  rounds = (K + ROUND - 1) / ROUND;
  repost_limit = POSTED + (rounds - 1) * ROUND;
  for (round = 0; round < rounds; round++) {
    left = K - round * ROUND;
    exchange(left < ROUND ? (int)left : ROUND);
  }

  /* Disconnect (a peer may have done it first: then the VI is idle
   * already) and take back what is still posted: flushed, all of it. */
  want_flushed = repost_limit - K;
  for (p = 0; p < nodes; p++)
    if (p != me && (r = VipDisconnect(vi[p])) != VIP_SUCCESS)
      fail("VipDisconnect", p, r);
  for (p = 0; p < nodes; p++)
    while (p != me && flushed[p] < want_flushed)
      take_one(1000UL);
  for (p = 0; p < nodes; p++) {
    if (p == me)
      continue;
    total += got[p];
    if (flushed[p] != want_flushed) {
      sprintf(what, "%ld receives flushed, %ld were left posted", flushed[p],
              want_flushed);
      fail(what, p, VIP_SUCCESS);
    }
    if (VipRecvDone(vi[p], &d) != VIP_NOT_DONE)
      fail("a receive completed beyond those posted", p, VIP_SUCCESS);
    r = VipQueryVi(vi[p], &state, &vattr, &sq_empty, &rq_empty);
    if (r != VIP_SUCCESS || state != VIP_STATE_IDLE || !sq_empty || !rq_empty)
      fail("the VI is not idle and empty after disconnecting", p, r);
    if ((r = VipDestroyVi(vi[p])) != VIP_SUCCESS)
      fail("VipDestroyVi", p, r);
  }
  if ((r = VipDestroyCQ(cq)) != VIP_SUCCESS)
    fail("VipDestroyCQ", -1, r);
  if ((r = VipDeregisterMem(nic, buf_mem, buf_mh)) != VIP_SUCCESS)
    fail("VipDeregisterMem (buffers)", -1, r);
  if ((r = VipDeregisterMem(nic, (VIP_PVOID)rdesc[0], desc_mh)) != VIP_SUCCESS)
    fail("VipDeregisterMem (descriptors)", -1, r);
  if ((r = VipDestroyPtag(nic, ptag)) != VIP_SUCCESS)
    fail("VipDestroyPtag", -1, r);
  VipNSShutdown(nic);
  if ((r = VipCloseNic(nic)) != VIP_SUCCESS)
    fail("VipCloseNic", -1, r);

  if (total != K * peers)
    fail("messages missing", -1, VIP_SUCCESS);
  if (!failures)
    printf("node %d: vipl_oldstyle: ok, %ld messages\n", me, total);
  fflush(stdout);
  return failures != 0;
}
