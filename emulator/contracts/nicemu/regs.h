/* nicemu register map: the single description of every device register.
 *
 * Compiled by both the firmware (freestanding C++, clang for mipsel) and the
 * emulator (C++ on the host). Each device owns one 4 KB window starting at
 * NICEMU_MMIO_BASE. The X-macro tables below are the only place where a
 * register's offset, access and meaning are written down; the emulator derives
 * its name tables (traces, debugger) from them.
 */
#ifndef NICEMU_REGS_H
#define NICEMU_REGS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Fixed architecture addresses (the same on every model). Kept in the MIPS
 * "useg" range: kseg2/kseg3 go through a TLB the core does not have. */
#define NICEMU_MMIO_BASE 0x1F000000u
#define NICEMU_DEVICE_WINDOW 0x1000u
#define NICEMU_FLASH_WINDOW 0x1E000000u /* flash contents, read-only */

/* The card in its host's bus address space (host PIO and doorbells; the
 * host library's sized reads and writes): card memories at their card
 * addresses, doorbell FIFO i at NICEMU_HOST_DOORBELLS + 4 * i. */
#define NICEMU_HOST_DOORBELLS 0xE0000000u
/* On a PCI card several host processes share (nicemu run --procs-per-node),
 * a process reaches only the mailbox page by PIO, and writes only its own
 * word of it: word NICEMU_MAILBOX_PROCESS_WORDS + p for the node's process
 * p. The rest of the page is the card's. */
#define NICEMU_MAILBOX_PROCESS_WORDS 32u

/* Device windows: X(DEVICE, index) */
#define NICEMU_DEVICES(X)                                                      \
  X(SYS, 0)                                                                    \
  X(CONSOLE, 1)                                                                \
  X(TIMER, 2)                                                                  \
  X(IRQ, 3)                                                                    \
  X(HDMA, 4)                                                                   \
  X(TX, 5)                                                                     \
  X(RX, 6)                                                                     \
  X(ROUTE, 7)                                                                  \
  X(DOORBELL, 8)

#define NICEMU_DEVICE_BASE(index)                                              \
  (NICEMU_MMIO_BASE + (index)*NICEMU_DEVICE_WINDOW)

/* Registers: X(DEVICE, NAME, offset, access, description).
 * access: R read-only, W write-only, RW read-write. All registers are 32 bits
 * wide and must be accessed with aligned 32-bit loads and stores. */
#define NICEMU_SYS_REGS(X)                                                     \
  X(SYS, ID, 0x00, R, "identification word 0x4E494345 ('NICE')")               \
  X(SYS, VERSION, 0x04, R, "register-map version")                             \
  X(SYS, MODEL, 0x08, R, "model id from the profile")                          \
  X(SYS, NODE, 0x0C, R, "this node's number")                                  \
  X(SYS, NODES, 0x10, R, "number of nodes in the cluster")                     \
  X(SYS, CLOCK_HZ, 0x14, R, "core clock in Hz")                                \
  X(SYS, CAPS, 0x18, R, "capability bits (NICEMU_CAP_*)")                      \
  X(SYS, EXIT, 0x1C, W, "halt the core; the value is the exit code")           \
  X(SYS, WDT_PERIOD, 0x20, RW, "watchdog period in cycles (0 = off)")          \
  X(SYS, WDT_KICK, 0x24, W, "restart the watchdog period")

#define NICEMU_CONSOLE_REGS(X)                                                 \
  X(CONSOLE, TX, 0x00, W, "write one byte to the node's console")

#define NICEMU_TIMER_REGS(X)                                                   \
  X(TIMER, CYCLE_LO, 0x00, R, "cycle counter, low word (latches CYCLE_HI)")    \
  X(TIMER, CYCLE_HI, 0x04, R, "cycle counter, high word at the last CYCLE_LO") \
  X(TIMER, DEADLINE_LO, 0x08, RW, "timer deadline (absolute cycle), low word") \
  X(TIMER, DEADLINE_HI, 0x0C, RW, "timer deadline, high word")                 \
  X(TIMER, PERIOD, 0x10, RW, "reload period in cycles (0 = one-shot)")         \
  X(TIMER, CTRL, 0x14, RW, "bit 0: enable (arms the deadline)")

#define NICEMU_IRQ_REGS(X)                                                     \
  X(IRQ, PENDING, 0x00, RW, "pending lines; write 1 to clear")                 \
  X(IRQ, ENABLE, 0x04, RW, "lines allowed to interrupt or wake the core")      \
  X(IRQ, MASTER, 0x08, RW, "bit 0: global enable, cleared on entry")           \
  X(IRQ, EPC, 0x0C, R, "PC interrupted by the last interrupt")                 \
  X(IRQ, VECTOR, 0x10, RW, "address of the interrupt stub")                    \
  X(IRQ, CAUSE, 0x14, R, "PENDING & ENABLE when the interrupt was taken")      \
  X(IRQ, RAISE, 0x18, W, "set pending lines (software interrupts)")

/* Host DMA engine: host memory <-> card memory, 32-bit words. */
#define NICEMU_HDMA_REGS(X)                                                    \
  X(HDMA, HOST_ADDR, 0x00, RW, "host (bus) address of the transfer")           \
  X(HDMA, CARD_ADDR, 0x04, RW, "card memory address of the transfer")          \
  X(HDMA, LENGTH, 0x08, RW, "bytes to move (a multiple of 4)")                 \
  X(HDMA, CTRL, 0x0C, W, "start: NICEMU_DMA_START | TO_HOST | IRQ")            \
  X(HDMA, STATUS, 0x10, RW, "BUSY, DONE, ERROR; write 1 to clear DONE/ERROR")  \
  X(HDMA, ERROR, 0x14, R, "why the last transfer failed (NICEMU_DMA_E*)")

/* Tx engine: card memory -> link. The packet at ADDR starts with ROUTE_LEN
 * route bytes; the engine appends a CRC-32 of the rest. */
#define NICEMU_TX_REGS(X)                                                      \
  X(TX, ADDR, 0x00, RW, "card address of the packet (route bytes first)")      \
  X(TX, LENGTH, 0x04, RW, "bytes of the packet, route bytes included")         \
  X(TX, ROUTE_LEN, 0x08, RW, "number of route bytes at the start")             \
  X(TX, CTRL, 0x0C, W, "start: NICEMU_DMA_START | IRQ")                        \
  X(TX, STATUS, 0x10, RW, "BUSY, DONE, ERROR; write 1 to clear DONE/ERROR")    \
  X(TX, ERROR, 0x14, R, "why the last send failed (NICEMU_DMA_E*)")

/* Rx engine: link -> card memory, one packet per ARM. */
#define NICEMU_RX_REGS(X)                                                      \
  X(RX, ADDR, 0x00, RW, "card address of the receive buffer")                  \
  X(RX, SIZE, 0x04, RW, "bytes available in the buffer")                       \
  X(RX, CTRL, 0x08, W, "ARM (clears DONE and errors) | NICEMU_DMA_IRQ")        \
  X(RX, STATUS, 0x0C, RW, "ARMED, DONE, CRC_ERROR, TRUNCATED; write 1 clears") \
  X(RX, LENGTH, 0x10, R, "payload bytes of the last packet (CRC removed)")

/* Route table: the routes the emulator computed from the topology (standing
 * in for Myrinet's mapper). Write DEST, then read the route of that node. */
#define NICEMU_ROUTE_REGS(X)                                                   \
  X(ROUTE, DEST, 0x00, RW, "node to route to")                                 \
  X(ROUTE, LENGTH, 0x04, R, "route bytes to DEST (0: DEST is this node)")      \
  X(ROUTE, BYTES_LO, 0x08, R, "route bytes 0-3 (byte 0 = first switch)")       \
  X(ROUTE, BYTES_HI, 0x0C, R, "route bytes 4-7")                               \
  X(ROUTE, MAC_LO, 0x10, R, "Ethernet MAC of DEST, bytes 0-3 (byte 0 first)")  \
  X(ROUTE, MAC_HI, 0x14, R, "Ethernet MAC of DEST, bytes 4-5")                 \
  X(ROUTE, IPV4, 0x18, R, "IPv4 address of DEST (a.b.c.d as 0xaabbccdd)")

/* Doorbells: FIFOs of 32-bit words that the host writes (on `comet`, the
 * physical address of a posted descriptor). The firmware pops them. */
#define NICEMU_DOORBELL_REGS(X)                                                \
  X(DOORBELL, NONEMPTY, 0x00, R, "bit i: FIFO i holds at least one entry")     \
  X(DOORBELL, FIFOS, 0x04, R, "number of FIFOs")                               \
  X(DOORBELL, DEPTH, 0x08, R, "entries each FIFO holds")                       \
  X(DOORBELL, SELECT, 0x0C, RW, "FIFO that COUNT and POP act on")              \
  X(DOORBELL, COUNT, 0x10, R, "entries in the selected FIFO")                  \
  X(DOORBELL, POP, 0x14, R,                                                    \
    "take the oldest entry of the selected FIFO (0: empty)")                   \
  X(DOORBELL, SOURCE, 0x18, R,                                                 \
    "who rang the entry POP last took: the process's place on its node")

#define NICEMU_ALL_REGS(X)                                                     \
  NICEMU_SYS_REGS(X)                                                           \
  NICEMU_CONSOLE_REGS(X)                                                       \
  NICEMU_TIMER_REGS(X)                                                         \
  NICEMU_IRQ_REGS(X)                                                           \
  NICEMU_HDMA_REGS(X)                                                          \
  NICEMU_TX_REGS(X)                                                            \
  NICEMU_RX_REGS(X)                                                            \
  NICEMU_ROUTE_REGS(X)                                                         \
  NICEMU_DOORBELL_REGS(X)

/* Offsets within each window (NICEMU_<DEV>_<NAME>) and window bases
 * (NICEMU_<DEV>_BASE), in one enumeration so that `base + offset` is plain
 * integer arithmetic in C and C++ alike. */
#define NICEMU_REG_OFFSET_ENUM(dev, name, off, acc, desc)                      \
  NICEMU_##dev##_##name = (off),
#define NICEMU_DEVICE_BASE_ENUM(dev, index)                                    \
  NICEMU_##dev##_BASE = (int)NICEMU_DEVICE_BASE(index),
enum nicemu_register {
  NICEMU_ALL_REGS(NICEMU_REG_OFFSET_ENUM)
      NICEMU_DEVICES(NICEMU_DEVICE_BASE_ENUM)
};
#undef NICEMU_REG_OFFSET_ENUM
#undef NICEMU_DEVICE_BASE_ENUM

#define NICEMU_ID_MAGIC 0x4E494345u /* 'NICE' */
#define NICEMU_REGS_VERSION 1u

/* Interrupt lines (bits of IRQ_PENDING / IRQ_ENABLE). */
#define NICEMU_IRQ_TIMER (1u << 0)
#define NICEMU_IRQ_SOFT (1u << 1)
#define NICEMU_IRQ_HDMA (1u << 2)
#define NICEMU_IRQ_TX (1u << 3)
#define NICEMU_IRQ_RX (1u << 4)
/* A host wrote the mailbox page (the last 4 KiB of data memory) by PIO:
 * firmware can sleep until its host asks for something. */
#define NICEMU_IRQ_HOST (1u << 5)
/* A doorbell FIFO went from empty to non-empty. */
#define NICEMU_IRQ_DOORBELL (1u << 6)

/* DMA engines (HDMA, TX): CTRL and STATUS bits, error codes. */
#define NICEMU_DMA_START (1u << 0)
#define NICEMU_DMA_TO_HOST (1u << 1) /* HDMA: card -> host */
#define NICEMU_DMA_IRQ (1u << 2)     /* raise the engine's line when done */
#define NICEMU_DMA_BUSY (1u << 0)
#define NICEMU_DMA_DONE (1u << 1)
#define NICEMU_DMA_ERROR (1u << 2)
#define NICEMU_DMA_EHOST 1u   /* host address not in registered memory */
#define NICEMU_DMA_ECARD 2u   /* card address outside card memory */
#define NICEMU_DMA_ELENGTH 3u /* length zero, unaligned or too long */
#define NICEMU_DMA_EBUSY 4u   /* started while busy */
#define NICEMU_DMA_ENOHOST 5u /* no host attached to this node */
#define NICEMU_DMA_ENOLINK 6u /* no network attached to this node */

/* RX_CTRL and RX_STATUS bits. */
#define NICEMU_RX_ARM (1u << 0)
#define NICEMU_RX_ARMED (1u << 0)
#define NICEMU_RX_DONE (1u << 1)
#define NICEMU_RX_CRC_ERROR (1u << 2)
#define NICEMU_RX_TRUNCATED (1u << 3)

/* ROUTE: the most route bytes the table holds (BYTES_LO, BYTES_HI). A
 * source-routed network with a longer route is refused when the run is
 * built; where the switches route by address (Ethernet) a longer route
 * reads as LENGTH NICEMU_ROUTE_TOO_LONG and no bytes. */
#define NICEMU_ROUTE_MAX_BYTES 8u
#define NICEMU_ROUTE_TOO_LONG 0xFFFFFFFFu

/* TIMER_CTRL bits. */
#define NICEMU_TIMER_ENABLE (1u << 0)

/* Capability bits (SYS_CAPS). */
#define NICEMU_CAP_TIMER (1u << 0)
#define NICEMU_CAP_IRQ (1u << 1)
#define NICEMU_CAP_WATCHDOG (1u << 2)
#define NICEMU_CAP_HDMA (1u << 3)
#define NICEMU_CAP_NETWORK (1u << 4)
#define NICEMU_CAP_DOORBELL (1u << 5)
#define NICEMU_CAP_ETHERNET (1u << 6) /* links carry Ethernet frames */

#ifdef __cplusplus
}
#endif

#endif /* NICEMU_REGS_H */
