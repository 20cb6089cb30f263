/* Point to point on nicemu's MPI, on 2 or more ranks (test_mpi.cpp):
 * matching by source and tag, order, MPI_ANY_SOURCE/MPI_ANY_TAG, statuses
 * and MPI_Get_count, zero bytes, the eager limit and sizes around it, 1 MiB,
 * truncation, many requests in flight on one buffer, every wait and test,
 * probes, synchronous sends, MPI_Sendrecv, MPI_PROC_NULL, messages to
 * oneself, MPI_Request_free, and more messages than the receiver's ring
 * takes while it computes.
 *
 *   mpi_p2p [--eager BYTES] [--arrivals SLOTS]
 *     (set NICEMU_MPI_EAGER_LIMIT and NICEMU_MPI_ARRIVALS before MPI_Init) */
#include "mpi_test.h"

#include <unistd.h>

static long limit = 8192; /* the eager limit */
static char *sbuf, *rbuf;
#define BIG (1L << 20)

/* Every rank sends three tags to every other; each receives them by tag,
 * in an order other than they were sent. */
static void matching_by_source_and_tag(void) {
  int d, s, k;
  MPI_Request req[3 * 64];
  int tags[3] = {3, 1, 2}, values[3 * 64];
  int n = 0;
  for (d = 0; d < nranks; ++d)
    for (k = 0; d != me && k < 3; ++k, ++n) {
      values[n] = me * 100 + tags[k];
      OK(MPI_Isend(&values[n], 1, MPI_INT, d, tags[k], MPI_COMM_WORLD,
                   &req[n]));
    }
  for (s = 0; s < nranks; ++s) {
    int order[3] = {2, 3, 1};
    for (k = 0; s != me && k < 3; ++k) {
      int v = -1, t = order[k];
      MPI_Status st;
      OK(MPI_Recv(&v, 1, MPI_INT, s, t, MPI_COMM_WORLD, &st));
      EXPECT(v == s * 100 + t, "from %d tag %d: got %d", s, t, v);
      EXPECT(st.MPI_SOURCE == s && st.MPI_TAG == t, "status %d %d",
             st.MPI_SOURCE, st.MPI_TAG);
    }
  }
  OK(MPI_Waitall(n, req, MPI_STATUSES_IGNORE));
}

/* Messages of one tag from one source arrive in order, whatever their
 * protocol: eager and rendezvous sizes mixed. */
static void order_is_kept(void) {
  long sizes[8] = {1, limit + 1, 0, limit, 300000, 17, limit - 1, 4064};
  int i;
  if (me == 0) {
    MPI_Request req[8];
    for (i = 0; i < 8; ++i) {
      fill(sbuf + i * 300000L, sizes[i], 20 + i);
      OK(MPI_Isend(sbuf + i * 300000L, (int)sizes[i], MPI_BYTE, 1, 9,
                   MPI_COMM_WORLD, &req[i]));
    }
    OK(MPI_Waitall(8, req, MPI_STATUSES_IGNORE));
  } else if (me == 1) {
    MPI_Request req[8];
    MPI_Status st[8];
    for (i = 0; i < 8; ++i)
      OK(MPI_Irecv(rbuf + i * 300000L, 300000, MPI_BYTE, 0, MPI_ANY_TAG,
                   MPI_COMM_WORLD, &req[i]));
    OK(MPI_Waitall(8, req, st));
    for (i = 0; i < 8; ++i) {
      int count = -1;
      OK(MPI_Get_count(&st[i], MPI_BYTE, &count));
      EXPECT(count == sizes[i], "message %d: %d bytes, sent %ld", i, count,
             sizes[i]);
      EXPECT(check(rbuf + i * 300000L, sizes[i], 20 + i) < 0,
             "message %d's data", i);
      EXPECT(st[i].MPI_TAG == 9 && st[i].MPI_SOURCE == 0, "status");
    }
  }
}

/* Rank 0 takes one message from each other rank, any source, any tag:
 * each says who it is by its size and tag. */
static void any_source_any_tag(void) {
  int i;
  if (me != 0) {
    fill(sbuf, me * 10, me);
    OK(MPI_Send(sbuf, me * 10, MPI_CHAR, 0, 50 + me, MPI_COMM_WORLD));
    return;
  }
  for (i = 1; i < nranks; ++i) {
    MPI_Status st;
    int count = -1;
    OK(MPI_Recv(rbuf, 1000, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG,
                MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_CHAR, &count));
    EXPECT(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < nranks, "source %d",
           st.MPI_SOURCE);
    EXPECT(st.MPI_TAG == 50 + st.MPI_SOURCE, "tag %d", st.MPI_TAG);
    EXPECT(count == 10 * st.MPI_SOURCE, "count %d", count);
    EXPECT(check(rbuf, count, st.MPI_SOURCE) < 0, "data");
    EXPECT(st.MPI_ERROR == MPI_SUCCESS, "MPI_ERROR %d", st.MPI_ERROR);
  }
}

static void zero_bytes(void) {
  MPI_Status st;
  int count = -1;
  if (me == 0) {
    OK(MPI_Send(NULL, 0, MPI_INT, 1, 4, MPI_COMM_WORLD));
    OK(MPI_Ssend(sbuf, 0, MPI_INT, 1, 5, MPI_COMM_WORLD));
  } else if (me == 1) {
    OK(MPI_Recv(NULL, 0, MPI_INT, 0, 4, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &count));
    EXPECT(count == 0 && st.MPI_TAG == 4, "count %d tag %d", count, st.MPI_TAG);
    OK(MPI_Recv(rbuf, 10, MPI_INT, 0, 5, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_INT, &count));
    EXPECT(count == 0, "count %d", count);
  }
}

/* Sizes around the eager limit and 1 MiB, both ways; an eager send
 * completes before the receiver has posted, a rendezvous send does not. */
static void around_the_limit(void) {
  long sizes[5] = {limit - 1, limit, limit + 1, 65536, BIG};
  int i, flag;
  MPI_Request req;
  for (i = 0; i < 5; ++i) {
    long n = sizes[i];
    if (n < 0 || n > BIG)
      continue;
    if (me == 0) {
      fill(sbuf, n, i);
      OK(MPI_Send(sbuf, (int)n, MPI_BYTE, 1, 60 + i, MPI_COMM_WORLD));
      memset(rbuf, 0, (size_t)n);
      OK(MPI_Recv(rbuf, (int)n, MPI_BYTE, 1, 70 + i, MPI_COMM_WORLD,
                  MPI_STATUS_IGNORE));
      EXPECT(check(rbuf, n, i + 10) < 0, "%ld bytes back", n);
    } else if (me == 1) {
      memset(rbuf, 0, (size_t)n);
      OK(MPI_Recv(rbuf, (int)n, MPI_BYTE, 0, 60 + i, MPI_COMM_WORLD,
                  MPI_STATUS_IGNORE));
      EXPECT(check(rbuf, n, i) < 0, "%ld bytes: first wrong byte %ld", n,
             check(rbuf, n, i));
      fill(sbuf, n, i + 10);
      OK(MPI_Send(sbuf, (int)n, MPI_BYTE, 0, 70 + i, MPI_COMM_WORLD));
    }
  }
  for (i = 1; i < 3; ++i) { /* limit (eager), limit + 1 (rendezvous) */
    long n = sizes[i];
    if (me == 0) {
      OK(MPI_Isend(sbuf, (int)n, MPI_BYTE, 1, 80, MPI_COMM_WORLD, &req));
      OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
      EXPECT(flag == (n <= limit), "%ld bytes: complete at once: %d", n, flag);
      OK(MPI_Barrier(MPI_COMM_WORLD));
      OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
      OK(MPI_Barrier(MPI_COMM_WORLD));
      if (me == 1)
        OK(MPI_Recv(rbuf, (int)n, MPI_BYTE, 0, 80, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE));
    }
  }
}

/* A receive too small: MPI_ERR_TRUNCATE (errors return), the part that
 * fits delivered, the sender unaffected. */
static void truncation(void) {
  long sizes[2] = {100, limit + 100};
  int i;
  for (i = 0; i < 2; ++i) {
    long n = sizes[i];
    if (me == 0) {
      fill(sbuf, n, 30 + i);
      OK(MPI_Send(sbuf, (int)n, MPI_BYTE, 1, 90, MPI_COMM_WORLD));
      OK(MPI_Send(sbuf, (int)n, MPI_BYTE, 1, 91, MPI_COMM_WORLD));
      OK(MPI_Send(NULL, 0, MPI_BYTE, 1, 92, MPI_COMM_WORLD));
    } else if (me == 1) {
      MPI_Status st;
      MPI_Request req[2];
      MPI_Status sts[2];
      int count = -1;
      memset(rbuf, 0, (size_t)n);
      FAILS(MPI_ERR_TRUNCATE,
            MPI_Recv(rbuf, (int)n / 2, MPI_BYTE, 0, 90, MPI_COMM_WORLD, &st));
      EXPECT(st.MPI_ERROR == MPI_ERR_TRUNCATE, "MPI_ERROR %d", st.MPI_ERROR);
      OK(MPI_Get_count(&st, MPI_BYTE, &count));
      EXPECT(count == n / 2, "count %d", count);
      EXPECT(check(rbuf, n / 2, 30 + i) < 0, "the part that fits");
      EXPECT(rbuf[n / 2] == 0, "a byte past the buffer was written");
      OK(MPI_Irecv(rbuf, 10, MPI_BYTE, 0, 91, MPI_COMM_WORLD, &req[0]));
      OK(MPI_Irecv(rbuf + 100, 10, MPI_BYTE, 0, 92, MPI_COMM_WORLD, &req[1]));
      FAILS(MPI_ERR_IN_STATUS, MPI_Waitall(2, req, sts));
      EXPECT(sts[0].MPI_ERROR == MPI_ERR_TRUNCATE &&
                 sts[1].MPI_ERROR == MPI_SUCCESS,
             "statuses' errors %d %d", sts[0].MPI_ERROR, sts[1].MPI_ERROR);
    }
  }
}

/* 64 sends and receives in flight on one buffer each, every size kind. */
static void many_in_flight(void) {
  long sizes[4] = {1, limit, limit + 1, 65536};
  int i, j;
  for (i = 0; i < 4; ++i) {
    long n = sizes[i];
    MPI_Request req[64];
    MPI_Status st[64];
    if (me == 0) {
      fill(sbuf, n, 40 + i);
      for (j = 0; j < 64; ++j)
        OK(MPI_Isend(sbuf, (int)n, MPI_BYTE, 1, 100, MPI_COMM_WORLD, &req[j]));
      OK(MPI_Waitall(64, req, st));
    } else if (me == 1) {
      memset(rbuf, 0, (size_t)n);
      for (j = 0; j < 64; ++j)
        OK(MPI_Irecv(rbuf, (int)n, MPI_BYTE, 0, 100, MPI_COMM_WORLD, &req[j]));
      OK(MPI_Waitall(64, req, st));
      for (j = 0; j < 64; ++j)
        EXPECT(req[j] == MPI_REQUEST_NULL && st[j].MPI_SOURCE == 0 &&
                   st[j].MPI_ERROR == MPI_SUCCESS,
               "request %d", j);
      EXPECT(check(rbuf, n, 40 + i) < 0, "%ld bytes", n);
    }
  }
}

/* MPI_Waitany, MPI_Testall, MPI_Testany, MPI_Test on the same pattern. */
static void waits_and_tests(void) {
  MPI_Request req[8];
  int i, index, flag, seen = 0, count = 0;
  int v[8];
  if (me == 0) {
    for (i = 0; i < 8; ++i) {
      v[i] = i;
      OK(MPI_Isend(&v[i], 1, MPI_INT, 1, 110 + i, MPI_COMM_WORLD, &req[i]));
    }
    OK(MPI_Waitall(8, req, MPI_STATUSES_IGNORE));
    return;
  }
  if (me != 1)
    return;
  for (i = 0; i < 8; ++i)
    OK(MPI_Irecv(&v[i], 1, MPI_INT, 0, 117 - i, MPI_COMM_WORLD, &req[i]));
  for (i = 0; i < 4; ++i) {
    MPI_Status st;
    OK(MPI_Waitany(8, req, &index, &st));
    EXPECT(index >= 0 && index < 8 && req[index] == MPI_REQUEST_NULL,
           "index %d", index);
    EXPECT(v[index] == 7 - index && st.MPI_TAG == 117 - index, "value %d",
           v[index]);
    seen |= 1 << index;
  }
  do {
    MPI_Status st;
    OK(MPI_Testany(8, req, &index, &flag, &st));
    if (flag && index != MPI_UNDEFINED) {
      seen |= 1 << index;
      ++count;
    }
  } while (count < 4);
  EXPECT(seen == 0xFF, "completed %x", seen);
  OK(MPI_Waitany(8, req, &index, MPI_STATUS_IGNORE));
  EXPECT(index == MPI_UNDEFINED, "all null: index %d", index);
  OK(MPI_Testall(8, req, &flag, MPI_STATUSES_IGNORE));
  EXPECT(flag == 1, "testall of null requests");
}

static void testall_loop(void) {
  MPI_Request req[2];
  int flag = 0, a = 0, b = 0, polls = 0;
  if (me == 0) {
    a = 11;
    b = 12;
    OK(MPI_Send(&a, 1, MPI_INT, 1, 120, MPI_COMM_WORLD));
    OK(MPI_Ssend(&b, 1, MPI_INT, 1, 121, MPI_COMM_WORLD));
  } else if (me == 1) {
    OK(MPI_Irecv(&a, 1, MPI_INT, 0, 120, MPI_COMM_WORLD, &req[0]));
    OK(MPI_Irecv(&b, 1, MPI_INT, 0, 121, MPI_COMM_WORLD, &req[1]));
    while (!flag) {
      OK(MPI_Testall(2, req, &flag, MPI_STATUSES_IGNORE));
      ++polls;
    }
    EXPECT(a == 11 && b == 12, "values %d %d", a, b);
    EXPECT(polls > 1, "testall polled %d times", polls);
  }
}

static void probes(void) {
  if (me == 0) {
    MPI_Request req[2];
    fill(sbuf, 777, 50);
    OK(MPI_Isend(sbuf, 777, MPI_BYTE, 1, 42, MPI_COMM_WORLD, &req[0]));
    fill(sbuf + 1000, limit + 5, 51);
    OK(MPI_Isend(sbuf + 1000, (int)(limit + 5), MPI_BYTE, 1, 43, MPI_COMM_WORLD,
                 &req[1]));
    OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
  } else if (me == 1) {
    MPI_Status st;
    int count = -1, flag = 0;
    OK(MPI_Probe(MPI_ANY_SOURCE, 43, MPI_COMM_WORLD, &st));
    OK(MPI_Get_count(&st, MPI_BYTE, &count));
    EXPECT(count == limit + 5 && st.MPI_SOURCE == 0 && st.MPI_TAG == 43,
           "probe: %d bytes", count);
    while (!flag)
      OK(MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    OK(MPI_Get_count(&st, MPI_BYTE, &count));
    EXPECT(count == 777 && st.MPI_TAG == 42, "iprobe: %d bytes, tag %d", count,
           st.MPI_TAG);
    OK(MPI_Recv(rbuf, count, MPI_BYTE, 0, 42, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE));
    EXPECT(check(rbuf, 777, 50) < 0, "probed message");
    OK(MPI_Recv(rbuf, (int)(limit + 5), MPI_BYTE, 0, 43, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE));
    EXPECT(check(rbuf, limit + 5, 51) < 0, "probed rendezvous message");
    OK(MPI_Iprobe(0, 42, MPI_COMM_WORLD, &flag, &st));
    EXPECT(!flag, "nothing left to probe");
  }
}

/* A synchronous send is not complete before the receive matched it. */
static void synchronous(void) {
  MPI_Request req;
  int flag = 1, v = 5;
  if (me == 0) {
    OK(MPI_Issend(&v, 1, MPI_INT, 1, 130, MPI_COMM_WORLD, &req));
    OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    EXPECT(!flag, "an unmatched synchronous send completed");
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  } else {
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (me == 1) {
      OK(MPI_Recv(&v, 1, MPI_INT, 0, 130, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      EXPECT(v == 5, "value %d", v);
    }
  }
}

static void sendrecv_ring(void) {
  int out = me * 3, in = -1;
  MPI_Status st;
  OK(MPI_Sendrecv(&out, 1, MPI_INT, (me + 1) % nranks, 140, &in, 1, MPI_INT,
                  (me + nranks - 1) % nranks, 140, MPI_COMM_WORLD, &st));
  EXPECT(in == ((me + nranks - 1) % nranks) * 3, "ring: %d", in);
  EXPECT(st.MPI_SOURCE == (me + nranks - 1) % nranks, "source %d",
         st.MPI_SOURCE);
}

static void proc_null_and_self(void) {
  MPI_Status st;
  MPI_Request req;
  int count = -1, v = 9, w = 0, self;
  OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
  OK(MPI_Recv(&w, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
  OK(MPI_Get_count(&st, MPI_INT, &count));
  EXPECT(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG &&
             count == 0 && w == 0,
         "PROC_NULL status %d %d %d", st.MPI_SOURCE, st.MPI_TAG, count);
  /* To oneself, through MPI_COMM_WORLD and MPI_COMM_SELF, small and large. */
  fill(sbuf, BIG, 60);
  OK(MPI_Isend(sbuf, (int)BIG, MPI_BYTE, me, 150, MPI_COMM_WORLD, &req));
  OK(MPI_Recv(rbuf, (int)BIG, MPI_BYTE, me, 150, MPI_COMM_WORLD, &st));
  OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  EXPECT(check(rbuf, BIG, 60) < 0 && st.MPI_SOURCE == me, "to myself");
  OK(MPI_Comm_rank(MPI_COMM_SELF, &self));
  EXPECT(self == 0, "rank in MPI_COMM_SELF %d", self);
  OK(MPI_Isend(&v, 1, MPI_INT, 0, 151, MPI_COMM_SELF, &req));
  OK(MPI_Recv(&w, 1, MPI_INT, 0, 151, MPI_COMM_SELF, &st));
  OK(MPI_Wait(&req, &st));
  EXPECT(w == 9, "through MPI_COMM_SELF: %d", w);
  req = MPI_REQUEST_NULL;
  OK(MPI_Wait(&req, &st));
  EXPECT(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
         "the empty status");
}

static void request_free(void) {
  MPI_Request req;
  if (me == 0) {
    fill(sbuf, limit * 2, 70);
    OK(MPI_Isend(sbuf, 1, MPI_INT, 1, 160, MPI_COMM_WORLD, &req));
    OK(MPI_Request_free(&req));
    EXPECT(req == MPI_REQUEST_NULL, "freed request");
    OK(MPI_Isend(sbuf, (int)limit * 2, MPI_BYTE, 1, 161, MPI_COMM_WORLD, &req));
    OK(MPI_Request_free(&req));
    /* The receiver's answer says the data arrived; the send buffer stays
     * untouched until then. */
    OK(MPI_Recv(NULL, 0, MPI_BYTE, 1, 162, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  } else if (me == 1) {
    OK(MPI_Recv(rbuf, 1, MPI_INT, 0, 160, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    OK(MPI_Recv(rbuf, (int)limit * 2, MPI_BYTE, 0, 161, MPI_COMM_WORLD,
                MPI_STATUS_IGNORE));
    EXPECT(check(rbuf, limit * 2, 70) < 0, "freed rendezvous send's data");
    OK(MPI_Send(NULL, 0, MPI_BYTE, 0, 162, MPI_COMM_WORLD));
  }
}

/* More messages than the receiver's ring takes from one sender, while the
 * receiver computes: they wait in the sender, and arrive all, in order,
 * as the receiver's consumption comes back as credits. */
static void flood(void) {
  enum { COUNT = 3000 };
  static MPI_Request req[COUNT];
  static int values[COUNT];
  int i;
  if (me == 0) {
    for (i = 0; i < COUNT; ++i) {
      values[i] = i * 3;
      OK(MPI_Isend(&values[i], 1, MPI_INT, 1, 170, MPI_COMM_WORLD, &req[i]));
    }
    OK(MPI_Waitall(COUNT, req, MPI_STATUSES_IGNORE));
  } else if (me == 1) {
    usleep(2000); /* 2 ms of virtual time without an MPI call */
    for (i = 0; i < COUNT; ++i) {
      int v = -1;
      OK(MPI_Recv(&v, 1, MPI_INT, 0, 170, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      if (v != i * 3) {
        EXPECT(0, "message %d: %d", i, v);
        break;
      }
    }
  }
}

int main(int argc, char **argv) {
  const char *eager = test_option(argc, argv, "--eager");
  const char *arrivals = test_option(argc, argv, "--arrivals");
  if (eager)
    setenv("NICEMU_MPI_EAGER_LIMIT", eager, 1);
  if (arrivals)
    setenv("NICEMU_MPI_ARRIVALS", arrivals, 1);
  test_init(&argc, &argv);
  if (eager)
    limit = atol(eager);
  OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
  sbuf = malloc(8 * 300000);
  rbuf = malloc(8 * 300000);
  matching_by_source_and_tag();
  order_is_kept();
  any_source_any_tag();
  zero_bytes();
  around_the_limit();
  truncation();
  many_in_flight();
  waits_and_tests();
  testall_loop();
  probes();
  synchronous();
  sendrecv_ring();
  proc_null_and_self();
  request_free();
  flood();
  free(sbuf);
  free(rbuf);
  return test_finish();
}
