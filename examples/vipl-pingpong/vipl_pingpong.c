/* VIPL ping-pong and bandwidth, written the classic way: the name service
 * finds the nodes, node0 waits for a connection and node1 asks for one,
 * buffers come from malloc and are registered, descriptors are posted and
 * waited for.
 *
 *   nicemu run -n 2 --model comet --firmware via.img -- ./vipl_pingpong
 *
 * node1 prints, for each message size, the one-way latency (half the
 * round trip) and the bandwidth of a stream of messages, in virtual time.
 *
 * For `nicemu bench via`: with --raw it prints lines "vipl SIZE LATENCY_US
 * BANDWIDTH_MBPS" instead of the table (after "vipl_rounds N" and
 * "vipl_stream N"); --quick takes every fourth size (4 B, 16 B, ... 64 KB)
 * and fewer rounds. */
#include <nicemu/vipl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_SIZE 65536
#define ROUNDS 20
#define STREAM 16

static double now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec * 1e6 + tv.tv_usec;
}

static void check(VIP_RETURN r, const char *what) {
  if (r != VIP_SUCCESS) {
    fprintf(stderr, "vipl_pingpong: %s failed: %d\n", what, (int)r);
    exit(1);
  }
}

/* A net address with room for a host address and a discriminator. */
static VIP_NET_ADDRESS *make_address(VIP_NIC_HANDLE nic, const char *host) {
  VIP_NET_ADDRESS *a = malloc(sizeof(VIP_NET_ADDRESS) + 64);
  const char disc[] = "pingpong";
  a->HostAddressLen = 6;
  a->DiscriminatorLen = sizeof disc;
  check(VipNSGetHostByName(nic, (VIP_CHAR *)host, a, 0), "VipNSGetHostByName");
  memcpy(a->HostAddress + a->HostAddressLen, disc, sizeof disc);
  return a;
}

static int rounds = ROUNDS, stream = STREAM;
static VIP_NIC_HANDLE nic;
static VIP_VI_HANDLE vi;
static VIP_DESCRIPTOR *send_desc, *recv_desc[STREAM];
static VIP_MEM_HANDLE desc_mh, buf_mh;
static char *sbuf, *rbuf;

static void post_recv(VIP_DESCRIPTOR *d) {
  int i = (int)(d - recv_desc[0]);
  memset(d, 0, sizeof *d);
  d->CS.SegCount = 1;
  d->CS.Length = MAX_SIZE;
  d->DS[0].Local.Data.Address = rbuf + (size_t)i * MAX_SIZE;
  d->DS[0].Local.Handle = buf_mh;
  d->DS[0].Local.Length = MAX_SIZE;
  check(VipPostRecv(vi, d, desc_mh), "VipPostRecv");
}

static void send_msg(int size) {
  VIP_DESCRIPTOR *d = send_desc;
  memset(d, 0, sizeof *d);
  d->CS.SegCount = 1;
  d->CS.Length = size;
  d->DS[0].Local.Data.Address = sbuf;
  d->DS[0].Local.Handle = buf_mh;
  d->DS[0].Local.Length = size;
  check(VipPostSend(vi, d, desc_mh), "VipPostSend");
  check(VipSendWait(vi, VIP_INFINITE, &d), "VipSendWait");
  if (d->CS.Status & VIP_STATUS_ERROR_MASK) {
    fprintf(stderr, "vipl_pingpong: send failed, status 0x%x\n",
            (unsigned)d->CS.Status);
    exit(1);
  }
}

/* Waits for the next message of `size` bytes and posts its descriptor
 * again (receives complete in the order they were posted). */
static void recv_msg(int size) {
  VIP_DESCRIPTOR *d;
  check(VipRecvWait(vi, VIP_INFINITE, &d), "VipRecvWait");
  if ((d->CS.Status & VIP_STATUS_ERROR_MASK) || (int)d->CS.Length != size) {
    fprintf(stderr, "vipl_pingpong: receive failed, status 0x%x length %u\n",
            (unsigned)d->CS.Status, (unsigned)d->CS.Length);
    exit(1);
  }
  post_recv(d);
}

int main(int argc, char **argv) {
  char host[64];
  VIP_NIC_ATTRIBUTES na;
  VIP_PROTECTION_HANDLE ptag;
  VIP_MEM_ATTRIBUTES ma;
  VIP_VI_ATTRIBUTES va, remote;
  VIP_NET_ADDRESS *local, *peer;
  int server, size, i, r, raw = 0, step = 2;
  char *descs;

  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--raw") == 0) {
      raw = 1;
    } else if (strcmp(argv[i], "--quick") == 0) {
      step = 4;
      rounds = 5;
      stream = 8;
    } else {
      fprintf(stderr, "usage: vipl_pingpong [--raw] [--quick]\n");
      return 2;
    }
  }

  gethostname(host, sizeof host);
  server = strcmp(host, "node0") == 0;
  check(VipOpenNic("/dev/via0", &nic), "VipOpenNic");
  check(VipQueryNic(nic, &na), "VipQueryNic");
  check(VipNSInit(nic, NULL), "VipNSInit");
  local = make_address(nic, host);
  peer = make_address(nic, server ? "node1" : "node0");

  check(VipCreatePtag(nic, &ptag), "VipCreatePtag");
  memset(&ma, 0, sizeof ma);
  ma.Ptag = ptag;
  descs = malloc((STREAM + 1) * sizeof(VIP_DESCRIPTOR) + 64);
  descs += (64 - (unsigned long)descs % 64) % 64; /* 64-byte alignment */
  check(VipRegisterMem(nic, descs, (STREAM + 1) * sizeof(VIP_DESCRIPTOR), &ma,
                       &desc_mh),
        "VipRegisterMem");
  send_desc = (VIP_DESCRIPTOR *)descs;
  for (i = 0; i < STREAM; i++)
    recv_desc[i] = (VIP_DESCRIPTOR *)descs + 1 + i;
  sbuf = malloc(MAX_SIZE * (STREAM + 1));
  rbuf = sbuf + MAX_SIZE;
  check(VipRegisterMem(nic, sbuf, MAX_SIZE * (STREAM + 1), &ma, &buf_mh),
        "VipRegisterMem");
  memset(sbuf, 0x5a, MAX_SIZE);

  memset(&va, 0, sizeof va);
  va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
  va.MaxTransferSize = MAX_SIZE;
  va.Ptag = ptag;
  check(VipCreateVi(nic, &va, NULL, NULL, &vi), "VipCreateVi");
  for (i = 0; i < STREAM; i++)
    post_recv(recv_desc[i]);

  if (server) {
    VIP_CONN_HANDLE conn;
    check(VipConnectWait(nic, local, VIP_INFINITE, peer, &remote, &conn),
          "VipConnectWait");
    check(VipConnectAccept(conn, vi), "VipConnectAccept");
  } else {
    check(VipConnectRequest(vi, local, peer, VIP_INFINITE, &remote),
          "VipConnectRequest");
    if (raw) {
      printf("vipl_rounds %d\nvipl_stream %d\n", rounds, stream);
    } else {
      printf("VIPL on %s, %s: native MTU %lu, max transfer %lu bytes\n",
             na.Name, host, (unsigned long)na.NativeMTU,
             (unsigned long)na.MaxTransferSize);
      printf("%8s %14s %16s\n", "bytes", "latency_us", "bandwidth_MBps");
    }
  }

  for (size = 4; size <= MAX_SIZE; size *= step) {
    double t0, lat, bw;
    /* Ping-pong: node1 sends first. */
    t0 = now_us();
    for (r = 0; r < rounds; r++) {
      if (!server) {
        send_msg(size);
        recv_msg(size);
      } else {
        recv_msg(size);
        send_msg(size);
      }
    }
    lat = (now_us() - t0) / rounds / 2;
    /* Bandwidth: node1 streams `stream` messages into node0's posted
     * receives; node0 answers with one word when all have arrived. */
    t0 = now_us();
    if (!server) {
      for (i = 0; i < stream; i++)
        send_msg(size);
      recv_msg(4);
    } else {
      for (i = 0; i < stream; i++)
        recv_msg(size);
      send_msg(4);
    }
    bw = (double)size * stream / (now_us() - t0);
    if (!server && raw)
      printf("vipl %d %.3f %.6g\n", size, lat, bw);
    else if (!server)
      printf("%8d %14.2f %16.3f\n", size, lat, bw);
  }

  check(VipDisconnect(vi), "VipDisconnect");
  check(VipDestroyVi(vi), "VipDestroyVi");
  check(VipCloseNic(nic), "VipCloseNic");
  free(local);
  free(peer);
  return 0;
}
