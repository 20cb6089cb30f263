// nicemu's MPI: collectives over point to point (mpi_coll.hpp) and
// MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce.
#include "mpi_coll.hpp"

#include "mpi_ops.hpp"
#include "mpi_p2p.hpp"

#include <cstring>

namespace nicemu::mpi {

namespace {

// Each collective's messages have a tag of their own within the team's
// context (collectives of one team run one at a time, in the same order
// on every member, and messages from one rank never overtake).
constexpr int kTagBarrier = 1;
constexpr int kTagBcast = 2;
constexpr int kTagReduce = 3;
constexpr int kTagGather = 4;

Request &isend_to(const Team &team, int to, int tag, const void *data,
                  size_t len) {
  return start_send(data, int(len), type_of(MPI_BYTE), team.world(to), tag,
                    team.ctx, false);
}

void wait_all(std::vector<Request *> &sends) {
  for (Request *r : sends)
    complete(*r, MPI_STATUS_IGNORE);
  sends.clear();
}

int real_rank(int virtual_rank, int root, int n) {
  return (virtual_rank + root) % n;
}

} // namespace

void team_barrier(const Team &team) {
  int n = team.size(), r = team.rank;
  for (int k = 1; k < n; k <<= 1) {
    send_bytes(team, (r + k) % n, kTagBarrier, nullptr, 0);
    recv_bytes(team, (r - k + n) % n, kTagBarrier, nullptr, 0);
  }
}

void team_bcast(const Team &team, void *buf, size_t bytes, int root) {
  int n = team.size();
  int vr = (team.rank - root + n) % n;
  int mask = 1;
  for (; mask < n; mask <<= 1)
    if (vr & mask) {
      recv_bytes(team, real_rank(vr - mask, root, n), kTagBcast, buf, bytes);
      break;
    }
  std::vector<Request *> sends;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < n)
      sends.push_back(&isend_to(team, real_rank(vr + mask, root, n), kTagBcast,
                                buf, bytes));
  wait_all(sends);
}

void team_reduce(const Team &team, void *data, size_t n_elements, Basic basic,
                 MPI_Op op, int root) {
  int n = team.size();
  int vr = (team.rank - root + n) % n;
  size_t bytes = n_elements * basic_size(basic);
  std::vector<uint8_t> theirs(bytes);
  for (int mask = 1; mask < n; mask <<= 1) {
    if (vr & mask) {
      send_bytes(team, real_rank(vr & ~mask, root, n), kTagReduce, data, bytes);
      return;
    }
    if ((vr | mask) < n) {
      recv_bytes(team, real_rank(vr | mask, root, n), kTagReduce, theirs.data(),
                 bytes);
      apply_op(op, basic, data, theirs.data(), n_elements);
    }
  }
}

void team_allgather(const Team &team, const void *mine, size_t bytes,
                    void *all) {
  auto *out = static_cast<uint8_t *>(all);
  int n = team.size();
  if (team.rank != 0) {
    send_bytes(team, 0, kTagGather, mine, bytes);
  } else {
    std::memcpy(out, mine, bytes);
    for (int r = 1; r < n; ++r)
      recv_bytes(team, r, kTagGather, out + size_t(r) * bytes, bytes);
  }
  team_bcast(team, out, size_t(n) * bytes, 0);
}

} // namespace nicemu::mpi

using namespace nicemu::mpi;

namespace {

void check_root(const Comm &c, int root) {
  if (root < 0 || root >= c.size())
    fail(MPI_ERR_ROOT, "root " + std::to_string(root) +
                           " is not in the communicator (size " +
                           std::to_string(c.size()) + ")");
}

void check_count(int count) {
  if (count < 0)
    fail(MPI_ERR_COUNT, "a negative count: " + std::to_string(count));
}

void check_buffer(const void *buf, int count, const Type &t) {
  if (!buf && count > 0 && t.size > 0 && t.contiguous())
    fail(MPI_ERR_BUFFER, "a null buffer");
}

// The elements a reduction works on: the type's basic type, which the
// operation must apply to.
Basic reduction_basic(const Type &t, MPI_Op op) {
  if (t.basic == Basic::None)
    fail(MPI_ERR_TYPE, "reductions need a datatype of one basic type");
  check_op(op, t.basic);
  return t.basic;
}

struct Reduction {
  std::vector<uint8_t> data;
  size_t elements;
  Basic basic;
};

Reduction reduction_input(const void *in, int count, const Type &t, MPI_Op op) {
  Reduction red{{}, 0, reduction_basic(t, op)};
  red.data.resize(size_t(count) * t.size);
  pack(in, count, t, red.data.data());
  red.elements = red.data.size() / basic_size(red.basic);
  return red;
}

} // namespace

extern "C" {

int MPI_Barrier(MPI_Comm comm) {
  return call("MPI_Barrier", on_comm(comm), [&] {
    require_running();
    team_barrier(comm_of(comm).team());
  });
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root,
              MPI_Comm comm) {
  return call("MPI_Bcast", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    check_count(count);
    TypeRef t = committed_type(datatype);
    check_buffer(buffer, count, *t);
    check_root(c, root);
    size_t bytes = size_t(count) * t->size;
    if (t->contiguous()) {
      team_bcast(c.team(), buffer, bytes, root);
      return;
    }
    std::vector<uint8_t> packed(bytes);
    if (c.rank == root)
      pack(buffer, count, *t, packed.data());
    team_bcast(c.team(), packed.data(), bytes, root);
    if (c.rank != root)
      unpack(packed.data(), bytes, buffer, count, *t);
  });
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  return call("MPI_Reduce", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    check_count(count);
    TypeRef t = committed_type(datatype);
    check_root(c, root);
    bool in_place = sendbuf == MPI_IN_PLACE;
    if (in_place && c.rank != root)
      fail(MPI_ERR_BUFFER, "MPI_IN_PLACE is the root's only");
    const void *in = in_place ? recvbuf : sendbuf;
    check_buffer(in, count, *t);
    if (c.rank == root)
      check_buffer(recvbuf, count, *t);
    Reduction red = reduction_input(in, count, *t, op);
    team_reduce(c.team(), red.data.data(), red.elements, red.basic, op, root);
    if (c.rank == root)
      unpack(red.data.data(), red.data.size(), recvbuf, count, *t);
  });
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return call("MPI_Allreduce", on_comm(comm), [&] {
    require_running();
    Comm &c = comm_of(comm);
    check_count(count);
    TypeRef t = committed_type(datatype);
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    check_buffer(in, count, *t);
    check_buffer(recvbuf, count, *t);
    Reduction red = reduction_input(in, count, *t, op);
    team_reduce(c.team(), red.data.data(), red.elements, red.basic, op, 0);
    team_bcast(c.team(), red.data.data(), red.data.size(), 0);
    unpack(red.data.data(), red.data.size(), recvbuf, count, *t);
  });
}

} // extern "C"
