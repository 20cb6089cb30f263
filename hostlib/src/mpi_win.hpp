// nicemu's MPI: windows (docs/mpi.md, "One-sided").
//
// A window's memory is registered with remote write and read access, and
// every member learns every other's base address, size and displacement
// unit at creation. MPI_Put is an RDMA write and MPI_Get an RDMA read:
// the cards move the data, the target's processor takes no part. An
// operation is complete, at the origin and at the target, when its
// completion arrives (the card completes a write once the target card has
// placed its last byte).
//
// Synchronisation:
// - fence: complete this process's operations, then a barrier;
// - post/start/complete/wait: Post and Complete messages;
// - lock/unlock: shared locks are the origin's own business (no message:
//   a target that computes, or sits in MPI_Barrier, need not answer);
//   exclusive locks are granted by the target's lock manager, which runs
//   whenever the target is in any MPI call. With NICEMU_MPI_LOCKS=strict,
//   shared locks are granted by the target too, and exclude exclusive
//   ones. unlock and the flushes wait for the completions of the
//   operations to that target.
#pragma once

#include "mpi_comm.hpp"
#include "mpi_datatype.hpp"

#include <deque>
#include <string>
#include <vector>

namespace nicemu::mpi {

struct Win {
  enum class Flavor { Create, Allocate, Dynamic } flavor = Flavor::Create;
  MPI_Win handle = MPI_WIN_NULL;
  GroupRef group;
  int rank = 0;
  uint32_t slot = 0;
  int errhandler = MPI_ERRORS_ARE_FATAL;

  // Every member's memory.
  struct Target {
    uint64_t base;
    uint64_t size;
    int64_t disp_unit;
  };
  std::vector<Target> targets;
  void *allocated = nullptr; // MPI_Win_allocate's memory (freed with it)
  std::vector<std::pair<uintptr_t, size_t>> attached; // dynamic

  // Epochs this process opened.
  bool fence = false;
  std::vector<int> lock; // per target: 0 or MPI_LOCK_*
  std::vector<bool> lock_requested, granted;
  bool lock_all = false, lock_all_requested = false;
  bool access = false, exposure = false;
  std::vector<int> access_group, exposure_group;
  std::vector<uint32_t> posts, completes; // messages received, per rank

  // Operations this process started, per target.
  std::vector<uint32_t> pending;
  std::vector<int> error;
  std::vector<std::string> error_what;

  // The lock manager of this process's memory.
  int exclusive_holder = -1;
  int shared_holders = 0;
  std::deque<std::pair<int, int>> waiting; // (rank, lock type)

  int size() const { return group->size(); }
  uint32_t world(int r) const { return group->world[size_t(r)]; }
  uint16_t ctx() const { return uint16_t(2 * slot); }
  Team team() const { return {group, rank, uint16_t(2 * slot + 1)}; }
};

Win &win_of(MPI_Win handle);

// Lock protocol steps (mpi_win.cpp), used by the sync calls (mpi_rma.cpp).
void request_lock(Win &w, int target, int type);
void release_lock(Win &w, int target, int type);
// Sends a Post or Complete to `target` (or counts it, for this process).
void notify(Win &w, int target, bool post);
bool strict_locks();

void windows_init();
void windows_finalize();
// MPI_Put and MPI_Get's completions (mpi_rma.cpp).
void rma_init();
void rma_finalize();

} // namespace nicemu::mpi
