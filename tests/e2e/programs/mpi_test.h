/* What the mpi_*.c test programs share (tests/e2e/test_mpi.cpp runs
 * them): checks that count failures and say where, and the verdict line
 * "rank R of N: ok" each rank prints at the end. */
#ifndef NICEMU_MPI_TEST_H
#define NICEMU_MPI_TEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int me, nranks;

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      printf("rank %d: FAILED line %d: %s: ", me, __LINE__, #cond);            \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
      fflush(stdout);                                                          \
    }                                                                          \
  } while (0)

static inline void expect_code(int got, int want, const char *call, int line) {
  char got_s[MPI_MAX_ERROR_STRING] = "?", want_s[MPI_MAX_ERROR_STRING] = "?";
  int n;
  if (got == want)
    return;
  ++failures;
  MPI_Error_string(got, got_s, &n);
  MPI_Error_string(want, want_s, &n);
  printf("rank %d: FAILED line %d: %s returned %d (%s), expected %d (%s)\n", me,
         line, call, got, got_s, want, want_s);
  fflush(stdout);
}

/* A call that must succeed, and one that must fail with `code`. */
#define OK(call) expect_code((call), MPI_SUCCESS, #call, __LINE__)
#define FAILS(code, call) expect_code((call), (code), #call, __LINE__)

static inline void test_init(int *argc, char ***argv) {
  OK(MPI_Init(argc, argv));
  OK(MPI_Comm_rank(MPI_COMM_WORLD, &me));
  OK(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
}

/* The argument after `name` on the command line, or NULL. */
static inline const char *test_option(int argc, char **argv, const char *name) {
  int i;
  for (i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], name) == 0)
      return argv[i + 1];
  return NULL;
}

static inline int test_finish(void) {
  int all = 0;
  OK(MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  if (failures)
    printf("rank %d of %d: FAILED (%d)\n", me, nranks, failures);
  else
    printf("rank %d of %d: ok\n", me, nranks);
  fflush(stdout);
  OK(MPI_Finalize());
  return all != 0;
}

/* A byte of test data: which message, which byte. */
static inline unsigned char pattern(int seed, long i) {
  return (unsigned char)(i * 131 + seed * 7 + 1);
}

static inline void fill(void *buf, long n, int seed) {
  long i;
  for (i = 0; i < n; ++i)
    ((unsigned char *)buf)[i] = pattern(seed, i);
}

/* The index of the first wrong byte, or -1. */
static inline long check(const void *buf, long n, int seed) {
  long i;
  for (i = 0; i < n; ++i)
    if (((const unsigned char *)buf)[i] != pattern(seed, i))
      return i;
  return -1;
}

#endif
