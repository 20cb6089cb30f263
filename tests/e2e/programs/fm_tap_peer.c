/* The emulated side of test_tap.cpp: on a 1-node cluster bridged to a TAP
 * (nicemu run -n 1 --tap ...), FM node 1 is the outside. Sends one message
 * to node 1, handler TO_OUTSIDE, then waits (at most 10 s of virtual time,
 * which follows wall time under --tap) for a message for handler
 * FROM_OUTSIDE and prints it. Between polls it computes 100 us, so that
 * the wait takes as long in wall time (--tap paces the run) as in virtual
 * time, instead of creeping on one cheap poll after another:
 *
 *   fm_tap_peer: numnodes 2, sent 23 bytes
 *   fm_tap_peer: got 21 bytes from node 1: 'hello from linux side'
 *
 * or "fm_tap_peer: nothing arrived" (exit 1). */
#include <nicemu/fm.h>
#include <nicemu/host.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define TO_OUTSIDE 7
#define FROM_OUTSIDE 9

static char out[64] = "hello from nicemu node0";
static char got[FM_MAX_MESSAGE + 1];
static volatile int got_size = -1;
static unsigned got_from;

static void check(int e, const char *what) {
  if (e < 0) {
    fprintf(stderr, "fm_tap_peer: %s: %s\n", what, FM_strerror(e));
    exit(1);
  }
}

static void on_message(void *data, int size) {
  memcpy(got, data, (size_t)size);
  got[size] = 0;
  got_size = size;
  got_from = FM_sender();
}

static double now_s(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

int main(void) {
  int len = (int)strlen(out);
  double deadline;
  check(FM_initialize(), "FM_initialize");
  printf("fm_tap_peer: numnodes %u\n", FM_numnodes);
  check(FM_set_handler(FROM_OUTSIDE, on_message), "FM_set_handler");
  check(FM_register(out, sizeof out), "FM_register");
  check(FM_send(FM_numnodes - 1, TO_OUTSIDE, out, len), "FM_send");
  printf("fm_tap_peer: sent %d bytes\n", len);
  fflush(stdout);
  deadline = now_s() + 10;
  while (got_size < 0 && now_s() < deadline) {
    int n = FM_extract();
    check(n, "FM_extract");
    if (n == 0)
      nicemu_compute(100000000ull); /* 100 us */
  }
  if (got_size < 0) {
    printf("fm_tap_peer: nothing arrived\n");
    return 1;
  }
  printf("fm_tap_peer: got %d bytes from node %u: '%s'\n", got_size, got_from,
         got);
  check(FM_finalize(), "FM_finalize");
  return 0;
}
