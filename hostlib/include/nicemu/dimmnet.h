/* nicemu: DIMMnet-1 (the Martini card in a DIMM slot) from a host program,
 * C and C++ alike (docs/dimmnet.md). Run with
 *     nicemu run -n 2 --model martini:D \
 *         --firmware <build>/firmware/dimmnet/dimmnet.img -- ./program
 *
 * The card is driven with plain uncached loads and stores: an AOTF store of
 * 1-8 bytes to a kick page sends a packet; arrivals land in LLCM, which the
 * program polls with loads. Each load and store costs the virtual clock
 * what it cost the set-up's host CPU (an uncached store 53-59 ns, a load
 * 173-276 ns), so polling loops behave as they did on the hardware.
 *
 * Protection is the card's: a kick page sends with the header seed the
 * privileged set-up gave it (destination, process group, region, remote
 * address), and a receiver writes only into open regions of the packet's
 * process group. The set-up calls (dimm_set_seed, dimm_open_region) stand
 * for the driver: they go through the card's firmware.
 *
 * Every call returns DIMM_OK (0) or a negative DIMM_E* code; dimm_strerror
 * says what it means, dimm_last_error what exactly went wrong. */
#ifndef NICEMU_DIMMNET_H
#define NICEMU_DIMMNET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DIMM_OK 0
#define DIMM_EINVAL (-1) /* a bad argument (size, alignment, range) */
#define DIMM_EBUSY (-2)  /* the BOTF window is still sending */
#define DIMM_ENOCARD                                                           \
  (-3)                     /* not run by nicemu, or not on a martini card      \
                              with the dimmnet firmware */
#define DIMM_EREFUSED (-4) /* the card or its firmware refused */
#define DIMM_ESTOPPED (-5) /* the emulator is stopping */

#define DIMM_KICK_PAGES 2048 /* kick pages the translation table holds */
#define DIMM_PAGE_BYTES 4096 /* bytes of one kick page */
#define DIMM_REGIONS 64      /* receive regions per card */
#define DIMM_GROUPS 64       /* process groups per card */
#define DIMM_ANY_PID                                                           \
  0xFF                         /* a region any process of the group may        \
                                  write */
#define DIMM_LLCM_BYTES 131072 /* the LLCM */
#define DIMM_BOTF_MAX 464      /* payload bytes of one BOTF packet */

/* Command codes of a packet: the hardware writes into LLCM; anything else
 * goes to the card's core, whose dimmnet firmware serves DIMM_CMD_ADD64
 * (it adds the 8 bytes to the 64-bit LLCM word at the address) and
 * DIMM_CMD_INTERRUPT_WRITE (interrupt-AOTF: it writes the bytes into LLCM
 * itself, as the hardware would for DIMM_CMD_WRITE, but through the
 * core's interrupt). */
#define DIMM_CMD_WRITE 0x00
#define DIMM_CMD_ADD64 0x10
#define DIMM_CMD_INTERRUPT_WRITE 0x11

typedef struct dimm_card dimm_card;

/* A destination node meaning every other node of the cluster: the
 * switches copy the packet (multicast). */
#define DIMM_ALL_NODES 0xFFFFu

/* Where a packet goes: its header. For a kick page's seed, `address` is
 * the remote address of the page's first byte (a multiple of 4096); the
 * store's offset in the page is added to it. */
typedef struct dimm_header {
  unsigned dest_node; /* the receiving node, or DIMM_ALL_NODES */
  unsigned region;    /* receive region on that node (0-63) */
  uint32_t address;   /* offset in the region, or with skip_translation
                         an LLCM address */
  unsigned command;   /* DIMM_CMD_* */
  int skip_translation;
  int status_address;     /* non-zero: the receiver writes the packet's length
                             with bit 31 set at status_offset when the data is
                             in (needs the model option otf.status_address) */
  uint32_t status_offset; /* in the region; for a region in a bank, an LLCM
                             offset open to the sender */
} dimm_header;

/* Opens the local card as process `pid` (0-254) of process group `pgid`
 * (0-63). */
int dimm_open(unsigned pgid, unsigned pid, dimm_card **card);
int dimm_close(dimm_card *card);
int dimm_node(const dimm_card *card);  /* this node's number */
int dimm_nodes(const dimm_card *card); /* nodes in the cluster */

/* ---- Privileged set-up (through the card's firmware) ---- */
/* Kick page `page` (below DIMM_KICK_PAGES) sends with this header. */
int dimm_set_seed(dimm_card *card, unsigned page, const dimm_header *seed);
int dimm_clear_seed(dimm_card *card, unsigned page);
/* Region `region` of this card's memory: `bytes` at card address
 * `address` (an LLCM offset, or DIMM_ADDR(space, offset) in a bank),
 * written by packets of this card's group from process `writer_pid`
 * (DIMM_ANY_PID: any of them). AOTF packets write LLCM regions only;
 * BOTF packets, PUSH and PULL reach bank regions too (while the bank faces
 * the card). */
int dimm_open_region(dimm_card *card, unsigned region, uint32_t address,
                     uint32_t bytes, unsigned writer_pid);
int dimm_close_region(dimm_card *card, unsigned region);

/* ---- AOTF: one store sends ---- */
/* Stores `size` bytes (1, 2, 4 or 8; `offset` aligned to it) from `data`
 * at `offset` in kick page `page`. Returns at once; a store the card
 * rejects (no seed for the page) is counted in dimm_rejected. */
int dimm_aotf_store(dimm_card *card, unsigned page, unsigned offset,
                    const void *data, unsigned size);
int dimm_aotf_store64(dimm_card *card, unsigned page, unsigned offset,
                      uint64_t value);

/* ---- BOTF: a whole packet in a window ---- */
/* Writes the header and `len` bytes (1-DIMM_BOTF_MAX) into window `window`
 * with one write-combined burst, then kicks it. DIMM_EBUSY if the window
 * is still sending its last packet (nothing is written). */
int dimm_botf_send(dimm_card *card, unsigned window, const dimm_header *h,
                   const void *data, unsigned len);
/* The window's status: non-zero while it sends (bit 0), bit 1 if a write
 * or kick was refused since the last kick. */
int dimm_botf_status(dimm_card *card, unsigned window, unsigned *status);
int dimm_botf_windows(const dimm_card *card); /* windows of this card */

/* ---- LLCM: the program's loads and stores ---- */
int dimm_llcm_load(dimm_card *card, uint32_t offset, void *out, unsigned size);
uint64_t dimm_llcm_load64(dimm_card *card, uint32_t offset);
int dimm_llcm_store(dimm_card *card, uint32_t offset, const void *data,
                    unsigned size);
int dimm_llcm_store64(dimm_card *card, uint32_t offset, uint64_t value);
/* Loads the 64-bit word at `offset` until (word & mask) == expected, as a
 * polling loop would (each turn is one load); returns the word. */
uint64_t dimm_llcm_wait64(dimm_card *card, uint32_t offset, uint64_t mask,
                          uint64_t expected);

/* ---- SO-DIMM banks, PUSH and PULL ---- */
/* Card addresses: a space and an offset in it. */
#define DIMM_SPACE_LLCM 0
#define DIMM_SPACE_BANK0 1
#define DIMM_SPACE_BANK1 2
#define DIMM_ADDR(space, offset)                                               \
  (((uint32_t)(space) << 28) | ((uint32_t)(offset)&0x0FFFFFFFu))
#define DIMM_SIDE_HOST 0 /* the host's loads and stores reach the bank */
#define DIMM_SIDE_NIC 1  /* PUSH and PULL reach it */

/* Switches bank 0 or 1 to a side; reads which side it faces. */
int dimm_bank_switch(dimm_card *card, unsigned bank, unsigned side);
int dimm_bank_side(dimm_card *card, unsigned bank, unsigned *side);
/* `len` bytes at `offset` of a bank that faces the host (DIMM_EINVAL
 * otherwise), in bursts of up to 4 KiB at the bank's bandwidth. */
int dimm_bank_write(dimm_card *card, unsigned bank, uint32_t offset,
                    const void *data, size_t len);
int dimm_bank_read(dimm_card *card, unsigned bank, uint32_t offset, void *out,
                   size_t len);

/* A block transfer between this card and `node`'s: `bytes` (1 byte to
 * 16 MiB) at card address `local` here, inside region `local_region` of
 * this card, and at `remote` there, inside its region `remote_region`. Both
 * regions must belong to this program's group, and a bank in the transfer
 * must face the card. */
typedef struct dimm_rdma {
  uint32_t local;
  unsigned local_region;
  unsigned node;
  uint32_t remote;
  unsigned remote_region;
  uint32_t bytes;
} dimm_rdma;
/* Start a PUSH (here to there, acknowledged by the receiver) or a PULL
 * (there to here); one at a time (DIMM_EBUSY while one runs). */
int dimm_push(dimm_card *card, const dimm_rdma *transfer);
int dimm_pull(dimm_card *card, const dimm_rdma *transfer);
/* A PUSH whose receiver writes the transfer's length | 1 << 31 at LLCM
 * offset `status_offset` there (open to this group) once all of it is in:
 * the receive-status address (model option otf.status_address). */
int dimm_push_status(dimm_card *card, const dimm_rdma *transfer,
                     uint32_t status_offset);
/* Polls the engine's status until the transfer is done: DIMM_OK, or
 * DIMM_EREFUSED when a side refused it (dimm_last_error says which). */
int dimm_rdma_wait(dimm_card *card);

/* ---- The send side's counters (loads of the status page) ---- */
int dimm_credits(dimm_card *card, unsigned *credits);
int dimm_rejected(dimm_card *card, unsigned *rejected);
int dimm_dropped(dimm_card *card, unsigned *dropped);

/* The firmware's counters (loads of the privileged page): HTLB misses it
 * served and how many of them it rejected, command packets it handled,
 * those with no handler, and those refused by the receive checks. */
typedef struct dimm_counters {
  unsigned misses, rejects, commands, unknown_commands, refused_commands;
} dimm_counters;
int dimm_firmware_counters(dimm_card *card, dimm_counters *counters);

/* ---- Protocols: barrier, global sum, ring buffers, DIMM_Send/DIMM_Recv ----
 * Built on the calls above (docs/dimmnet.md, "Protocols"), one process per
 * node, node = rank. A communicator takes, on every node: kick pages
 * DIMM_COMM_FIRST_PAGE and up, regions DIMM_COMM_FIRST_REGION-63, the LLCM
 * page at DIMM_COMM_LLCM, BOTF windows 0 and 1, the start of bank 0 (the
 * receive area) and of bank 1 (the send staging area). Leave those alone
 * while it is open. */
#define DIMM_COMM_FIRST_PAGE 1792u
#define DIMM_COMM_FIRST_REGION 56u
#define DIMM_COMM_LLCM 0x1F000u
#define DIMM_COMM_MAX_RANKS 64 /* ranks DIMM_Send/DIMM_Recv reach */
#define DIMM_RECV_BUFFER 4096u /* bytes of one receive buffer */
#define DIMM_RECV_BUFFERS 255u /* buffers of a receive area at most */

typedef struct dimm_comm dimm_comm;

/* How data moves in DIMM_Send when the receiver came first. */
#define DIMM_SEND_AUTO 0 /* BOTF up to DIMM_BOTF_MAX bytes, PUSH above */
#define DIMM_SEND_BOTF 1 /* BOTF always (464-byte pieces, two windows) */
#define DIMM_SEND_PUSH 2 /* PUSH always */

typedef struct dimm_comm_options {
  unsigned receive_buffers; /* 4 KiB buffers in the receive area, 1-255
                               (0: 255, 1 MB with its head); the same on
                               every rank */
  int dynamic_registration; /* the first announcement to each rank is a
                               DIMMNET_CMD_REGISTER packet: its card's core
                               registers the flag entry */
  int receive_status;       /* data carries a receive-status address (model
                               option otf.status_address) instead of being
                               followed by a separate notice */
  int send_mode;            /* DIMM_SEND_* */
} dimm_comm_options;

/* Opens the protocols on every node: each node's program calls it (with
 * the same options); it returns once all have (DIMM_EREFUSED if some node
 * does not answer within 100 ms of virtual time: not in this process
 * group, or not calling). `options` may be NULL (the defaults). */
int dimm_comm_open(dimm_card *card, const dimm_comm_options *options,
                   dimm_comm **comm);
int dimm_comm_close(dimm_comm *comm);
int dimm_comm_rank(const dimm_comm *comm);
int dimm_comm_size(const dimm_comm *comm);

/* Returns once every rank has entered it: an 8-ary tree of AOTF phase
 * bytes up, the root's multicast down. Every rank calls the same
 * collectives in the same order. */
int dimm_barrier(dimm_comm *comm);

/* Global sum, minimum or maximum of one value over all ranks, combined on
 * the host CPUs up the same tree (at each node: its own value, then its
 * children's in rank order) and multicast from the root: every rank gets
 * the same bits. */
#define DIMM_UNSIGNED 0  /* unsigned (32 bits) */
#define DIMM_ULONGLONG 1 /* unsigned long long */
#define DIMM_FLOAT 2
#define DIMM_DOUBLE 3
#define DIMM_SUM 0
#define DIMM_MIN 1
#define DIMM_MAX 2
int dimm_allreduce(dimm_comm *comm, const void *in, void *out, int type,
                   int op);

/* A ring buffer from one producer to one consumer (docs/dimmnet.md): the
 * data lives in the consumer's LLCM at `llcm_offset` (`bytes`, a multiple
 * of 8 up to 64 KiB, 4 KiB aligned, clear of DIMM_COMM_LLCM); each side
 * keeps its own index and reads the other's from its own LLCM. Both sides
 * open ring `id` (0-3) with the same arguments. */
typedef struct dimm_ring dimm_ring;
int dimm_ring_open(dimm_comm *comm, unsigned id, int producer, int peer,
                   uint32_t llcm_offset, uint32_t bytes, dimm_ring **ring);
/* Producer: appends `len` bytes, waiting while the ring is full. Data of
 * 8 aligned bytes goes by AOTF, the rest by BOTF. */
int dimm_ring_put(dimm_ring *ring, const void *data, uint32_t len);
/* Consumer: takes exactly `len` bytes, waiting while the ring is empty. */
int dimm_ring_get(dimm_ring *ring, void *out, uint32_t len);
int dimm_ring_close(dimm_ring *ring);
/* How often this side had to wait: the producer for room (the ring was
 * full), the consumer for data (it was empty). */
unsigned dimm_ring_stalls(const dimm_ring *ring);

/* Synchronous standard-mode send and receive (docs/dimmnet.md): returns
 * once the message has moved (Send: the receiver has it; Recv: it is in
 * `buf`). Whoever comes first announces itself in the other's LLCM flag
 * region; a later Send moves the data by BOTF up to 464 bytes and by PUSH
 * above, a later Recv by PULL; messages larger than the receive area go in
 * several rounds. `received` (may be NULL) gets the message's length. A
 * message larger than the Recv's buffer fails on both sides. */
int DIMM_Send(dimm_comm *comm, const void *buf, size_t bytes, int dest);
int DIMM_Recv(dimm_comm *comm, void *buf, size_t bytes, int source,
              size_t *received);

/* Counters of this rank's Send/Recv protocol: how often each path ran. */
typedef struct dimm_comm_counters {
  unsigned sends_first, recvs_first; /* announcements made */
  unsigned botf_rounds, push_rounds, pull_rounds, multi_round_messages;
  unsigned registered; /* ranks registered in this node's flag region */
} dimm_comm_counters;
int dimm_comm_counters_get(dimm_comm *comm, dimm_comm_counters *counters);

/* The virtual clock, in nanoseconds (a timer read: charged its cost). */
double dimm_time_ns(dimm_card *card);

const char *dimm_strerror(int code);
/* The last error's details in this process ("" if none). */
const char *dimm_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* NICEMU_DIMMNET_H */
