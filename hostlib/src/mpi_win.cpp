// nicemu's MPI: windows (mpi_win.hpp): creation and release, attached
// memory, the lock manager, and the synchronisation messages.
#include "mpi_win.hpp"

#include "mpi_coll.hpp"
#include "mpi_memory.hpp"
#include "mpi_transport.hpp"
#include "nicemu/uzura.h"

#include <cstdlib>
#include <cstring>
#include <map>

namespace nicemu::mpi {

namespace {

using transport::Msg;

Table<Win> wins(Kind::Win, "window", MPI_ERR_WIN);
std::map<uint16_t, Win *> by_ctx;
// Synchronisation messages for a window this process has not finished
// creating (its creator's last step may come after another's first use).
std::vector<transport::Arrival> early;
bool strict = false;

constexpr unsigned kRemote = UZ_REMOTE_WRITE | UZ_REMOTE_READ;

void grant(Win &w, int origin, int type) {
  if (type == MPI_LOCK_EXCLUSIVE)
    w.exclusive_holder = origin;
  else
    ++w.shared_holders;
  if (origin == w.rank)
    w.granted[size_t(origin)] = true;
  else
    transport::send(w.world(origin), Msg::LockGrant, uint32_t(type), w.ctx(),
                    nullptr, 0);
}

bool free_for(const Win &w, int type) {
  return w.exclusive_holder < 0 &&
         (type == MPI_LOCK_SHARED || w.shared_holders == 0);
}

void manager_request(Win &w, int origin, int type) {
  if (w.waiting.empty() && free_for(w, type))
    grant(w, origin, type);
  else
    w.waiting.emplace_back(origin, type);
}

void manager_release(Win &w, int type) {
  if (type == MPI_LOCK_EXCLUSIVE)
    w.exclusive_holder = -1;
  else
    --w.shared_holders;
  while (!w.waiting.empty() && free_for(w, w.waiting.front().second)) {
    auto [origin, t] = w.waiting.front();
    w.waiting.pop_front();
    grant(w, origin, t);
  }
}

void on_sync(const transport::Arrival &a) {
  auto it = by_ctx.find(a.ctx);
  if (it == by_ctx.end()) {
    transport::Arrival copy = a;
    copy.data = nullptr; // these messages carry no data
    copy.len = 0;
    early.push_back(copy);
    return;
  }
  Win &w = *it->second;
  int origin = w.group->rank_of(a.src);
  if (origin == MPI_UNDEFINED)
    return;
  int type = int(a.tag);
  switch (a.kind) {
  case Msg::LockRequest:
    manager_request(w, origin, type);
    break;
  case Msg::LockGrant:
    w.granted[size_t(origin)] = true;
    break;
  case Msg::Unlock:
    manager_release(w, type);
    break;
  case Msg::Post:
    ++w.posts[size_t(origin)];
    break;
  case Msg::Complete:
    ++w.completes[size_t(origin)];
    break;
  default:
    break;
  }
}

void listen(Win &w) {
  by_ctx[w.ctx()] = &w;
  std::vector<transport::Arrival> replay;
  for (auto it = early.begin(); it != early.end();)
    if (it->ctx == w.ctx()) {
      replay.push_back(*it);
      it = early.erase(it);
    } else {
      ++it;
    }
  for (const transport::Arrival &a : replay)
    on_sync(a);
}

void check_info(MPI_Info info) {
  if (info != MPI_INFO_NULL)
    fail(MPI_ERR_INFO, "info objects are not supported: pass MPI_INFO_NULL");
}

// A window over `base` (collective over `comm`).
MPI_Win create(MPI_Comm comm, Win::Flavor flavor, void *base, MPI_Aint size,
               int disp_unit) {
  Comm &c = comm_of(comm);
  if (size < 0)
    fail(MPI_ERR_SIZE, "a negative size");
  if (disp_unit <= 0)
    fail(MPI_ERR_DISP, "disp_unit must be positive");
  if (!base && size > 0)
    fail(MPI_ERR_BASE, "a null base for " + std::to_string(size) + " bytes");
  if (size > 0)
    memory::ensure_registered(base, size_t(size), kRemote);
  auto owned = std::make_unique<Win>();
  Win &w = *owned;
  w.flavor = flavor;
  w.group = c.group;
  w.rank = c.rank;
  size_t n = size_t(c.size());
  w.lock.assign(n, 0);
  w.lock_requested.assign(n, false);
  w.granted.assign(n, false);
  w.posts.assign(n, 0);
  w.completes.assign(n, 0);
  w.pending.assign(n, 0);
  w.error.assign(n, MPI_SUCCESS);
  w.error_what.assign(n, "");
  w.targets.resize(n);
  w.slot = allocate_slot(c.team());
  w.handle = wins.add(std::move(owned));
  listen(w);
  Win::Target mine{reinterpret_cast<uintptr_t>(base), uint64_t(size),
                   disp_unit};
  team_allgather(c.team(), &mine, sizeof mine, w.targets.data());
  return w.handle;
}

void check_out(const MPI_Win *win) {
  if (!win)
    fail(MPI_ERR_ARG, "a null win pointer");
}

} // namespace

Win &win_of(MPI_Win handle) {
  return wins.get(handle);
}

int win_errhandler(MPI_Win win) {
  if (Win *w = wins.find(win))
    return w->errhandler;
  return comm_errhandler(MPI_COMM_WORLD);
}

bool strict_locks() {
  return strict;
}

void request_lock(Win &w, int target, int type) {
  w.granted[size_t(target)] = false;
  if (target == w.rank)
    manager_request(w, target, type);
  else
    transport::send(w.world(target), Msg::LockRequest, uint32_t(type), w.ctx(),
                    nullptr, 0);
}

void release_lock(Win &w, int target, int type) {
  w.granted[size_t(target)] = false;
  if (target == w.rank)
    manager_release(w, type);
  else
    transport::send(w.world(target), Msg::Unlock, uint32_t(type), w.ctx(),
                    nullptr, 0);
}

void notify(Win &w, int target, bool post) {
  if (target == w.rank) {
    ++(post ? w.posts : w.completes)[size_t(target)];
    return;
  }
  transport::send(w.world(target), post ? Msg::Post : Msg::Complete, 0, w.ctx(),
                  nullptr, 0);
}

void windows_init() {
  const char *locks = std::getenv("NICEMU_MPI_LOCKS");
  strict = locks && std::strcmp(locks, "strict") == 0;
  if (locks && !strict && std::strcmp(locks, "local") != 0)
    fail(MPI_ERR_OTHER, std::string("NICEMU_MPI_LOCKS is 'local' (the "
                                    "default) or 'strict', not '") +
                            locks + "'");
  for (Msg m : {Msg::LockRequest, Msg::LockGrant, Msg::Unlock, Msg::Post,
                Msg::Complete})
    transport::set_handler(m, on_sync);
}

void windows_finalize() {
  wins.clear();
  by_ctx.clear();
  early.clear();
}

} // namespace nicemu::mpi

using namespace nicemu::mpi;

extern "C" {

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                   MPI_Comm comm, MPI_Win *win) {
  return call("MPI_Win_create", on_comm(comm), [&] {
    require_running();
    check_info(info);
    check_out(win);
    *win = create(comm, Win::Flavor::Create, base, size, disp_unit);
  });
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                     void *baseptr, MPI_Win *win) {
  return call("MPI_Win_allocate", on_comm(comm), [&] {
    require_running();
    check_info(info);
    check_out(win);
    comm_of(comm);
    if (!baseptr)
      fail(MPI_ERR_ARG, "a null baseptr");
    if (size < 0)
      fail(MPI_ERR_SIZE, "a negative size");
    void *memory = nullptr;
    if (posix_memalign(&memory, 4096, size_t(size ? size : 1)) != 0)
      fail(MPI_ERR_NO_MEM,
           "cannot allocate " + std::to_string(size) + " bytes");
    try {
      *win = create(comm, Win::Flavor::Allocate, memory, size, disp_unit);
    } catch (...) {
      std::free(memory);
      throw;
    }
    win_of(*win).allocated = memory;
    *static_cast<void **>(baseptr) = memory;
  });
}

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win) {
  return call("MPI_Win_create_dynamic", on_comm(comm), [&] {
    require_running();
    check_info(info);
    check_out(win);
    *win = create(comm, Win::Flavor::Dynamic, nullptr, 0, 1);
  });
}

int MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size) {
  return call("MPI_Win_attach", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (w.flavor != Win::Flavor::Dynamic)
      fail(MPI_ERR_RMA_FLAVOR, "only dynamic windows take attached memory");
    if (size < 0)
      fail(MPI_ERR_SIZE, "a negative size");
    if (!base && size > 0)
      fail(MPI_ERR_BASE, "a null base");
    if (size > 0)
      memory::ensure_registered(base, size_t(size), kRemote);
    w.attached.emplace_back(reinterpret_cast<uintptr_t>(base), size_t(size));
  });
}

int MPI_Win_detach(MPI_Win win, const void *base) {
  return call("MPI_Win_detach", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (w.flavor != Win::Flavor::Dynamic)
      fail(MPI_ERR_RMA_FLAVOR, "only dynamic windows have attached memory");
    auto at = reinterpret_cast<uintptr_t>(base);
    for (auto it = w.attached.begin(); it != w.attached.end(); ++it)
      if (it->first == at) {
        w.attached.erase(it);
        return;
      }
    fail(MPI_ERR_RMA_ATTACH, "no memory is attached at this address");
  });
}

int MPI_Win_free(MPI_Win *win) {
  return call("MPI_Win_free", on_win(win ? *win : MPI_WIN_NULL), [&] {
    require_running();
    check_out(win);
    Win &w = win_of(*win);
    bool locked = w.lock_all || w.access || w.exposure;
    for (int l : w.lock)
      locked |= l != 0;
    if (locked)
      fail(MPI_ERR_RMA_SYNC, "an epoch is still open (unlock, complete or "
                             "wait first)");
    transport::until([&w] {
      for (uint32_t p : w.pending)
        if (p)
          return false;
      return true;
    });
    team_barrier(w.team());
    by_ctx.erase(w.ctx());
    release_slot(w.slot);
    std::free(w.allocated);
    wins.remove(*win);
    *win = MPI_WIN_NULL;
  });
}

int MPI_Win_get_group(MPI_Win win, MPI_Group *group) {
  return call("MPI_Win_get_group", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (!group)
      fail(MPI_ERR_ARG, "a null group");
    *group = publish_group(w.group);
  });
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler) {
  return call("MPI_Win_set_errhandler", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (errhandler != MPI_ERRORS_ARE_FATAL && errhandler != MPI_ERRORS_RETURN)
      fail(MPI_ERR_ARG, "not an error handler");
    w.errhandler = errhandler;
  });
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler) {
  return call("MPI_Win_get_errhandler", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (!errhandler)
      fail(MPI_ERR_ARG, "a null errhandler");
    *errhandler = w.errhandler;
  });
}

} // extern "C"
