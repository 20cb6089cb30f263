// nicemu's MPI: MPI_Put, MPI_Get and the synchronisation calls (fence,
// post/start/complete/wait, lock/unlock, flush) on windows (mpi_win.hpp).
#include "mpi_coll.hpp"
#include "mpi_memory.hpp"
#include "mpi_transport.hpp"
#include "mpi_win.hpp"
#include "nicemu/uzura.h"

#include <cstring>
#include <unordered_map>

namespace nicemu::mpi {

namespace {

// One MPI_Put or MPI_Get: one RDMA operation per contiguous piece of the
// target's data, the origin's data packed when it is not contiguous.
struct Transfer {
  MPI_Win win;
  int target;
  std::vector<uint8_t> staging;
  uint32_t remaining = 0;
  // A Get into a non-contiguous origin buffer: unpacked at the end.
  void *origin = nullptr;
  int count = 0;
  TypeRef type;
};

std::unordered_map<uint64_t, std::shared_ptr<Transfer>> pieces;
uint64_t next_piece = 1;

void record_error(Win &w, int target, int code, std::string what) {
  if (w.error[size_t(target)] != MPI_SUCCESS)
    return;
  w.error[size_t(target)] = code;
  w.error_what[size_t(target)] = std::move(what);
}

void on_done(uint64_t id, uint32_t status) {
  auto it = pieces.find(id);
  if (it == pieces.end())
    return;
  std::shared_ptr<Transfer> t = std::move(it->second);
  pieces.erase(it);
  Win &w = win_of(t->win);
  --w.pending[size_t(t->target)];
  if (status != UZ_STATUS_OK)
    record_error(
        w, t->target,
        status == UZ_STATUS_REMOTE_PAGE ? MPI_ERR_RMA_RANGE : MPI_ERR_OTHER,
        "the target's card refused the access (status " +
            std::to_string(status) + "): its memory is not part of the window");
  if (--t->remaining == 0 && t->type)
    unpack(t->staging.data(), t->staging.size(), t->origin, t->count, *t->type);
}

// Raises (and forgets) the first error of the operations to `target` that
// completed since the last synchronisation.
void raise_errors(Win &w, int target) {
  int code = w.error[size_t(target)];
  if (code == MPI_SUCCESS)
    return;
  w.error[size_t(target)] = MPI_SUCCESS;
  fail(code, w.error_what[size_t(target)] + " (target rank " +
                 std::to_string(target) + ")");
}

void wait_target(Win &w, int target) {
  transport::until([&] { return w.pending[size_t(target)] == 0; });
}

void wait_all_targets(Win &w) {
  for (int t = 0; t < w.size(); ++t)
    wait_target(w, t);
}

void raise_all_errors(Win &w) {
  for (int t = 0; t < w.size(); ++t)
    raise_errors(w, t);
}

void check_target(const Win &w, int rank) {
  if (rank != MPI_PROC_NULL && (rank < 0 || rank >= w.size()))
    fail(MPI_ERR_RANK, "rank " + std::to_string(rank) +
                           " is not in the window's group (size " +
                           std::to_string(w.size()) + ")");
}

void check_assert(int assert, int allowed) {
  if (assert & ~allowed)
    fail(MPI_ERR_ASSERT, "assert has bits this call does not know");
}

bool in_epoch(const Win &w, int target) {
  if (w.fence || w.lock_all || w.lock[size_t(target)])
    return true;
  if (!w.access)
    return false;
  for (int r : w.access_group)
    if (r == target)
      return true;
  return false;
}

bool passive(const Win &w, int target) {
  return w.lock_all || w.lock[size_t(target)];
}

struct Access {
  const void *origin;
  int origin_count;
  MPI_Datatype origin_type;
  int target;
  MPI_Aint disp;
  int target_count;
  MPI_Datatype target_type;
};

// The checks every access makes; the target address of byte 0 of the
// target data (its disp), or false for nothing to do.
bool prepare(Win &w, const Access &a, TypeRef &ot, TypeRef &tt,
             uint64_t &address) {
  check_target(w, a.target);
  if (a.origin_count < 0 || a.target_count < 0)
    fail(MPI_ERR_COUNT, "a negative count");
  ot = committed_type(a.origin_type);
  tt = committed_type(a.target_type);
  size_t bytes = size_t(a.origin_count) * ot->size;
  if (bytes != size_t(a.target_count) * tt->size)
    fail(MPI_ERR_TYPE, "the origin's and the target's data differ in size");
  if (a.target == MPI_PROC_NULL)
    return false;
  if (!in_epoch(w, a.target))
    fail(MPI_ERR_RMA_SYNC, "no access epoch is open for target " +
                               std::to_string(a.target) +
                               " (fence, start or lock first)");
  if (!a.origin && bytes && ot->contiguous())
    fail(MPI_ERR_BUFFER, "a null origin buffer");
  const Win::Target &t = w.targets[size_t(a.target)];
  if (w.flavor == Win::Flavor::Dynamic) {
    address = uint64_t(a.disp); // an absolute address (MPI_Get_address)
  } else {
    if (a.disp < 0)
      fail(MPI_ERR_DISP, "a negative displacement");
    int64_t at = int64_t(a.disp) * t.disp_unit;
    int64_t hi =
        a.target_count ? at + (a.target_count - 1) * tt->extent() + tt->ub : at;
    if (bytes &&
        (at + (a.target_count ? tt->lb : 0) < 0 || uint64_t(hi) > t.size))
      fail(MPI_ERR_RMA_RANGE, "bytes " + std::to_string(at) + " to " +
                                  std::to_string(hi) +
                                  " are outside the target's window of " +
                                  std::to_string(t.size) + " bytes");
    address = t.base + uint64_t(at);
  }
  return bytes != 0;
}

// The target data's contiguous pieces: (offset from the target address,
// length), in the packed order.
std::vector<Block> target_pieces(int count, const Type &t) {
  if (t.contiguous())
    return {{0, size_t(count) * t.size}};
  std::vector<Block> out;
  for (int i = 0; i < count; ++i)
    for (const Block &b : t.blocks)
      out.push_back({i * t.extent() + b.offset, b.len});
  return out;
}

void start_pieces(Win &w, const std::shared_ptr<Transfer> &t, bool write,
                  uint8_t *local, uint64_t address,
                  const std::vector<Block> &at) {
  t->remaining = uint32_t(at.size());
  uint32_t node = w.world(t->target);
  size_t done = 0;
  for (const Block &b : at) {
    uint64_t id = next_piece++;
    pieces[id] = t;
    ++w.pending[size_t(t->target)];
    uint64_t remote = address + uint64_t(b.offset);
    if (write)
      transport::write(node, local + done, remote, b.len, transport::Owner::Rma,
                       id);
    else
      transport::read(node, local + done, remote, b.len, transport::Owner::Rma,
                      id);
    done += b.len;
  }
}

void put(Win &w, const Access &a) {
  TypeRef ot, tt;
  uint64_t address = 0;
  if (!prepare(w, a, ot, tt, address))
    return;
  auto t = std::make_shared<Transfer>();
  t->win = w.handle;
  t->target = a.target;
  const uint8_t *data = static_cast<const uint8_t *>(a.origin);
  size_t bytes = size_t(a.origin_count) * ot->size;
  if (!ot->contiguous()) {
    t->staging.resize(bytes);
    pack(a.origin, a.origin_count, *ot, t->staging.data());
    data = t->staging.data();
  }
  if (a.target == w.rank) { // this process's own memory
    unpack(data, bytes, reinterpret_cast<void *>(address), a.target_count, *tt);
    return;
  }
  memory::ensure_registered(data, bytes, 0);
  start_pieces(w, t, true, const_cast<uint8_t *>(data), address,
               target_pieces(a.target_count, *tt));
}

void get(Win &w, const Access &a, void *origin) {
  TypeRef ot, tt;
  uint64_t address = 0;
  if (!prepare(w, a, ot, tt, address))
    return;
  size_t bytes = size_t(a.origin_count) * ot->size;
  if (a.target == w.rank) {
    std::vector<uint8_t> packed(bytes);
    pack(reinterpret_cast<const void *>(address), a.target_count, *tt,
         packed.data());
    unpack(packed.data(), bytes, origin, a.origin_count, *ot);
    return;
  }
  auto t = std::make_shared<Transfer>();
  t->win = w.handle;
  t->target = a.target;
  uint8_t *land = static_cast<uint8_t *>(origin);
  if (!ot->contiguous()) {
    t->staging.resize(bytes);
    land = t->staging.data();
    t->origin = origin;
    t->count = a.origin_count;
    t->type = ot;
  }
  memory::ensure_registered(land, bytes, 0);
  start_pieces(w, t, false, land, address, target_pieces(a.target_count, *tt));
}

// The window ranks of a group's members (MPI_ERR_GROUP for a stranger).
std::vector<int> ranks_in(const Win &w, MPI_Group group) {
  GroupRef g = group_of(group);
  std::vector<int> out;
  for (uint32_t world : g->world) {
    int r = w.group->rank_of(world);
    if (r == MPI_UNDEFINED)
      fail(MPI_ERR_GROUP, "the group has a process outside the window");
    out.push_back(r);
  }
  return out;
}

void unsupported(const char *what) {
  fail(MPI_ERR_UNSUPPORTED_OPERATION,
       std::string(what) + " is not supported by nicemu's MPI (the UZURA "
                           "card has no remote atomics yet)");
}

} // namespace

void rma_init() {
  transport::set_completion_handler(transport::Owner::Rma, on_done);
}

void rma_finalize() {
  pieces.clear();
}

} // namespace nicemu::mpi

using namespace nicemu::mpi;

extern "C" {

int MPI_Put(const void *origin_addr, int origin_count,
            MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
            int target_count, MPI_Datatype target_datatype, MPI_Win win) {
  return call("MPI_Put", on_win(win), [&] {
    require_running();
    put(win_of(win), {origin_addr, origin_count, origin_datatype, target_rank,
                      target_disp, target_count, target_datatype});
  });
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count,
            MPI_Datatype target_datatype, MPI_Win win) {
  return call("MPI_Get", on_win(win), [&] {
    require_running();
    get(win_of(win),
        {origin_addr, origin_count, origin_datatype, target_rank, target_disp,
         target_count, target_datatype},
        origin_addr);
  });
}

int MPI_Win_fence(int assert, MPI_Win win) {
  return call("MPI_Win_fence", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    check_assert(assert, MPI_MODE_NOSTORE | MPI_MODE_NOPUT |
                             MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED);
    if (w.access || w.exposure || w.lock_all)
      fail(MPI_ERR_RMA_SYNC, "a fence inside another epoch");
    wait_all_targets(w);
    team_barrier(w.team());
    w.fence = !(assert &MPI_MODE_NOSUCCEED);
    raise_all_errors(w);
  });
}

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
  return call("MPI_Win_lock", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
      fail(MPI_ERR_LOCKTYPE, "lock_type is MPI_LOCK_SHARED or "
                             "MPI_LOCK_EXCLUSIVE");
    check_target(w, rank);
    check_assert(assert, MPI_MODE_NOCHECK);
    if (rank == MPI_PROC_NULL)
      return;
    if (w.lock[size_t(rank)] || w.lock_all)
      fail(MPI_ERR_RMA_SYNC,
           "this process already holds a lock on rank " + std::to_string(rank));
    bool ask = !(assert &MPI_MODE_NOCHECK) &&
               (lock_type == MPI_LOCK_EXCLUSIVE || strict_locks());
    if (ask) {
      request_lock(w, rank, lock_type);
      transport::until([&] { return bool(w.granted[size_t(rank)]); });
    }
    w.lock[size_t(rank)] = lock_type;
    w.lock_requested[size_t(rank)] = ask;
  });
}

int MPI_Win_unlock(int rank, MPI_Win win) {
  return call("MPI_Win_unlock", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    check_target(w, rank);
    if (rank == MPI_PROC_NULL)
      return;
    if (!w.lock[size_t(rank)])
      fail(MPI_ERR_RMA_SYNC,
           "this process holds no lock on rank " + std::to_string(rank));
    wait_target(w, rank);
    if (w.lock_requested[size_t(rank)])
      release_lock(w, rank, w.lock[size_t(rank)]);
    w.lock[size_t(rank)] = 0;
    w.lock_requested[size_t(rank)] = false;
    raise_errors(w, rank);
  });
}

int MPI_Win_lock_all(int assert, MPI_Win win) {
  return call("MPI_Win_lock_all", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    check_assert(assert, MPI_MODE_NOCHECK);
    for (int l : w.lock)
      if (l)
        fail(MPI_ERR_RMA_SYNC, "this process already holds a lock");
    if (w.lock_all)
      fail(MPI_ERR_RMA_SYNC, "MPI_Win_lock_all twice");
    bool ask = !(assert &MPI_MODE_NOCHECK) && strict_locks();
    if (ask) {
      for (int t = 0; t < w.size(); ++t)
        request_lock(w, t, MPI_LOCK_SHARED);
      transport::until([&] {
        for (int t = 0; t < w.size(); ++t)
          if (!w.granted[size_t(t)])
            return false;
        return true;
      });
    }
    w.lock_all = true;
    w.lock_all_requested = ask;
  });
}

int MPI_Win_unlock_all(MPI_Win win) {
  return call("MPI_Win_unlock_all", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (!w.lock_all)
      fail(MPI_ERR_RMA_SYNC, "no MPI_Win_lock_all to end");
    wait_all_targets(w);
    if (w.lock_all_requested)
      for (int t = 0; t < w.size(); ++t)
        release_lock(w, t, MPI_LOCK_SHARED);
    w.lock_all = false;
    w.lock_all_requested = false;
    raise_all_errors(w);
  });
}

int MPI_Win_flush(int rank, MPI_Win win) {
  return call("MPI_Win_flush", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    check_target(w, rank);
    if (rank == MPI_PROC_NULL)
      return;
    if (!passive(w, rank))
      fail(MPI_ERR_RMA_SYNC, "flush outside a passive-target epoch (lock)");
    wait_target(w, rank);
    raise_errors(w, rank);
  });
}

// Local completion is no sooner than remote completion here: the card
// completes a write when the target has placed it.
int MPI_Win_flush_local(int rank, MPI_Win win) {
  return call("MPI_Win_flush_local", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    check_target(w, rank);
    if (rank == MPI_PROC_NULL)
      return;
    if (!passive(w, rank))
      fail(MPI_ERR_RMA_SYNC, "flush outside a passive-target epoch (lock)");
    wait_target(w, rank);
    raise_errors(w, rank);
  });
}

int MPI_Win_flush_all(MPI_Win win) {
  return call("MPI_Win_flush_all", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    for (int t = 0; t < w.size(); ++t)
      if (w.pending[size_t(t)] && !passive(w, t))
        fail(MPI_ERR_RMA_SYNC, "flush outside a passive-target epoch");
    wait_all_targets(w);
    raise_all_errors(w);
  });
}

int MPI_Win_flush_local_all(MPI_Win win) {
  return MPI_Win_flush_all(win);
}

int MPI_Win_sync(MPI_Win win) {
  return call("MPI_Win_sync", on_win(win), [&] {
    require_running();
    win_of(win); // the card writes memory coherently: nothing to do
  });
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win) {
  return call("MPI_Win_post", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    check_assert(assert, MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT);
    if (w.exposure)
      fail(MPI_ERR_RMA_SYNC, "an exposure epoch is already open");
    w.exposure_group = ranks_in(w, group);
    w.exposure = true;
    if (!(assert &MPI_MODE_NOCHECK))
      for (int r : w.exposure_group)
        notify(w, r, true);
  });
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win) {
  return call("MPI_Win_start", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    check_assert(assert, MPI_MODE_NOCHECK);
    if (w.access)
      fail(MPI_ERR_RMA_SYNC, "an access epoch is already open");
    w.access_group = ranks_in(w, group);
    if (!(assert &MPI_MODE_NOCHECK)) {
      transport::until([&] {
        for (int r : w.access_group)
          if (w.posts[size_t(r)] == 0)
            return false;
        return true;
      });
      for (int r : w.access_group)
        --w.posts[size_t(r)];
    }
    w.access = true;
  });
}

int MPI_Win_complete(MPI_Win win) {
  return call("MPI_Win_complete", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (!w.access)
      fail(MPI_ERR_RMA_SYNC, "no MPI_Win_start to complete");
    for (int r : w.access_group) {
      wait_target(w, r);
      notify(w, r, false);
    }
    w.access = false;
    for (int r : w.access_group)
      raise_errors(w, r);
  });
}

int MPI_Win_wait(MPI_Win win) {
  return call("MPI_Win_wait", on_win(win), [&] {
    require_running();
    Win &w = win_of(win);
    if (!w.exposure)
      fail(MPI_ERR_RMA_SYNC, "no MPI_Win_post to wait for");
    transport::until([&] {
      for (int r : w.exposure_group)
        if (w.completes[size_t(r)] == 0)
          return false;
      return true;
    });
    for (int r : w.exposure_group)
      --w.completes[size_t(r)];
    w.exposure = false;
  });
}

int MPI_Accumulate(const void *, int, MPI_Datatype, int, MPI_Aint, int,
                   MPI_Datatype, MPI_Op, MPI_Win win) {
  return call("MPI_Accumulate", on_win(win),
              [&] { unsupported("MPI_Accumulate"); });
}

int MPI_Get_accumulate(const void *, int, MPI_Datatype, void *, int,
                       MPI_Datatype, int, MPI_Aint, int, MPI_Datatype, MPI_Op,
                       MPI_Win win) {
  return call("MPI_Get_accumulate", on_win(win),
              [&] { unsupported("MPI_Get_accumulate"); });
}

int MPI_Fetch_and_op(const void *, void *, MPI_Datatype, int, MPI_Aint, MPI_Op,
                     MPI_Win win) {
  return call("MPI_Fetch_and_op", on_win(win),
              [&] { unsupported("MPI_Fetch_and_op"); });
}

int MPI_Compare_and_swap(const void *, const void *, void *, MPI_Datatype, int,
                         MPI_Aint, MPI_Win win) {
  return call("MPI_Compare_and_swap", on_win(win),
              [&] { unsupported("MPI_Compare_and_swap"); });
}

} // extern "C"
