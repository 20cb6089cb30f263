// nicemu's MPI: groups, communicators and context slots (mpi_comm.hpp),
// and the MPI_Comm_* and MPI_Group_* calls.
#include "mpi_comm.hpp"

#include "mpi_coll.hpp"
#include "mpi_ops.hpp"
#include "mpi_transport.hpp"

#include <algorithm>
#include <climits>

namespace nicemu::mpi {

namespace {

constexpr uint32_t kSlots = 2048; // 4096 contexts of 16 bits
constexpr uint32_t kWorldSlot = 0, kSelfSlot = 1;

struct GroupHolder {
  GroupRef group;
};

Table<Comm> comms(Kind::Comm, "communicator", MPI_ERR_COMM);
Table<GroupHolder> groups(Kind::Group, "group", MPI_ERR_GROUP);
std::vector<uint64_t> free_slots; // bit set: the slot is free here
uint32_t world_rank = 0;

void take_slot(uint32_t slot) {
  free_slots[slot / 64] &= ~(uint64_t(1) << (slot % 64));
}

MPI_Group publish(GroupRef g) {
  return publish_group(std::move(g));
}

MPI_Comm publish(GroupRef g, uint32_t slot, int errhandler) {
  auto c = std::make_unique<Comm>();
  c->rank = g->rank_of(world_rank);
  c->group = std::move(g);
  c->slot = slot;
  c->errhandler = errhandler;
  return comms.add(std::move(c));
}

void check_errhandler(MPI_Errhandler e) {
  if (e != MPI_ERRORS_ARE_FATAL && e != MPI_ERRORS_RETURN)
    fail(MPI_ERR_ARG, "not an error handler (MPI_ERRORS_ARE_FATAL or "
                      "MPI_ERRORS_RETURN)");
}

// Every member's (color, key), in parent rank order.
struct ColorKey {
  int color, key;
};

GroupRef split_group(const Comm &parent, const std::vector<ColorKey> &all,
                     int color) {
  std::vector<int> members;
  for (int r = 0; r < parent.size(); ++r)
    if (all[size_t(r)].color == color)
      members.push_back(r);
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return all[size_t(a)].key < all[size_t(b)].key;
  });
  auto g = std::make_shared<Group>();
  for (int r : members)
    g->world.push_back(parent.world(r));
  return g;
}

int counted(int n, const char *what) {
  if (n < 0)
    fail(MPI_ERR_ARG, std::string("a negative ") + what);
  return n;
}

} // namespace

int Group::rank_of(uint32_t world_rank) const {
  auto it = std::find(world.begin(), world.end(), world_rank);
  return it == world.end() ? MPI_UNDEFINED : int(it - world.begin());
}

Comm &comm_of(MPI_Comm handle) {
  return comms.get(handle);
}

GroupRef group_of(MPI_Group handle) {
  return groups.get(handle).group;
}

MPI_Group publish_group(GroupRef g) {
  return groups.add(std::make_unique<GroupHolder>(GroupHolder{std::move(g)}));
}

int comm_errhandler(MPI_Comm comm) {
  if (Comm *c = comms.find(comm))
    return c->errhandler;
  if (Comm *world = comms.find(MPI_COMM_WORLD))
    return world->errhandler;
  return MPI_ERRORS_ARE_FATAL;
}

uint32_t allocate_slot(const Team &team) {
  std::vector<uint64_t> mask = free_slots;
  team_reduce(team, mask.data(), mask.size(), Basic::Uint64, MPI_BAND, 0);
  team_bcast(team, mask.data(), mask.size() * sizeof(uint64_t), 0);
  for (uint32_t s = 0; s < kSlots; ++s)
    if (mask[s / 64] >> (s % 64) & 1) {
      take_slot(s);
      return s;
    }
  fail(MPI_ERR_OTHER, "no context left for a new communicator or window (" +
                          std::to_string(kSlots) + " at most)");
}

void release_slot(uint32_t slot) {
  free_slots[slot / 64] |= uint64_t(1) << (slot % 64);
}

void comms_init(uint32_t rank, uint32_t size) {
  world_rank = rank;
  free_slots.assign(kSlots / 64, ~uint64_t(0));
  take_slot(kWorldSlot);
  take_slot(kSelfSlot);
  auto world = std::make_shared<Group>();
  for (uint32_t r = 0; r < size; ++r)
    world->world.push_back(r);
  auto self = std::make_shared<Group>();
  self->world.push_back(rank);
  comms.clear();
  publish(world, kWorldSlot, MPI_ERRORS_ARE_FATAL);
  publish(self, kSelfSlot, MPI_ERRORS_ARE_FATAL);
  comm_of(MPI_COMM_WORLD).builtin = true;
  comm_of(MPI_COMM_SELF).builtin = true;
  groups.clear();
  publish(std::make_shared<Group>()); // MPI_GROUP_EMPTY
}

void comms_finalize() {
  comms.clear();
  groups.clear();
}

} // namespace nicemu::mpi

using namespace nicemu::mpi;

extern "C" {

int MPI_Comm_size(MPI_Comm comm, int *size) {
  return call("MPI_Comm_size", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    if (!size)
      fail(MPI_ERR_ARG, "a null size");
    *size = c.size();
  });
}

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
  return call("MPI_Comm_rank", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    if (!rank)
      fail(MPI_ERR_ARG, "a null rank");
    *rank = c.rank;
  });
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
  return call("MPI_Comm_dup", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    if (!newcomm)
      fail(MPI_ERR_ARG, "a null newcomm");
    uint32_t slot = allocate_slot(c.team());
    *newcomm = publish(c.group, slot, c.errhandler);
  });
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
  return call("MPI_Comm_split", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    if (!newcomm)
      fail(MPI_ERR_ARG, "a null newcomm");
    if (color < 0 && color != MPI_UNDEFINED)
      fail(MPI_ERR_ARG, "a negative color: " + std::to_string(color));
    ColorKey mine{color, key};
    std::vector<ColorKey> all(size_t(c.size()));
    team_allgather(c.team(), &mine, sizeof mine, all.data());
    // Every member takes part in choosing the slot; each new
    // communicator has other members, so they may all have the same.
    uint32_t slot = allocate_slot(c.team());
    if (color == MPI_UNDEFINED) {
      release_slot(slot);
      *newcomm = MPI_COMM_NULL;
      return;
    }
    *newcomm = publish(split_group(c, all, color), slot, c.errhandler);
  });
}

int MPI_Comm_free(MPI_Comm *comm) {
  return call("MPI_Comm_free", on_world(), [&] {
    require_running();
    if (!comm)
      fail(MPI_ERR_ARG, "a null comm pointer");
    Comm &c = comm_of(*comm);
    if (c.builtin)
      fail(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed");
    release_slot(c.slot);
    comms.remove(*comm);
    *comm = MPI_COMM_NULL;
  });
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
  return call("MPI_Comm_group", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    if (!group)
      fail(MPI_ERR_ARG, "a null group");
    *group = publish(c.group);
  });
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  return call("MPI_Comm_set_errhandler", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    check_errhandler(errhandler);
    c.errhandler = errhandler;
  });
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler) {
  return call("MPI_Comm_get_errhandler", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    if (!errhandler)
      fail(MPI_ERR_ARG, "a null errhandler");
    *errhandler = c.errhandler;
  });
}

int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val,
                      int *flag) {
  // The predefined attributes' values, which the caller gets pointers to.
  static int tag_ub = int(transport::kMaxTag), host = MPI_PROC_NULL,
             io = MPI_ANY_SOURCE, wtime_is_global = 1, universe = 0, appnum = 0,
             lastusedcode = MPI_ERR_LASTCODE;
  return call("MPI_Comm_get_attr", on_comm(comm), [&] {
    require_running();
    comm_of(comm);
    if (!attribute_val || !flag)
      fail(MPI_ERR_ARG, "a null attribute_val or flag");
    int *value = nullptr;
    switch (comm_keyval) {
    case MPI_TAG_UB:
      value = &tag_ub;
      break;
    case MPI_HOST:
      value = &host;
      break;
    case MPI_IO:
      value = &io;
      break;
    case MPI_WTIME_IS_GLOBAL:
      value = &wtime_is_global;
      break;
    case MPI_UNIVERSE_SIZE:
      universe = int(transport::size());
      value = &universe;
      break;
    case MPI_APPNUM:
      value = &appnum;
      break;
    case MPI_LASTUSEDCODE:
      value = &lastusedcode;
      break;
    default:
      fail(MPI_ERR_KEYVAL, "only the predefined attributes exist (no "
                           "MPI_Comm_create_keyval)");
    }
    *static_cast<int **>(attribute_val) = value;
    *flag = 1;
  });
}

int MPI_Group_size(MPI_Group group, int *size) {
  return call("MPI_Group_size", on_world(), [&] {
    require_running();
    GroupRef g = group_of(group);
    if (!size)
      fail(MPI_ERR_ARG, "a null size");
    *size = g->size();
  });
}

int MPI_Group_rank(MPI_Group group, int *rank) {
  return call("MPI_Group_rank", on_world(), [&] {
    require_running();
    GroupRef g = group_of(group);
    if (!rank)
      fail(MPI_ERR_ARG, "a null rank");
    *rank = g->rank_of(transport::rank());
  });
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[],
                   MPI_Group *newgroup) {
  return call("MPI_Group_incl", on_world(), [&] {
    require_running();
    GroupRef g = group_of(group);
    counted(n, "n");
    if (!newgroup || (n > 0 && !ranks))
      fail(MPI_ERR_ARG, "a null ranks or newgroup");
    auto out = std::make_shared<Group>();
    std::vector<bool> seen(size_t(g->size()));
    for (int i = 0; i < n; ++i) {
      int r = ranks[i];
      if (r < 0 || r >= g->size() || seen[size_t(r)])
        fail(MPI_ERR_RANK, "ranks[" + std::to_string(i) +
                               "] = " + std::to_string(r) +
                               ": not a rank of the group, or repeated");
      seen[size_t(r)] = true;
      out->world.push_back(g->world[size_t(r)]);
    }
    *newgroup = n == 0 ? MPI_GROUP_EMPTY : publish(std::move(out));
  });
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
                              MPI_Group group2, int ranks2[]) {
  return call("MPI_Group_translate_ranks", on_world(), [&] {
    require_running();
    GroupRef a = group_of(group1), b = group_of(group2);
    counted(n, "n");
    if (n > 0 && (!ranks1 || !ranks2))
      fail(MPI_ERR_ARG, "a null ranks1 or ranks2");
    for (int i = 0; i < n; ++i) {
      int r = ranks1[i];
      if (r == MPI_PROC_NULL) {
        ranks2[i] = MPI_PROC_NULL;
        continue;
      }
      if (r < 0 || r >= a->size())
        fail(MPI_ERR_RANK, "ranks1[" + std::to_string(i) + "] = " +
                               std::to_string(r) + " is not in group1");
      ranks2[i] = b->rank_of(a->world[size_t(r)]);
    }
  });
}

int MPI_Group_free(MPI_Group *group) {
  return call("MPI_Group_free", on_world(), [&] {
    require_running();
    if (!group)
      fail(MPI_ERR_ARG, "a null group pointer");
    group_of(*group);
    if (*group != MPI_GROUP_EMPTY)
      groups.remove(*group);
    *group = MPI_GROUP_NULL;
  });
}

} // extern "C"
