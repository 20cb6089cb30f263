// Pinning any memory of a host program for the card (VIPL and FM register
// memory the program allocated itself: malloc, static, stack).
//
// The card's DMA engines reach only the host's arena, a shared-memory object
// the emulator maps too. Memory from nicemu::host::alloc is in the arena
// already. Other memory is pinned the way the arena works: its whole pages
// are copied into fresh arena pages, which are then mapped over the same
// virtual addresses (MAP_FIXED). The program keeps its pointers and its
// data; the card now reaches those pages at a bus address. Pinned pages stay
// pinned until the program ends (like mlock'd memory, they cost nothing
// more), so a later registration of the same pages finds them pinned.
//
// Pinned ranges are contiguous in the arena, because the card translates a
// registered region as one extent. When a new range overlaps pages pinned
// earlier elsewhere in the arena, the union is pinned afresh and
// `epoch()` moves on: callers that remember bus addresses translate again.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nicemu::host::pinned {

// The bus address of `p` after making [p, p + len) reachable by the card.
// Throws nicemu::host::Error if the arena is full or a mapping fails.
uint32_t pin(const void *p, size_t len);
// The bus address of `p` if [p, p + len) is reachable now; 0 if not.
uint32_t lookup(const void *p, size_t len);
// Bumped whenever pinned pages moved in the arena.
uint64_t epoch();

} // namespace nicemu::host::pinned
