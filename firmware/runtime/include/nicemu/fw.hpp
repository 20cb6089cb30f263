// nicemu firmware runtime: the API a firmware uses to talk to its card.
//
// Everything here is freestanding: only the compiler's own <stdint.h>,
// <stddef.h> and <stdarg.h> are used. Register names and offsets come from
// nicemu/regs.h, the map the emulator itself is built from.
#pragma once

#include "nicemu/regs.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

namespace nicemu::fw {

// ---- Registers -----------------------------------------------------------

// A device register: reg(NICEMU_TIMER_BASE, NICEMU_TIMER_CTRL) = 1;
inline volatile uint32_t &reg(uint32_t base, uint32_t offset) {
  return *reinterpret_cast<volatile uint32_t *>(base + offset);
}

// ---- Card identity -------------------------------------------------------

inline uint32_t node_id() {
  return reg(NICEMU_SYS_BASE, NICEMU_SYS_NODE);
}
inline uint32_t node_count() {
  return reg(NICEMU_SYS_BASE, NICEMU_SYS_NODES);
}
inline uint32_t clock_hz() {
  return reg(NICEMU_SYS_BASE, NICEMU_SYS_CLOCK_HZ);
}
inline uint32_t caps() {
  return reg(NICEMU_SYS_BASE, NICEMU_SYS_CAPS);
}

// ---- Time ----------------------------------------------------------------

// The free-running cycle counter. Reading CYCLE_LO latches CYCLE_HI, so the
// two halves always belong together.
inline uint64_t cycles() {
  uint32_t lo = reg(NICEMU_TIMER_BASE, NICEMU_TIMER_CYCLE_LO);
  uint32_t hi = reg(NICEMU_TIMER_BASE, NICEMU_TIMER_CYCLE_HI);
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Raises NICEMU_IRQ_TIMER when cycles() reaches `deadline`, then every
// `period` cycles after that (0 = once).
inline void timer_start(uint64_t deadline, uint32_t period = 0) {
  reg(NICEMU_TIMER_BASE, NICEMU_TIMER_CTRL) = 0;
  reg(NICEMU_TIMER_BASE, NICEMU_TIMER_DEADLINE_LO) =
      static_cast<uint32_t>(deadline);
  reg(NICEMU_TIMER_BASE, NICEMU_TIMER_DEADLINE_HI) =
      static_cast<uint32_t>(deadline >> 32);
  reg(NICEMU_TIMER_BASE, NICEMU_TIMER_PERIOD) = period;
  reg(NICEMU_TIMER_BASE, NICEMU_TIMER_CTRL) = NICEMU_TIMER_ENABLE;
}

inline void timer_stop() {
  reg(NICEMU_TIMER_BASE, NICEMU_TIMER_CTRL) = 0;
}

// Sleeps until an enabled interrupt line (IRQ_PENDING & IRQ_ENABLE) is
// raised. With IRQ_MASTER on, the handler has run when this returns; with it
// off, the line is still pending and the caller clears it.
inline void sleep() {
  asm volatile("wait" ::: "memory");
}

// ---- Interrupts ----------------------------------------------------------

// Called by the interrupt stub with IRQ_CAUSE (the lines that fired), with
// IRQ_MASTER off. It must clear the lines it handled (irq_clear).
using IrqHandler = void (*)(uint32_t cause);

// Installs `handler` and points IRQ_VECTOR at the runtime's stub.
void irq_handler(IrqHandler handler);

// Adds or removes lines from IRQ_ENABLE (the lines that may interrupt or
// wake the core).
inline void irq_enable(uint32_t lines) {
  volatile uint32_t &enable = reg(NICEMU_IRQ_BASE, NICEMU_IRQ_ENABLE);
  enable = enable | lines;
}
inline void irq_disable(uint32_t lines) {
  volatile uint32_t &enable = reg(NICEMU_IRQ_BASE, NICEMU_IRQ_ENABLE);
  enable = enable & ~lines;
}
inline uint32_t irq_pending() {
  return reg(NICEMU_IRQ_BASE, NICEMU_IRQ_PENDING);
}
inline void irq_clear(uint32_t lines) {
  reg(NICEMU_IRQ_BASE, NICEMU_IRQ_PENDING) = lines; // write 1 to clear
}
inline void irq_raise(uint32_t lines) {
  reg(NICEMU_IRQ_BASE, NICEMU_IRQ_RAISE) = lines;
}

// Turns interrupt delivery on or off; returns whether it was on, so a
// critical section can restore it.
inline bool irq_master(bool on) {
  bool was_on = reg(NICEMU_IRQ_BASE, NICEMU_IRQ_MASTER) & 1u;
  reg(NICEMU_IRQ_BASE, NICEMU_IRQ_MASTER) = on ? 1u : 0u;
  return was_on;
}

// ---- Host mailbox --------------------------------------------------------

// The last page of data memory, where host programs write requests by PIO
// (defined by the linker script).
extern "C" uint32_t nicemu_mailbox[1024];
inline volatile uint32_t *mailbox() {
  return nicemu_mailbox;
}

// ---- Host DMA ------------------------------------------------------------

// Starts a host DMA of `bytes` (a multiple of 4) between registered host
// memory at bus address `host` and card memory. Returns false if the engine
// refused it (see hdma_error()); completion shows as NICEMU_DMA_DONE in
// hdma_status() and, with `irq`, as NICEMU_IRQ_HDMA.
inline bool hdma_start(uint32_t host, const void *card, uint32_t bytes,
                       bool to_host, bool irq = false) {
  reg(NICEMU_HDMA_BASE, NICEMU_HDMA_STATUS) =
      NICEMU_DMA_DONE | NICEMU_DMA_ERROR;
  reg(NICEMU_HDMA_BASE, NICEMU_HDMA_HOST_ADDR) = host;
  reg(NICEMU_HDMA_BASE, NICEMU_HDMA_CARD_ADDR) =
      static_cast<uint32_t>(reinterpret_cast<uintptr_t>(card));
  reg(NICEMU_HDMA_BASE, NICEMU_HDMA_LENGTH) = bytes;
  reg(NICEMU_HDMA_BASE, NICEMU_HDMA_CTRL) =
      NICEMU_DMA_START | (to_host ? NICEMU_DMA_TO_HOST : 0u) |
      (irq ? NICEMU_DMA_IRQ : 0u);
  return !(reg(NICEMU_HDMA_BASE, NICEMU_HDMA_STATUS) & NICEMU_DMA_ERROR);
}
inline uint32_t hdma_status() {
  return reg(NICEMU_HDMA_BASE, NICEMU_HDMA_STATUS);
}
inline uint32_t hdma_error() {
  return reg(NICEMU_HDMA_BASE, NICEMU_HDMA_ERROR);
}

// ---- Doorbells -----------------------------------------------------------

// FIFOs of 32-bit words the host writes (NICEMU_CAP_DOORBELL; on comet, the
// physical address of a posted descriptor). A FIFO going from empty to
// non-empty raises NICEMU_IRQ_DOORBELL. Bit i: FIFO i holds an entry.
inline uint32_t doorbell_nonempty() {
  return reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_NONEMPTY);
}
// Entries waiting in FIFO `fifo`.
inline uint32_t doorbell_count(uint32_t fifo) {
  reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_SELECT) = fifo;
  return reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_COUNT);
}
// Takes the oldest entry of FIFO `fifo` (0 if it is empty: check
// doorbell_nonempty() or doorbell_count() when 0 is a valid entry). A host
// write held because the FIFO was full lands as this frees its entry.
inline uint32_t doorbell_pop(uint32_t fifo) {
  reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_SELECT) = fifo;
  return reg(NICEMU_DOORBELL_BASE, NICEMU_DOORBELL_POP);
}

// ---- Network -------------------------------------------------------------

// The route to `node` (bytes in order, first switch first); returns its
// length (0 for this node). Routes come from the emulator's topology.
inline uint32_t route_to(uint32_t node, uint8_t *route, uint32_t max) {
  reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_DEST) = node;
  uint32_t n = reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_LENGTH);
  uint32_t lo = reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_BYTES_LO);
  uint32_t hi = reg(NICEMU_ROUTE_BASE, NICEMU_ROUTE_BYTES_HI);
  for (uint32_t i = 0; i < n && i < max && i < 8; ++i)
    route[i] =
        static_cast<uint8_t>((i < 4 ? lo >> (8 * i) : hi >> (8 * (i - 4))));
  return n;
}

// Sends the packet at `packet` (`route_len` route bytes, then the payload;
// `bytes` in all). Completion: NICEMU_DMA_DONE in tx_status().
inline bool tx_start(const void *packet, uint32_t bytes, uint32_t route_len,
                     bool irq = false) {
  reg(NICEMU_TX_BASE, NICEMU_TX_STATUS) = NICEMU_DMA_DONE | NICEMU_DMA_ERROR;
  reg(NICEMU_TX_BASE, NICEMU_TX_ADDR) =
      static_cast<uint32_t>(reinterpret_cast<uintptr_t>(packet));
  reg(NICEMU_TX_BASE, NICEMU_TX_LENGTH) = bytes;
  reg(NICEMU_TX_BASE, NICEMU_TX_ROUTE_LEN) = route_len;
  reg(NICEMU_TX_BASE, NICEMU_TX_CTRL) =
      NICEMU_DMA_START | (irq ? NICEMU_DMA_IRQ : 0u);
  return !(reg(NICEMU_TX_BASE, NICEMU_TX_STATUS) & NICEMU_DMA_ERROR);
}
inline uint32_t tx_status() {
  return reg(NICEMU_TX_BASE, NICEMU_TX_STATUS);
}

// Accepts the next packet into `buffer` (`size` bytes). Completion:
// NICEMU_RX_DONE in rx_status(); rx_length() is the payload's length.
inline void rx_arm(void *buffer, uint32_t size, bool irq = false) {
  reg(NICEMU_RX_BASE, NICEMU_RX_STATUS) =
      NICEMU_RX_DONE | NICEMU_RX_CRC_ERROR | NICEMU_RX_TRUNCATED;
  reg(NICEMU_RX_BASE, NICEMU_RX_ADDR) =
      static_cast<uint32_t>(reinterpret_cast<uintptr_t>(buffer));
  reg(NICEMU_RX_BASE, NICEMU_RX_SIZE) = size;
  reg(NICEMU_RX_BASE, NICEMU_RX_CTRL) =
      NICEMU_RX_ARM | (irq ? NICEMU_DMA_IRQ : 0u);
}
inline uint32_t rx_status() {
  return reg(NICEMU_RX_BASE, NICEMU_RX_STATUS);
}
inline uint32_t rx_length() {
  return reg(NICEMU_RX_BASE, NICEMU_RX_LENGTH);
}

// ---- Watchdog ------------------------------------------------------------

// The card halts with a watchdog fault if not kicked within `cycles`
// (0 = off).
inline void watchdog_period(uint32_t cycles) {
  reg(NICEMU_SYS_BASE, NICEMU_SYS_WDT_PERIOD) = cycles;
}
inline void watchdog_kick() {
  reg(NICEMU_SYS_BASE, NICEMU_SYS_WDT_KICK) = 1;
}

// ---- Console -------------------------------------------------------------

inline void console_putc(char c) {
  reg(NICEMU_CONSOLE_BASE, NICEMU_CONSOLE_TX) = static_cast<uint8_t>(c);
}
void console_write(const char *data, size_t size);
void console_write(const char *text);
// Writes `text` and a newline, like C's puts.
void puts(const char *text);

// printf to the console. Conversions: %d %i %u %x %X %p %s %c %%, with the
// flags '-' and '0', a width, and the l, ll and z length modifiers. No
// floating point. Returns the number of characters written.
int printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *format, va_list args);
// The same into a buffer; always NUL-terminated when size > 0. Returns the
// length the full text would have had.
int snprintf(char *buffer, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
int vsnprintf(char *buffer, size_t size, const char *format, va_list args);

// ---- Exit ----------------------------------------------------------------

// Halts the card with `code` (SYS_EXIT). Returning from main does the same.
[[noreturn]] void exit(int code);

} // namespace nicemu::fw

// Marks a firmware handler: `NICEMU_HANDLER void on_packet(...)`. The
// function goes to a .text.nicemu.handler section, which `nicemu image`
// records in the image's symbols, so `nicemu run --report cycles` measures
// every call of it without being told its name. It is never inlined (an
// inlined copy could not be measured).
#define NICEMU_HANDLER                                                         \
  __attribute__((section(".text.nicemu.handler"), noinline, used))

// The runtime's C entry points, named for the emulator, benchmarks and the
// debugger.
extern "C" {
// Writes SYS_EXIT and spins. Every exit of the firmware goes through here.
[[noreturn]] void nicemu_exit(int code);
// The interrupt stub IRQ_VECTOR points at (irq_stub.S).
void nicemu_irq_stub();
}

// The C library subset the runtime provides (string.cpp); clang also calls
// memcpy/memset/memmove on its own for copies and clears.
extern "C" {
void *memcpy(void *dest, const void *src, size_t n);
void *memmove(void *dest, const void *src, size_t n);
void *memset(void *dest, int value, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *text);
int strcmp(const char *a, const char *b);
}
