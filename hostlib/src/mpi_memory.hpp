// nicemu's MPI: memory the card reaches. The card translates a program's
// virtual addresses through tables the host library fills (uz_register);
// this cache remembers which pages are registered, with which remote
// access bits, so that a buffer used again costs nothing (docs/mpi.md,
// "Memory").
#pragma once

#include <cstddef>

namespace nicemu::mpi::memory {

// Makes [p, p + len) reachable by the card with `access` (UZ_REMOTE_WRITE,
// UZ_REMOTE_READ, or 0: this process's own operations only). Registers
// only the pages not registered before with those bits, each range within
// one earlier registration or wholly outside all of them (so no pinned
// page ever moves under an operation in flight).
void ensure_registered(const void *p, size_t len, unsigned access);

// Pages registered so far (tests, diagnostics).
size_t registered_pages();

} // namespace nicemu::mpi::memory
