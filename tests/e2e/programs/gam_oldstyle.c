/* A GAM program written the way LANai GAM programs of 1995-97 were: K&R
 * definitions, implicit int, unprototyped handlers that take pointers
 * through their argument words, calls with fewer words than _4 names,
 * gam_enable(0), gam_wait(&flag, n), medium gam_request, and globals
 * whose addresses are sent to another node and used there. Built
 * unchanged as gnu89, as a position-independent executable and with
 * -no-pie (test_gam_oldstyle.cpp); run on 2 and 3 nodes. Rank 0 talks to
 * every other rank; each prints "node N: ok" or what failed.
 * clang-format does not know K&R definitions: it stays off here. */
/* clang-format off */
#include <stdio.h>
#include <string.h>

#include <nicemu/am.h>

#define BYTES 3000

char buffer[BYTES + 64];   /* cleared remotely through its address */
char pattern[BYTES];
int cleared_flag, medium_flag, put_count, get_count, pong_flag, go;
int medium_sum, failures;

static void incr(src, flag)
int src;
volatile int *flag;
{
  (*flag)++;
}

/* Runs on the other node with this node's pointers: buf is a global (the
 * same address on every node of one executable), flag a pointer it hands
 * back untouched. */
static check();

static void clear_h(src, buf, len, flag)
int src;
char *buf;
int len;
void *flag;
{
  check("the sender's pointer names this node's buffer", buf == buffer);
  memset(buf, 0, len);
  gam_reply_4(src, incr, flag);
}

static void pong_h(src, flag, token)
int src;
void *flag;
int token;
{
  gam_reply_4(src, incr, flag, token);
}

/* Medium message: the library's buffer holds the bytes. */
static void medium_h(src, buf, len, flag, mult)
int src;
char *buf;
int len;
void *flag;
int mult;
{
  int i, sum = 0;
  for (i = 0; i < len; i++)
    sum += (unsigned char)buf[i];
  gam_reply_4(src, incr, flag);
  medium_sum = sum * mult;
}

static void stored_h(src, addr, len, counter)
int src;
void *addr;
int len;
void *counter;
{
  gam_reply_4(src, incr, counter);
}

static void got_h(src, addr, len, counter)
int src;
void *addr;
int len;
int *counter;
{
  *counter += len;
}

static void start_h(src)
int src;
{
  go = 1;
}

static check(what, ok)
char *what;
int ok;
{
  if (!ok) {
    printf("node %d: FAILED %s\n", gam_my_proc(), what);
    failures++;
  }
}

main(argc, argv)
int argc;
char **argv;
{
  int me, procs, other, i, round;

  gam_enable(0); /* 0: no GLUnix */
  me = gam_my_proc();
  procs = gam_procs();
  for (i = 0; i < BYTES; i++)
    pattern[i] = (char)(i * 7 + 3);
  gam_barrier();

  if (me == 0) {
    for (other = 1; other < procs; other++) {
      for (round = 0; round < 3; round++) {
        /* The other node clears our global on its side, by address. */
        memset(buffer, 0x55, sizeof buffer);
        gam_request_4(other, clear_h, buffer, BYTES + 64, &cleared_flag);
        gam_wait(&cleared_flag, 1);

        /* A request with two words, a reply with the same pointer back. */
        gam_request_2(other, pong_h, &pong_flag, round);
        gam_wait(&pong_flag, 1);

        /* Medium: 100 bytes and two words. */
        gam_request(other, medium_h, pattern, 100, &medium_flag, 3);
        gam_wait(&medium_flag, 1);

        /* Store our pattern into the other node's buffer, counting acks. */
        gam_store(other, pattern, buffer, BYTES, stored_h, &put_count);
        gam_wait(&put_count, 1);

        /* And get it back. */
        memset(buffer, 0, sizeof buffer);
        gam_get(other, buffer, buffer, BYTES, got_h, &get_count);
        gam_wait(&get_count, BYTES);
        check("the data got back", memcmp(buffer, pattern, BYTES) == 0);
      }
      gam_request_1(other, start_h, 0);
    }
    check("no counts left over", cleared_flag == 0 && pong_flag == 0 &&
                                     medium_flag == 0 && put_count == 0 &&
                                     get_count == 0);
  } else {
    int want = 0;
    while (!go)
      gam_sleep();
    for (i = 0; i < 100; i++)
      want += (unsigned char)pattern[i];
    check("the medium message's bytes", medium_sum == want * 3);
  }
  gam_barrier();
  if (!failures)
    printf("node %d: ok\n", me);
  fflush(stdout);
  gam_disable();
  return failures != 0;
}
