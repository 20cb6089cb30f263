// nicemu's MPI: the predefined reduction operations on the basic types.
#pragma once

#include "mpi_datatype.hpp"

namespace nicemu::mpi {

// Checks that `op` applies to elements of `basic` (MPI_ERR_OP if not).
void check_op(MPI_Op op, Basic basic);
// inout[i] = inout[i] op in[i], for n elements of `basic`.
void apply_op(MPI_Op op, Basic basic, void *inout, const void *in, size_t n);

} // namespace nicemu::mpi
