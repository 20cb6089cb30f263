/* AOTF ping-pong on DIMMnet-1: node 0 sends an 8-byte word to node 1 with
 * one store to a kick page; node 1 polls its LLCM until the word arrives
 * and sends it back the same way. Prints the round-trip time.
 *
 *   nicemu run -n 2 --model martini:D \
 *       --firmware build/firmware/dimmnet/dimmnet.img \
 *       -- build/examples/aotf_pingpong [round-trips]
 */
#include <nicemu/dimmnet.h>

#include <stdio.h>
#include <stdlib.h>

#define PING_PAGE 1  /* kick page: the partner's word at offset 0 */
#define PING_WORD 0  /* LLCM offset of the ping-pong word */
#define HELLO_WORD 8 /* LLCM offset of the start-up handshake */

static void check(int code, const char *what) {
  if (code != DIMM_OK) {
    fprintf(stderr, "aotf_pingpong: %s: %s (%s)\n", what, dimm_strerror(code),
            dimm_last_error());
    exit(1);
  }
}

int main(int argc, char **argv) {
  dimm_card *card;
  dimm_header seed = {0};
  int rounds = argc > 1 ? atoi(argv[1]) : 1000;
  int me, partner, i;
  uint64_t hello;
  double start, elapsed;

  check(dimm_open(1, 0, &card), "dimm_open");
  me = dimm_node(card);
  if (dimm_nodes(card) != 2 || rounds < 1) {
    fprintf(stderr, "aotf_pingpong: run on 2 nodes, with round-trips >= 1\n");
    return 1;
  }
  partner = 1 - me;
  /* Region 0: the first 4 KiB of LLCM, written by group 1's packets. */
  check(dimm_open_region(card, 0, 0, 4096, DIMM_ANY_PID), "open region");
  seed.dest_node = (unsigned)partner;
  seed.region = 0;
  seed.address = 0;
  seed.command = DIMM_CMD_WRITE;
  check(dimm_set_seed(card, PING_PAGE, &seed), "set seed");

  /* Start-up: a packet sent before the partner opened its region is
   * dropped, so say hello until the partner's hello is here, then once
   * more (it has its region open by then). */
  for (;;) {
    check(dimm_aotf_store64(card, PING_PAGE, HELLO_WORD, 1), "hello");
    for (i = 0; i < 16; ++i) {
      check(dimm_llcm_load(card, HELLO_WORD, &hello, 8), "load");
      if (hello == 1)
        break;
    }
    if (hello == 1)
      break;
  }
  check(dimm_aotf_store64(card, PING_PAGE, HELLO_WORD, 1), "hello");

  start = dimm_time_ns(card);
  for (i = 1; i <= rounds; ++i) {
    if (me == 0) {
      check(dimm_aotf_store64(card, PING_PAGE, PING_WORD, (uint64_t)i), "ping");
      dimm_llcm_wait64(card, PING_WORD, ~(uint64_t)0, (uint64_t)i);
    } else {
      dimm_llcm_wait64(card, PING_WORD, ~(uint64_t)0, (uint64_t)i);
      check(dimm_aotf_store64(card, PING_PAGE, PING_WORD, (uint64_t)i), "pong");
    }
  }
  elapsed = dimm_time_ns(card) - start;
  if (me == 0)
    printf("aotf ping-pong: %d round trips of 8 bytes, round trip %.3f us, "
           "one way %.3f us\n",
           rounds, elapsed / rounds / 1000.0, elapsed / rounds / 2000.0);
  dimm_close(card);
  return 0;
}
