/* nicemu host library, C API: the same calls as the C++ API
 * (nicemu/host.hpp), for C programs and for bindings from other languages.
 * The program is started by `nicemu run -n N -- ./prog`; every call is
 * charged its host-bus cost on the virtual clock. Link with nicemu::host (a
 * C++ library: link the program with the C++ compiler, or add the C++
 * runtime).
 *
 * Errors: every call that can fail returns an int status, NICEMU_OK (0) or
 * one of the negative NICEMU_E* codes below; a result is stored through the
 * last parameter (`out`), only on success. Out-pointers must not be NULL
 * unless a call says otherwise. After a failure, nicemu_last_error() gives
 * its message. Nothing thrown inside the library ever reaches the caller.
 *
 * The declarations are C89 (with <stdint.h>), so old C code compiles with
 * -std=gnu89. Like the C++ API, the library is meant to be called from one
 * thread of the program. */
#ifndef NICEMU_HOST_H
#define NICEMU_HOST_H

#include <stddef.h>
#include <stdint.h>

/* C++ callers learn that these calls never throw. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define NICEMU_NOEXCEPT noexcept
#else
#define NICEMU_NOEXCEPT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes ---- */
#define NICEMU_OK 0
/* A bad argument: a NULL pointer, memory that does not come from
 * nicemu_alloc, a zero size, an unaligned or unknown card address. */
#define NICEMU_EINVAL (-1)
/* Registered memory or NIC registration slots are used up. */
#define NICEMU_ENOMEM (-2)
/* The program was not started by `nicemu run` (or its channel to the
 * emulator cannot be opened). */
#define NICEMU_ENOTRUN (-3)
/* The cluster is stopping: another host failed, the firmware faulted, the
 * emulator is gone. Every later call fails the same way. */
#define NICEMU_ESTOPPED (-4)
/* A call out of order: a collective posted while another is pending,
 * nicemu_barrier_wait() without nicemu_barrier_post(). */
#define NICEMU_ESTATE (-5)
/* Any other failure; nicemu_last_error() says what happened. */
#define NICEMU_EFAIL (-6)

/* The message of the last failed call in this thread ("" if none failed
 * yet). Successful calls leave it unchanged, like errno. The text stays
 * valid until the next failure in the same thread. */
const char *nicemu_last_error(void) NICEMU_NOEXCEPT;
/* A short fixed description of a status code, e.g. "bad argument". */
const char *nicemu_strerror(int status) NICEMU_NOEXCEPT;

/* The nicemu release this library belongs to, e.g. "0.1.0". */
const char *nicemu_version(void) NICEMU_NOEXCEPT;

/* ---- Node and clock ---- */
/* This process's rank (its node number) and the number of ranks. The first
 * call of a program opens its channel to the emulator: outside `nicemu run`
 * it fails with NICEMU_ENOTRUN. */
int nicemu_rank(uint32_t *out) NICEMU_NOEXCEPT;
int nicemu_size(uint32_t *out) NICEMU_NOEXCEPT;

/* The virtual clock, in picoseconds and in microseconds. */
int nicemu_now_ps(uint64_t *out) NICEMU_NOEXCEPT;
int nicemu_now_us(double *out) NICEMU_NOEXCEPT;
/* Spends `ps` of virtual time computing (the host's own work). A duration
 * that would pass the end of virtual time (2^63 ps, about 106.7 days) is
 * NICEMU_EINVAL, and the clock stays where it was. */
int nicemu_compute(uint64_t ps) NICEMU_NOEXCEPT;

/* ---- Registered memory and PIO ---- */
/* Stores in *out a NIC-reachable buffer of `bytes` (> 0) from the host's
 * arena, aligned to 64 bytes. Freed when the program ends. */
int nicemu_alloc(size_t bytes, void **out) NICEMU_NOEXCEPT;
/* The bus address the NIC's DMA engines use for `p`, which must lie in
 * memory from nicemu_alloc (else NICEMU_EINVAL). */
int nicemu_bus_address(const void *p, uint32_t *out) NICEMU_NOEXCEPT;

/* Programmed I/O to card memory: one 32-bit word, charged the model's PIO
 * cost. `card_addr` must be word-aligned card memory. */
int nicemu_pio_write(uint32_t card_addr, uint32_t value) NICEMU_NOEXCEPT;
int nicemu_pio_read(uint32_t card_addr, uint32_t *out) NICEMU_NOEXCEPT;
/* The card address of the host mailbox (the last page of card data memory,
 * where firmware expects host requests). */
int nicemu_mailbox(uint32_t *out) NICEMU_NOEXCEPT;

/* Waits until (*word & mask) == expected, where `word` is in memory from
 * nicemu_alloc that the NIC writes by DMA, and stores the word in *out
 * (`out` may be NULL). */
int nicemu_wait_word(const volatile uint32_t *word, uint32_t mask,
                     uint32_t expected, uint32_t *out) NICEMU_NOEXCEPT;
/* As nicemu_wait_word, but gives up at the virtual time `deadline_ps`
 * (absolute, like nicemu_now_ps). Stores in *matched 1 if the word matched
 * by the deadline (noticed one poll after the write lands), 0 if not (the
 * call then returns at the deadline exactly; at once if it has passed).
 * Timing out is not a failure: the call returns NICEMU_OK. Stores the word
 * as last seen in *value_out, which may be NULL; `matched` may not.
 * UINT64_MAX is no deadline; any other deadline past the end of virtual
 * time (2^63 ps) is NICEMU_EINVAL. */
int nicemu_wait_word_until(const volatile uint32_t *word, uint32_t mask,
                           uint32_t expected, uint64_t deadline_ps,
                           uint32_t *value_out, int *matched) NICEMU_NOEXCEPT;

/* Rings doorbell FIFO `fifo` of the NIC with `value` (on comet, the
 * physical address of a posted descriptor), charged the model's doorbell
 * write. A full FIFO holds the write, as a PCI retry does, until the
 * firmware pops an entry of it; the call returns then. A FIFO the NIC does
 * not have (or a model without doorbells): NICEMU_EINVAL. */
int nicemu_doorbell(uint32_t fifo, uint32_t value) NICEMU_NOEXCEPT;

/* ---- NI Active Messages (the niam firmware: --firmware niam.img) ----
 * Collectives run on the NICs (docs/niam.md). Every rank must call the same
 * collectives in the same order, one at a time. */

/* Returns when every rank has entered the barrier. */
int nicemu_barrier(void) NICEMU_NOEXCEPT;
/* Fuzzy barrier: nicemu_barrier_post() enters it and returns at once;
 * nicemu_barrier_wait() returns when every rank has entered it. */
int nicemu_barrier_post(void) NICEMU_NOEXCEPT;
int nicemu_barrier_wait(void) NICEMU_NOEXCEPT;

/* The sum (wrapping), minimum or maximum of `value` over all ranks, stored
 * in *out; every rank gets the same result. */
int nicemu_allreduce_sum(int32_t value, int32_t *out) NICEMU_NOEXCEPT;
int nicemu_allreduce_min(int32_t value, int32_t *out) NICEMU_NOEXCEPT;
int nicemu_allreduce_max(int32_t value, int32_t *out) NICEMU_NOEXCEPT;

/* Posts a raw request to the local NIC's handler `handler` (an index into
 * the firmware's handler table, niam_protocol.h) with six argument words;
 * no completion. For new primitives and tests. */
int nicemu_am_request(uint32_t handler, const uint32_t args[6]) NICEMU_NOEXCEPT;

/* The niam firmware's counters, read by PIO: AMs naming an unknown handler
 * (dropped, never called) and malformed packets or requests. */
int nicemu_am_unknown_handlers(uint32_t *out) NICEMU_NOEXCEPT;
int nicemu_am_bad_packets(uint32_t *out) NICEMU_NOEXCEPT;

/* ---- Remote memory transfers (NI-AM; docs/niam.md) ----
 * Addresses name memory from nicemu_am_alloc: a pointer stands for its
 * offset in the registered arena, so when every rank makes the same
 * nicemu_alloc/nicemu_am_alloc calls in the same order, a pointer to a local
 * buffer also names the matching buffer on every other rank. Sizes and
 * addresses are multiples of 4 bytes. A node out of range, an address
 * outside this process's am_alloc'd memory, an unaligned or empty transfer:
 * NICEMU_EINVAL. */

/* Like nicemu_alloc, but page-aligned, whole pages, and entered into the
 * local NIC's page table, so other nodes may read and write it. Call
 * nicemu_barrier() after the ranks' am_allocs before another node uses the
 * memory. Too large for the NIC's page table: NICEMU_ENOMEM. */
int nicemu_am_alloc(size_t bytes, void **out) NICEMU_NOEXCEPT;

/* Copies `bytes` from `src` on node `src_node` to `dst` on node `dst_node`.
 * Returns once the local NIC has the request; the data moves later (see
 * nicemu_sync). Any node may issue it. */
int nicemu_bcopy(uint32_t src_node, const void *src, uint32_t dst_node,
                 void *dst, size_t bytes) NICEMU_NOEXCEPT;
/* As nicemu_bcopy; then, once the data is in place, the destination NIC
 * writes `value` into `*flag` (a word of dst_node's memory, named like
 * `dst`). */
int nicemu_bcopy_notify(uint32_t src_node, const void *src, uint32_t dst_node,
                        void *dst, size_t bytes, volatile uint32_t *flag,
                        uint32_t value) NICEMU_NOEXCEPT;
/* Waits until every transfer this node issued has been acknowledged, and
 * stores in *refused (which may be NULL) how many of them a NIC refused
 * since the program started. Refused transfers are not a failure of this
 * call: it returns NICEMU_OK. */
int nicemu_sync(uint32_t *refused) NICEMU_NOEXCEPT;

/* Addresses this NIC refused (transfers, counted once each), read by PIO. */
int nicemu_am_protection_errors(uint32_t *out) NICEMU_NOEXCEPT;
/* The NIC virtual address of `p` (its offset in the registered arena), for
 * raw requests (nicemu_am_request with the arguments of niam_protocol.h). */
int nicemu_am_address(const void *p, uint32_t *out) NICEMU_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NICEMU_HOST_H */
