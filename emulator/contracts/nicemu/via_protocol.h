/* The VI provider (via): the host-interface and wire layout shared by the via
 * firmware (firmware/via/via.cpp) and the host libraries that drive it
 * (hostlib/src/vipl*.cpp for VIPL, hostlib/src/fm.cpp for Comet-FM). Plain C
 * so both sides compile it. docs/via.md explains the protocol.
 *
 * The card is `comet`: doorbell FIFOs, Ethernet links. The host talks to
 * the card in three ways:
 *   - doorbells: the bus address of a descriptor (a VI's send or receive
 *     FIFO) or of a command block (the command FIFO);
 *   - memory the card writes by DMA: descriptor status, completion-queue
 *     rings, the event ring, command results;
 *   - the mailbox page (PIO), for the card's counters and the events the
 *     host has consumed.
 * All words are little-endian, as both the host and the card are. */
#ifndef NICEMU_VIA_PROTOCOL_H
#define NICEMU_VIA_PROTOCOL_H

#include <stdint.h>

/* ---- Doorbell FIFOs: 2 for the system, 2 per VI ------------------------
 * comet has 8 (3 VIs); its model variant `many-vis` has 32. The firmware
 * serves (FIFOs - 2) / 2 VIs, at most VIAFW_MAX_VIS (the 32 FIFOs a doorbell
 * bank can have), and says how many in mailbox word VIAFW_BOX_VIS. */
#define VIAFW_FIFO_COMMAND 0u  /* bus address of a struct viafw_command */
#define VIAFW_FIFO_RESERVED 1u /* the system's second FIFO: unused */
#define VIAFW_FIFO_SEND(vi) (2u + 2u * (vi))
#define VIAFW_FIFO_RECV(vi) (3u + 2u * (vi))
#define VIAFW_MAX_VIS 15u

/* ---- Limits of this provider ------------------------------------------ */
#define VIAFW_MAX_SEGMENTS 16u    /* data segments per descriptor */
#define VIAFW_MAX_TRANSFER 65536u /* bytes per descriptor (MaxTransferSize) */
#define VIAFW_MAX_REGIONS 256u    /* memory handles 1..255 (0 is invalid) */
#define VIAFW_MAX_CQS 8u          /* completion queues 0..7 */
#define VIAFW_QUEUE_DEPTH 1024u   /* descriptors posted per VI queue */
#define VIAFW_DESC_ALIGN 64u      /* descriptors are 64-byte aligned */
#define VIAFW_NO_CQ 0xFFFFFFFFu

/* ---- Descriptors: the VIPL layout (vipl.h), as the card reads it -------
 * Control segment (32 bytes), then SegCount segments of 16 bytes. An
 * address segment (RDMA) comes first when the operation is RDMA. */
#define VIAFW_CS_NEXT 0u /* 64-bit address of the next descriptor */
#define VIAFW_CS_NEXT_HANDLE 8u
#define VIAFW_CS_SEGCOUNT 12u /* 16 bits */
#define VIAFW_CS_CONTROL 14u  /* 16 bits */
#define VIAFW_CS_IMMEDIATE 20u
#define VIAFW_CS_LENGTH 24u /* total bytes (written back on receive) */
#define VIAFW_CS_STATUS 28u /* written last by the card */
#define VIAFW_CS_BYTES 32u
#define VIAFW_SEG_BYTES 16u /* Data (64-bit VA), Handle, Length */

/* Control bits (VIP_CONTROL_*) and status bits (VIP_STATUS_*): the
 * standard values; hostlib checks them against vipl.h at compile time. */
#define VIAFW_CONTROL_OP_SENDRECV 0x0000u
#define VIAFW_CONTROL_OP_RDMAWRITE 0x0001u
#define VIAFW_CONTROL_OP_RDMAREAD 0x0002u
#define VIAFW_CONTROL_OP_MASK 0x0003u
#define VIAFW_CONTROL_IMMEDIATE 0x0004u
#define VIAFW_CONTROL_QFENCE 0x0008u
#define VIAFW_CONTROL_RESERVED 0xFFF0u

#define VIAFW_STATUS_DONE 0x00000001u
#define VIAFW_STATUS_FORMAT_ERROR 0x00000002u
#define VIAFW_STATUS_PROTECTION_ERROR 0x00000004u
#define VIAFW_STATUS_LENGTH_ERROR 0x00000008u
#define VIAFW_STATUS_PARTIAL_ERROR 0x00000010u
#define VIAFW_STATUS_DESC_FLUSHED_ERROR 0x00000020u
#define VIAFW_STATUS_TRANSPORT_ERROR 0x00000040u
#define VIAFW_STATUS_RDMA_PROT_ERROR 0x00000080u
#define VIAFW_STATUS_REMOTE_DESC_ERROR 0x00000100u
#define VIAFW_STATUS_ERROR_MASK 0x000001FEu
#define VIAFW_STATUS_OP_SEND 0x00000000u
#define VIAFW_STATUS_OP_RECEIVE 0x00010000u
#define VIAFW_STATUS_OP_RDMA_WRITE 0x00020000u
#define VIAFW_STATUS_OP_REMOTE_RDMA_WRITE 0x00030000u
#define VIAFW_STATUS_OP_RDMA_READ 0x00040000u
#define VIAFW_STATUS_IMMEDIATE 0x00080000u

/* ---- Command blocks (the command FIFO) ---------------------------------
 * 64 bytes of registered host memory. The host fills op and args, sets
 * `done` to 0 and rings VIAFW_FIFO_COMMAND with the block's bus address;
 * the card writes `result` (VIAFW_R_*) and then `done` = `seq`. */
struct viafw_command {
  uint32_t op;
  uint32_t seq;
  uint32_t arg[12];
  uint32_t result;
  uint32_t done;
};
#define VIAFW_COMMAND_BYTES 64u
#define VIAFW_COMMAND_RESULT 56u /* byte offset of result */

enum viafw_op {
  /* arg0 = event ring bus address, arg1 = its entries (a power of two):
   * forget every VI, region and CQ of the process that rang (a new host
   * process; "Processes sharing a card", below). */
  VIAFW_CMD_HELLO = 1,
  /* arg0 = handle, arg1/arg2 = virtual address low/high, arg3 = bytes,
   * arg4 = bus address, arg5 = Ptag, arg6 = VIAFW_MEM_* */
  VIAFW_CMD_REGISTER = 2,
  VIAFW_CMD_DEREGISTER = 3, /* arg0 = handle */
  /* arg0 = VI, arg1 = VIAFW_KIND_*, arg2 = Ptag, arg3 = reliability
   * (VIAFW_RELIABLE_*), arg4 = VIAFW_MEM_* (RDMA enables), arg5 = send CQ,
   * arg6 = receive CQ (VIAFW_NO_CQ: none), arg7 = max transfer bytes */
  VIAFW_CMD_CREATE_VI = 4,
  VIAFW_CMD_DESTROY_VI = 5, /* arg0 = VI */
  /* arg0 = VI, arg1 = peer node, arg2 = peer VI: the VI is connected */
  VIAFW_CMD_CONNECT_VI = 6,
  /* arg0 = VI, arg1 = 1 to tell the peer (a VIAFW_CTL_DISCONNECT): the VI
   * is idle again; descriptors still posted complete as flushed */
  VIAFW_CMD_DISCONNECT_VI = 7,
  /* arg0 = destination node, arg1..arg8 = a control message, delivered into
   * the event ring of the process that owns VI arg9 there, or of every
   * process of that node when arg9 is VIAFW_ANY_VI or names no VI in use
   * (connection management) */
  VIAFW_CMD_CONTROL = 8,
  /* arg0 = CQ, arg1 = ring bus address, arg2 = entries (a power of two) */
  VIAFW_CMD_CREATE_CQ = 9,
  VIAFW_CMD_DESTROY_CQ = 10, /* arg0 = CQ */
  /* arg0 = VI, arg1 = Ptag, arg2 = VIAFW_MEM_* (VipSetViAttributes) */
  VIAFW_CMD_SET_VI = 11,
  /* arg0 = handle, arg1 = Ptag, arg2 = VIAFW_MEM_* (VipSetMemAttributes) */
  VIAFW_CMD_SET_MEM = 12
};

#define VIAFW_ANY_VI 0xFFu

/* ---- Processes sharing a card ------------------------------------------
 * Up to VIAFW_MAX_PROCESSES host processes may drive one card (nicemu run
 * --procs-per-node). The doorbell bank tells the card which process rang
 * each entry (NICEMU_DOORBELL_SOURCE), as a doorbell page the driver maps
 * into one process would; process p's memory is the bus window
 * [VIAFW_WINDOW(p), VIAFW_WINDOW(p) + VIAFW_WINDOW_BYTES), which stands for
 * the pages the driver pinned for it. The card keeps each process's VIs,
 * memory handles, Ptags and CQs apart: a command, descriptor, memory
 * handle or address of another process is refused (VIAFW_R_BAD_ARGUMENT,
 * a protection error, or the doorbell dropped) and counted in
 * VIAFW_BOX_STAT_FOREIGN. Ptag numbers are per process: the card compares
 * (process, Ptag). */
#define VIAFW_MAX_PROCESSES 16u
#define VIAFW_WINDOW_BASE 0x10000000u
#define VIAFW_WINDOW_BYTES 0x04000000u
#define VIAFW_WINDOW(p) (VIAFW_WINDOW_BASE + (p)*VIAFW_WINDOW_BYTES)
#define VIAFW_MAX_PTAG 0xFFFFFFu /* Ptag numbers 1..VIAFW_MAX_PTAG */

enum viafw_result {
  VIAFW_R_OK = 0,
  VIAFW_R_BAD_COMMAND = 1, /* unknown op, or HELLO not done yet */
  VIAFW_R_BAD_ARGUMENT = 2,
  VIAFW_R_RESOURCE = 3, /* no such slot, or the slot is in use */
  VIAFW_R_STATE = 4     /* the VI is not in a state that allows it */
};

/* Memory and VI attributes (arg of REGISTER, CREATE_VI, SET_*). */
#define VIAFW_MEM_RDMA_WRITE 1u
#define VIAFW_MEM_RDMA_READ 2u

enum viafw_kind {
  VIAFW_KIND_CONNECTED = 0, /* the standard VI: a connection endpoint */
  VIAFW_KIND_FM_IP = 1      /* Comet's FM over IP: sends to any node */
};

enum viafw_reliability {
  VIAFW_UNRELIABLE = 0,
  VIAFW_RELIABLE_DELIVERY = 1,
  VIAFW_RELIABLE_RECEPTION = 2
};

/* ---- Completion queues --------------------------------------------------
 * A ring of 8-byte entries in registered host memory. Entry n (n from 1)
 * goes in slot (n - 1) % entries: word 0 = n (written last: the host polls
 * it), word 1 = VI | VIAFW_CQ_RECV for a receive queue completion. */
#define VIAFW_CQ_ENTRY_BYTES 8u
#define VIAFW_CQ_RECV 0x100u

/* ---- The event ring ---------------------------------------------------
 * 64-byte entries in registered host memory, like a CQ: word 0 = sequence
 * number n (from 1, in slot (n - 1) % entries, written last), word 1 =
 * VIAFW_EV_*, word 2 = source node, word 3 = VI (or 0), words 4..11 = data.
 * The host tells the card how many it has consumed in mailbox word
 * VIAFW_BOX_EVENTS_FREED; the card never overwrites an unconsumed entry: it
 * drops the event and counts it in VIAFW_BOX_STAT_EVENTS_LOST. */
#define VIAFW_EVENT_BYTES 64u
enum viafw_event {
  VIAFW_EV_CONTROL = 1,     /* words 4..11 = the 8 words of the message */
  VIAFW_EV_VI_ERROR = 2,    /* word 4 = the VIAFW_STATUS_* of the failure */
  VIAFW_EV_DISCONNECTED = 3 /* the peer disconnected the VI */
};
/* A control message is 8 words: word 0 = VIAFW_CTL_*, words 1..7 are the
 * library's connection protocol (docs/via.md). The card only acts on
 * VIAFW_CTL_DISCONNECT itself (word 2 = the VI on the receiving node). */
enum viafw_control {
  VIAFW_CTL_CONNECT_REQUEST = 1,
  VIAFW_CTL_CONNECT_ACCEPT = 2,
  VIAFW_CTL_CONNECT_REJECT = 3,
  VIAFW_CTL_PEER_REQUEST = 4,
  VIAFW_CTL_DISCONNECT = 5
};

/* ---- Mailbox words (card data memory's last page; host reads by PIO) -- */
/* host -> card: events the node's process p has consumed, in its own word
 * (NICEMU_MAILBOX_PROCESS_WORDS + p: the only word a process may write
 * on a card several processes share) */
#define VIAFW_BOX_EVENTS_FREED_BY(p) (32u + (p))
#define VIAFW_BOX_EVENTS_FREED VIAFW_BOX_EVENTS_FREED_BY(0)
#define VIAFW_BOX_MAGIC 1u /* card: VIAFW_MAGIC once ready */
#define VIAFW_BOX_VIS 2u   /* card: the VIs it serves (before MAGIC) */
#define VIAFW_BOX_STAT_FRAMES_IN 8u
#define VIAFW_BOX_STAT_FRAMES_OUT 9u
#define VIAFW_BOX_STAT_DROPPED 10u /* frames dropped: bad, unexpected */
#define VIAFW_BOX_STAT_BAD_CHECKSUM 11u
#define VIAFW_BOX_STAT_DESC_ERRORS 12u /* descriptors completed in error */
#define VIAFW_BOX_STAT_EVENTS_LOST 13u
/* Reliability under loss (docs/via.md, "Reliability levels under loss"). */
#define VIAFW_BOX_STAT_RETRANSMITS 14u /* frames sent again after a loss */
#define VIAFW_BOX_STAT_DUPLICATES 15u  /* frames that arrived twice, dropped */
#define VIAFW_BOX_STAT_BROKEN 16u  /* connections broken: peer unreachable */
#define VIAFW_BOX_STAT_FOREIGN 17u /* refused: another process's */
#define VIAFW_MAGIC 0x41495601u    /* "\x01VIA" */

/* ---- On the wire: the connected VI ------------------------------------
 * An Ethernet frame of type VIAFW_ETHERTYPE (IEEE 802 "local experimental
 * 1"), then this 32-byte header, then up to VIAFW_FRAG_BYTES of data. */
#define VIAFW_ETHERTYPE 0x88B5u
struct viafw_header {
  uint8_t type;  /* VIAFW_PKT_* */
  uint8_t flags; /* VIAFW_F_* */
  uint8_t src_vi, dst_vi;
  uint32_t seq;    /* message number on this connection (from 1) */
  uint32_t length; /* bytes of the whole message */
  uint32_t offset; /* of this fragment's data in the message */
  uint32_t imm;    /* immediate data (VIAFW_F_IMMEDIATE); status (NACK) */
  uint32_t addr_lo, addr_hi; /* RDMA: remote virtual address of the message */
  uint32_t handle;           /* RDMA: remote memory handle */
};
#define VIAFW_HEADER_BYTES 32u
#define VIAFW_FRAG_BYTES 1468u /* 1500 - 32 */

enum viafw_packet {
  VIAFW_PKT_SEND = 1,         /* data for the next posted receive */
  VIAFW_PKT_RDMA_WRITE = 2,   /* data for remote memory */
  VIAFW_PKT_READ_REQUEST = 3, /* length bytes from remote memory, please */
  VIAFW_PKT_READ_RESPONSE = 4,
  VIAFW_PKT_ACK = 5,     /* message seq placed (reliable levels) */
  VIAFW_PKT_NACK = 6,    /* message seq failed: imm = VIAFW_STATUS_* */
  VIAFW_PKT_CONTROL = 7, /* 8 words of a control message follow; with
                          * VIAFW_F_ACK: none, it acknowledges seq */
  /* Reliable levels, under loss: the receiver has message seq's bytes up
   * to `offset` and no more (a fragment went missing): send from there. */
  VIAFW_PKT_RESUME = 8,
  /* Reliable levels: the sender of message seq heard nothing for a
   * timeout; the receiver answers with ACK (it has all of it) or RESUME. */
  VIAFW_PKT_PROBE = 9
};
#define VIAFW_F_FIRST 1u
#define VIAFW_F_LAST 2u
#define VIAFW_F_IMMEDIATE 4u
#define VIAFW_F_ACK 8u /* VIAFW_PKT_CONTROL: the acknowledgement */

/* Retransmission on the reliable levels and for control messages (seq is
 * then a per-node-pair number): the first timeout is VIAFW_RTO_US after
 * the last frame of a message (or request) was handed to the transmitter,
 * each one after it twice the one before, up to VIAFW_RTO_MAX_US; after
 * VIAFW_RETRIES timeouts in a row with no answer from the peer the
 * connection breaks (VIAFW_STATUS_TRANSPORT_ERROR; a control message is
 * given up): 1 + 2 + 14 x 4 = 59 ms. */
#define VIAFW_RTO_US 1000u
#define VIAFW_RTO_MAX_US 4000u
#define VIAFW_RETRIES 16u

/* ---- On the wire: FM over IP ------------------------------------------
 * Ethernet (type 0x0800), IPv4 (20 bytes, no options, DF, TTL 64), UDP to
 * and from port VIAFW_FM_UDP_PORT, then the FM packet: this 12-byte header
 * and the message. The host library builds the FM packet; the card adds
 * the rest from its node table. */
#define VIAFW_FM_UDP_PORT 4815u
struct viafw_fm_header {
  uint16_t dest;    /* FM node number */
  uint16_t src;     /* FM node number (the card fills it in) */
  uint16_t handler; /* receive handler id */
  uint16_t flags;
  uint32_t length; /* message bytes after this header */
};
#define VIAFW_FM_HEADER_BYTES 12u
#define VIAFW_FM_MAX_MESSAGE                                                   \
  1440u /* 1500 - 20 (IP) - 8 (UDP) - 12, rounded                              \
           down to a multiple of 16 */

#endif /* NICEMU_VIA_PROTOCOL_H */
