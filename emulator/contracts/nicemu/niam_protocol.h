/* NI Active Messages (niam): the wire and host-interface layout shared by the
 * niam firmware (firmware/niam/niam.cpp) and the host library
 * (hostlib/src/am.cpp). Plain C so that both sides compile it. docs/niam.md
 * explains every field. */
#ifndef NICEMU_NIAM_PROTOCOL_H
#define NICEMU_NIAM_PROTOCOL_H

#include <stdint.h>

/* An AM packet: 32 bytes after the route bytes (the Tx engine appends the
 * CRC). A host request has the same layout; its tag is the request's
 * sequence number instead of NIAM_TAG. */
struct niam_packet {
  uint32_t tag;     /* NIAM_TAG on the network: a check word */
  uint32_t handler; /* index into the firmware's handler table */
  uint32_t arg[6];
};
#define NIAM_PACKET_BYTES 32u
#define NIAM_TAG 0x4D41494Eu /* "NIAM" in memory order */

/* Handler table indices. Network handlers run on the receiving NIC; host
 * handlers run on the local NIC for a request its host posted. */
enum niam_handler {
  NIAM_H_NOP = 0,        /* does nothing (a ping) */
  NIAM_H_ROUND = 1,      /* butterfly step: c, round, value */
  NIAM_H_FOLD_IN = 2,    /* extra rank -> its partner: c, value */
  NIAM_H_FOLD_OUT = 3,   /* partner -> extra rank: c, result */
  NIAM_H_COLLECTIVE = 4, /* host request: op, value */
  NIAM_H_MAP = 5,        /* host request: virt, pages, bus of first page */
  NIAM_H_BCOPY = 6,      /* host request: see "bcopy arguments" below */
  NIAM_H_SYNC = 7,       /* host request: sync number k */
  NIAM_H_FORWARD = 8,    /* issuer -> source NIC: bcopy arguments */
  NIAM_H_DATA = 9,       /* source -> destination: bulk packet */
  NIAM_H_ACK = 10,       /* destination -> issuer: status (0 = done) */
  NIAM_H_HOST_SEND = 11, /* host request: a small host message */
  NIAM_H_HOST_AM = 12,   /* NIC -> NIC: a small host message */
  NIAM_H_HOST_MSG = 13,  /* host request: a staged host message */
  NIAM_H_RING = 14,      /* host request: ring bus, landing bus, slots */
  NIAM_HANDLERS = 15
};

/* Remote memory transfers. An address is a NIC virtual address: the byte
 * offset of the memory in its host's registered arena (the same offset names
 * the same allocation on every rank that allocates in the same order). The
 * NIC's page table maps each 4 KiB page of [0, NIAM_VIRT_BYTES) to a bus
 * address; NIAM_H_MAP fills entries.
 *
 * bcopy arguments (NIAM_H_BCOPY from the host, NIAM_H_FORWARD between NICs):
 *   0 source address, 1 destination address, 2 bytes (multiple of 4),
 *   3 destination node | (source node (BCOPY) or issuer (FORWARD)) << 16,
 *   4 flag address | 1 for bcopy_notify, else 0, 5 flag value.
 * Bulk packet (NIAM_H_DATA), the data follows the 32-byte header:
 *   0 destination address of this chunk, 1 destination address of the whole
 *   transfer, 2 its length, 3 issuer | NIAM_DATA_POISON, 4 flag | 1 or 0,
 *   5 flag value. */
#define NIAM_PAGE_BYTES 4096u
#define NIAM_VIRT_BYTES (64u << 20)   /* 16 K pages: 64 KiB of page table */
#define NIAM_NOTIFY 1u                /* bit 0 of the flag-address word */
#define NIAM_DATA_POISON 0x80000000u  /* the source could not read the data */
#define NIAM_DATA_TO_HOST 0x40000000u /* a host message: lands in the ring */

/* Host messages: delivered to the destination *host*, whose library runs
 * the handler (Active Messages with host handlers, GAM). They arrive in
 * order per sender, in a receive ring in host memory that the host
 * registers with NIAM_H_RING (args: ring bus address, landing bus address,
 * slots). Entry n (1, 2, ...) is a niam_packet in ring slot (n - 1) % slots:
 * tag n, handler NIAM_RING_SMALL or NIAM_RING_CHUNK. A CHUNK's data is in
 * landing slot (n - 1) % slots (NIAM_PAGE_BYTES each). The host reports
 * how many entries it has consumed by PIO to NIAM_BOX_RING_FREED; while the
 * ring is full, the NIC holds the packet and the network backs up behind
 * it: nothing is dropped.
 *
 * Small (NIAM_H_HOST_SEND): arg 0 = destination node | user bits << 16,
 * arg 1-5 user words. Entry: arg 0 = source node | the same user bits,
 * arg 1-5 as sent.
 * Staged (NIAM_H_HOST_MSG): arg 0 = NIC virtual address of the message,
 * arg 1 = bytes (multiple of 4), arg 2 = destination node, arg 3 = a user
 * word. Entries, one per chunk of at most a page: arg 0 = source node,
 * arg 1 = offset of the chunk in the message, arg 2 = its bytes, arg 3 =
 * message bytes, arg 4 = the user word. Both kinds keep their order with
 * each other. When the NIC has read a staged message it adds one to the
 * word at NIAM_BLOCK_SENT (so the host may reuse the memory). */
#define NIAM_RING_SMALL 1u
#define NIAM_RING_CHUNK 2u

/* Collective operations (NIAM_H_COLLECTIVE arg 0). A barrier is a reduction
 * that carries nothing. */
enum niam_op {
  NIAM_OP_BARRIER = 0,
  NIAM_OP_SUM = 1,
  NIAM_OP_MIN = 2,
  NIAM_OP_MAX = 3
};

/* The reliable mode (the niam_reliable firmware image; docs/niam.md,
 * "Reliable mode"). Every packet between two NICs carries an 8-byte link
 * header between the route bytes and the AM:
 *   word 0: source node | sequence number << 16 (per source and
 *           destination, from 0, wrapping at 65536)
 *   word 1: acknowledgement (the sequence number the source expects next
 *           from the destination) | flags << 16.
 * A packet with NIAM_REL_ACK_ONLY is the header alone: it acknowledges and
 * is not numbered. The receiver runs a packet only if its number is the
 * one it expects; it drops the others (duplicates and packets behind a
 * lost one) and acknowledges, and the sender sends again every packet not
 * acknowledged when its timer runs out. The lean image (niam) has no
 * header: links must not lose. */
#define NIAM_REL_BYTES 8u
#define NIAM_REL_ACK_ONLY 1u
/* Sent when the sender had no room to keep a copy (counted in
 * NIAM_BOX_STAT_UNTRACKED): run on arrival without a number check; it may
 * be lost or run twice. */
#define NIAM_REL_UNNUMBERED 2u
/* With NIAM_REL_ACK_ONLY: a packet arrived behind the one acknowledged,
 * which is missing: send again now rather than at the timeout. */
#define NIAM_REL_NACK 4u

/* Mailbox (the last 4 KiB page of card data memory), word offsets. The host
 * writes BLOCK once, then one PIO write of SEQ per request. The firmware
 * keeps its counters at STAT_* for the host to read by PIO. */
#define NIAM_BOX_SEQ 0u
#define NIAM_BOX_BLOCK 1u
#define NIAM_BOX_RING_FREED 2u       /* host messages the host has consumed */
#define NIAM_BOX_STAT_UNKNOWN 8u     /* packets naming an unknown handler */
#define NIAM_BOX_STAT_BAD 9u         /* bad tag, length or CRC */
#define NIAM_BOX_STAT_BUSY 10u       /* collective posted while one ran */
#define NIAM_BOX_STAT_REQUESTS 11u   /* host requests fetched */
#define NIAM_BOX_STAT_PROTECTION 12u /* transfers refused by the page table */
/* The reliable mode's counters (0 in the lean image). */
#define NIAM_BOX_STAT_RESENT 13u       /* packets sent again after a timeout */
#define NIAM_BOX_STAT_DUPLICATE 14u    /* packets received twice: dropped */
#define NIAM_BOX_STAT_OUT_OF_ORDER 15u /* behind a lost packet: dropped */
#define NIAM_BOX_STAT_PEER_LOST 16u    /* peers given up on (no ack for long) */
#define NIAM_BOX_STAT_UNTRACKED 17u    /* packets sent without a copy kept */
#define NIAM_BOX_STAT_NO_ROOM 18u      /* dropped: no room to keep replies */

/* The host's request block (registered host memory, bus address in
 * NIAM_BOX_BLOCK): a completion area the NIC writes by DMA, then a ring of
 * request slots the NIC reads by DMA. Request s is in slot s % SLOTS. */
#define NIAM_BLOCK_RESULT 0u /* byte offset: int32 result of collective c */
#define NIAM_BLOCK_DONE 4u   /* byte offset: c, written with the result */
/* transfers issued here that were refused */
#define NIAM_BLOCK_SYNC_FAILED 8u
#define NIAM_BLOCK_SYNC_DONE 12u /* number k of the last sync completed */
#define NIAM_BLOCK_SENT 16u      /* staged host messages read by the NIC */
#define NIAM_BLOCK_RING 64u      /* byte offset of slot 0 */
#define NIAM_RING_SLOTS 8u
#define NIAM_BLOCK_BYTES (NIAM_BLOCK_RING + NIAM_RING_SLOTS * NIAM_PACKET_BYTES)

#endif /* NICEMU_NIAM_PROTOCOL_H */
