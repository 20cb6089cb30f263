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
  NIAM_HANDLERS = 5
};

/* Collective operations (NIAM_H_COLLECTIVE arg 0). A barrier is a reduction
 * that carries nothing. */
enum niam_op {
  NIAM_OP_BARRIER = 0,
  NIAM_OP_SUM = 1,
  NIAM_OP_MIN = 2,
  NIAM_OP_MAX = 3
};

/* Mailbox (the last 4 KiB page of card data memory), word offsets. The host
 * writes BLOCK once, then one PIO write of SEQ per request. The firmware
 * keeps its counters at STAT_* for the host to read by PIO. */
#define NIAM_BOX_SEQ 0u
#define NIAM_BOX_BLOCK 1u
#define NIAM_BOX_STAT_UNKNOWN 8u   /* packets naming an unknown handler */
#define NIAM_BOX_STAT_BAD 9u       /* bad tag, length or CRC */
#define NIAM_BOX_STAT_BUSY 10u     /* collective posted while one ran */
#define NIAM_BOX_STAT_REQUESTS 11u /* host requests fetched */

/* The host's request block (registered host memory, bus address in
 * NIAM_BOX_BLOCK): a completion area the NIC writes by DMA, then a ring of
 * request slots the NIC reads by DMA. Request s is in slot s % SLOTS. */
#define NIAM_BLOCK_RESULT 0u /* byte offset: int32 result of collective c */
#define NIAM_BLOCK_DONE 4u   /* byte offset: c, written with the result */
#define NIAM_BLOCK_RING 64u  /* byte offset of slot 0 */
#define NIAM_RING_SLOTS 8u
#define NIAM_BLOCK_BYTES (NIAM_BLOCK_RING + NIAM_RING_SLOTS * NIAM_PACKET_BYTES)

#endif /* NICEMU_NIAM_PROTOCOL_H */
