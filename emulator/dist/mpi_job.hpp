// The MPI job this process is a rank of, as its launcher's environment says
// (docs/distributed.md): Open MPI's mpirun sets OMPI_COMM_WORLD_RANK and
// OMPI_COMM_WORLD_SIZE; MPICH's Hydra and Slurm set PMI_RANK and PMI_SIZE.
// Read without starting MPI, so that a command can tell it was started as
// one of several ranks before it does anything else.
#pragma once

#include <cstdint>
#include <optional>

namespace nicemu {

struct MpiJob {
  uint32_t rank = 0;
  uint32_t size = 1;
};

// Nothing when no launcher's variables are set, or they make no sense.
std::optional<MpiJob> mpi_job_from_environment();

} // namespace nicemu
