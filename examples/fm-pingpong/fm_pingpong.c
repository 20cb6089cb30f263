/* Comet-FM ping-pong and streaming bandwidth over FM-over-IP.
 *
 *   nicemu run -n 2 --model comet --firmware via.img -- ./fm_pingpong
 *
 * Node 1 prints, for each message size up to FM_MAX_MESSAGE, the one-way
 * latency (half a round trip, FM 1.1 FM_send) and the bandwidth of a
 * stream of messages sent with the FM 2.x streaming calls, in virtual
 * time. Every message is one UDP datagram on the 100 Mb/s Ethernet.
 *
 * For `nicemu bench via`: with --raw it prints lines "fm SIZE LATENCY_US
 * BANDWIDTH_MBPS" instead of the table (after "fm_rounds N" and
 * "fm_stream N"); --quick takes every fourth size (4 B, 16 B, ... 1024 B,
 * then 1440 B) and fewer rounds. */
#include <nicemu/fm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define ROUNDS 20
#define STREAM 32
#define PING 1
#define BULK 2
#define DONE 3

static int rounds = ROUNDS, stream = STREAM;
static volatile int pings, bulk_bytes, dones;
static char buf[FM_MAX_MESSAGE];
static char piece[FM_MAX_MESSAGE];

static double now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec * 1e6 + tv.tv_usec;
}

static void check(int e, const char *what) {
  if (e < 0) {
    fprintf(stderr, "fm_pingpong: %s: %s\n", what, FM_strerror(e));
    exit(1);
  }
}

static void on_ping(void *data, int size) {
  (void)data;
  (void)size;
  pings++;
}

static void on_done(void *data, int size) {
  (void)data;
  (void)size;
  dones++;
}

/* A streamed message: read it in two pieces, as FM 2.x handlers do. */
static int on_bulk(FM_stream *s, unsigned sender) {
  unsigned got = FM_receive(piece, s, 16);
  got += FM_receive(piece + got, s, sizeof piece - got);
  (void)sender;
  bulk_bytes += (int)got;
  return 0;
}

static void wait_for(volatile int *counter, int n) {
  while (*counter < n)
    check(FM_extract(), "FM_extract");
}

int main(int argc, char **argv) {
  int size, r, i, raw = 0, step = 2;
  unsigned peer;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--raw") == 0) {
      raw = 1;
    } else if (strcmp(argv[i], "--quick") == 0) {
      step = 4;
      rounds = 5;
      stream = 8;
    } else {
      fprintf(stderr, "usage: fm_pingpong [--raw] [--quick]\n");
      return 2;
    }
  }
  check(FM_initialize(), "FM_initialize");
  if (FM_numnodes < 2) {
    fprintf(stderr, "fm_pingpong: run with -n 2 or more\n");
    return 1;
  }
  peer = FM_nodeid == 0 ? 1 : 0;
  check(FM_set_handler(PING, on_ping), "FM_set_handler");
  check(FM_set_handler(DONE, on_done), "FM_set_handler");
  check(FM_set_stream_handler(BULK, on_bulk), "FM_set_stream_handler");
  check(FM_register(buf, sizeof buf), "FM_register");
  memset(buf, 0x3c, sizeof buf);
  if (FM_nodeid > 1) /* only nodes 0 and 1 take part */
    return FM_finalize() < 0;
  if (FM_nodeid == 1 && raw)
    printf("fm_rounds %d\nfm_stream %d\n", rounds, stream);
  else if (FM_nodeid == 1)
    printf("%8s %14s %16s\n", "bytes", "latency_us", "bandwidth_MBps");

  for (size = 4; size <= FM_MAX_MESSAGE;
       size = size * step > FM_MAX_MESSAGE && size < FM_MAX_MESSAGE
                  ? FM_MAX_MESSAGE
                  : size * step) {
    double t0 = now_us(), lat, bw;
    int base = pings;
    for (r = 0; r < rounds; r++) {
      if (FM_nodeid == 1) {
        check(FM_send(peer, PING, buf, size), "FM_send");
        wait_for(&pings, base + r + 1);
      } else {
        wait_for(&pings, base + r + 1);
        check(FM_send(peer, PING, buf, size), "FM_send");
      }
    }
    lat = (now_us() - t0) / rounds / 2;

    t0 = now_us();
    if (FM_nodeid == 1) {
      int d = dones;
      for (i = 0; i < stream; i++) {
        FM_stream *s = FM_begin_message(peer, (unsigned)size, BULK);
        if (!s)
          check(FM_last_error(), "FM_begin_message");
        check(FM_send_piece(s, buf, (unsigned)size / 2), "FM_send_piece");
        check(FM_send_piece(s, buf + size / 2, (unsigned)(size - size / 2)),
              "FM_send_piece");
        check(FM_end_message(s), "FM_end_message");
      }
      check(FM_wait(), "FM_wait");
      wait_for(&dones, d + 1);
      bw = (double)size * stream / (now_us() - t0);
      if (raw)
        printf("fm %d %.3f %.6g\n", size, lat, bw);
      else
        printf("%8d %14.2f %16.3f\n", size, lat, bw);
    } else {
      int want = bulk_bytes + size * stream;
      wait_for(&bulk_bytes, want);
      check(FM_send(peer, DONE, buf, 4), "FM_send");
    }
  }
  return FM_finalize() < 0;
}
