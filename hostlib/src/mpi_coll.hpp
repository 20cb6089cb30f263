// nicemu's MPI: collectives over point to point, inside a team (a
// communicator's or a window's ranks) with its own context: a
// dissemination barrier, a binomial broadcast and reduction, all-reduce
// as a reduction and a broadcast, and an all-gather (docs/mpi.md,
// "Collectives"). The data is bytes, already packed.
#pragma once

#include "mpi_comm.hpp"
#include "mpi_datatype.hpp"

namespace nicemu::mpi {

void team_barrier(const Team &team);
void team_bcast(const Team &team, void *buf, size_t bytes, int root);
// `n` elements of `basic`: `data` in, the result in `data` at the root.
void team_reduce(const Team &team, void *data, size_t n, Basic basic, MPI_Op op,
                 int root);
// Every rank's `bytes` at `mine`, in rank order, into `all`.
void team_allgather(const Team &team, const void *mine, size_t bytes,
                    void *all);

} // namespace nicemu::mpi
