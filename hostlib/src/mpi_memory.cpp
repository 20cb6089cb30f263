// nicemu's MPI: the registration cache (mpi_memory.hpp), MPI_Alloc_mem,
// MPI_Free_mem and MPI_Get_address.
//
// Registered pages stay registered: nicemu/uzura.h has no way to take a
// page out of the card's tables. Memory the program frees and allocates
// again at the same address is therefore still registered, and still
// correct, as long as the pages stay mapped: the library asks malloc
// (mallopt, at start-up) never to give memory back to the system, as
// MVAPICH does, so freed heap pages keep their mapping.
#include "mpi_memory.hpp"

#include "mpi_base.hpp"
#include "mpi_transport.hpp"
#include "nicemu/uzura.h"

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <map>

namespace nicemu::mpi::memory {

namespace {

constexpr uintptr_t kPage = 4096;

struct Piece {
  uintptr_t end;
  unsigned access;
};
// Registered page ranges by first address; disjoint. A range registered as
// one call may be split here when part of it gains access bits.
std::map<uintptr_t, Piece> pieces;
size_t pages = 0;

// Freed heap memory stays mapped (see above). Runs before main, so it
// holds for memory allocated before MPI_Init as well.
__attribute__((constructor)) void keep_heap_mapped() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

void add_access(std::map<uintptr_t, Piece>::iterator it, uintptr_t from,
                uintptr_t to, unsigned access) {
  uintptr_t start = it->first;
  Piece p = it->second;
  transport::register_now(reinterpret_cast<const void *>(from), to - from,
                          p.access | access);
  pieces.erase(it);
  if (start < from)
    pieces[start] = {from, p.access};
  pieces[from] = {to, p.access | access};
  if (to < p.end)
    pieces[to] = {p.end, p.access};
}

void add_range(uintptr_t from, uintptr_t to, unsigned access) {
  transport::register_now(reinterpret_cast<const void *>(from), to - from,
                          access);
  pieces[from] = {to, access};
  pages += (to - from) / kPage;
}

} // namespace

void ensure_registered(const void *p, size_t len, unsigned access) {
  if (len == 0)
    return;
  uintptr_t a = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
  uintptr_t b =
      (reinterpret_cast<uintptr_t>(p) + len + kPage - 1) & ~(kPage - 1);
  uintptr_t at = a;
  while (at < b) {
    auto next = pieces.upper_bound(at);
    auto it = next;
    if (it != pieces.begin() && std::prev(it)->second.end > at) {
      it = std::prev(it);
      uintptr_t to = std::min(b, it->second.end);
      if ((it->second.access & access) != access)
        add_access(it, at, to, access);
      at = to;
      continue;
    }
    uintptr_t to = next == pieces.end() ? b : std::min(b, next->first);
    add_range(at, to, access);
    at = to;
  }
}

size_t registered_pages() {
  return pages;
}

} // namespace nicemu::mpi::memory

using namespace nicemu::mpi;

extern "C" {

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
  return call("MPI_Alloc_mem", on_world(), [&] {
    require_running();
    if (size < 0)
      fail(MPI_ERR_SIZE, "a negative size");
    if (info != MPI_INFO_NULL)
      fail(MPI_ERR_INFO, "info objects are not supported: pass MPI_INFO_NULL");
    if (!baseptr)
      fail(MPI_ERR_ARG, "a null baseptr");
    void *p = nullptr;
    if (posix_memalign(&p, 4096, size_t(size ? size : 1)) != 0)
      fail(MPI_ERR_NO_MEM,
           "cannot allocate " + std::to_string(size) + " bytes");
    // Ready for the card, as a window's memory.
    try {
      memory::ensure_registered(p, size_t(size ? size : 1),
                                UZ_REMOTE_WRITE | UZ_REMOTE_READ);
    } catch (...) {
      std::free(p);
      throw;
    }
    *static_cast<void **>(baseptr) = p;
  });
}

int MPI_Free_mem(void *base) {
  return call("MPI_Free_mem", on_world(), [&] {
    require_running();
    std::free(base);
  });
}

int MPI_Get_address(const void *location, MPI_Aint *address) {
  return call("MPI_Get_address", on_world(), [&] {
    if (!address)
      fail(MPI_ERR_ARG, "a null address");
    *address = MPI_Aint(reinterpret_cast<uintptr_t>(location));
  });
}

} // extern "C"
