/* nicemu: the UZURA 10GbE offload card from a host program, C and C++ alike
 * (docs/uzura.md). Run with
 *     nicemu run -n 2 --model uzura \
 *         --firmware <build>/firmware/uzura/uzura.img -- ./program
 *
 * One endpoint per process. Commands go to the card through a ring in the
 * program's memory and a doorbell; the card moves the data by DMA,
 * translating the program's virtual addresses itself (memory must be
 * registered first: uz_register), and tells the program what happened by
 * writing completions and arrivals into its memory, which the program
 * polls (uz_poll, uz_poll_arrival) or waits for (uz_wait, uz_wait_arrival).
 *
 * - Messages (uz_send): up to UZ_SEND_MAX bytes land in the receiver's
 *   arrival ring, in the order they were sent; the receiver reads them in
 *   place and frees each with uz_release.
 * - RDMA (uz_write, uz_read): to and from a virtual address of the other
 *   process, in memory it registered with UZ_REMOTE_WRITE / UZ_REMOTE_READ.
 *   A page the card cannot translate fails the operation
 *   (UZ_STATUS_REMOTE_PAGE), it never writes elsewhere.
 *
 * Every call returns UZ_OK (0) or a negative UZ_E* code; uz_strerror says
 * what it means, uz_last_error what exactly went wrong. */
#ifndef NICEMU_UZURA_H
#define NICEMU_UZURA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UZ_OK 0
#define UZ_EINVAL (-1) /* a bad argument */
#define UZ_ENOCARD                                                             \
  (-2)                   /* not run by nicemu on a uzura card with the         \
                            uzura firmware, or no uz_open yet */
#define UZ_ESTOPPED (-3) /* the emulator is stopping */
#define UZ_ENOMEM (-4)   /* no room: registered memory, translation slots */
#define UZ_EBUSY                                                               \
  (-5) /* too many operations outstanding: take                                \
          completions first */

#define UZ_SEND_MAX 4064 /* bytes of one message */

/* The status of a completion. */
#define UZ_STATUS_OK 0
#define UZ_STATUS_BAD_COMMAND 1
#define UZ_STATUS_BAD_NODE 2
#define UZ_STATUS_LOCAL_PAGE 3  /* a local page is not registered */
#define UZ_STATUS_REMOTE_PAGE 4 /* a remote page is not registered for it */
#define UZ_STATUS_TOO_LONG 5
#define UZ_STATUS_NO_ROOM 6 /* the receiver's arrival ring was full */

/* uz_register access bits: the card may always read and write registered
 * memory for this process's own commands; other processes' RDMA needs: */
#define UZ_REMOTE_WRITE 1u
#define UZ_REMOTE_READ 2u

/* How the card learns of a command, and how the program learns of a
 * completion or an arrival (docs/uzura.md, "Notification"). */
#define UZ_IN_DOORBELL 0   /* the program writes the doorbell register */
#define UZ_IN_CARD_POLLS 1 /* the card polls the command ring (bus busy) */
#define UZ_OUT_MEMORY 0    /* the program polls its own memory */
#define UZ_OUT_INTERRUPT 1 /* the card interrupts the waiting program */
#define UZ_OUT_REGISTER 2  /* the program polls a card register (bus busy) */

typedef struct uz_options {
  unsigned commands;           /* command ring entries (power of two, <= 64) */
  unsigned completions;        /* completion ring entries (power of two) */
  unsigned arrivals;           /* arrival ring slots (power of two) */
  unsigned overflow;           /* overflow translation entries (power of two) */
  unsigned notify_in;          /* UZ_IN_* */
  unsigned notify_completions; /* UZ_OUT_* for the completion ring */
  unsigned notify_arrivals;    /* UZ_OUT_* for the arrival ring */
} uz_options;

/* The defaults (uz_open with NULL): 32 commands, 256 completions, 64
 * arrivals, 4096 overflow entries, UZ_IN_DOORBELL, UZ_OUT_MEMORY, or what
 * the environment says: NICEMU_UZURA_IN=doorbell|card-polls and
 * NICEMU_UZURA_OUT=memory|interrupt|register (both queues). */
void uz_default_options(uz_options *out);

typedef struct uz_completion {
  uint64_t cookie; /* the one the operation was given */
  uint32_t status; /* UZ_STATUS_* */
} uz_completion;

typedef struct uz_arrival {
  uint32_t src; /* sending node */
  uint32_t tag;
  uint32_t imm;
  uint32_t len;
  const void *data; /* in the arrival ring, valid until uz_release */
  uint32_t seq;     /* its number, from 1 */
} uz_arrival;

/* Opens this process's endpoint; `options` may be NULL (defaults). */
int uz_open(const uz_options *options);
int uz_close(void);
uint32_t uz_node(void);
uint32_t uz_nodes(void);

/* Makes [addr, addr + len) reachable by the card, with `access`. Any memory
 * of the program (malloc, static, stack, nicemu_alloc). The card translates
 * whole 4 KB pages: a page shared by several registrations allows what any
 * of them allows. */
int uz_register(const void *addr, size_t len, unsigned access);

int uz_send(uint32_t node, const void *buf, size_t len, uint32_t tag,
            uint32_t imm, uint64_t cookie);
int uz_write(uint32_t node, const void *local, uint64_t remote, size_t len,
             uint64_t cookie);
int uz_read(uint32_t node, void *local, uint64_t remote, size_t len,
            uint64_t cookie);

/* Gathered from up to UZ_MAX_IOV pieces of registered memory, in order:
 * the card reads the list and the pieces itself. */
#define UZ_MAX_IOV 64
typedef struct uz_iov {
  const void *base;
  size_t len;
} uz_iov;
int uz_sendv(uint32_t node, const uz_iov *iov, unsigned count, uint32_t tag,
             uint32_t imm, uint64_t cookie);
int uz_writev(uint32_t node, const uz_iov *iov, unsigned count, uint64_t remote,
              uint64_t cookie);
/* An RDMA read of the contiguous bytes at `remote`, scattered over the
 * pieces, in order. */
int uz_readv(uint32_t node, const uz_iov *iov, unsigned count, uint64_t remote,
             uint64_t cookie);

/* Datatypes, described to the card once and executed by it: `count`
 * blocks of `block` bytes, block i at i x `stride` bytes (MPI's vector and
 * hvector, in bytes), one item every `extent` bytes. Up to
 * UZ_MAX_TYPES - 1 at once; *id gets the type's number (1..63). */
#define UZ_MAX_TYPES 64
int uz_type_create(uint32_t count, uint32_t block, int32_t stride,
                   uint32_t extent, uint16_t *id);
/* A message of `items` items of `type` gathered from `base`. */
int uz_send_typed(uint32_t node, const void *base, uint16_t type,
                  uint32_t items, uint32_t tag, uint32_t imm, uint64_t cookie);
/* An RDMA write: the data of `local` (`count` items of `local_type`, or
 * `count` contiguous bytes when it is 0), placed at `remote` in the layout
 * `remote_type` (0: contiguous). Only this process knows the remote layout:
 * every frame carries it, and the target card scatters by it. */
int uz_write_typed(uint32_t node, const void *local, uint16_t local_type,
                   uint32_t count, uint64_t remote, uint16_t remote_type,
                   uint64_t cookie);
/* An RDMA read, the other way round: the data at `remote` in the layout
 * `remote_type` (0: contiguous; the request carries it, the target card
 * gathers by it), placed at `local` as `count` items of `local_type` (or
 * `count` contiguous bytes when it is 0). */
int uz_read_typed(uint32_t node, void *local, uint16_t local_type,
                  uint32_t count, uint64_t remote, uint16_t remote_type,
                  uint64_t cookie);

/* 1 and the next completion, or 0 if there is none yet. */
int uz_poll(uz_completion *out);
int uz_wait(uz_completion *out);
/* 1 and the next arrival, or 0 if there is none yet. */
int uz_poll_arrival(uz_arrival *out);
int uz_wait_arrival(uz_arrival *out);
/* Waits until a completion or an arrival can be taken (each queue noticed
 * as its notification mode says); returns what can: UZ_READY_* bits. */
#define UZ_READY_COMPLETION 1
#define UZ_READY_ARRIVAL 2
int uz_wait_any(void);
/* Frees the oldest arrival's slot (arrivals are freed in order). */
int uz_release(const uz_arrival *arrival);

const char *uz_strerror(int code);
const char *uz_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
