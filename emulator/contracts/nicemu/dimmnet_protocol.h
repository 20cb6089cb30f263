/* The dimmnet firmware and the host library (nicemu/dimmnet.h) agree on
 * this (docs/dimmnet.md): the privileged request mailbox through which a
 * host sets up header seeds and receive regions, the header translation
 * table the firmware refills the HTLB from, and the command codes its
 * handlers serve. Compiled by firmware, emulator and host library alike. */
#ifndef NICEMU_DIMMNET_PROTOCOL_H
#define NICEMU_DIMMNET_PROTOCOL_H

#include "nicemu/martini.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The mailbox: the last 4 KiB of data SRAM, reached by the host at
 * NICEMU_MARTINI_HOST_PRIV in 32-bit words. Each host process of the node
 * has a slot of its own (its index on the node, nicemu run
 * --procs-per-node): it writes OP and the arguments, then SEQ (one more
 * than the last); each write wakes the core (NICEMU_IRQ_HOST). The
 * firmware answers with RESULT, then DONE = SEQ. */
#define DIMMNET_BOX_SLOTS 15u
#define DIMMNET_BOX_SLOT_BYTES 0x100u
#define DIMMNET_BOX_SEQ 0x00u /* within a slot */
#define DIMMNET_BOX_OP 0x04u
#define DIMMNET_BOX_ARG 0x08u /* 12 words */
#define DIMMNET_BOX_ARGS 12u
#define DIMMNET_BOX_DONE 0x40u
#define DIMMNET_BOX_RESULT 0x44u
/* The card's words, after the slots. */
#define DIMMNET_BOX_READY 0xF00u /* DIMMNET_READY once the firmware serves */
/* Counters the host may read. */
#define DIMMNET_BOX_STAT_MISSES 0xF10u   /* HTLB misses served */
#define DIMMNET_BOX_STAT_REJECTS 0xF14u  /* of which rejected */
#define DIMMNET_BOX_STAT_COMMANDS 0xF18u /* command packets handled */
#define DIMMNET_BOX_STAT_UNKNOWN 0xF1Cu  /* command packets nobody serves */
#define DIMMNET_BOX_STAT_REFUSED 0xF20u  /* command packets failing checks */

#define DIMMNET_READY 0x444D4E31u /* 'DMN1' */

/* Requests (DIMMNET_BOX_OP) and their arguments. */
#define DIMMNET_OP_SET_SEED 1u     /* page, then the seed's 8 words */
#define DIMMNET_OP_CLEAR_SEED 2u   /* page (also flushed from the HTLB) */
#define DIMMNET_OP_OPEN_REGION 3u  /* region, LLCM offset, bytes, owner */
#define DIMMNET_OP_CLOSE_REGION 4u /* region */

/* RESULT. */
#define DIMMNET_OK 0u
#define DIMMNET_EOP 1u     /* no such request */
#define DIMMNET_EPAGE 2u   /* page outside the translation table */
#define DIMMNET_EREGION 3u /* no such region, or outside LLCM */

/* The header translation table: one seed per kick page below this. */
#define DIMMNET_HTT_PAGES 2048u

/* Commands the firmware serves (an AOTF seed's command code); the
 * hardware serves NICEMU_MARTINI_CMD_WRITE itself.
 * ADD64: adds the packet's 8 bytes to the 64-bit LLCM word at its address
 * (in its region, checked like a hardware write). */
#define DIMMNET_CMD_ADD64 0x10u
/* INTERRUPT_WRITE: interrupt-AOTF. The core writes the packet's 1-8 bytes
 * into LLCM at its address (checked like a hardware write): the same
 * effect as NICEMU_MARTINI_CMD_WRITE through the core's interrupt, so the
 * two paths can be compared. */
#define DIMMNET_CMD_INTERRUPT_WRITE 0x11u
/* REGISTER: dynamic registration of a DIMM_Send/DIMM_Recv flag entry. The
 * packet's address names the head of a flag region (its first word counts
 * the ranks registered); its 8 bytes are the sending node's entry, which
 * the core writes into that node's line (the head's line + 1 + node, of
 * DIMMNET_FLAG_LINE bytes each, checked like a hardware write), counting
 * the node in the head the first time. */
#define DIMMNET_CMD_REGISTER 0x12u
#define DIMMNET_FLAG_LINE 32u
/* Registered ranks per flag region the core keeps track of. */
#define DIMMNET_REGISTER_NODES 256u

#ifdef __cplusplus
}
#endif

#endif /* NICEMU_DIMMNET_PROTOCOL_H */
