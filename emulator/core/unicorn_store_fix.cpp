// A workaround for a performance bug of Debian 12's Unicorn 2.0.1: every
// guest store to RAM takes the slow path.
//
// Unicorn 2.0 stubs out QEMU's dirty-page bitmap, so every RAM page looks as
// if it might hold translated code. Each store then goes through
// notdirty_write, which first builds a "page collection" (a GTree and
// several mallocs, freed again at once) for page locks that Unicorn never
// takes, and only then checks the page for translated code. Profiling the
// 8-node NI-AM barrier showed one such collection per guest store (5.3 M in
// a 1000-barrier run) and malloc/free among the hottest functions.
//
// Unicorn upstream removed the collection (pull request 1838, "Ignore
// page_collection_lock"). libunicorn calls the two functions through its
// PLT, so a definition in our executable takes their place: the lock hands
// out a token that the library only ever passes back to the unlock. The
// check for translated code (tb_invalidate_phys_page_fast) still runs, so
// self-modifying code is still caught (tests/unit/test_unicorn_store_fix.cpp).
//
// Only Unicorn 2.0.x gets the replacement; any other version is passed
// through to its own functions.
#include "core/unicorn_store_fix.hpp"

#include <unicorn/unicorn.h>

#include <dlfcn.h>

#include <atomic>

namespace nicemu {

namespace {

std::atomic<uint64_t> replaced_locks{0};
char token; // what the lock returns; never dereferenced

bool replacement_applies() {
  static const bool applies = [] {
    unsigned major = 0, minor = 0;
    uc_version(&major, &minor);
    return major == 2 && minor == 0;
  }();
  return applies;
}

template <class Fn> Fn library_function(const char *name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

} // namespace

bool unicorn_store_fix_applies() {
  return replacement_applies();
}

uint64_t unicorn_store_fix_uses() {
  return replaced_locks.load(std::memory_order_relaxed);
}

} // namespace nicemu

// The signatures of Unicorn 2.0.1's translate-all.c (tb_page_addr_t is a
// 64-bit ram address there).
extern "C" {

void *page_collection_lock_mipsel(void *uc, uint64_t start, uint64_t end) {
  if (!nicemu::replacement_applies()) {
    using Lock = void *(*)(void *, uint64_t, uint64_t);
    static const Lock lock =
        nicemu::library_function<Lock>("page_collection_lock_mipsel");
    return lock(uc, start, end);
  }
  nicemu::replaced_locks.fetch_add(1, std::memory_order_relaxed);
  return &nicemu::token;
}

void page_collection_unlock_mipsel(void *set) {
  if (!nicemu::replacement_applies()) {
    using Unlock = void (*)(void *);
    static const Unlock unlock =
        nicemu::library_function<Unlock>("page_collection_unlock_mipsel");
    unlock(set);
  }
}

} // extern "C"
