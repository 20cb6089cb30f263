/* The C API (nicemu/host.h) from a C program, on the niam firmware: rank and
 * size, the clock, registered memory and bus addresses, PIO, waiting on a
 * word, barriers, all-reduces, transfers (bcopy), raw AM requests, and the
 * error codes and messages of calls that must fail. Written in C89 so the same
 * file also builds with -std=gnu89 (tests/e2e/CMakeLists.txt).
 *
 *   c_api_prog           on a cluster: every rank prints "rank R of N: ok"
 *   c_api_prog outside [PHRASE]
 *                        not started by nicemu run: expects NICEMU_ENOTRUN
 *                        and a message containing PHRASE ("nicemu run")
 *   c_api_prog stopped   on a cluster whose firmware faults: calls until
 *                        one fails, which must be NICEMU_ESTOPPED
 *
 * Exit status 0 when everything held. */
#include <nicemu/host.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
static uint32_t my_rank = 0;

static void expect(int ok, const char *what, long got, long want) {
  if (ok)
    return;
  ++failures;
  printf("rank %u: %s: got %ld, want %ld (last error: %s)\n", (unsigned)my_rank,
         what, got, want, nicemu_last_error());
}

/* A call that must succeed. */
static void ok(int status, const char *what) {
  expect(status == NICEMU_OK, what, status, NICEMU_OK);
}

/* A call that must fail with `want`, and leave a message naming the C call
 * and containing `phrase`. */
static void fails(int status, int want, const char *call, const char *phrase,
                  const char *what) {
  const char *message = nicemu_last_error();
  expect(status == want, what, status, want);
  expect(strncmp(message, call, strlen(call)) == 0 &&
             strstr(message, phrase) != NULL,
         what, 0, 1);
}

static int outside(const char *phrase) {
  uint32_t rank = 99;
  int status = nicemu_rank(&rank), again;
  printf("outside nicemu run: status %d (%s): %s\n", status,
         nicemu_strerror(status), nicemu_last_error());
  if (status != NICEMU_ENOTRUN || rank != 99 ||
      strstr(nicemu_last_error(), phrase) == NULL)
    return 1;
  /* Again: a failed attach is not remembered as half done. */
  again = nicemu_barrier();
  printf("then: status %d: %s\n", again, nicemu_last_error());
  return again == NICEMU_ENOTRUN ? 0 : 1;
}

static void check_clock(void) {
  uint64_t before = 0, after = 0;
  double us = 0;
  ok(nicemu_now_ps(&before), "now_ps");
  ok(nicemu_compute(2000000), "compute 2 us");
  ok(nicemu_now_ps(&after), "now_ps after compute");
  expect(after >= before + 2000000, "compute advances the clock",
         (long)(after - before), 2000000);
  ok(nicemu_now_us(&us), "now_us");
  expect(us >= (double)after / 1e6, "now_us is now_ps in us", (long)us,
         (long)(after / 1000000));
}

static void check_memory(void) {
  void *a = NULL, *b = NULL, *none = NULL;
  uint32_t bus_a = 0, bus_b = 0, bus = 0, seen = 0, box = 0;
  int on_stack = 0;
  volatile uint32_t *word;

  ok(nicemu_alloc(100, &a), "alloc 100 bytes");
  ok(nicemu_alloc(8, &b), "alloc 8 bytes");
  expect(a != NULL && ((uintptr_t)a & 63) == 0, "alloc aligns to 64 bytes",
         (long)((uintptr_t)a & 63), 0);
  ok(nicemu_bus_address(a, &bus_a), "bus_address of alloc'd memory");
  ok(nicemu_bus_address(b, &bus_b), "bus_address of alloc'd memory");
  expect(bus_a != 0, "bus address is not 0", (long)bus_a, 1);
  expect((long)bus_b - (long)bus_a == (char *)b - (char *)a,
         "bus addresses follow the arena", (long)bus_b - (long)bus_a,
         (long)((char *)b - (char *)a));

  /* Errors: nothing here may reach the NIC, and the results stay put. */
  bus = 7;
  fails(nicemu_bus_address(&on_stack, &bus), NICEMU_EINVAL,
        "nicemu_bus_address", "not registered memory",
        "bus_address of a stack variable");
  expect(bus == 7, "no result stored on failure", (long)bus, 7);
  if (my_rank == 0)
    printf("stack variable: %s\n", nicemu_last_error());
  fails(nicemu_bus_address(NULL, &bus), NICEMU_EINVAL, "nicemu_bus_address",
        "NULL", "bus_address of NULL");
  fails(nicemu_bus_address(a, NULL), NICEMU_EINVAL, "nicemu_bus_address",
        "NULL", "bus_address into NULL");
  fails(nicemu_alloc(0, &none), NICEMU_EINVAL, "nicemu_alloc", "zero",
        "alloc of 0 bytes");
  fails(nicemu_alloc((size_t)1 << 40, &none), NICEMU_ENOMEM, "nicemu_alloc",
        "out of registered memory", "alloc of 1 TiB");
  expect(none == NULL, "no buffer on failure", 0, 0);
  fails(nicemu_rank(NULL), NICEMU_EINVAL, "nicemu_rank", "NULL",
        "rank into NULL");

  /* A word that already holds the value: returned after one poll. */
  word = (volatile uint32_t *)b;
  *word = 0x1234;
  ok(nicemu_wait_word(word, 0xff, 0x34, &seen), "wait_word");
  expect(seen == 0x1234, "wait_word returns the word", (long)seen, 0x1234);
  ok(nicemu_wait_word(word, 0xff, 0x34, NULL), "wait_word without out");
  fails(nicemu_wait_word((volatile uint32_t *)&on_stack, 1, 0, &seen),
        NICEMU_EINVAL, "nicemu_wait_word", "not registered memory",
        "wait_word on a stack variable");

  ok(nicemu_mailbox(&box), "mailbox");
  expect(box != 0 && (box & 3) == 0, "mailbox is a card word address",
         (long)box, 1);
  fails(nicemu_pio_read(box + 1, &seen), NICEMU_EINVAL, "nicemu_pio_read",
        "status -1", "unaligned PIO read");
}

static void check_collectives(uint32_t size) {
  int32_t p = (int32_t)size, r = (int32_t)my_rank, got = 0;
  uint32_t unknown = 99, bad = 99;
  uint32_t args[6] = {1, 2, 3, 4, 5, 6};

  ok(nicemu_barrier(), "barrier");
  ok(nicemu_allreduce_sum(r + 1, &got), "allreduce_sum");
  expect(got == p * (p + 1) / 2, "sum of rank + 1", got, p * (p + 1) / 2);
  ok(nicemu_allreduce_min(-r, &got), "allreduce_min");
  expect(got == 1 - p, "min of -rank", got, 1 - p);
  ok(nicemu_allreduce_max(r * 10, &got), "allreduce_max");
  expect(got == (p - 1) * 10, "max of 10 rank", got, (p - 1) * 10);
  fails(nicemu_allreduce_sum(1, NULL), NICEMU_EINVAL, "nicemu_allreduce_sum",
        "NULL", "allreduce into NULL");

  /* Out of order: both fail without breaking the collectives after them. */
  fails(nicemu_barrier_wait(), NICEMU_ESTATE, "nicemu_barrier_wait",
        "without barrier_post", "barrier_wait without barrier_post");
  ok(nicemu_barrier_post(), "barrier_post");
  got = 42;
  fails(nicemu_allreduce_max(1, &got), NICEMU_ESTATE, "nicemu_allreduce_max",
        "pending", "allreduce while a barrier is pending");
  expect(got == 42, "no result stored on failure", got, 42);
  ok(nicemu_compute(5000000), "compute during the fuzzy barrier");
  ok(nicemu_barrier_wait(), "barrier_wait");

  /* An AM to handler 99 is counted and dropped; requests are served in
   * order, so after the next barrier it has been seen. */
  ok(nicemu_am_request(99, args), "am_request");
  fails(nicemu_am_request(99, NULL), NICEMU_EINVAL, "nicemu_am_request", "NULL",
        "am_request with NULL arguments");
  ok(nicemu_barrier(), "barrier after am_request");
  ok(nicemu_am_unknown_handlers(&unknown), "am_unknown_handlers");
  expect(unknown == 1, "unknown handlers counted", (long)unknown, 1);
  ok(nicemu_am_bad_packets(&bad), "am_bad_packets");
  expect(bad == 0, "bad packets", (long)bad, 0);

  ok(nicemu_allreduce_sum(failures, &got), "allreduce of failures");
  if (my_rank == 0)
    printf("c_api %u nodes: sum of rank + 1 = %d, failures on all ranks %d\n",
           (unsigned)size, (int)(p * (p + 1) / 2), (int)got);
}

/* Transfers between am_alloc'd buffers at the same offsets on every rank:
 * words 0-15 hold data, 16-31 receive the previous rank's push, 32 is its
 * notify flag, 64-79 receive a pull from the next rank. */
static void check_bcopy(uint32_t size) {
  uint32_t next = (my_rank + 1) % size, prev = (my_rank + size - 1) % size;
  uint32_t *buf = NULL, i, refused = 99, virt = 0, seen = 0;
  int pushed = 1, pulled = 1, on_stack[4];
  void *none = NULL;

  ok(nicemu_am_alloc(4096, &none), "am_alloc");
  if (none == NULL)
    return;
  buf = (uint32_t *)none;
  none = NULL;
  for (i = 0; i < 16; ++i)
    buf[i] = my_rank * 100 + i;
  ok(nicemu_am_address(buf, &virt), "am_address");
  expect(virt % 4096 == 0, "am_alloc is page-aligned", (long)virt % 4096, 0);
  ok(nicemu_barrier(), "barrier after am_alloc");

  ok(nicemu_bcopy_notify(my_rank, buf, next, buf + 16, 64, buf + 32, 7),
     "bcopy_notify to the next rank");
  ok(nicemu_bcopy(next, buf, my_rank, buf + 64, 64),
     "bcopy from the next rank");
  ok(nicemu_wait_word(buf + 32, ~0u, 7, &seen), "wait for the notify flag");
  ok(nicemu_sync(&refused), "sync");
  expect(refused == 0, "no transfer refused", (long)refused, 0);
  for (i = 0; i < 16; ++i) {
    pushed &= buf[16 + i] == prev * 100 + i;
    pulled &= buf[64 + i] == next * 100 + i;
  }
  expect(pushed, "the previous rank's push arrived", 0, 1);
  expect(pulled, "the pull from the next rank arrived", 0, 1);
  ok(nicemu_sync(NULL), "sync without a count");

  fails(nicemu_bcopy(size, buf, my_rank, buf + 16, 64), NICEMU_EINVAL,
        "nicemu_bcopy", "node", "bcopy from a node out of range");
  fails(nicemu_bcopy(my_rank, buf, next, buf + 16, 6), NICEMU_EINVAL,
        "nicemu_bcopy", "multiple of 4", "bcopy of 6 bytes");
  fails(nicemu_bcopy(my_rank, on_stack, next, buf + 16, 16), NICEMU_EINVAL,
        "nicemu_bcopy", "not registered memory", "bcopy from the stack");
  fails(nicemu_bcopy(my_rank, buf, next, NULL, 16), NICEMU_EINVAL,
        "nicemu_bcopy", "NULL", "bcopy to NULL");
  fails(nicemu_bcopy_notify(my_rank, buf, next, buf + 16, 16, NULL, 1),
        NICEMU_EINVAL, "nicemu_bcopy_notify", "NULL",
        "bcopy_notify with a NULL flag");
  fails(nicemu_am_alloc(0, &none), NICEMU_EINVAL, "nicemu_am_alloc", "zero",
        "am_alloc of 0 bytes");
  fails(nicemu_am_alloc((size_t)1 << 40, &none), NICEMU_ENOMEM,
        "nicemu_am_alloc", "bytes", "am_alloc of 1 TiB");
  ok(nicemu_am_protection_errors(&seen), "am_protection_errors");
  expect(seen == 0, "no protection errors", (long)seen, 0);
  /* Nobody leaves while another rank may still read its buffer. */
  ok(nicemu_barrier(), "barrier after the transfers");
}

/* The NIC faults, so the cluster stops: the call in progress, or the next
 * one, fails with NICEMU_ESTOPPED. The SIGTERM that comes with the stop is
 * ignored so that the program lives to say so. */
static int stopped(void) {
  uint32_t rank = 0;
  unsigned long calls = 0;
  int status;
  signal(SIGTERM, SIG_IGN);
  status = nicemu_rank(&rank);
  while (status == NICEMU_OK && calls < 1000000) {
    status = nicemu_compute(1000000); /* 1 us */
    ++calls;
  }
  printf("stopped cluster: status %d (%s): %s\n", status,
         nicemu_strerror(status), nicemu_last_error());
  return status == NICEMU_ESTOPPED ? 0 : 1;
}

int main(int argc, char **argv) {
  uint32_t size = 0;
  if (argc > 1 && strcmp(argv[1], "outside") == 0)
    return outside(argc > 2 ? argv[2] : "nicemu run");
  if (argc > 1 && strcmp(argv[1], "stopped") == 0)
    return stopped();

  ok(nicemu_rank(&my_rank), "rank");
  ok(nicemu_size(&size), "size");
  expect(size > 0 && my_rank < size, "rank below size", (long)my_rank,
         (long)size);
  expect(strlen(nicemu_version()) > 0, "version", 0, 1);
  expect(strcmp(nicemu_strerror(NICEMU_EINVAL), "bad argument") == 0,
         "strerror", 0, 1);
  check_clock();
  check_memory();
  check_bcopy(size);
  check_collectives(size);
  printf("rank %u of %u: %s\n", (unsigned)my_rank, (unsigned)size,
         failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
