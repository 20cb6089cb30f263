/* Berkeley GAM (nicemu/am.h) conformance, as an old GAM program would be
 * written: C89 with K&R handler definitions, built with -std=gnu89
 * (tests/e2e/CMakeLists.txt), run on the niam firmware by test_gam.cpp:
 *
 *   gam_checks_prog [N]   N: the number of nodes gam_procs() must report
 *
 * Every rank talks to every rank, itself included, in phases separated by
 * gam_barrier:
 *   addresses  request_4 publishes heap addresses (stores go to the heap too)
 *   requests   request_1..4 and reply_1..4, distinct arguments, in order
 *   stores     gam_store of 1 byte .. gam_max_size(), odd sizes, unaligned
 *              ends, into globals and the heap, guard bytes around
 *   async      gam_store_async: endfunc at the sender at the next poll
 *   gets       gam_get from globals and the heap; the handler runs here
 *   xfers      gam_reply_xfer from a request handler
 *   empty      zero-byte stores and gets; stores and gets to unmapped
 *              memory, which are dropped
 *   errors     calls that must return AM_ERROR with a reason
 *   local      gam_poll and gam_wait on messages to this node
 * and last gam_disable, which runs a pending endfunc. A phase ends with a
 * fence request to every node: messages between two nodes arrive in order
 * (docs/gam.md), so when every fence and its answer are in, so is
 * everything sent before them, and lost messages show as wrong counts.
 *
 * Handlers never nest (docs/gam.md): a reply that waits for room inside a
 * request handler holds the messages it takes in until the handler has
 * returned; the request handlers check it. Replies, get replies and
 * transfers are still recognised by their arguments, not by their order,
 * and fences are answered from the main program, once every handler has
 * returned.
 *
 * Every rank prints "rank R: ok (C checks)", or "rank R: FAIL ..." lines
 * and exits with status 1. */
/* clang-format would join the K&R parameter declarations onto the
 * function lines: the file is kept in its style by hand. */
/* clang-format off */
#include <nicemu/am.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 8          /* nodes at most */
#define MAXSZ 8192      /* gam_max_size(), docs/gam.md */
#define GUARD 16        /* guard bytes on each side of a landing area */
#define GUARD_BYTE 0xA5 /* what a landing area holds outside the data */
#define SCRIBBLE 0x5A   /* written over a source buffer once it is free */
#define REGION (GUARD + 8 + MAXSZ + GUARD) /* one landing area */
#define SLOT (MAXSZ + 8)                   /* one source buffer */
#define NPLAN 11   /* transfers of each kind to each node */
#define BURST 48   /* requests to each node: more than the NIC's 8 slots */
#define NPHASES 12 /* fences */
#define MAXFAIL 40 /* FAIL lines printed per rank */

static int failures = 0, checks = 0, handled = 0;
static vnn_t me = -1;
static int procs = 0;

/* The sizes of the transfers; plan() says where they start. */
static const int sizes[NPLAN] = {1,    2,    3,    7,    64,   255,
                                 1000, 4095, 4097, 8191, MAXSZ};

/* Landing areas for stores and transfers, one per sending node, in a
 * global and on the heap; what gets fetched from this node (exported,
 * heap_export: the data pattern of this node); where gets land (get_land:
 * one area per node and transfer); the heap addresses of the others. */
static unsigned char landing[MAXP][REGION];
static unsigned char *heap_land, *heap_export, *get_land;
static unsigned char exported[SLOT];
static unsigned char *peer_land[MAXP], *peer_export[MAXP];
static unsigned char src_buf[SLOT], xfer_buf[SLOT];
static unsigned char async_buf[NPLAN][SLOT];
static unsigned char scratch[64];
static const char ro_text[] = "read-only";

/* ---- Checks -------------------------------------------------------------- */

static void expect_at(int ok, const char *what, int node, int idx, long got,
                      long want) {
  ++checks;
  if (ok)
    return;
  if (++failures > MAXFAIL)
    return;
  if (node >= 0)
    printf("rank %d: FAIL %s (node %d, #%d): got %ld, want %ld\n", me, what,
           node, idx, got, want);
  else
    printf("rank %d: FAIL %s: got %ld, want %ld\n", me, what, got, want);
  fflush(stdout);
}

static void expect(int ok, const char *what, long got, long want) {
  expect_at(ok, what, -1, -1, got, want);
}

/* A call that must succeed. */
static void ok(int status, const char *what) {
  expect(status == AM_OK, what, status, AM_OK);
}

/* A poll or wait in a loop: checked, not counted (how often a loop polls
 * depends on timing; the number of checks printed does not). */
static void polled(int status, const char *what) {
  if (status != AM_OK)
    expect(0, what, status, AM_OK);
}

/* Every handler starts here: src must be a node. */
static int from_node(vnn_t src, const char *what) {
  ++handled;
  expect(src >= 0 && src < procs, what, src, 0);
  return src >= 0 && src < procs;
}

/* The k-th argument of the n-th message of `kind` (1..4: request_1..4,
 * 5..8: reply_1..4) from `from` to `to`: distinct for every combination
 * (an odd multiplier is a bijection mod 2^32), negative half the time;
 * the fourth request (a request_4) carries the extremes. */
static int argval(int from, int to, int kind, int n, int k) {
  static const int extremes[4] = {0, -1, 0x7fffffff, -0x7fffffff - 1};
  unsigned long x =
      ((((unsigned long)from * MAXP + to) * 16 + kind) * 1024 + n) * 4 + k;
  if (kind == 4 && n == 3)
    return extremes[k];
  return (int)(unsigned int)((x * 2654435761UL) & 0xffffffffUL);
}

/* Byte j of the data `from` sends `to` in transfer `i`. */
static unsigned char pat(int from, int to, int i, int j) {
  return (unsigned char)(j * 131 + (j >> 8) * 7 + from * 31 + to * 17 +
                         i * 57 + 3);
}

static void fill(unsigned char *p, int n, int from, int to, int i, int first) {
  int j;
  for (j = 0; j < n; j++)
    p[j] = pat(from, to, i, first + j);
}

/* How many of the n bytes at p are not pat(from, to, i, j). */
static int differ(const unsigned char *p, int n, int from, int to, int i) {
  int j, bad = 0;
  for (j = 0; j < n; j++)
    bad += p[j] != pat(from, to, i, j);
  return bad;
}

/* Adler-32. */
static unsigned long cksum(const unsigned char *p, int n) {
  unsigned long a = 1, b = 0;
  int j;
  for (j = 0; j < n; j++) {
    a = (a + p[j]) % 65521;
    b = (b + a) % 65521;
  }
  return b << 16 | a;
}

/* Transfer i: its size, where it starts in the source buffer (loff) and in
 * the landing area (roff), and whether it lands on the heap. */
static void plan(int i, int *n, int *loff, int *roff, int *heap) {
  *n = sizes[i % NPLAN];
  *loff = i % 4;
  *roff = (i * 3) % 8;
  *heap = (i + i / NPLAN) % 2;
}

/* In the landing area `region`, bytes GUARD + off .. + n must hold
 * pat(from, to, i, first + j) and all others the guard byte. Resets the
 * area to guard bytes for the next transfer. */
static void check_region(const char *what, int node, int idx,
                         unsigned char *region, int off, int n, int from,
                         int to, int i, int first) {
  int j, bad = 0, guards = 0;
  char label[80];
  for (j = 0; j < REGION; j++) {
    int at = j - GUARD - off;
    if (at >= 0 && at < n) {
      if (region[j] != pat(from, to, i, first + at))
        bad++;
    } else if (region[j] != GUARD_BYTE)
      guards++;
  }
  sprintf(label, "%s: bytes wrong", what);
  expect_at(bad == 0, label, node, idx, bad, 0);
  sprintf(label, "%s: guard bytes overwritten", what);
  expect_at(guards == 0, label, node, idx, guards, 0);
  memset(region, GUARD_BYTE, REGION);
}

/* A call that must fail, leaving a reason that contains `phrase`. */
static void refused(int status, const char *what, const char *phrase) {
  const char *why = gam_error();
  ++checks;
  if (status == AM_ERROR && why != NULL && why[0] != '\0' &&
      strstr(why, phrase) != NULL)
    return;
  if (++failures <= MAXFAIL) {
    printf("rank %d: FAIL %s: returned %d, gam_error() \"%s\", want AM_ERROR "
           "and \"%s\"\n",
           me, what, status, why ? why : "(null)", phrase);
    fflush(stdout);
  }
}

/* ---- Fences: the end of a phase ------------------------------------------ */

static int fence_in[NPHASES], fence_back[NPHASES];
static int fence_owed[MAXP]; /* 1 + the phase of a fence to answer */

static void fence_answer(src, phase)
vnn_t src;
int phase;
{
  if (from_node(src, "fence answer source") && phase >= 0 && phase < NPHASES)
    fence_back[phase]++;
}

static void fence_request(src, phase)
vnn_t src;
int phase;
{
  if (from_node(src, "fence source") && phase >= 0 && phase < NPHASES) {
    expect_at(fence_owed[src] == 0, "fence twice", src, phase,
              fence_owed[src], 0);
    fence_in[phase]++;
    fence_owed[src] = phase + 1;
  }
}

/* Fences every node and waits (with am_wait or am_poll) for the fences of
 * all nodes, answering them, and for their answers. */
static void fence(int phase, int wait) {
  int d, p, answered;
  for (d = 0; d < procs; d++)
    ok(am_request_1(d, fence_request, phase), "am_request_1 (fence)");
  for (;;) {
    answered = 0;
    for (d = 0; d < procs; d++)
      if (fence_owed[d]) {
        p = fence_owed[d] - 1;
        fence_owed[d] = 0;
        ok(am_request_1(d, fence_answer, p), "am_request_1 (answer)");
        answered = 1;
      }
    if (answered)
      continue; /* answering may have run handlers: look again */
    if (fence_in[phase] == procs && fence_back[phase] == procs)
      break;
    polled(wait ? am_wait(NULL, 0) : am_poll(), wait ? "am_wait" : "am_poll");
  }
  expect(fence_in[phase] == procs, "fences in", fence_in[phase], procs);
  expect(fence_back[phase] == procs, "fence answers", fence_back[phase],
         procs);
}

/* ---- Addresses ----------------------------------------------------------- */

static int addresses_in = 0;

static unsigned char *joined(int hi, int lo) {
  return (unsigned char *)(((unsigned long)(unsigned int)hi << 16 << 16) |
                           (unsigned long)(unsigned int)lo);
}

static int high(void *p) {
  return (int)(unsigned int)((unsigned long)p >> 16 >> 16);
}

static int low(void *p) {
  return (int)(unsigned int)((unsigned long)p & 0xffffffffUL);
}

static void addresses(src, land_hi, land_lo, export_hi, export_lo)
vnn_t src;
int land_hi, land_lo, export_hi, export_lo;
{
  if (!from_node(src, "addresses source"))
    return;
  peer_land[src] = joined(land_hi, land_lo);
  peer_export[src] = joined(export_hi, export_lo);
  addresses_in++;
}

static void phase_addresses(void) {
  int d;
  for (d = 0; d < procs; d++)
    ok(gam_request_4(d, addresses, high(heap_land), low(heap_land),
                     high(heap_export), low(heap_export)),
       "gam_request_4 (addresses)");
  fence(0, 1);
  expect(addresses_in == procs, "addresses in", addresses_in, procs);
  expect(peer_land[me] == heap_land, "own heap address back",
         (long)peer_land[me], (long)heap_land);
  ok(gam_barrier(), "gam_barrier");
}

/* ---- Requests and replies ------------------------------------------------ */

static int req_seen[MAXP], rep_seen[MAXP];
static char rep_got[MAXP][BURST];

/* Reply n, to request_k, is a reply_(5 - k): the first argument tells
 * which one it is. */
static void got_reply(int kind, vnn_t src, int a0, int a1, int a2, int a3) {
  int a[4], k, n;
  if (!from_node(src, "reply source"))
    return;
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
  rep_seen[src]++;
  for (n = 4 - kind; n < BURST; n += 4)
    if (a0 == argval(src, me, 4 + kind, n, 0))
      break;
  expect_at(n < BURST, "reply_N handler: first argument", src, kind, a0, 0);
  if (n >= BURST)
    return;
  expect_at(!rep_got[src][n], "reply twice", src, n, 1, 0);
  rep_got[src][n] = 1;
  for (k = 1; k < kind; k++)
    expect_at(a[k] == argval(src, me, 4 + kind, n, k), "reply argument", src,
              n * 4 + k, a[k], argval(src, me, 4 + kind, n, k));
}

static void reply1(src, a0)
vnn_t src;
int a0;
{
  got_reply(1, src, a0, 0, 0, 0);
}

static void reply2(src, a0, a1)
vnn_t src;
int a0, a1;
{
  got_reply(2, src, a0, a1, 0, 0);
}

static void reply3(src, a0, a1, a2)
vnn_t src;
int a0, a1, a2;
{
  got_reply(3, src, a0, a1, a2, 0);
}

static void reply4(src, a0, a1, a2, a3)
vnn_t src;
int a0, a1, a2, a3;
{
  got_reply(4, src, a0, a1, a2, a3);
}

static int request_depth = 0; /* request handlers running, nested */

static void got_request(int kind, vnn_t src, int a0, int a1, int a2, int a3) {
  int a[4], v[4], k, n, status = AM_ERROR;
  if (!from_node(src, "request source"))
    return;
  ++request_depth;
  expect(request_depth == 1, "request handlers never nest", request_depth, 1);
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
  n = req_seen[src]++;
  expect_at(kind == 1 + n % 4, "request handler in order", src, n, kind,
            1 + n % 4);
  for (k = 0; k < kind; k++)
    expect_at(a[k] == argval(src, me, kind, n, k), "request argument", src,
              n * 4 + k, a[k], argval(src, me, kind, n, k));
  for (k = 0; k < 4; k++)
    v[k] = argval(me, src, 4 + (5 - kind), n, k);
  switch (5 - kind) {
  case 1:
    status = gam_reply_1(src, reply1, v[0]);
    break;
  case 2:
    status = gam_reply_2(src, reply2, v[0], v[1]);
    break;
  case 3:
    status = gam_reply_3(src, reply3, v[0], v[1], v[2]);
    break;
  case 4:
    status = gam_reply_4(src, reply4, v[0], v[1], v[2], v[3]);
    break;
  }
  ok(status, "gam_reply_N from a request handler");
  --request_depth;
}

static void request1(src, a0)
vnn_t src;
int a0;
{
  got_request(1, src, a0, 0, 0, 0);
}

static void request2(src, a0, a1)
vnn_t src;
int a0, a1;
{
  got_request(2, src, a0, a1, 0, 0);
}

static void request3(src, a0, a1, a2)
vnn_t src;
int a0, a1, a2;
{
  got_request(3, src, a0, a1, a2, 0);
}

static void request4(src, a0, a1, a2, a3)
vnn_t src;
int a0, a1, a2, a3;
{
  got_request(4, src, a0, a1, a2, a3);
}

static void phase_requests(void) {
  int d, n, kind, status = AM_ERROR, v[4], k;
  for (d = 0; d < procs; d++)
    for (n = 0; n < BURST; n++) {
      kind = 1 + n % 4;
      for (k = 0; k < 4; k++)
        v[k] = argval(me, d, kind, n, k);
      switch (kind) {
      case 1:
        status = gam_request_1(d, request1, v[0]);
        break;
      case 2:
        status = gam_request_2(d, request2, v[0], v[1]);
        break;
      case 3:
        status = gam_request_3(d, request3, v[0], v[1], v[2]);
        break;
      case 4:
        status = gam_request_4(d, request4, v[0], v[1], v[2], v[3]);
        break;
      }
      ok(status, "gam_request_N");
    }
  fence(1, 0);
  for (d = 0; d < procs; d++) {
    expect_at(req_seen[d] == BURST, "requests handled", d, 0, req_seen[d],
              BURST);
    expect_at(rep_seen[d] == BURST, "replies handled", d, 0, rep_seen[d],
              BURST);
    for (n = 0; n < BURST; n++)
      expect_at(rep_got[d][n], "reply handled", d, n, rep_got[d][n], 1);
  }
  ok(gam_barrier(), "gam_barrier");
}

/* ---- Stores (sync: plan 0 .. NPLAN - 1, async: NPLAN .. 2 NPLAN - 1) ----- */

static int stored[MAXP];

/* Where transfer i from `from` lands on `to`, in to's address space (rank
 * `me` is one of them: the heap address is ours or was published). */
static unsigned char *landing_area(int from, int to, int heap) {
  if (!heap)
    return landing[from];
  return to == me ? heap_land + from * REGION : peer_land[to] + from * REGION;
}

static void store_done(src, addr, nbytes, arg)
vnn_t src;
void *addr;
int nbytes;
void *arg;
{
  int i, n, loff, roff, heap;
  unsigned char *region;
  if (!from_node(src, "store source"))
    return;
  i = stored[src]++;
  plan(i, &n, &loff, &roff, &heap);
  region = landing_area(src, me, heap);
  expect_at(addr == region + GUARD + roff, "store handler address", src, i,
            (long)addr, (long)(region + GUARD + roff));
  expect_at(nbytes == n, "store handler nbytes", src, i, nbytes, n);
  if (addr == region + GUARD + roff && nbytes == n)
    expect_at(cksum(addr, n) == (unsigned long)arg, "store checksum (arg)",
              src, i, (long)cksum(addr, n), (long)arg);
  check_region("store", src, i, region, roff, n, src, me, i, 0);
}

static void phase_store(void) {
  int d, i, n, loff, roff, heap;
  unsigned char *rva;
  unsigned long sum;
  for (d = 0; d < procs; d++)
    for (i = 0; i < NPLAN; i++) {
      plan(i, &n, &loff, &roff, &heap);
      fill(src_buf + loff, n, me, d, i, 0);
      sum = cksum(src_buf + loff, n);
      rva = landing_area(me, d, heap) + GUARD + roff;
      ok(gam_store(d, src_buf + loff, rva, n, store_done, (void *)sum),
         "gam_store");
      /* gam_store returns when the buffer may be reused */
      memset(src_buf, SCRIBBLE, sizeof src_buf);
    }
  fence(2, 1);
  for (d = 0; d < procs; d++)
    expect_at(stored[d] == NPLAN, "stores handled", d, 0, stored[d], NPLAN);
  ok(gam_barrier(), "gam_barrier");
}

static int ended = 0;

/* At the sender: earg names the node and the transfer. */
static void store_ended(dest, lva, nbytes, earg)
vnn_t dest;
void *lva;
int nbytes;
void *earg;
{
  int d, i, n, loff, roff, heap;
  unsigned long tag = (unsigned long)earg;
  unsigned char *buf;
  ++handled;
  ++ended;
  d = (int)(tag / 1000), i = (int)(tag % 1000);
  expect_at(d < procs && i >= NPLAN && i < 2 * NPLAN, "endfunc earg", d, i,
            (long)tag, 0);
  if (d >= procs || i < NPLAN || i >= 2 * NPLAN)
    return;
  plan(i, &n, &loff, &roff, &heap);
  buf = async_buf[i - NPLAN];
  expect_at(dest == d, "endfunc dest", d, i, dest, d);
  expect_at(lva == buf + loff, "endfunc lva", d, i, (long)lva,
            (long)(buf + loff));
  expect_at(nbytes == n, "endfunc nbytes", d, i, nbytes, n);
  /* the buffer was left alone until now; it is free from now on */
  expect_at(differ(buf + loff, n, me, d, i) == 0, "endfunc: source changed",
            d, i, differ(buf + loff, n, me, d, i), 0);
  memset(buf, SCRIBBLE, SLOT);
}

static void phase_store_async(void) {
  int d, i, n, loff, roff, heap, before;
  unsigned char *rva, *lva;
  for (d = 0; d < procs; d++) {
    before = ended;
    for (i = NPLAN; i < 2 * NPLAN; i++) {
      plan(i, &n, &loff, &roff, &heap);
      lva = async_buf[i - NPLAN] + loff;
      fill(lva, n, me, d, i, 0);
      rva = landing_area(me, d, heap) + GUARD + roff;
      ok(gam_store_async(d, lva, rva, n, store_done, (void *)cksum(lva, n),
                         store_ended, (void *)(unsigned long)(d * 1000 + i)),
         "gam_store_async");
    }
    /* docs/gam.md: endfunc runs at the next poll */
    expect_at(ended == before, "endfuncs before the next poll", d, 0,
              ended - before, 0);
    ok(gam_poll(), "gam_poll");
    expect_at(ended == before + NPLAN, "endfuncs after the next poll", d, 0,
              ended - before, NPLAN);
  }
  fence(3, 0);
  for (d = 0; d < procs; d++)
    expect_at(stored[d] == 2 * NPLAN, "async stores handled", d, 0,
              stored[d] - NPLAN, NPLAN);
  expect(ended == procs * NPLAN, "endfuncs run", ended, procs * NPLAN);
  ok(gam_barrier(), "gam_barrier");
}

/* ---- Gets ---------------------------------------------------------------- */

static int got = 0;

/* Here: arg names the node and the transfer. */
static void get_done(src, addr, nbytes, arg)
vnn_t src;
void *addr;
int nbytes;
void *arg;
{
  int d, i, n, loff, roff, heap;
  unsigned long tag = (unsigned long)arg;
  unsigned char *region;
  if (!from_node(src, "get source"))
    return;
  ++got;
  d = (int)(tag / 1000), i = (int)(tag % 1000);
  expect_at(d < procs && i < NPLAN, "get handler arg", d, i, (long)tag, 0);
  if (d >= procs || i >= NPLAN)
    return;
  plan(i, &n, &loff, &roff, &heap);
  region = get_land + (d * NPLAN + i) * REGION;
  expect_at(src == d, "get handler src", d, i, src, d);
  expect_at(addr == region + GUARD + loff, "get handler address", d, i,
            (long)addr, (long)(region + GUARD + loff));
  expect_at(nbytes == n, "get handler nbytes", d, i, nbytes, n);
  /* what node d exports from offset roff */
  check_region("get", d, i, region, loff, n, d, 0, heap ? 101 : 100, roff);
}

static void phase_get(void) {
  int d, i, n, loff, roff, heap;
  unsigned char *rva, *lva;
  for (d = 0; d < procs; d++)
    for (i = 0; i < NPLAN; i++) {
      plan(i, &n, &loff, &roff, &heap);
      lva = get_land + (d * NPLAN + i) * REGION + GUARD + loff;
      rva = (heap ? (d == me ? heap_export : peer_export[d]) : exported) + roff;
      ok(gam_get(d, rva, lva, n, get_done,
                 (void *)(unsigned long)(d * 1000 + i)),
         "gam_get");
    }
  fence(4, 1);
  expect(got == procs * NPLAN, "get handlers run", got, procs * NPLAN);
  ok(gam_barrier(), "gam_barrier");
}

/* ---- Transfers from request handlers ------------------------------------- */

static int xfers[MAXP];
static char xfer_got[MAXP][NPLAN];

static void xfer_done(src, addr, nbytes, arg)
vnn_t src;
void *addr;
int nbytes;
void *arg;
{
  int i, n, loff, roff, heap;
  unsigned long sum = (unsigned long)arg >> 8;
  unsigned char *region;
  if (!from_node(src, "transfer source"))
    return;
  xfers[src]++;
  i = (int)((unsigned long)arg & 0xff);
  expect_at(i < NPLAN && !xfer_got[src][i], "transfer handler arg", src, i,
            (long)arg, 0);
  if (i >= NPLAN)
    return;
  xfer_got[src][i] = 1;
  plan(i, &n, &loff, &roff, &heap);
  region = landing_area(src, me, heap);
  expect_at(addr == region + GUARD + roff, "transfer handler address", src, i,
            (long)addr, (long)(region + GUARD + roff));
  expect_at(nbytes == n, "transfer handler nbytes", src, i, nbytes, n);
  if (addr == region + GUARD + roff && nbytes == n)
    expect_at(cksum(addr, n) == sum, "transfer checksum (arg)", src, i,
              (long)cksum(addr, n), (long)sum);
  check_region("transfer", src, i, region, roff, n, src, me, 200 + i, 0);
}

/* Asked by `src` for transfer i: sends it back from a buffer of ours. */
static void xfer_request(src, i, salt)
vnn_t src;
int i, salt;
{
  int n, loff, roff, heap;
  unsigned char *rva;
  if (!from_node(src, "transfer request source"))
    return;
  expect_at(salt == i * 7 + 1, "transfer request argument", src, i, salt,
            i * 7 + 1);
  plan(i, &n, &loff, &roff, &heap);
  fill(xfer_buf + loff, n, me, src, 200 + i, 0);
  rva = landing_area(me, src, heap) + GUARD + roff;
  ok(gam_reply_xfer(src, xfer_buf + loff, rva, n, xfer_done,
                    (void *)(cksum(xfer_buf + loff, n) << 8 | i)),
     "gam_reply_xfer");
  memset(xfer_buf, SCRIBBLE, sizeof xfer_buf);
}

static void phase_xfer(void) {
  int d, i;
  for (d = 0; d < procs; d++)
    for (i = 0; i < NPLAN; i++)
      ok(gam_request_2(d, xfer_request, i, i * 7 + 1), "gam_request_2");
  fence(5, 0);
  for (d = 0; d < procs; d++)
    for (i = 0; i < NPLAN; i++)
      expect_at(xfer_got[d][i], "transfer handled", d, i, xfer_got[d][i], 1);
  for (d = 0; d < procs; d++)
    expect_at(xfers[d] == NPLAN, "transfers handled", d, 0, xfers[d], NPLAN);
  ok(gam_barrier(), "gam_barrier");
}

/* ---- Empty transfers, and transfers to unmapped memory ------------------- */

static int empty_stored[MAXP], empty_got[MAXP], empty_ended = 0;
static int dropped_handled = 0;

static void empty_store_done(src, addr, nbytes, arg)
vnn_t src;
void *addr;
int nbytes;
void *arg;
{
  int n;
  if (!from_node(src, "empty store source"))
    return;
  n = empty_stored[src]++;
  expect_at((unsigned long)arg == (unsigned long)n + 1, "empty store arg", src,
            n, (long)arg, n + 1);
  expect_at(nbytes == 0, "empty store nbytes", src, n, nbytes, 0);
  if (n == 1)
    expect_at(addr == landing[src] + GUARD, "empty store address", src, n,
              (long)addr, (long)(landing[src] + GUARD));
}

static void empty_get_done(src, addr, nbytes, arg)
vnn_t src;
void *addr;
int nbytes;
void *arg;
{
  int n = (int)((unsigned long)arg - 11);
  if (!from_node(src, "empty get source"))
    return;
  empty_got[src]++;
  expect_at(n == 0 || n == 1, "empty get arg", src, n, (long)arg, 11);
  expect_at(nbytes == 0, "empty get nbytes", src, n, nbytes, 0);
  if (n == 1)
    expect_at(addr == get_land + GUARD, "empty get address", src, n,
              (long)addr, (long)(get_land + GUARD));
}

static void empty_ended_fn(dest, lva, nbytes, earg)
vnn_t dest;
void *lva;
int nbytes;
void *earg;
{
  ++handled;
  ++empty_ended;
  expect(nbytes == 0 && lva == NULL && earg == (void *)33 && dest >= 0 &&
             dest < procs,
         "empty store endfunc", nbytes, 0);
}

static void dropped(src, addr, nbytes, arg)
vnn_t src;
void *addr;
int nbytes;
void *arg;
{
  ++handled;
  ++dropped_handled;
  expect(0, "handler of a dropped transfer runs", src + nbytes,
         (long)addr + (long)arg);
}

static void phase_empty(void) {
  int d, next = (me + 1) % procs;
  for (d = 0; d < procs; d++) {
    /* zero bytes: no data, and the handler runs (addresses may be null) */
    ok(gam_store(d, NULL, NULL, 0, empty_store_done, (void *)1),
       "gam_store of 0 bytes, null addresses");
    ok(gam_store(d, src_buf, landing[me] + GUARD, 0, empty_store_done,
                 (void *)2),
       "gam_store of 0 bytes");
    ok(gam_store_async(d, NULL, NULL, 0, empty_store_done, (void *)3,
                       empty_ended_fn, (void *)33),
       "gam_store_async of 0 bytes");
    ok(gam_get(d, NULL, NULL, 0, empty_get_done, (void *)11),
       "gam_get of 0 bytes, null addresses");
    ok(gam_get(d, exported, get_land + GUARD, 0, empty_get_done, (void *)12),
       "gam_get of 0 bytes");
  }
  /* docs/gam.md: memory not mapped in the destination: dropped, with a
   * message on stderr (test_gam.cpp counts them) */
  ok(gam_store(next, src_buf, (void *)0x1000, 16, dropped, 0),
     "gam_store to unmapped memory (sent)");
  ok(gam_get(next, (void *)0x1000, get_land, 16, dropped, 0),
     "gam_get from unmapped memory (sent)");
  fence(6, 1);
  for (d = 0; d < procs; d++) {
    expect_at(empty_stored[d] == 3, "empty stores handled", d, 0,
              empty_stored[d], 3);
    expect_at(empty_got[d] == 2, "empty gets handled", d, 0, empty_got[d], 2);
  }
  expect(empty_ended == procs, "empty store endfuncs", empty_ended, procs);
  expect(dropped_handled == 0, "dropped transfers' handlers", dropped_handled,
         0);
  ok(gam_barrier(), "gam_barrier");
}

/* ---- Errors -------------------------------------------------------------- */

static int refused_ran = 0;

static void never(src, a0, a1, a2)
vnn_t src;
void *a0;
int a1;
void *a2;
{
  ++handled;
  ++refused_ran;
  expect(0, "handler of a refused call runs", src + a1, (long)a0 + (long)a2);
}

static void phase_errors(void) {
  int max = gam_max_size(), before;
  handler_t data = (handler_t)(unsigned long)&checks; /* not a function */
  void *rva = scratch, *lva = src_buf;
  before = handled;

  refused(gam_request_1(-1, never, 1), "gam_request_1 to node -1", "node");
  refused(gam_request_2(procs, never, 1, 2), "gam_request_2 to node procs",
          "node");
  refused(gam_request_3(procs + 7, never, 1, 2, 3), "gam_request_3 to procs+7",
          "node");
  refused(gam_request_4(me, NULL, 1, 2, 3, 4), "gam_request_4, null handler",
          "handler");
  refused(gam_reply_1(procs, never, 1), "gam_reply_1 to node procs", "node");
  refused(gam_reply_2(-2, never, 1, 2), "gam_reply_2 to node -2", "node");
  refused(gam_reply_3(me, data, 1, 2, 3), "gam_reply_3, handler not code",
          "not a function");
  refused(gam_reply_4(procs, never, 1, 2, 3, 4), "gam_reply_4 to node procs",
          "node");

  refused(gam_store(procs, lva, rva, 4, never, 0), "gam_store to node procs",
          "node");
  refused(gam_store(-1, lva, rva, 4, never, 0), "gam_store to node -1", "node");
  refused(gam_store(me, lva, rva, max + 1, never, 0),
          "gam_store of gam_max_size() + 1", "bytes");
  refused(gam_store(me, lva, rva, -1, never, 0), "gam_store of -1 bytes",
          "bytes");
  refused(gam_store(me, (void *)16, rva, 4, never, 0),
          "gam_store from unreadable memory", "not readable");
  refused(gam_store(me, NULL, rva, 4, never, 0), "gam_store from null", "null");
  refused(gam_store(me, lva, NULL, 4, never, 0), "gam_store to null", "null");
  refused(gam_store(me, lva, rva, 4, data, 0), "gam_store, handler not code",
          "not a function");

  refused(gam_store_async(procs, lva, rva, 4, never, 0, never, 0),
          "gam_store_async to node procs", "node");
  refused(gam_store_async(me, lva, rva, max + 1, never, 0, never, 0),
          "gam_store_async of gam_max_size() + 1", "bytes");
  refused(gam_store_async(me, lva, rva, -100, never, 0, never, 0),
          "gam_store_async of -100 bytes", "bytes");
  refused(gam_store_async(me, lva, rva, 4, NULL, 0, data, 0),
          "gam_store_async, endfunc not code", "not a function");

  refused(gam_get(procs, rva, lva, 4, never, 0), "gam_get from node procs",
          "node");
  refused(gam_get(me, rva, lva, max + 1, never, 0),
          "gam_get of gam_max_size() + 1", "bytes");
  refused(gam_get(me, rva, lva, -8, never, 0), "gam_get of -8 bytes", "bytes");
  refused(gam_get(me, rva, (void *)ro_text, 4, never, 0),
          "gam_get into read-only memory", "not writable");
  refused(gam_get(me, rva, lva, 4, data, 0), "gam_get, handler not code",
          "not a function");

  refused(gam_reply_xfer(procs, lva, rva, 4, never, 0),
          "gam_reply_xfer to node procs", "node");
  refused(gam_reply_xfer(me, lva, rva, max + 1, never, 0),
          "gam_reply_xfer of gam_max_size() + 1", "bytes");
  refused(gam_reply_xfer(me, lva, rva, -4, never, 0),
          "gam_reply_xfer of -4 bytes", "bytes");

  /* nothing was sent or queued: the fence finds no handler run */
  fence(7, 0);
  expect(refused_ran == 0, "handlers of refused calls", refused_ran, 0);
  expect(handled == before + 2 * procs, "handlers run besides the fence",
         handled - before, 2 * procs);
  ok(gam_barrier(), "gam_barrier");
}

/* ---- gam_poll, gam_wait, gam_disable on messages to this node ------------ */

static int self_requests = 0, self_stores = 0, self_ended = 0;

static void self_request(src, a0, a1)
vnn_t src;
int a0, a1;
{
  if (!from_node(src, "self request source"))
    return;
  ++self_requests;
  expect(src == me && a0 == 11 && a1 == -22, "self request arguments",
         a0 * 100 + a1, 11 * 100 - 22);
}

static void self_store(src, addr, nbytes, arg)
vnn_t src;
void *addr;
int nbytes;
void *arg;
{
  if (!from_node(src, "self store source"))
    return;
  ++self_stores;
  expect(src == me && addr == scratch + 8 && nbytes == 8 && arg == scratch,
         "self store handler arguments", nbytes, 8);
}

static void self_store_ended(dest, lva, nbytes, earg)
vnn_t dest;
void *lva;
int nbytes;
void *earg;
{
  ++handled;
  ++self_ended;
  expect(dest == me && lva == src_buf && nbytes == 8 && earg == scratch + 1,
         "self endfunc arguments", nbytes, 8);
}

static void phase_local(void) {
  int before = handled;
  /* nothing is on its way here (the others are in this phase too) */
  ok(gam_poll(), "gam_poll with nothing arrived");
  expect(handled == before, "handlers run by an idle gam_poll",
         handled - before, 0);
  ok(gam_request_2(me, self_request, 11, -22), "gam_request_2 to self");
  ok(gam_wait(NULL, 0), "gam_wait");
  expect(self_requests == 1, "gam_wait returns after the handler ran",
         self_requests, 1);
  expect(handled == before + 1, "handlers run by gam_wait", handled - before,
         1);

  ok(gam_store_async(me, src_buf, scratch + 8, 8, self_store, scratch,
                     self_store_ended, scratch + 1),
     "gam_store_async to self");
  expect(self_ended == 0, "endfunc before the next poll", self_ended, 0);
  while (self_stores == 0 || self_ended == 0)
    polled(gam_wait(NULL, 0), "gam_wait");
  expect(self_stores == 1 && self_ended == 1, "self store and endfunc",
         self_stores + self_ended, 2);
  ok(am_barrier(), "am_barrier");
}

static void phase_disable(void) {
  int before = self_ended;
  /* gam_disable runs endfuncs still pending */
  ok(gam_store_async(me, src_buf, scratch + 8, 8, NULL, 0, self_store_ended,
                     scratch + 1),
     "gam_store_async before gam_disable");
  ok(gam_disable(), "gam_disable");
  expect(self_ended == before + 1, "endfunc run by gam_disable",
         self_ended - before, 1);
}

int main(int argc, char **argv) {
  int want = argc > 1 ? atoi(argv[1]) : 0;

  if (gam_enable() != AM_OK) {
    printf("rank ?: FAIL gam_enable: %s\n", gam_error());
    return 1;
  }
  me = gam_my_proc();
  procs = gam_procs();
  expect(am_my_proc() == me && am_procs() == procs, "am_ names", 0, 0);
  if (want)
    expect(procs == want, "gam_procs", procs, want);
  expect(me >= 0 && me < procs, "gam_my_proc", me, 0);
  expect(gam_max_size() == MAXSZ, "gam_max_size", gam_max_size(), MAXSZ);
  expect(am_max_size() == gam_max_size(), "am_max_size", am_max_size(),
         gam_max_size());
  if (failures || procs > MAXP) {
    printf("rank %d: FAIL cannot go on with %d nodes\n", me, procs);
    return 1;
  }

  heap_land = malloc(MAXP * REGION);
  heap_export = malloc(SLOT);
  get_land = malloc(procs * NPLAN * REGION);
  if (!heap_land || !heap_export || !get_land) {
    printf("rank %d: FAIL out of memory\n", me);
    return 1;
  }
  memset(landing, GUARD_BYTE, sizeof landing);
  memset(heap_land, GUARD_BYTE, MAXP * REGION);
  memset(get_land, GUARD_BYTE, procs * NPLAN * REGION);
  fill(exported, SLOT, me, 0, 100, 0);
  fill(heap_export, SLOT, me, 0, 101, 0);
  ok(gam_barrier(), "gam_barrier");

  phase_addresses();
  phase_requests();
  phase_store();
  phase_store_async();
  phase_get();
  phase_xfer();
  phase_empty();
  phase_errors();
  phase_local();
  phase_disable();

  if (failures)
    printf("rank %d: FAIL %d of %d checks\n", me, failures, checks);
  else
    printf("rank %d: ok (%d checks)\n", me, checks);
  return failures != 0;
}
