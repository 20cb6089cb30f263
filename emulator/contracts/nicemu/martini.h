/* DIMMnet-1's Martini LSI as its firmware, the emulator and the host
 * library see it (docs/dimmnet.md): the card in the host's bus address
 * space, the packet header on the link, and the OTF device, the core's
 * window onto the on-the-fly hardware. Compiled by firmware and emulator
 * alike, like nicemu/regs.h; the register table uses the sized form:
 *
 *   X(DEVICE, NAME, offset, bits, count, access, description)
 */
#ifndef NICEMU_MARTINI_H
#define NICEMU_MARTINI_H

#include "nicemu/regs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The card on the host's memory bus ------------------------------------
 * A host reaches the card with uncached loads and stores of 1-8 bytes at
 * these addresses (nicemu's choice of places; DIMMnet-1 decoded them from
 * the DIMM's physical range).
 *
 * AOTF kick pages: a store of 1, 2, 4 or 8 bytes to KICK + (page << 12) +
 *   offset sends a packet. The page (16 bits: the HTLB's 8 set bits and 8
 *   tag bits) selects a header seed; the offset (aligned to the store's
 *   size) goes into the remote address, the size into the length.
 * LLCM: the card's 128 KiB LLCM, loads and stores of 1-8 bytes.
 * BOTF windows: window w at BOTF + w * BOTF_STRIDE holds a whole packet,
 *   header first, written with one write-combined burst; a store to
 *   BOTF_KICK + 8 w sends it; a load there reads the window's status.
 * STATUS: the user's view of the send side (credits, rejected stores).
 * BANKS: one 8-byte word per SO-DIMM bank: which side it faces (load),
 *   switched by a store (NICEMU_MARTINI_SIDE_*).
 * RDMA: the PUSH/PULL engine's descriptor, kick and status words.
 * BANK0, BANK1: the SO-DIMM banks, reachable only while they face the
 *   host; loads and stores of 1-8 bytes and bursts of up to 4 KiB.
 * PRIV: the privileged page (the driver's): the firmware's request mailbox
 *   (nicemu/dimmnet_protocol.h), through which seeds and receive regions
 *   are set up. */
#define NICEMU_MARTINI_HOST_KICK 0x80000000u
#define NICEMU_MARTINI_HOST_LLCM 0x90000000u
#define NICEMU_MARTINI_HOST_BOTF 0x91000000u
#define NICEMU_MARTINI_HOST_BOTF_KICK 0x91010000u
#define NICEMU_MARTINI_HOST_STATUS 0x92000000u
#define NICEMU_MARTINI_HOST_PRIV 0x93000000u
/* The driver's word: a process's store of (PGID | PID << 8) makes it that
 * process of that group; the card checks its accesses against the group
 * from then on (a load reads it back; ~0 before). */
#define NICEMU_MARTINI_HOST_JOIN 0x93001000u
#define NICEMU_MARTINI_HOST_BANKS 0x92001000u
#define NICEMU_MARTINI_HOST_RDMA 0x92002000u
#define NICEMU_MARTINI_HOST_BANK0 0xA0000000u
#define NICEMU_MARTINI_HOST_BANK1 0xB0000000u

/* Card memory as PUSH, PULL and receive regions name it: a space in the
 * top 4 bits, an offset in it below. */
#define NICEMU_MARTINI_SPACE_SHIFT 28
#define NICEMU_MARTINI_SPACE_LLCM 0u
#define NICEMU_MARTINI_SPACE_BANK0 1u
#define NICEMU_MARTINI_SPACE_BANK1 2u
#define NICEMU_MARTINI_SPACE_BYTES (1u << NICEMU_MARTINI_SPACE_SHIFT)

#define NICEMU_MARTINI_SIDE_HOST 0u /* the host reaches the bank */
#define NICEMU_MARTINI_SIDE_NIC 1u  /* PUSH and PULL reach it */

/* Words of the RDMA page (8 bytes each): LOCAL, the card address here;
 * REMOTE, the card address on the other node; LENGTH, 1 byte to 16 MiB;
 * TARGET, the other node (bits 0-15), its region (16-23) and the local
 * region (24-31); OWNER, PGID (bits 0-7) and PID (8-15); KICK, a store of
 * NICEMU_MARTINI_PUSH or _PULL (refused while busy, or for a bad length or
 * node); STATUS, NICEMU_MARTINI_RDMA_* bits with the error code in bits
 * 8-15: ELOCAL, the local range is not in its region or its bank faces the
 * host; EREMOTE, the other node refused its range. NOTIFY (PUSH only, with
 * the model option otf.status_address): 0, or NICEMU_MARTINI_NOTIFY_ON |
 * an LLCM offset on the other node, open to the group, where its card
 * writes the transfer's length | 1 << 31 once all of it is in. */
#define NICEMU_MARTINI_RDMA_LOCAL 0x00u
#define NICEMU_MARTINI_RDMA_REMOTE 0x08u
#define NICEMU_MARTINI_RDMA_LENGTH 0x10u
#define NICEMU_MARTINI_RDMA_TARGET 0x18u
#define NICEMU_MARTINI_RDMA_OWNER 0x20u
#define NICEMU_MARTINI_RDMA_KICK 0x28u
#define NICEMU_MARTINI_RDMA_STATUS 0x30u
#define NICEMU_MARTINI_RDMA_NOTIFY 0x38u
#define NICEMU_MARTINI_NOTIFY_ON (1u << 31)
#define NICEMU_MARTINI_PUSH 1u
#define NICEMU_MARTINI_PULL 2u
#define NICEMU_MARTINI_RDMA_BUSY (1u << 0)
#define NICEMU_MARTINI_RDMA_DONE (1u << 1)
#define NICEMU_MARTINI_RDMA_ERROR (1u << 2)
#define NICEMU_MARTINI_RDMA_ELOCAL 1u
#define NICEMU_MARTINI_RDMA_EREMOTE 2u
#define NICEMU_MARTINI_RDMA_PACKET 512u /* payload bytes per data packet */

#define NICEMU_MARTINI_KICK_PAGES 65536u
/* The LLCM in the core's own address space (the model's [[memory]] "llcm"
 * must be there). */
#define NICEMU_MARTINI_LLCM 0x00200000u
#define NICEMU_MARTINI_BOTF_STRIDE 512u

/* Words of the STATUS page (each 8 bytes, read-only). */
#define NICEMU_MARTINI_STATUS_CREDITS 0x00u  /* free transaction credits */
#define NICEMU_MARTINI_STATUS_REJECTED 0x08u /* stores the card rejected */
#define NICEMU_MARTINI_STATUS_SENT 0x10u     /* packets sent */
#define NICEMU_MARTINI_STATUS_DROPPED 0x18u  /* arrivals refused (checks) */
#define NICEMU_MARTINI_STATUS_FEATURES 0x20u /* NICEMU_MARTINI_FEATURE_* */

/* FEATURES bit: packets may carry a receive-status address. */
#define NICEMU_MARTINI_FEATURE_STATUS_ADDRESS (1u << 0)

/* BOTF window status (a load at BOTF_KICK + 8 w). BUSY: kicked, not sent
 * yet. ERROR: a write refused (the window was busy) or a kick refused (a
 * bad header or length, or after a refused write); the next write the
 * window takes clears it. */
#define NICEMU_MARTINI_BOTF_BUSY (1u << 0)
#define NICEMU_MARTINI_BOTF_ERROR (1u << 1)

/* ---- Packet header -------------------------------------------------------
 * Little-endian on the link, payload after it, CRC-32 after the payload.
 * A header seed is the first 32 bytes of a header with the address's low
 * 12 bits and the length zero. */
#define NICEMU_MARTINI_HDR_FLAGS 0   /* 8 bits: NICEMU_MARTINI_F_* */
#define NICEMU_MARTINI_HDR_COMMAND 1 /* 8 bits: NICEMU_MARTINI_CMD_* */
#define NICEMU_MARTINI_HDR_PGID 2    /* 8 bits: process group */
#define NICEMU_MARTINI_HDR_PID 3     /* 8 bits: process in the group */
#define NICEMU_MARTINI_HDR_REGION 4  /* 8 bits: receive region */
#define NICEMU_MARTINI_HDR_SOURCE 5  /* 8 bits: sending node (the card's) */
#define NICEMU_MARTINI_HDR_DEST 6    /* 16 bits: destination node */
/* The destination "every other node": RHiNET-2/SW switches copy the packet
 * to each (multicast); two cabled cards pass it to the other. */
#define NICEMU_MARTINI_DEST_ALL 0xFFFFu
#define NICEMU_MARTINI_HDR_ADDRESS 8 /* 32 bits: remote address */
#define NICEMU_MARTINI_HDR_LENGTH 12 /* 16 bits: payload bytes */
/* 32 bits at 16, only with F_STATUS: the receive-status address. */
#define NICEMU_MARTINI_HDR_STATUS 16
#define NICEMU_MARTINI_HEADER_BYTES 16 /* on the link, without F_STATUS */
#define NICEMU_MARTINI_STATUS_HEADER_BYTES 24 /* with F_STATUS */
#define NICEMU_MARTINI_SEED_BYTES 32

/* F_AOTF: written straight into LLCM. F_SKIP: address-translation skip:
 * the address is an LLCM address, not an offset in the region. */
#define NICEMU_MARTINI_F_AOTF (1u << 0)
#define NICEMU_MARTINI_F_SKIP (1u << 1)
/* F_STATUS: carries a receive-status address (a model option); F_LAST:
 * the last packet of a PUSH or PULL. */
#define NICEMU_MARTINI_F_STATUS (1u << 2)
#define NICEMU_MARTINI_F_LAST (1u << 3)

#define NICEMU_MARTINI_CMD_WRITE 0u /* the hardware path: write into LLCM */
/* The RDMA engine's packets, served by the hardware as well. PUSH and
 * PULL_DATA carry data to the address in the region named; ACK answers the
 * last PUSH packet (or refuses a PULL), its 8-byte payload the error code
 * (0: done); PULL asks for data: the address and region name the source
 * there; its 16-byte payload holds the requester's card address (bytes
 * 0-3), its region (byte 4) and the bytes asked for (8-11). Codes from
 * NICEMU_MARTINI_HARDWARE_CMDS on are handed to the core (OTF_CMD_*). */
#define NICEMU_MARTINI_CMD_PUSH 1u
#define NICEMU_MARTINI_CMD_ACK 2u
#define NICEMU_MARTINI_CMD_PULL 3u
#define NICEMU_MARTINI_CMD_PULL_DATA 4u
#define NICEMU_MARTINI_HARDWARE_CMDS 16u

/* ---- The OTF device: the core's side of the on-the-fly hardware ---------- */
#define NICEMU_MARTINI_DEVICES(X) X(OTF, 9, 0x1000)

#define NICEMU_OTF_REGS(X)                                                     \
  X(OTF, STATUS, 0x000, 32, 1, R,                                              \
    "bit 0 MISS: an AOTF store waits for its seed; bit 1 CMD: a packet "       \
    "with a command the hardware does not know waits")                         \
  X(OTF, MISS_PAGE, 0x004, 32, 1, R, "kick page of the store that missed")     \
  X(OTF, RESOLVE, 0x008, 32, 1, W,                                             \
    "1: install SEED for MISS_PAGE and go on; 2: reject the store")            \
  X(OTF, SEED, 0x010, 64, 4, RW, "the header seed RESOLVE installs")           \
  X(OTF, CMD_HEADER, 0x030, 64, 4, R, "header of the waiting packet")          \
  X(OTF, CMD_DATA, 0x050, 64, 1, R, "first 8 payload bytes of it")             \
  X(OTF, CMD_DONE, 0x058, 32, 1, W, "release it (the next one may come)")      \
  X(OTF, REGION_SELECT, 0x060, 32, 1, RW, "receive region REGION_* act on")    \
  X(OTF, REGION_BASE, 0x064, 32, 1, RW, "LLCM offset of the region")           \
  X(OTF, REGION_SIZE, 0x068, 32, 1, RW, "bytes of the region (0: closed)")     \
  X(OTF, REGION_OWNER, 0x06C, 32, 1, RW,                                       \
    "bits 0-7 PGID, bits 8-15 PID (0xFF: any process of the group)")           \
  X(OTF, HTLB_FLUSH, 0x070, 32, 1, W, "forget the seed of this kick page")     \
  X(OTF, SENT, 0x080, 32, 1, R, "packets sent")                                \
  X(OTF, RECEIVED, 0x084, 32, 1, R, "packets written into LLCM")               \
  X(OTF, DROPPED, 0x088, 32, 1, R, "arrivals refused by the checks")           \
  X(OTF, REJECTED, 0x08C, 32, 1, R, "stores rejected after a miss")            \
  X(OTF, MISSES, 0x090, 32, 1, R, "HTLB misses")                               \
  X(OTF, COMMANDS, 0x094, 32, 1, R, "packets handed to the core")              \
  X(OTF, CREDITS, 0x098, 32, 1, R, "free transaction credits")

#define NICEMU_OTF_OFFSET_ENUM(dev, name, off, bits, count, acc, desc)         \
  NICEMU_##dev##_##name = (off),
#define NICEMU_OTF_BASE_ENUM(dev, page, bytes)                                 \
  NICEMU_##dev##_BASE = (int)NICEMU_DEVICE_BASE(page),
enum nicemu_martini_register {
  NICEMU_OTF_REGS(NICEMU_OTF_OFFSET_ENUM)
      NICEMU_MARTINI_DEVICES(NICEMU_OTF_BASE_ENUM)
};
#undef NICEMU_OTF_OFFSET_ENUM
#undef NICEMU_OTF_BASE_ENUM

#define NICEMU_OTF_MISS (1u << 0)
#define NICEMU_OTF_CMD (1u << 1)
#define NICEMU_OTF_REFILL 1u
#define NICEMU_OTF_REJECT 2u
#define NICEMU_OTF_ANY_PID 0xFFu
#define NICEMU_OTF_REGIONS 64u

#define NICEMU_IRQ_OTF (1u << 7) /* STATUS went non-zero */
#define NICEMU_CAP_OTF (1u << 8) /* the card has the OTF hardware */

#ifdef __cplusplus
}
#endif

#endif /* NICEMU_MARTINI_H */
