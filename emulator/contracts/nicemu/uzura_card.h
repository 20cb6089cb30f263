/* The UZURA card as its firmware, the emulator and the host library see it
 * (docs/uzura.md): the card in the host's bus address space, the commands
 * and completions the host exchanges with it through its own memory, the
 * frames on the 10GbE link, the translation table, and the ENGINE device
 * (the core's window onto the FPGA's fixed data path). Compiled by firmware
 * and emulator alike, like nicemu/regs.h; the register table uses the
 * sized form:
 *
 *   X(DEVICE, NAME, offset, bits, count, access, description)
 *
 * All words are little-endian, as host and card are. */
#ifndef NICEMU_UZURA_CARD_H
#define NICEMU_UZURA_CARD_H

#include "nicemu/regs.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The card on the host's PCI-X bus ------------------------------------
 * REGS: the host's registers (one 32-bit word each; a write costs the
 *   model's pio_write_word, DOORBELL its doorbell_write, a read of a
 *   CQ_COUNT word its poll_nic_register and occupies the bus as long).
 * SRAM: the 4 MB translation SRAM, as the host maps it (it manages the
 *   table; entries are 64-bit, two word writes each).
 * The card's local memory is at its card addresses, as on every card (the
 *   firmware's mailbox page is the last page of it). */
#define UZ_HOST_REGS 0xE1000000u
#define UZ_HOST_SRAM 0x00400000u /* = the card address of the SRAM */

#define UZ_REG_DOORBELL 0x00u /* W: queue | (command number << 8) */
#define UZ_REG_ENDPOINT 0x04u /* W: bus address of the endpoint block */
#define UZ_REG_IRQ_ACK 0x08u  /* W: the host took the interrupt */
#define UZ_REG_CMD_FETCHED                                                     \
  0x0Cu                       /* R: commands the card has read: their          \
                                 ring slots may be reused */
#define UZ_REG_CQ_COUNT 0x10u /* R: completions written to the CQ */
#define UZ_REG_RX_COUNT 0x14u /* R: messages written to the receive ring */
#define UZ_REG_STATUS 0x18u   /* R: UZ_STATUS_* */
#define UZ_REG_RX_FREED 0x1Cu /* W: receive-ring slots the host consumed */
/* W, costs nothing: with UZ_NOTIFY_NIC_POLLS the library records here the
 * number of each command it writes into the ring. It is no bus access: it
 * tells the emulator when the host's store happened, so that the card's
 * polls see the command at a time that does not depend on how fast the
 * host process runs (the card still finds it by polling). */
#define UZ_REG_CMD_WRITTEN 0x20u
#define UZ_HOST_REGS_BYTES 0x24u

#define UZ_STATUS_READY 1u /* the firmware took the endpoint block */
#define UZ_STATUS_ALIVE 2u /* the firmware runs: the host may set up */

/* ---- The endpoint block (host memory, 64 bytes) ---------------------------
 * The host library fills it, writes its bus address to UZ_REG_ENDPOINT
 * and rings DOORBELL with queue UZ_QUEUE_SETUP; the firmware reads it by
 * DMA and sets UZ_STATUS_READY. Rings are in registered host memory;
 * their entry counts are powers of two. */
struct uz_endpoint {
  uint32_t cmd_ring; /* bus address: cmd_entries x UZ_CMD_BYTES */
  uint32_t cmd_entries;
  uint32_t cq_ring; /* bus address: cq_entries x UZ_CQE_BYTES */
  uint32_t cq_entries;
  uint32_t rx_ring; /* bus address: rx_entries x UZ_RX_SLOT_BYTES */
  uint32_t rx_entries;
  uint32_t overflow;         /* bus address of the overflow table */
  uint32_t overflow_entries; /* a power of two (0: none) */
  uint32_t notify_in;        /* UZ_NOTIFY_DOORBELL or UZ_NOTIFY_NIC_POLLS */
  uint32_t notify_out;       /* UZ_NOTIFY_MEMORY, _INTERRUPT or _REGISTER */
  uint32_t eager_limit;      /* bytes: larger SENDs are refused (the host
                                library runs rendezvous over RDMA above it) */
  uint32_t reserved[5];
};
#define UZ_ENDPOINT_BYTES 64u
#define UZ_QUEUE_SETUP 0u
#define UZ_QUEUE_COMMANDS 1u

/* Host -> NIC: how the card learns of a new command. */
#define UZ_NOTIFY_DOORBELL 0u  /* the host writes DOORBELL (0.78 us) */
#define UZ_NOTIFY_NIC_POLLS 1u /* the card polls the ring (bus busy) */
/* NIC -> host: how the host learns of a completion or an arrival. The
 * card always writes the entry into host memory; MEMORY: the host polls
 * it there; INTERRUPT: the card also interrupts the host; REGISTER: the
 * host polls UZ_REG_CQ_COUNT / UZ_REG_RX_COUNT over the bus. */
#define UZ_NOTIFY_MEMORY 0u
#define UZ_NOTIFY_INTERRUPT 1u
#define UZ_NOTIFY_REGISTER 2u

/* ---- Commands (host memory, the command ring) ------------------------------
 * The host fills an entry, `seq` last (the entry's number, from 1), then
 * notifies the card. Addresses are the host process's virtual addresses,
 * which the card translates (the translation table, below). */
struct uz_cmd {
  uint32_t seq;
  uint16_t op;          /* UZ_OP_* */
  uint16_t flags;       /* UZ_F_* */
  uint32_t node;        /* destination (SEND, WRITE, READ) */
  uint32_t len;         /* bytes (for a datatype: of the whole layout) */
  uint64_t local;       /* local virtual address, or the SG list's */
  uint64_t remote;      /* remote virtual address (WRITE, READ) */
  uint32_t tag;         /* SEND: the receiver matches on it */
  uint32_t imm;         /* immediate word carried to the receiver */
  uint64_t cookie;      /* returned in the completion */
  uint16_t local_type;  /* datatype of the local side (0: contiguous) */
  uint16_t remote_type; /* datatype of the remote side (0: contiguous) */
  uint32_t count;       /* how many of the datatype */
  uint32_t reserved[2];
};
#define UZ_CMD_BYTES 64u

enum uz_op {
  UZ_OP_NOP = 0,
  UZ_OP_SEND = 1,  /* eager message into the receiver's ring */
  UZ_OP_WRITE = 2, /* RDMA write: local -> remote address */
  UZ_OP_READ = 3,  /* RDMA read: remote -> local address */
  /* local = bus address of a uz_datatype (host memory), tag = the id to
   * give it (1..UZ_MAX_DATATYPES-1) */
  UZ_OP_DATATYPE = 4,
  /* Translation entries into the SRAM: local = bus address of `count`
   * 64-bit entries (host memory), remote = the first SRAM index; the
   * entries must not wrap past the table's end */
  UZ_OP_MAP = 5
};

#define UZ_F_SG 1u     /* `local` is an SG list (uz_sge), `count` entries */
#define UZ_F_SILENT 2u /* no completion unless it fails */

/* A scatter/gather entry (host memory, 16 bytes). */
struct uz_sge {
  uint64_t addr;
  uint32_t len;
  uint32_t reserved;
};
#define UZ_MAX_SGE 64u

/* A datatype the card keeps (UZ_OP_DATATYPE): `count` blocks of
 * `block` bytes, block i at i x `stride` bytes (vector and hvector both
 * reduce to this; the host library multiplies by the element size). */
struct uz_datatype {
  uint32_t count;
  uint32_t block;
  int32_t stride;
  uint32_t extent; /* bytes from one item to the next when count > 1 */
};
#define UZ_MAX_DATATYPES 64u

/* ---- Completions (host memory, the CQ) -------------------------------------
 * One per command that asks for it (and per failed command); `seq` is the
 * completion's number from 1, written last. */
struct uz_cqe {
  uint32_t seq;
  uint32_t status; /* UZ_S_* */
  uint64_t cookie;
};
#define UZ_CQE_BYTES 16u

enum uz_status {
  UZ_S_OK = 0,
  UZ_S_BAD_COMMAND = 1, /* unknown op, bad length, bad datatype */
  UZ_S_BAD_NODE = 2,
  UZ_S_TRANSLATION = 3,        /* a local page in neither table */
  UZ_S_REMOTE_TRANSLATION = 4, /* a remote page in neither table, or not
                                  writable */
  UZ_S_TOO_LONG = 5,           /* SEND above the eager limit */
  UZ_S_NO_ROOM = 6             /* the receiver's ring was full */
};

/* ---- Arrivals (host memory, the receive ring) -------------------------------
 * A SEND lands in the next slot: the payload after the 32-byte header,
 * the header's `seq` (the arrival's number from 1) written last. The host
 * tells the card how many slots it has consumed with UZ_REG_RX_FREED; a
 * SEND that finds the ring full is refused (UZ_S_NO_ROOM at the sender). */
struct uz_rx_header {
  uint32_t seq;
  uint32_t src; /* sending node */
  uint32_t tag;
  uint32_t len;
  uint32_t imm;
  uint32_t status; /* UZ_S_OK */
  uint32_t reserved[2];
};
#define UZ_RX_HEADER_BYTES 32u
#define UZ_RX_SLOT_BYTES 4096u /* header + up to 4064 bytes of payload */
#define UZ_EAGER_MAX (UZ_RX_SLOT_BYTES - UZ_RX_HEADER_BYTES)

/* ---- Translation -----------------------------------------------------------
 * Per 4 KB page of a host process's virtual space. The SRAM holds a
 * direct-mapped table: entry i (8 bytes at UZ_HOST_SRAM + 8 i) holds the
 * page whose number mod UZ_SRAM_ENTRIES is i. The overflow table (host
 * memory) is open-addressed: entry j holds {virtual page, entry}; a lookup
 * probes from hash(page) mod entries for UZ_OVERFLOW_PROBES slots. */
#define UZ_PAGE_BYTES 4096u
#define UZ_SRAM_ENTRIES (4u << 17) /* 4 MB / 8 */
/* An entry: bit 0 valid, bit 1 remote write allowed, bit 2 remote read
 * allowed, bits 3-22 the page number's upper bits above the index (the
 * tag), bits 32-63 the page's bus address >> 12. */
#define UZ_TE_VALID 1u
#define UZ_TE_WRITE 2u
#define UZ_TE_READ 4u
#define UZ_TE_TAG_SHIFT 3u
#define UZ_TE_TAG_BITS 20u
struct uz_overflow_entry {
  uint64_t page;  /* virtual page number + 1 (0: empty) */
  uint64_t entry; /* as in the SRAM, tag bits unused */
};
#define UZ_OVERFLOW_PROBES 4u
/* The first slot a page's lookup probes (then the next ones, wrapping). */
#define UZ_OVERFLOW_SLOT(page, entries)                                        \
  ((uint32_t)((uint32_t)(page)*2654435761u) & ((entries)-1u))

/* ---- On the wire -----------------------------------------------------------
 * An Ethernet frame of type UZ_ETHERTYPE (IEEE 802 "local experimental
 * 2"), this 48-byte header, then up to UZ_FRAME_DATA bytes (MTU 4 KB). */
#define UZ_ETHERTYPE 0x88B6u
struct uz_wire_header {
  uint8_t type;    /* UZ_PKT_* */
  uint8_t flags;   /* UZ_W_* */
  uint16_t src;    /* sending node */
  uint32_t msg;    /* message number at the sender (for the answer) */
  uint32_t len;    /* bytes of the whole message */
  uint32_t offset; /* of this frame's data in the message */
  uint64_t addr;   /* PUT, GET: remote virtual address of byte 0 */
  uint32_t tag;
  uint32_t imm;
  uint16_t type_id;            /* remote datatype (0: contiguous) ... */
  uint16_t status;             /* NACK: UZ_S_* */
  uint32_t dt_count, dt_block; /* ... and its layout */
  int32_t dt_stride;
};
#define UZ_WIRE_HEADER_BYTES 48u
#define UZ_FRAME_DATA 4096u

enum uz_packet {
  UZ_PKT_EAGER = 1, /* into the receive ring */
  UZ_PKT_PUT = 2,   /* to a virtual address (WRITE, and GET answers) */
  UZ_PKT_GET = 3,   /* asks for `len` bytes at `addr` */
  UZ_PKT_ACK = 4,   /* a message (EAGER, or a PUT's last frame) was placed */
  UZ_PKT_NACK = 5   /* it was refused: `status` */
};
#define UZ_W_LAST 1u   /* the message's last frame */
#define UZ_W_ANSWER 2u /* PUT: the data of this node's own GET */

/* ---- The ENGINE device: the core's window onto the data path ---------------
 * The firmware hands the engine work requests (WRs) in card memory and
 * learns of their end, and of arrivals the hardware does not place by
 * itself, through an event ring in card memory. */
#define NICEMU_UZURA_DEVICES(X) X(ENGINE, 10, 0x1000)

#define NICEMU_ENGINE_REGS(X)                                                  \
  X(ENGINE, SUBMIT, 0x000, 32, 1, W, "card address of a uz_wr to run")         \
  X(ENGINE, EVENTS, 0x004, 32, 1, RW,                                          \
    "card address of the event ring (UZ_EVENT_BYTES x EVENT_ENTRIES)")         \
  X(ENGINE, EVENT_ENTRIES, 0x008, 32, 1, RW, "entries of the event ring")      \
  X(ENGINE, EVENT_COUNT, 0x00C, 32, 1, R, "events written so far")             \
  X(ENGINE, EVENT_FREED, 0x010, 32, 1, RW, "events the firmware consumed")     \
  X(ENGINE, DOORBELL, 0x014, 32, 1, R,                                         \
    "the host's last DOORBELL word (queue | number << 8)")                     \
  X(ENGINE, ENDPOINT, 0x018, 32, 1, R, "the host's UZ_REG_ENDPOINT word")      \
  X(ENGINE, HOST_STATUS, 0x01C, 32, 1, RW, "UZ_REG_STATUS as the host sees")   \
  X(ENGINE, RINGS, 0x020, 32, 8, RW,                                           \
    "the endpoint's rings as the hardware uses them: cmd, cmd entries, cq, "   \
    "cq entries, rx, rx entries, overflow, overflow entries")                  \
  X(ENGINE, NOTIFY, 0x040, 32, 1, RW, "bits 0-7 notify_in, 8-15 notify_out")   \
  X(ENGINE, CMD_AREA, 0x044, 32, 1, RW,                                        \
    "card address the engine fetches commands into (slot = seq mod entries)")  \
  X(ENGINE, DATATYPES, 0x048, 32, 1, RW,                                       \
    "card address of the datatype table (UZ_MAX_DATATYPES entries)")           \
  X(ENGINE, CMD_DONE, 0x04C, 32, 1, RW,                                        \
    "commands the firmware has read from CMD_AREA (frees their slots)")        \
  X(ENGINE, FRAMES_OUT, 0x080, 32, 1, R, "frames sent")                        \
  X(ENGINE, FRAMES_IN, 0x084, 32, 1, R, "frames received")                     \
  X(ENGINE, DROPPED, 0x088, 32, 1, R, "frames refused (bad, untranslated)")    \
  X(ENGINE, SRAM_HITS, 0x08C, 32, 1, R, "translations from the SRAM")          \
  X(ENGINE, OVERFLOW_HITS, 0x090, 32, 1, R, "translations from host memory")   \
  X(ENGINE, MISSES, 0x094, 32, 1, R, "pages in neither table")                 \
  X(ENGINE, BUS_BUSY_NS, 0x098, 32, 1, R, "PCI-X bus time used, in ns")        \
  X(ENGINE, EVENTS_LOST, 0x09C, 32, 1, R, "events dropped: the ring was full")

#define NICEMU_ENGINE_OFFSET_ENUM(dev, name, off, bits, count, acc, desc)      \
  NICEMU_##dev##_##name = (off),
#define NICEMU_ENGINE_BASE_ENUM(dev, page, bytes)                              \
  NICEMU_##dev##_BASE = (int)NICEMU_DEVICE_BASE(page),
enum nicemu_uzura_register {
  NICEMU_ENGINE_REGS(NICEMU_ENGINE_OFFSET_ENUM)
      NICEMU_UZURA_DEVICES(NICEMU_ENGINE_BASE_ENUM)
};
#undef NICEMU_ENGINE_OFFSET_ENUM
#undef NICEMU_ENGINE_BASE_ENUM

#define NICEMU_IRQ_ENGINE (1u << 8) /* an event was written */
#define NICEMU_CAP_ENGINE (1u << 9) /* the card has the UZURA engine */

/* A work request (card memory, 64 bytes). */
struct uz_wr {
  uint16_t op;    /* UZ_WR_* */
  uint16_t flags; /* UZ_F_* of the command */
  uint32_t node;
  uint32_t len;
  uint32_t count;  /* SG entries, or datatype items */
  uint64_t local;  /* virtual address / SG list (translated by the engine) */
  uint64_t remote; /* remote virtual address */
  uint32_t tag, imm;
  uint32_t msg;                     /* returned in the WR's event */
  uint32_t host;                    /* FETCH/STORE: bus address; */
  uint32_t card;                    /* FETCH/STORE: card address */
  uint16_t local_type, remote_type; /* datatype ids (table below) */
  uint32_t reserved[2];
};
#define UZ_WR_BYTES 64u

enum uz_wr_op {
  UZ_WR_FETCH = 1,   /* host bus address -> card (len bytes, plain DMA) */
  UZ_WR_STORE = 2,   /* card -> host bus address */
  UZ_WR_SEND = 3,    /* an eager message */
  UZ_WR_WRITE = 4,   /* an RDMA write */
  UZ_WR_READ = 5,    /* an RDMA read */
  UZ_WR_COMPLETE = 6 /* a completion for the host: `remote` the cookie,
                        `imm` the status; no event of its own */
};

/* The datatype table the engine reads (card memory, set by the firmware):
 * UZ_MAX_DATATYPES x struct uz_datatype at the address in ENGINE_... (the
 * firmware tells the engine with the DATATYPES register). */

/* An event (card memory, 16 bytes): word 0 UZ_EV_*, word 1 the WR's `msg`
 * (or the frame's), word 2 UZ_S_*, word 3 detail. */
#define UZ_EVENT_BYTES 16u
enum uz_event {
  UZ_EV_WR_DONE = 1,  /* a WR ended (status: UZ_S_*) */
  UZ_EV_COMMAND = 2,  /* msg: the number of a command now in CMD_AREA */
  UZ_EV_DOORBELL = 3, /* detail: a DOORBELL word of a queue other than
                         UZ_QUEUE_COMMANDS (the setup queue) */
  UZ_EV_REFUSED = 4   /* a frame was dropped (status: why, detail: its
                         source node) */
};

#ifdef __cplusplus
}
#endif

#endif
