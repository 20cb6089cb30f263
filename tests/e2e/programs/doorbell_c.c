/* The doorbell and timed-wait calls of the C API (nicemu/host.h) against
 * the doorbell_echo firmware (comet): one echo through a doorbell, a timed
 * wait that matches and one that times out at its deadline, and the error
 * codes. Prints "c doorbell ok" when every check passed; C89 on purpose. */
#include <nicemu/host.h>

#include <stdio.h>

struct record {
  uint32_t value, fifo, seq, pad;
};

static int failures = 0;

static void check(int ok, const char *what) {
  if (!ok) {
    printf("FAIL %s (%s)\n", what, nicemu_last_error());
    ++failures;
  }
}

int main(void) {
  void *mem = NULL, *word_mem = NULL;
  struct record *log;
  volatile uint32_t *never;
  uint32_t bus = 0, seen = 0;
  uint64_t before = 0, after = 0, deadline;
  int matched = -1;

  check(nicemu_alloc(256 * sizeof(struct record), &mem) == NICEMU_OK, "alloc");
  check(nicemu_alloc(4, &word_mem) == NICEMU_OK, "alloc word");
  if (failures)
    return 1;
  log = (struct record *)mem;
  never = (volatile uint32_t *)word_mem;
  check(nicemu_bus_address(log, &bus) == NICEMU_OK, "bus address");

  /* A doorbell write costs comet's doorbell_write, 0.51 us. */
  check(nicemu_now_ps(&before) == NICEMU_OK, "clock");
  check(nicemu_doorbell(0, bus) == NICEMU_OK, "doorbell: the log");
  check(nicemu_now_ps(&after) == NICEMU_OK, "clock");
  check(after - before == 510000u, "doorbell write cost");

  /* Echoed into log[0]; the wait matches long before its deadline. */
  check(nicemu_doorbell(3, 0xBEEF) == NICEMU_OK, "doorbell: a value");
  deadline = after + 1000000000u;
  check(nicemu_wait_word_until(&log[0].seq, 0xFFFFFFFFu, 1, deadline, &seen,
                               &matched) == NICEMU_OK,
        "wait_word_until (match)");
  check(matched == 1 && seen == 1, "matched, the word");
  check(log[0].value == 0xBEEF && log[0].fifo == 3, "the echo");
  check(nicemu_now_ps(&after) == NICEMU_OK && after < deadline,
        "before the deadline");

  /* Nobody writes `never`: the wait times out at its deadline exactly, and
   * timing out is not a failure. `value_out` may be NULL. */
  deadline = after + 3000000u;
  matched = -1;
  check(nicemu_wait_word_until(never, 0xFFFFFFFFu, 1, deadline, NULL,
                               &matched) == NICEMU_OK,
        "wait_word_until (timeout)");
  check(matched == 0, "timed out");
  check(nicemu_now_ps(&after) == NICEMU_OK && after == deadline,
        "returned at the deadline");

  /* Errors: a FIFO the card does not have, NULL pointers. */
  check(nicemu_doorbell(8, 1) == NICEMU_EINVAL, "doorbell: FIFO 8 of 8");
  check(nicemu_wait_word_until(never, 1, 1, 0, NULL, NULL) == NICEMU_EINVAL,
        "matched NULL");
  check(nicemu_wait_word_until(NULL, 1, 1, 0, NULL, &matched) == NICEMU_EINVAL,
        "word NULL");
  check(nicemu_wait_word_until(&seen, 1, 1, 0, NULL, &matched) == NICEMU_EINVAL,
        "word outside registered memory");

  if (failures)
    return 1;
  printf("c doorbell ok\n");
  return 0;
}
