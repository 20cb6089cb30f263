/* A Generic Active Messages ping-pong, written the way 1990s GAM programs
 * were: K&R C, am_* names, timing with gettimeofday (which reads the
 * virtual clock under nicemu run). Node 0 sends requests to node 1, whose
 * handler replies; then node 0 stores a block into node 1's global buffer
 * and gets it back. Build with -std=gnu89; run with
 *   nicemu run -n 2 --firmware build/firmware/niam/niam.img --
 *   build/examples/gam_pingpong */
#include <nicemu/am.h>
#include <stdio.h>
#include <sys/time.h>

#define ROUNDS 100
#define BLOCK 4096

static volatile int replies;
static volatile int stored;
static volatile int fetched;
static char block[BLOCK]; /* the same global on every node */
static char back[BLOCK];

static void reply_handler(src, seq) vnn_t src;
int seq;
{ replies++; }

static void request_handler(src, seq) vnn_t src;
int seq;
{ am_reply_1(src, reply_handler, seq); }

static void store_handler(src, addr, nbytes, arg) vnn_t src;
void *addr;
int nbytes;
void *arg;
{ stored++; }

static void get_handler(src, addr, nbytes, arg) vnn_t src;
void *addr;
int nbytes;
void *arg;
{ fetched++; }

static double now_us() {
  struct timeval tv;
  gettimeofday(&tv, 0);
  return tv.tv_sec * 1e6 + tv.tv_usec;
}

int main(argc, argv)
int argc;
char **argv;
{
  int i, bad = 0;
  double start, rtt;

  if (am_enable() != AM_OK) {
    fprintf(stderr, "am_enable: %s\n", gam_error());
    return 1;
  }
  am_barrier();
  if (am_my_proc() == 0 && am_procs() > 1) {
    start = now_us();
    for (i = 0; i < ROUNDS; i++) {
      am_request_1(1, request_handler, i);
      while (replies <= i)
        am_poll();
    }
    rtt = (now_us() - start) / ROUNDS;
    printf("GAM request/reply round trip: %.1f us\n", rtt);

    for (i = 0; i < BLOCK; i++)
      block[i] = (char)(i * 13 + 5);
    start = now_us();
    am_store(1, block, block, BLOCK, store_handler, 0);
    am_get(1, block, back, BLOCK, get_handler, 0);
    while (!fetched)
      am_poll();
    printf("GAM store + get of %d bytes: %.1f us\n", BLOCK, now_us() - start);
    for (i = 0; i < BLOCK; i++)
      if (back[i] != block[i])
        bad++;
    if (bad)
      printf("%d bytes came back wrong\n", bad);
  }
  am_barrier();
  if (am_my_proc() == 1 && stored != (am_procs() > 1))
    bad++;
  am_disable();
  return bad != 0;
}
