// `nicemu` subcommands. Each file adds one subcommand to the application;
// user errors are thrown as nicemu::Error and printed by main().
#pragma once

#include "dist/mpi_job.hpp"

#include <CLI/CLI.hpp>

namespace nicemu::cli {

// Where a subcommand leaves the process exit code.
struct ExitStatus {
  int code = 0;
};

void add_image_command(CLI::App &app, ExitStatus &status);
void add_flash_command(CLI::App &app, ExitStatus &status);
void add_run_command(CLI::App &app, ExitStatus &status);
void add_replay_command(CLI::App &app, ExitStatus &status);
void add_debug_command(CLI::App &app, ExitStatus &status);
void add_bench_command(CLI::App &app, ExitStatus &status);
void add_models_command(CLI::App &app, ExitStatus &status);
void add_ldscript_command(CLI::App &app, ExitStatus &status);
void add_regs_command(CLI::App &app, ExitStatus &status);
void add_plot_command(CLI::App &app, ExitStatus &status);
void add_partition_command(CLI::App &app, ExitStatus &status);
// nicemu run started by mpirun as several ranks, with `what` (e.g. "host
// programs"), which a spread run cannot take yet: rank 0 says so; the exit
// code every rank returns (2). cmd_partition.cpp.
int refuse_spread(const MpiJob &job, const std::string &what);
// `nicemu bench dimmnet` (cmd_bench_dimmnet.cpp), under `nicemu bench`.
void add_dimmnet_bench(CLI::App &bench);
void add_uzura_bench(CLI::App &bench);
// `nicemu bench speed` (cmd_bench_speed.cpp).
void add_speed_bench(CLI::App &bench);
void add_scale_bench(CLI::App &bench); // cmd_bench_scale.cpp
void add_replay_bench(CLI::App &bench);

} // namespace nicemu::cli
