// `nicemu bench cpu`: how fast the core emulates, with and without cycle
// accounting, against a plain Unicorn run of the same code in this process;
// and how cheaply a sleeping core skips virtual time.
#pragma once

#include "sim/time.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

struct CpuKernelFigures {
  std::string name;
  uint64_t instructions = 0; // per run, from the accounted run
  uint64_t cycles = 0;
  uint32_t exit_code = 0;
  bool results_agree = false; // all three runs computed the same result
  double wall_accounting = 0, wall_no_accounting = 0, wall_raw = 0; // seconds
  double mips(double wall) const {
    return wall > 0 ? instructions / wall / 1e6 : 0;
  }
};

struct CpuBenchFigures {
  std::string model;
  std::vector<CpuKernelFigures> kernels;
  Time sleep_virtual = 0; // virtual time the sleeping firmware covered
  double sleep_wall = 0;  // wall seconds it took
  uint64_t sleep_instructions = 0;
  // Resident memory added per node, for nodes sharing one flash image and
  // running the sleeping firmware for 2 ms of virtual time.
  double node_resident_kib = 0;
  int memory_nodes = 0;
};

struct CpuBenchOptions {
  std::string firmware_dir; // holds bench_cpu.img and sleep_1s.img
  uint32_t checksum_iterations = 100;
  uint32_t call_iterations = 40;
  int repeats = 5; // best of
};

CpuBenchFigures run_cpu_bench(const CpuBenchOptions &options);

} // namespace nicemu
