/* A ring buffer on DIMMnet-1: rank 0 streams bytes into a ring in rank 1's
 * LLCM; each side reads the other's index from its own LLCM (docs/dimmnet.md,
 * "Ring buffers"). Two nodes of the martini card, dimmnet firmware:
 *
 *   nicemu run -n 2 --model martini:D
 *       --firmware build/firmware/dimmnet/dimmnet.img
 *       -- build/examples/ring_stream [KIB] [RING_BYTES] [PIECE]   (one line)
 *
 * streams KIB KiB (default 256) through a ring of RING_BYTES (default 4096)
 * in pieces of PIECE bytes (default 256); the consumer checks every byte
 * and prints the rate and how often each side waited. */
#include <nicemu/dimmnet.h>

#include <stdio.h>
#include <stdlib.h>

static void must(int code, const char *what) {
  if (code != DIMM_OK) {
    fprintf(stderr, "ring_stream: %s: %s (%s)\n", what, dimm_strerror(code),
            dimm_last_error());
    exit(1);
  }
}

static unsigned char byte_at(unsigned long i) {
  return (unsigned char)(i * 31u + (i >> 8));
}

int main(int argc, char **argv) {
  unsigned long total = 1024ul * (argc > 1 ? strtoul(argv[1], 0, 10) : 256);
  unsigned ring_bytes = argc > 2 ? (unsigned)strtoul(argv[2], 0, 10) : 4096;
  unsigned piece = argc > 3 ? (unsigned)strtoul(argv[3], 0, 10) : 256;
  unsigned char buf[4096];
  dimm_card *card;
  dimm_comm *comm;
  dimm_ring *ring;
  unsigned long done, i, bad = 0;
  double start, us;
  int rank;

  if (piece == 0 || piece > sizeof buf) {
    fprintf(stderr, "ring_stream: a piece is 1-4096 bytes\n");
    return 2;
  }
  must(dimm_open(1, 0, &card), "dimm_open");
  must(dimm_comm_open(card, NULL, &comm), "dimm_comm_open");
  rank = dimm_comm_rank(comm);
  if (rank > 1) { /* only ranks 0 and 1 take part */
    dimm_comm_close(comm);
    dimm_close(card);
    return 0;
  }
  /* The ring lives at LLCM 0x8000 of rank 1: both sides name it alike. */
  must(dimm_ring_open(comm, 0, rank == 0, 1 - rank, 0x8000, ring_bytes, &ring),
       "dimm_ring_open");
  start = dimm_time_ns(card);
  for (done = 0; done < total;) {
    unsigned n = total - done < piece ? (unsigned)(total - done) : piece;
    if (rank == 0) {
      for (i = 0; i < n; ++i)
        buf[i] = byte_at(done + i);
      must(dimm_ring_put(ring, buf, n), "dimm_ring_put");
    } else {
      must(dimm_ring_get(ring, buf, n), "dimm_ring_get");
      for (i = 0; i < n; ++i)
        bad += buf[i] != byte_at(done + i);
    }
    done += n;
  }
  us = (dimm_time_ns(card) - start) / 1000;
  if (rank == 1)
    printf("ring stream: %lu KiB through a %u-byte ring in %u-byte pieces: "
           "%.1f MB/s, %lu bytes wrong; the consumer waited %u times\n",
           total / 1024, ring_bytes, piece, (double)total / us, bad,
           dimm_ring_stalls(ring));
  else
    printf("ring stream: the producer waited for room %u times\n",
           dimm_ring_stalls(ring));
  fflush(stdout);
  must(dimm_ring_close(ring), "dimm_ring_close");
  dimm_comm_close(comm);
  dimm_close(card);
  return bad != 0;
}
