/* Comet-FM (nicemu/fm.h) end to end, on the via firmware on comet:
 * `fm_checks SCENARIO`, run by tests/e2e/test_fm.cpp on 2 or 3 nodes. Every
 * rank prints "rank R: SCENARIO: ok" when all its checks held, or the failed
 * checks and "rank R: SCENARIO: N failures" (exit 1), plus the figures the
 * test compares across ranks:
 *   "rank R: SCENARIO: from S: N messages, B bytes, sum 0x..." (received)
 *   "rank R: SCENARIO: to D: N messages, B bytes, sum 0x..." (sent)
 *
 * Every data message's bytes are a function of (sender, receiver, message
 * number, offset), and its length is the scenario's plan for that message
 * number, so the receiving handler checks each byte, the length, the sender
 * (FM_sender) and the order: a lost, repeated or reordered message fails.
 * Handlers check that they run inside an FM call: FM_extract, or one that
 * waits for sends (FM_send, FM_send_nw, FM_wait, and FM_begin_message,
 * FM_deregister and FM_finalize, which wait for them too).
 *
 * Scenarios:
 *   init      calls before FM_initialize (FM_ENOTINIT), FM_nodeid and
 *             FM_numnodes against the rank and size, FM_initialize twice;
 *             a message from every node to every node (itself too), sent
 *             and streamed; calls after FM_finalize
 *   sizes     FM_send of 0, 1, 3, 4, 5, 63, 1439 and 1440 bytes from
 *             offsets 0..3, 4 rounds, every node to every other node
 *   quiet     rank 1 does not call FM while rank 0's 5 messages and its
 *             goodbye arrive (the card's frame counter says they did): no
 *             handler runs; one FM_extract then runs all 6
 *   flow      rank 0 sends 100 messages with FM_send_nw, FM_wait; rank 1
 *             starts late and extracts slowly (the card holds the frames)
 *   crossing  both ranks FM_send 40 messages to each other, not extracting
 *   fanin     3 nodes: ranks 0 and 1 send 40 messages each to rank 2
 *   errors    FM_ENOTREG, FM_EBADNODE, FM_EBADHANDLER, FM_ETOOBIG,
 *             FM_EINVAL and FM_strerror's details; messages to handler ids
 *             with no handler are dropped and counted, later ones arrive
 *   register  sends from malloc'd, static and stack memory; FM_deregister,
 *             then FM_ENOTREG; registered again
 *   reply     rank 1's handler answers each of rank 0's 40 messages (sent
 *             with FM_send_nw) with FM_send, from inside the handler
 *   foreign   rank 0 is a VIPL program that sends FM packets of its own
 *             making on an FM-over-IP VI: to handler ids 256, 1000 and
 *             65535 (dropped and counted by rank 1) between good ones
 *   stream    FM 2.x streaming mixed with FM_send, read with FM_receive in
 *             other pieces than sent; FM_send_piece past the length and
 *             FM_end_message short of it fail and the stream goes on; 16
 *             messages begun and not ended: a 17th is refused */
#include <nicemu/fm.h>
#include <nicemu/host.h>
#include <nicemu/vipl.h>

#include "nicemu/via_protocol.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  H_DATA = 1,   /* plan messages (on_data) */
  H_BYE = 2,    /* the end of a scenario: this node got all it expected */
  H_STREAM = 3, /* streamed messages (on_stream) */
  H_HELLO = 4,  /* init: a node's number */
  H_SELF = 5,   /* stream: messages a node sends itself */
  H_NONE = 77   /* no handler is ever set for it */
};
#define MAX_NODES 4
#define MAX_LOG 512
#define WAIT_POLLS 20000

static const char *scenario = "";
static unsigned me, nodes;
static int failures;

static void fail(int line, const char *format, ...) {
  va_list args;
  if (++failures > 40)
    return;
  printf("rank %u: %s: line %d: ", me, scenario, line);
  va_start(args, format);
  vprintf(format, args);
  va_end(args);
  printf("\n");
}

#define FAIL(...) fail(__LINE__, __VA_ARGS__)
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      FAIL("%s does not hold", #cond);                                         \
  } while (0)
#define EQ(got, want)                                                          \
  do {                                                                         \
    long got_ = (long)(got), want_ = (long)(want);                             \
    if (got_ != want_)                                                         \
      FAIL("%s is %ld, want %ld", #got, got_, want_);                          \
  } while (0)
/* FM_strerror(code) contains `text`. */
#define SAYS(code, text)                                                       \
  do {                                                                         \
    const char *s_ = FM_strerror(code);                                        \
    if (!s_ || !strstr(s_, text))                                              \
      FAIL("FM_strerror(%s) is \"%s\", without \"%s\"", #code,                 \
           s_ ? s_ : "(null)", text);                                          \
  } while (0)

static uint64_t now_ps(void) {
  uint64_t t = 0;
  nicemu_now_ps(&t);
  return t;
}

static void compute_us(unsigned us) {
  nicemu_compute((uint64_t)us * 1000000u);
}

/* A counter of the card (VIAFW_BOX_STAT_*), read from its mailbox by PIO. */
static uint32_t card_counter(uint32_t word) {
  uint32_t box = 0, value = 0;
  if (nicemu_mailbox(&box) != NICEMU_OK ||
      nicemu_pio_read(box + 4 * word, &value) != NICEMU_OK)
    FAIL("cannot read card counter %u: %s", (unsigned)word,
         nicemu_last_error());
  return value;
}

/* ---- Where handlers run --------------------------------------------- */

static int in_fm;       /* inside an FM call that may run handlers */
static int in_send;     /* ... one that sends (FM_send, FM_send_nw, FM_wait) */
static int outside;     /* handlers that ran outside FM calls */
static int during_send; /* handlers that ran while sends waited */
static int handled;     /* handlers run */

static void note_handler(void) {
  ++handled;
  if (!in_fm)
    ++outside;
  if (in_send)
    ++during_send;
}

static int x_extract(void) {
  int r;
  ++in_fm;
  r = FM_extract();
  --in_fm;
  if (r < 0)
    FAIL("FM_extract: %s", FM_strerror(r));
  return r;
}

static int x_send(unsigned dest, int handler, void *buf, int len, int nw) {
  int r;
  ++in_fm;
  ++in_send;
  r = nw ? FM_send_nw(dest, handler, buf, len)
         : FM_send(dest, handler, buf, len);
  --in_send;
  --in_fm;
  if (r != FM_SUCCESS)
    FAIL("%s to node %u, %d bytes: %s", nw ? "FM_send_nw" : "FM_send", dest,
         len, FM_strerror(r));
  return r;
}

static void x_wait(void) {
  int r;
  ++in_fm;
  ++in_send;
  r = FM_wait();
  --in_send;
  --in_fm;
  if (r != FM_SUCCESS)
    FAIL("FM_wait: %s", FM_strerror(r));
}

static FM_stream *x_begin(unsigned dest, unsigned length, int handler) {
  FM_stream *s;
  ++in_fm;
  ++in_send;
  s = FM_begin_message(dest, length, handler);
  --in_send;
  --in_fm;
  return s;
}

/* FM_deregister waits for the sends in flight, running handlers too. */
static int x_deregister(void *buf) {
  int r;
  ++in_fm;
  ++in_send;
  r = FM_deregister(buf);
  --in_send;
  --in_fm;
  return r;
}

static void give_up(void) {
  printf("rank %u: %s: %d failures\n", me, scenario, failures);
  exit(1);
}

/* Extracts until `cond` holds; gives up (exit 1) after WAIT_POLLS polls. */
#define WAIT_FOR(cond, what)                                                   \
  do {                                                                         \
    long polls_ = 0;                                                           \
    while (!(cond)) {                                                          \
      int got_ = x_extract();                                                  \
      if (got_ < 0)                                                            \
        give_up();                                                             \
      if (got_ == 0)                                                           \
        compute_us(1);                                                         \
      if (++polls_ > WAIT_POLLS) {                                             \
        FAIL("gave up waiting for %s", what);                                  \
        print_tallies();                                                       \
        give_up();                                                             \
      }                                                                        \
    }                                                                          \
  } while (0)

/* ---- The message plan ------------------------------------------------ */

static const int sizes_plan[] = {0, 1, 3, 4, 5, 63, 1439, 1440};
#define PLAN_N ((int)(sizeof sizes_plan / sizeof sizes_plan[0]))

static int plan_len(int k) {
  return sizes_plan[k % PLAN_N];
}
/* Every size from every offset 0..3 over four rounds of the plan. */
static int plan_offset(int k) {
  return (k + k / PLAN_N) % 4;
}

static unsigned char pattern(unsigned src, unsigned dst, int k, int i) {
  uint32_t x = (uint32_t)src * 0x9E3779B1u ^ (uint32_t)dst * 0x85EBCA77u ^
               (uint32_t)k * 0xC2B2AE3Du ^ (uint32_t)i * 0x27D4EB2Fu;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return (unsigned char)x;
}

static void fill(unsigned char *p, unsigned dst, int k, int len) {
  int i;
  for (i = 0; i < len; i++)
    p[i] = pattern(me, dst, k, i);
}

/* FNV-1a over the bytes of all messages, in order. */
static uint32_t fnv(uint32_t h, const unsigned char *p, int len) {
  int i;
  for (i = 0; i < len; i++)
    h = (h ^ p[i]) * 16777619u;
  return h;
}

struct tally {
  int messages;
  long bytes;
  uint32_t sum;
};
/* All messages received from and sent to each node (streamed ones too): the
 * figures printed. */
static struct tally from[MAX_NODES], to[MAX_NODES];
static int datas[MAX_NODES];  /* plan messages received from each node */
static int expect[MAX_NODES]; /* plan messages expected from each node */
static char order[MAX_LOG];   /* the handlers run: node digits, 'S' streams */
static int order_n;

static void log_arrival(char c) {
  if (order_n < MAX_LOG - 1)
    order[order_n++] = c;
}

static void tally_add(struct tally *t, const unsigned char *p, int len) {
  t->messages++;
  t->bytes += len;
  t->sum = fnv(t->sum, p, len);
}

static void print_tallies(void) {
  unsigned n;
  for (n = 0; n < nodes; n++) {
    if (from[n].messages)
      printf("rank %u: %s: from %u: %d messages, %ld bytes, sum 0x%08x\n", me,
             scenario, n, from[n].messages, from[n].bytes,
             (unsigned)from[n].sum);
    if (to[n].messages)
      printf("rank %u: %s: to %u: %d messages, %ld bytes, sum 0x%08x\n", me,
             scenario, n, to[n].messages, to[n].bytes, (unsigned)to[n].sum);
  }
}

static void on_data(void *buf, int size) {
  const unsigned char *p = buf;
  unsigned s = FM_sender();
  int k, want, i;
  note_handler();
  if (s >= nodes) {
    FAIL("a message from node %u", s);
    return;
  }
  log_arrival((char)('0' + s));
  k = datas[s]++;
  if (k >= expect[s])
    FAIL("message %d from node %u: only %d expected", k, s, expect[s]);
  want = plan_len(k);
  if (size != want) {
    FAIL("message %d from node %u: %d bytes, want %d", k, s, size, want);
  } else {
    for (i = 0; i < size; i++)
      if (p[i] != pattern(s, me, k, i)) {
        FAIL("message %d from node %u (%d bytes): byte %d is 0x%02x, want "
             "0x%02x",
             k, s, size, i, p[i], pattern(s, me, k, i));
        break;
      }
  }
  tally_add(&from[s], p, size);
}

/* Sends plan message `k` to `dst` from `area` (plan_offset(k) bytes in). */
static void send_plan(unsigned dst, int k, unsigned char *area, int nw) {
  unsigned char *p = area + plan_offset(k);
  int len = plan_len(k);
  fill(p, dst, k, len);
  if (x_send(dst, H_DATA, p, len, nw) == FM_SUCCESS)
    tally_add(&to[dst], p, len);
}

static int byes;
static void on_bye(void *buf, int size) {
  (void)buf;
  note_handler();
  if (size != 0)
    FAIL("a goodbye of %d bytes", size);
  ++byes;
}

/* Every node tells every other one it has all it expected, and waits for
 * theirs: no node leaves while messages to it are on their way. */
static void goodbye(void) {
  unsigned n;
  for (n = 0; n < nodes; n++)
    if (n != me)
      x_send(n, H_BYE, NULL, 0, 0);
  WAIT_FOR(byes == (int)nodes - 1, "the other nodes' goodbyes");
}

/* Every expected message arrived (the handler checked each one). */
static void check_expected(void) {
  unsigned n;
  for (n = 0; n < nodes; n++)
    if (datas[n] != expect[n])
      FAIL("%d messages from node %u, want %d", datas[n], n, expect[n]);
}

static int all_arrived(void) {
  unsigned n;
  for (n = 0; n < nodes; n++)
    if (datas[n] < expect[n])
      return 0;
  return 1;
}

/* Registered: AREAS areas of AREA_BYTES. */
static unsigned char *send_area;
#define AREA_BYTES (FM_MAX_MESSAGE + 8)
#define AREAS 8

/* ---- init ------------------------------------------------------------- */

static int hellos[MAX_NODES];
static void on_hello(void *buf, int size) {
  unsigned s = FM_sender(), n = 0;
  note_handler();
  if (size != 4) {
    FAIL("a hello of %d bytes", size);
    return;
  }
  memcpy(&n, buf, 4);
  if (n != s || s >= nodes) {
    FAIL("a hello from node %u says node %u", s, n);
    return;
  }
  ++hellos[s];
  tally_add(&from[s], buf, size);
}

static int hellos_done(void) {
  unsigned n;
  for (n = 0; n < nodes; n++)
    if (hellos[n] < 2)
      return 0;
  return 1;
}

static void before_initialize(void) {
  static unsigned char early[64];
  EQ(FM_nodeid, 0);
  EQ(FM_numnodes, 0);
  EQ(FM_send(0, H_DATA, early, 4), FM_ENOTINIT);
  EQ(FM_last_error(), FM_ENOTINIT);
  SAYS(FM_ENOTINIT, "FM is not initialized: FM_initialize has not been called");
  EQ(FM_send_nw(0, H_DATA, early, 4), FM_ENOTINIT);
  EQ(FM_wait(), FM_ENOTINIT);
  EQ(FM_extract(), FM_ENOTINIT);
  EQ(FM_register(early, sizeof early), FM_ENOTINIT);
  EQ(x_deregister(early), FM_ENOTINIT);
  CHECK(FM_begin_message(0, 4, H_STREAM) == NULL);
  EQ(FM_last_error(), FM_ENOTINIT);
}

static void scenario_init(void) {
  uint32_t rank = 99, size = 99;
  unsigned n, word;
  CHECK(nicemu_rank(&rank) == NICEMU_OK && nicemu_size(&size) == NICEMU_OK);
  EQ(FM_nodeid, rank);
  EQ(FM_numnodes, size);
  EQ(FM_get_nodeid(), rank);
  EQ(FM_get_numnodes(), size);
  EQ(FM_initialize(), FM_SUCCESS); /* again: nothing changes */
  EQ(FM_nodeid, rank);
  EQ(FM_numnodes, size);
  printf("rank %u: init: node %u of %u\n", (unsigned)rank, FM_nodeid,
         FM_numnodes);
  /* A hello to every node, this one too: sent, then streamed in two
   * pieces (to a plain handler, which gets it whole). */
  word = me;
  memcpy(send_area, &word, 4);
  for (n = 0; n < nodes; n++) {
    FM_stream *s;
    if (x_send(n, H_HELLO, send_area, 4, 0) == FM_SUCCESS)
      tally_add(&to[n], send_area, 4);
    s = x_begin(n, 4, H_HELLO);
    if (!s) {
      FAIL("FM_begin_message: %s", FM_strerror(FM_last_error()));
      continue;
    }
    EQ(FM_send_piece(s, &word, 1), FM_SUCCESS);
    EQ(FM_send_piece(s, (char *)&word + 1, 3), FM_SUCCESS);
    EQ(FM_end_message(s), FM_SUCCESS);
    tally_add(&to[n], send_area, 4);
  }
  WAIT_FOR(hellos_done(), "two hellos from every node");
  for (n = 0; n < nodes; n++)
    EQ(hellos[n], 2);
}

/* ---- sizes ------------------------------------------------------------ */

#define SIZES_ROUNDS 4

static void scenario_sizes(void) {
  unsigned n;
  int k;
  for (n = 0; n < nodes; n++)
    expect[n] = n == me ? 0 : SIZES_ROUNDS * PLAN_N;
  for (k = 0; k < SIZES_ROUNDS * PLAN_N; k++)
    for (n = 1; n < nodes; n++)
      send_plan((me + n) % nodes, k, send_area, 0);
  WAIT_FOR(all_arrived(), "every message");
  check_expected();
  printf("rank %u: sizes: handlers run while FM_send waited: %s\n", me,
         during_send > 0 ? "yes" : "no");
}

/* ---- quiet ------------------------------------------------------------ */

#define QUIET_N 5

static void scenario_quiet(void) {
  int k, polls;
  uint32_t frames = 0;
  if (me == 0) {
    for (k = 0; k < QUIET_N; k++)
      send_plan(1, k, send_area + k * AREA_BYTES, 1);
    x_wait();
    return;
  }
  expect[0] = QUIET_N;
  if (me != 1)
    return;
  /* The frames land in the receive buffers while this program computes:
   * the 5 messages, then rank 0's goodbye. */
  for (polls = 0; polls < 1000 && frames < QUIET_N + 1; polls++) {
    compute_us(20);
    frames = card_counter(VIAFW_BOX_STAT_FRAMES_IN);
  }
  compute_us(200);
  EQ(card_counter(VIAFW_BOX_STAT_FRAMES_IN), QUIET_N + 1);
  EQ(handled, 0);
  EQ(datas[0], 0);
  EQ(x_extract(), QUIET_N + 1); /* all of them, in one call */
  EQ(datas[0], QUIET_N);
  EQ(byes, 1);
  EQ(x_extract(), 0);
  printf("rank 1: quiet: %u frames on the card, then FM_extract ran %d "
         "handlers\n",
         (unsigned)frames, handled);
}

/* ---- flow ------------------------------------------------------------- */

#define FLOW_N 100

static void scenario_flow(void) {
  int k, r, calls = 0, most = 0, first;
  uint32_t frames;
  uint64_t t;
  if (me == 0) {
    /* Each message its own area: FM_send_nw's buffers stay untouched until
     * FM_wait. */
    unsigned char *big = malloc((size_t)FLOW_N * AREA_BYTES);
    if (!big || FM_register(big, (size_t)FLOW_N * AREA_BYTES) != FM_SUCCESS) {
      FAIL("no registered memory for %d messages", FLOW_N);
      give_up();
    }
    for (k = 0; k < FLOW_N; k++)
      send_plan(1, k, big + (size_t)k * AREA_BYTES, 1);
    x_wait();
    t = now_ps();
    printf("rank 0: flow: FM_wait returned at %.3f us\n", (double)t / 1e6);
    EQ(x_deregister(big), FM_SUCCESS);
    free(big);
    return;
  }
  expect[0] = FLOW_N;
  /* Late, and slow: the sender is held while the card has no buffer. */
  compute_us(3000);
  frames = card_counter(VIAFW_BOX_STAT_FRAMES_IN);
  t = now_ps();
  first = x_extract();
  EQ(first, 16); /* the library's 16 receive buffers */
  most = first;
  calls = 1;
  while (datas[0] < FLOW_N && calls < 10000) {
    compute_us(200);
    r = x_extract();
    if (r > most)
      most = r;
    ++calls;
  }
  check_expected();
  CHECK(most <= 16);
  printf("rank 1: flow: first FM_extract at %.3f us ran %d handlers (%u "
         "frames in), at most %d per call\n",
         (double)t / 1e6, first, (unsigned)frames, most);
}

/* ---- crossing --------------------------------------------------------- */

#define CROSSING_N 40

static void scenario_crossing(void) {
  unsigned peer = 1 - me;
  int k;
  expect[peer] = CROSSING_N;
  for (k = 0; k < CROSSING_N; k++)
    send_plan(peer, k, send_area, 0);
  /* The peer's messages could not all wait on the card: some handlers ran
   * while this node's FM_send waited. */
  CHECK(during_send > 0);
  printf("rank %u: crossing: handlers run while FM_send waited: %d\n", me,
         during_send);
  WAIT_FOR(all_arrived(), "every message");
  check_expected();
}

/* ---- fanin ------------------------------------------------------------ */

#define FANIN_N 40

static void scenario_fanin(void) {
  unsigned char *big;
  int k, switches = 0, i;
  if (me < 2) {
    big = malloc((size_t)FANIN_N * AREA_BYTES);
    if (!big || FM_register(big, (size_t)FANIN_N * AREA_BYTES) != FM_SUCCESS) {
      FAIL("no registered memory for %d messages", FANIN_N);
      give_up();
    }
    for (k = 0; k < FANIN_N; k++)
      send_plan(2, k, big + (size_t)k * AREA_BYTES, 1);
    x_wait();
    EQ(x_deregister(big), FM_SUCCESS);
    free(big);
    return;
  }
  if (me != 2)
    return;
  expect[0] = expect[1] = FANIN_N;
  WAIT_FOR(all_arrived(), "every message");
  check_expected();
  for (i = 1; i < order_n; i++)
    switches += order[i] != order[i - 1];
  order[order_n] = '\0';
  printf("rank 2: fanin: arrival order %s, %d switches\n", order, switches);
}

/* ---- errors ----------------------------------------------------------- */

static void scenario_errors(void) {
  static unsigned char unregistered[64];
  unsigned char part[16] = {0};
  unsigned next = (me + 1) % nodes, prev = (me + nodes - 1) % nodes;
  int k;
  expect[prev] = 3;

  EQ(FM_send(next, H_DATA, unregistered, 8), FM_ENOTREG);
  EQ(FM_last_error(), FM_ENOTREG);
  SAYS(FM_ENOTREG, "buffer not registered: the send buffer is not "
                   "registered with FM_register");
  EQ(FM_send_nw(next, H_DATA, unregistered, 1), FM_ENOTREG);
  /* Past the end of a registered buffer, or a stack buffer not registered. */
  EQ(FM_send(next, H_DATA, send_area + AREAS * AREA_BYTES - 4, 8), FM_ENOTREG);
  EQ(FM_send(next, H_DATA, part, 8), FM_ENOTREG);

  EQ(FM_send(nodes, H_DATA, send_area, 4), FM_EBADNODE);
  EQ(FM_last_error(), FM_EBADNODE);
  {
    char want[64];
    sprintf(want, "no such node: node %u of %u", nodes, nodes);
    SAYS(FM_EBADNODE, want);
  }
  EQ(FM_send_nw(100000, H_DATA, send_area, 4), FM_EBADNODE);

  EQ(FM_send(next, -1, send_area, 4), FM_EBADHANDLER);
  EQ(FM_send(next, FM_MAX_HANDLERS, send_area, 4), FM_EBADHANDLER);
  EQ(FM_last_error(), FM_EBADHANDLER);
  SAYS(FM_EBADHANDLER, "bad handler id: handler id 256 out of range");
  EQ(FM_set_handler(FM_MAX_HANDLERS, on_data), FM_EBADHANDLER);
  EQ(FM_set_handler(-1, on_data), FM_EBADHANDLER);
  EQ(FM_set_stream_handler(FM_MAX_HANDLERS, NULL), FM_EBADHANDLER);

  EQ(FM_send(next, H_DATA, send_area, FM_MAX_MESSAGE + 1), FM_ETOOBIG);
  EQ(FM_send_nw(next, H_DATA, send_area, 100000), FM_ETOOBIG);
  EQ(FM_send(next, H_DATA, send_area, FM_MAX_MESSAGE + 1), FM_ETOOBIG);
  EQ(FM_last_error(), FM_ETOOBIG);
  SAYS(FM_ETOOBIG, "message too long: 1441 bytes (at most 1440)");

  EQ(FM_send(next, H_DATA, NULL, 4), FM_EINVAL);
  EQ(FM_last_error(), FM_EINVAL);
  SAYS(FM_EINVAL, "invalid argument: null buffer");

  /* Details go with the last error only; every code has a message. */
  EQ(strcmp(FM_strerror(FM_ETOOBIG), "message too long"), 0);
  EQ(strcmp(FM_strerror(FM_SUCCESS), "success"), 0);
  CHECK(strlen(FM_strerror(FM_ENIC)) > 0);
  CHECK(strlen(FM_strerror(-99)) > 0);

  /* To handler ids with no handler: dropped and counted. The highest id is
   * valid. Then messages that arrive. */
  x_send(next, H_NONE, send_area, 10, 0);
  x_send(next, FM_MAX_HANDLERS - 1, NULL, 0, 1);
  for (k = 0; k < 3; k++) {
    x_wait();
    send_plan(next, k, send_area, k == 1);
  }
  x_wait();
  WAIT_FOR(all_arrived(), "the messages after the dropped ones");
  check_expected();
  EQ(FM_dropped(), 2);
  printf("rank %u: errors: %u dropped\n", me, FM_dropped());
}

/* ---- register --------------------------------------------------------- */

#define REGISTER_N 9

static unsigned char static_buf[AREA_BYTES];

static void scenario_register(void) {
  unsigned char stack_buf[AREA_BYTES];
  unsigned char *heap = malloc(2 * AREA_BYTES);
  unsigned char *from_kind[3];
  unsigned peer = 1 - me;
  int k;
  if (!heap) {
    FAIL("out of memory");
    give_up();
  }
  from_kind[0] = heap + 100; /* not at the start of the malloc'd block */
  from_kind[1] = static_buf;
  from_kind[2] = stack_buf;
  expect[peer] = REGISTER_N + 1;
  EQ(FM_register(heap, 2 * AREA_BYTES), FM_SUCCESS);
  EQ(FM_register(static_buf, sizeof static_buf), FM_SUCCESS);
  EQ(FM_register(stack_buf, sizeof stack_buf), FM_SUCCESS);
  /* Overlaps, null, empty: refused. */
  EQ(FM_register(heap + 100, 10), FM_EINVAL);
  EQ(FM_register(static_buf + sizeof static_buf - 1, 10), FM_EINVAL);
  EQ(FM_register(NULL, 10), FM_EINVAL);
  EQ(FM_register(heap, 0), FM_EINVAL);

  for (k = 0; k < REGISTER_N - 1; k++) /* blocking and not, each kind */
    send_plan(peer, k, from_kind[k % 3], k % 2);
  /* FM_deregister waits for the sends from the buffer: the message is
   * intact although the buffer is overwritten right after. */
  send_plan(peer, REGISTER_N - 1, heap, 1);
  EQ(x_deregister(heap), FM_SUCCESS);
  memset(heap, 0xEE, 2 * AREA_BYTES);
  EQ(FM_send(peer, H_DATA, heap + 100, 4), FM_ENOTREG);
  EQ(FM_send_nw(peer, H_DATA, heap, 1), FM_ENOTREG);
  EQ(x_deregister(heap), FM_ENOTREG);
  EQ(x_deregister(static_buf + 1), FM_ENOTREG); /* not a registered start */
  SAYS(FM_ENOTREG, "buffer not registered: the buffer was not registered");
  /* Registered again, it works again. */
  EQ(FM_register(heap, 2 * AREA_BYTES), FM_SUCCESS);
  send_plan(peer, REGISTER_N, heap, 0);

  WAIT_FOR(all_arrived(), "every message");
  check_expected();
  EQ(x_deregister(stack_buf), FM_SUCCESS);
  EQ(x_deregister(static_buf), FM_SUCCESS);
  EQ(x_deregister(heap), FM_SUCCESS);
  free(heap);
}

/* ---- reply ------------------------------------------------------------ */

#define REPLY_N 40

static int replying;
static unsigned char *reply_area;

/* Rank 1's handler answers each message from inside the handler. */
static void on_request(void *buf, int size) {
  unsigned s = FM_sender();
  int k = datas[s < nodes ? s : 0];
  on_data(buf, size);
  if (replying)
    send_plan(s, k, reply_area, 0);
}

static void scenario_reply(void) {
  unsigned char *big;
  int k;
  if (me == 1) {
    expect[0] = REPLY_N;
    replying = 1;
    reply_area = send_area + 4 * AREA_BYTES;
    EQ(FM_set_handler(H_DATA, on_request), FM_SUCCESS);
    WAIT_FOR(all_arrived(), "every request");
    return;
  }
  expect[1] = REPLY_N;
  big = malloc((size_t)REPLY_N * AREA_BYTES);
  if (!big || FM_register(big, (size_t)REPLY_N * AREA_BYTES) != FM_SUCCESS) {
    FAIL("no registered memory for %d messages", REPLY_N);
    give_up();
  }
  for (k = 0; k < REPLY_N; k++)
    send_plan(1, k, big + (size_t)k * AREA_BYTES, 1);
  x_wait();
  WAIT_FOR(all_arrived(), "every reply");
  EQ(x_deregister(big), FM_SUCCESS);
  free(big);
}

/* ---- foreign ---------------------------------------------------------- */

/* Rank 0 is no FM program: it drives an FM-over-IP VI with VIPL and sends
 * FM packets of its own making, some to handler ids FM has no room for.
 * Rank 1 (FM) drops those, counts them, and runs the others. */
static const unsigned foreign_handlers[] = {
    FM_MAX_HANDLERS, H_DATA, 0xFFFF, H_DATA, 1000, H_DATA, H_BYE};
#define FOREIGN_N ((int)(sizeof foreign_handlers / sizeof foreign_handlers[0]))

static void vip(int line, const char *what, VIP_RETURN r) {
  if (r != VIP_SUCCESS) {
    fail(line, "%s returned %d", what, (int)r);
    give_up();
  }
}
#define VIP(call) vip(__LINE__, #call, (call))

static void foreign_sender(void) {
  VIP_NIC_HANDLE nic;
  VIP_PROTECTION_HANDLE tag;
  VIP_VI_HANDLE vi;
  VIP_VI_ATTRIBUTES va;
  VIP_MEM_ATTRIBUTES ma;
  VIP_MEM_HANDLE mh;
  VIP_DESCRIPTOR *d, *done;
  struct viafw_fm_header h;
  unsigned char *mem, *packet;
  void *p = NULL;
  int i, k = 0, len;
  const size_t bytes = 8192;
  if (nicemu_alloc(bytes, &p) != NICEMU_OK) {
    FAIL("nicemu_alloc: %s", nicemu_last_error());
    give_up();
  }
  mem = p;
  d = (VIP_DESCRIPTOR *)mem;
  packet = mem + 256;
  VIP(VipOpenNic(NULL, &nic));
  VIP(VipCreatePtag(nic, &tag));
  memset(&va, 0, sizeof va);
  va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
  va.MaxTransferSize = VIAFW_FM_HEADER_BYTES + FM_MAX_MESSAGE;
  va.Ptag = tag;
  VIP(VipCreateViKind(nic, &va, VIP_VI_KIND_FM_IP, NULL, NULL, &vi));
  memset(&ma, 0, sizeof ma);
  ma.Ptag = tag;
  VIP(VipRegisterMem(nic, mem, (VIP_ULONG)bytes, &ma, &mh));
  for (i = 0; i < FOREIGN_N; i++) {
    len = 0;
    if (foreign_handlers[i] == H_DATA) {
      len = plan_len(k);
      fill(packet + VIAFW_FM_HEADER_BYTES, 1, k, len);
      tally_add(&to[1], packet + VIAFW_FM_HEADER_BYTES, len);
      ++k;
    } else if (foreign_handlers[i] != H_BYE) {
      len = 8;
      memset(packet + VIAFW_FM_HEADER_BYTES, 0x5A, 8);
    }
    memset(&h, 0, sizeof h);
    h.dest = 1;
    h.handler = (uint16_t)foreign_handlers[i];
    h.length = (uint32_t)len;
    memcpy(packet, &h, sizeof h);
    memset(d, 0, sizeof *d);
    d->CS.Control = VIP_CONTROL_OP_SENDRECV;
    d->CS.SegCount = 1;
    d->CS.Length = VIAFW_FM_HEADER_BYTES + (uint32_t)len;
    d->DS[0].Local.Data.Address = packet;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = d->CS.Length;
    VIP(VipPostSend(vi, d, mh));
    VIP(VipSendWait(vi, VIP_INFINITE, &done));
    CHECK(done == d);
    EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0);
  }
  /* Rank 1's goodbye. */
  memset(d, 0, sizeof *d);
  d->CS.Control = VIP_CONTROL_OP_SENDRECV;
  d->CS.SegCount = 1;
  d->CS.Length = 2048;
  d->DS[0].Local.Data.Address = packet;
  d->DS[0].Local.Handle = mh;
  d->DS[0].Local.Length = 2048;
  VIP(VipPostRecv(vi, d, mh));
  VIP(VipRecvWait(vi, VIP_INFINITE, &done));
  CHECK(done == d);
  EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0);
  EQ(d->CS.Length, VIAFW_FM_HEADER_BYTES);
  memcpy(&h, packet, sizeof h);
  EQ(h.src, 1);
  EQ(h.dest, 0);
  EQ(h.handler, H_BYE);
  EQ(h.length, 0);
  VIP(VipDestroyVi(vi));
  VIP(VipDeregisterMem(nic, mem, mh));
  VIP(VipDestroyPtag(nic, tag));
  VIP(VipCloseNic(nic));
  print_tallies();
}

static void scenario_foreign(void) {
  expect[0] = 3;
  WAIT_FOR(all_arrived() && byes == 1, "rank 0's messages");
  EQ(FM_dropped(), 3);
  printf("rank 1: foreign: %u dropped\n", FM_dropped());
}

/* ---- stream ------------------------------------------------------------ */

/* The streamed messages: length, the pieces sent, and how many bytes the
 * receiving handler reads (-1: all, in pieces of 3, 64, then 500). */
struct streamed {
  unsigned length;
  unsigned pieces[5];
  int read;
};
static const struct streamed streams[] = {
    {1000, {1, 99, 400, 500, 0}, -1},
    {0, {0, 0, 0, 0, 0}, -1},
    {FM_MAX_MESSAGE, {7, 1433, 0, 0, 0}, -1},
    {1, {1, 0, 0, 0, 0}, -1},
    {5, {2, 0, 3, 0, 0}, -1}, /* a piece of 0 bytes between */
    {100, {60, 40, 0, 0, 0}, 10},
    {10, {6, 4, 0, 0, 0}, -1}, /* sent after the errors */
};
#define STREAMS_N ((int)(sizeof streams / sizeof streams[0]))
/* The order of streamed ('S') and FM_send ('D') messages. */
static const char stream_script[] = "SDSSDSSDSS";

static int streams_got;

static int on_stream(FM_stream *stream, unsigned sender) {
  static unsigned char got[FM_MAX_MESSAGE + 64];
  const struct streamed *m;
  unsigned total = 0, n, i, ask, want;
  const unsigned asks[] = {3, 64, 500};
  int j = streams_got++;
  note_handler();
  log_arrival('S');
  if (sender != FM_sender() || sender >= nodes || sender == me)
    FAIL("a stream handler for node %u, FM_sender() %u", sender, FM_sender());
  if (j >= STREAMS_N) {
    FAIL("stream message %d: only %d expected", j, STREAMS_N);
    return 0;
  }
  m = &streams[j];
  want = m->read < 0 ? m->length : (unsigned)m->read;
  for (i = 0; total < want; i++) {
    ask = asks[i < 2 ? i : 2];
    if (ask > want - total)
      ask = want - total;
    n = FM_receive(got + total, stream, ask);
    if (n != ask) {
      FAIL("stream %d: FM_receive of %u bytes at %u gave %u", j, ask, total, n);
      break;
    }
    total += n;
  }
  if (m->read < 0)
    EQ(FM_receive(got + total, stream, 64), 0); /* the end */
  for (i = 0; i < total; i++)
    if (got[i] != pattern(sender, me, 1000 + j, (int)i)) {
      FAIL("stream %d: byte %u is 0x%02x, want 0x%02x", j, i, got[i],
           pattern(sender, me, 1000 + j, (int)i));
      break;
    }
  tally_add(&from[sender], got, (int)total);
  return 0;
}

/* Sends streamed message `j` to `dst`, its pieces from unaligned memory that
 * is not registered. */
static void send_stream(unsigned dst, int j) {
  unsigned char piece[FM_MAX_MESSAGE + 8];
  unsigned char *p = piece + 3;
  const struct streamed *m = &streams[j];
  unsigned at = 0, i;
  FM_stream *s;
  for (i = 0; i < m->length; i++)
    p[i] = pattern(me, dst, 1000 + j, (int)i);
  s = x_begin(dst, m->length, H_STREAM);
  if (!s) {
    FAIL("FM_begin_message: %s", FM_strerror(FM_last_error()));
    return;
  }
  for (i = 0; i < 5; i++) {
    if (m->pieces[i] == 0 && at == m->length)
      break;
    EQ(FM_send_piece(s, p + at, m->pieces[i]), FM_SUCCESS);
    at += m->pieces[i];
  }
  EQ(FM_end_message(s), FM_SUCCESS);
  /* What the receiving handler reads of it. */
  tally_add(&to[dst], p, m->read < 0 ? (int)m->length : m->read);
}

static int selfs;
static void on_self(void *buf, int size) {
  (void)buf;
  note_handler();
  if (FM_sender() != me || size != 0)
    FAIL("a message of %d bytes from node %u to H_SELF", size, FM_sender());
  ++selfs;
}

static void scenario_stream(void) {
  unsigned peer = 1 - me;
  FM_stream *open[16];
  unsigned char x[16];
  const char *c;
  int j = 0, k = 0;
  unsigned i;
  FM_stream *s;
  expect[peer] = 3; /* FM_send messages; the streams are counted apart */

  /* Refused at the start. */
  CHECK(FM_begin_message(peer, FM_MAX_MESSAGE + 1, H_STREAM) == NULL);
  EQ(FM_last_error(), FM_ETOOBIG);
  CHECK(FM_begin_message(nodes, 4, H_STREAM) == NULL);
  EQ(FM_last_error(), FM_EBADNODE);
  CHECK(FM_begin_message(peer, 4, FM_MAX_HANDLERS) == NULL);
  EQ(FM_last_error(), FM_EBADHANDLER);
  EQ(FM_send_piece(NULL, x, 1), FM_EINVAL);
  EQ(FM_end_message(NULL), FM_EINVAL);

  for (c = stream_script; *c; c++) {
    if (*c == 'D') {
      send_plan(peer, k++, send_area, 0);
      continue;
    }
    if (j < STREAMS_N - 1) {
      send_stream(peer, j++);
      continue;
    }
    /* The last one: a piece past the length, the end short of it. */
    for (i = 0; i < 10; i++)
      x[i] = pattern(me, peer, 1000 + j, (int)i);
    s = x_begin(peer, 10, H_STREAM);
    if (!s) {
      FAIL("FM_begin_message: %s", FM_strerror(FM_last_error()));
      continue;
    }
    EQ(FM_send_piece(s, x, 6), FM_SUCCESS);
    EQ(FM_send_piece(s, "#####", 5), FM_ETOOBIG);
    EQ(FM_last_error(), FM_ETOOBIG);
    SAYS(FM_ETOOBIG, "pieces longer than the message begun");
    EQ(FM_end_message(s), FM_EINVAL);
    EQ(FM_last_error(), FM_EINVAL);
    SAYS(FM_EINVAL, "the pieces hold 6 of 10 bytes");
    EQ(FM_send_piece(s, x + 6, 4), FM_SUCCESS);
    EQ(FM_end_message(s), FM_SUCCESS);
    tally_add(&to[peer], x, 10);
    EQ(FM_send_piece(s, x, 1), FM_EINVAL); /* ended */
    ++j;
  }
  x_wait();

  /* 16 messages begun and not ended hold the 16 send descriptors: with
   * nothing in flight, a 17th is refused (waiting would never end). Ended,
   * they run here (messages to this node). */
  EQ(FM_set_handler(H_SELF, on_self), FM_SUCCESS);
  for (i = 0; i < 16; i++) {
    open[i] = x_begin(me, 0, H_SELF);
    CHECK(open[i] != NULL);
  }
  CHECK(x_begin(me, 0, H_SELF) == NULL);
  EQ(FM_last_error(), FM_EINVAL);
  SAYS(FM_EINVAL, "invalid argument: all 16 send descriptors hold messages "
                  "begun and not ended (FM_end_message)");
  for (i = 0; i < 16; i++)
    if (open[i])
      EQ(FM_end_message(open[i]), FM_SUCCESS);
  WAIT_FOR(selfs == 16, "the messages to this node");

  WAIT_FOR(all_arrived() && streams_got >= STREAMS_N, "every message");
  check_expected();
  EQ(streams_got, STREAMS_N);
  order[order_n] = '\0';
  for (i = 0; i < (unsigned)order_n; i++)
    if (order[i] != 'S')
      order[i] = 'D';
  printf("rank %u: stream: order %s\n", me, order);
}

/* ---- main ------------------------------------------------------------- */

int main(int argc, char **argv) {
  uint32_t rank = 0, size = 0;
  int r;
  if (argc != 2) {
    fprintf(stderr, "usage: fm_checks SCENARIO\n");
    return 2;
  }
  scenario = argv[1];
  if (nicemu_rank(&rank) != NICEMU_OK || nicemu_size(&size) != NICEMU_OK) {
    fprintf(stderr, "fm_checks: %s\n", nicemu_last_error());
    return 2;
  }
  me = rank;
  nodes = size;
  for (r = 0; r < MAX_NODES; r++) /* FNV-1a's offset basis */
    from[r].sum = to[r].sum = 2166136261u;
  if (strcmp(scenario, "init") == 0)
    before_initialize();
  if (strcmp(scenario, "foreign") == 0 && me == 0) {
    foreign_sender();
    if (failures)
      give_up();
    printf("rank 0: foreign: ok\n");
    return 0;
  }
  r = FM_initialize();
  if (r != FM_SUCCESS) {
    printf("rank %u: %s: FM_initialize: %s\n", me, scenario, FM_strerror(r));
    return 1;
  }
  if (nodes > MAX_NODES || nodes < 2) {
    printf("rank %u: %s: run on 2 to %d nodes\n", me, scenario, MAX_NODES);
    return 1;
  }
  EQ(FM_set_handler(H_DATA, on_data), FM_SUCCESS);
  EQ(FM_set_handler(H_BYE, on_bye), FM_SUCCESS);
  EQ(FM_set_handler(H_HELLO, on_hello), FM_SUCCESS);
  EQ(FM_set_stream_handler(H_STREAM, on_stream), FM_SUCCESS);
  send_area = malloc(AREAS * AREA_BYTES);
  if (!send_area || FM_register(send_area, AREAS * AREA_BYTES) != FM_SUCCESS) {
    printf("rank %u: %s: no send buffer\n", me, scenario);
    return 1;
  }

  if (strcmp(scenario, "init") == 0)
    scenario_init();
  else if (strcmp(scenario, "sizes") == 0)
    scenario_sizes();
  else if (strcmp(scenario, "quiet") == 0 && nodes == 2)
    scenario_quiet();
  else if (strcmp(scenario, "flow") == 0 && nodes == 2)
    scenario_flow();
  else if (strcmp(scenario, "reply") == 0 && nodes == 2)
    scenario_reply();
  else if (strcmp(scenario, "foreign") == 0 && nodes == 2)
    scenario_foreign();
  else if (strcmp(scenario, "crossing") == 0 && nodes == 2)
    scenario_crossing();
  else if (strcmp(scenario, "fanin") == 0 && nodes == 3)
    scenario_fanin();
  else if (strcmp(scenario, "errors") == 0)
    scenario_errors();
  else if (strcmp(scenario, "register") == 0 && nodes == 2)
    scenario_register();
  else if (strcmp(scenario, "stream") == 0 && nodes == 2)
    scenario_stream();
  else {
    printf("rank %u: unknown scenario %s (or wrong node count)\n", me,
           scenario);
    return 2;
  }

  x_wait();
  goodbye();
  EQ(x_extract(), 0); /* nothing more came */
  check_expected();
  EQ(outside, 0);
  print_tallies();
  EQ(x_deregister(send_area), FM_SUCCESS);
  ++in_fm;
  EQ(FM_finalize(), FM_SUCCESS);
  --in_fm;
  if (strcmp(scenario, "init") == 0) { /* closed again */
    EQ(FM_extract(), FM_ENOTINIT);
    EQ(FM_send(0, H_DATA, NULL, 0), FM_ENOTINIT);
  }
  free(send_area);
  if (failures) {
    printf("rank %u: %s: %d failures\n", me, scenario, failures);
    return 1;
  }
  printf("rank %u: %s: ok\n", me, scenario);
  return 0;
}
