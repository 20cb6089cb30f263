// nicemu host library (C++): what a host program uses to drive its node's
// emulated NIC. The program is started by `nicemu run -n N -- ./prog`; every
// call is charged its host-bus cost on the virtual clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace nicemu::host {

// Thrown when a call cannot be carried out: bad arguments, the program was
// not started by `nicemu run`, or the cluster is stopping.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The nicemu release this library belongs to, e.g. "0.1.0".
const char *version();

// This process's rank (its node number) and the number of ranks.
uint32_t rank();
uint32_t size();

// The virtual clock, in picoseconds and in microseconds.
uint64_t now_ps();
double now_us();
// Spends `ps` of virtual time computing (the host's own work).
void compute(uint64_t ps);

// Registered memory: NIC-reachable buffers from the host's arena, aligned to
// 64 bytes. Freed when the program ends.
void *alloc(size_t bytes);
// The bus address the NIC's DMA engines use for `p` (inside alloc'd memory).
uint32_t bus_address(const void *p);

// Programmed I/O to card memory: one 32-bit word, charged the model's PIO
// cost. `card_addr` must be word-aligned card memory.
void pio_write(uint32_t card_addr, uint32_t value);
uint32_t pio_read(uint32_t card_addr);
// The card address of the host mailbox (the last page of card data memory,
// where firmware expects host requests).
uint32_t mailbox();

// Waits until (*word & mask) == expected, where `word` is in alloc'd memory
// that the NIC writes by DMA; returns the word. The host notices the change
// one poll after the write lands.
uint32_t wait_word(const volatile uint32_t *word, uint32_t mask,
                   uint32_t expected);

} // namespace nicemu::host
