// `nicemu run` under mpirun: one cluster spread over the job's ranks
// (docs/distributed.md). Each rank builds its share of the nodes and the
// whole network; rank 0 prints the partition, the console, the fault
// reports, the summary and the cycle reports, and writes the trace and the
// captures, as one process would.
#pragma once

#include "cli/run_reports.hpp"
#include "cli/run_setup.hpp"
#include "dist/mpi_job.hpp"

#include <string>

namespace nicemu::cli {

struct SpreadOptions {
  bool quiet = false;
  std::string partition; // --partition FILE; empty: by the topology
};

// Starts MPI, runs this rank's share and returns the run's exit code (the
// same on every rank). A set-up error (a wrong partition file) is told once
// by rank 0 and every rank returns 1; a failure during the run ends the job
// (MPI_Abort) after saying which rank and why.
int run_spread(const ClusterOptions &o, const ReportOptions &reports,
               const RunInputs &in, const SpreadOptions &s, const MpiJob &job);

} // namespace nicemu::cli
