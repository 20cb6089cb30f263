// nicemu's MPI: groups, communicators and the context ids that keep their
// messages apart (docs/mpi.md, "Communicators").
//
// A communicator's messages carry its context id: 2 x its slot for point
// to point, 2 x slot + 1 for collectives. Slots are agreed collectively:
// the lowest slot free on every member (a bitwise AND of the members'
// free masks), so two communicators sharing a process never share a slot.
// Windows take slots from the same space.
#pragma once

#include "mpi_base.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace nicemu::mpi {

struct Group {
  std::vector<uint32_t> world; // rank -> world rank

  int size() const { return int(world.size()); }
  // The rank of a world rank in the group, or MPI_UNDEFINED.
  int rank_of(uint32_t world_rank) const;
};
using GroupRef = std::shared_ptr<const Group>;

// The ranks of an internal collective: who, which of them this process
// is, and the context of its messages.
struct Team {
  GroupRef group;
  int rank;
  uint16_t ctx;

  int size() const { return group->size(); }
  uint32_t world(int r) const { return group->world[size_t(r)]; }
};

struct Comm {
  GroupRef group;
  int rank = 0;
  uint32_t slot = 0;
  int errhandler = MPI_ERRORS_ARE_FATAL;
  bool builtin = false;

  int size() const { return group->size(); }
  uint32_t world(int r) const { return group->world[size_t(r)]; }
  uint16_t p2p_ctx() const { return uint16_t(2 * slot); }
  Team team() const { return {group, rank, uint16_t(2 * slot + 1)}; }
};

// The communicator of a handle (MPI_ERR_COMM for the null or a bad one).
Comm &comm_of(MPI_Comm handle);
// The group of a handle (MPI_ERR_GROUP), and a new handle for a group.
GroupRef group_of(MPI_Group handle);
MPI_Group publish_group(GroupRef group);

// A slot agreed by every member of `team` (collective), and its release.
uint32_t allocate_slot(const Team &team);
void release_slot(uint32_t slot);

void comms_init(uint32_t world_rank, uint32_t world_size);
void comms_finalize();

} // namespace nicemu::mpi
