// Handler cycle reports (`nicemu run --report cycles|hotspots`,
// `--report-json`, `--budget`): one profiler per core during the run, then
// tables, JSON (docs/schemas/cycle-report.schema.json) and budget checks.
#pragma once

#include "nicemu/model.hpp"
#include "observe/run_events.hpp"
#include "profile/core_profiler.hpp"
#include "profile/line_table.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nicemu {

class Simulation;

// Statistics of a set of calls, in cycles.
struct CallStats {
  uint64_t calls = 0, total = 0, stall = 0;
  uint64_t min = 0, median = 0, p99 = 0, max = 0;
  double mean = 0;
  static CallStats of(std::vector<uint64_t> cycles, uint64_t stall);
};

struct CycleBudget {
  std::string handler;
  uint64_t cycles = 0;
  uint32_t function = FunctionMap::kNone;
};

class CycleProfiling {
public:
  // `measure`: extra symbols to measure; `budgets`: "NAME=CYCLES". Throws
  // nicemu::Error naming an unknown symbol or a malformed budget.
  CycleProfiling(const Image &image, const Model &model,
                 const std::vector<std::string> &measure,
                 const std::vector<std::string> &budgets, RunEvents *events);
  ~CycleProfiling();

  // Installs a profiler on every core of `sim` (before it runs).
  void attach(Simulation &sim);
  // After the run: closes every profile at its core's final cycle and
  // keeps what each found (results()), for the reports below.
  void finish(Simulation &sim);
  // The cores' profiles the reports read, by node. A run spread over MPI
  // ranks profiles its own cores and adds the other ranks' (the same
  // image, model and options): the reports are then the whole cluster's.
  const std::vector<CoreProfile> &results() const { return results_; }
  void add_results(std::vector<CoreProfile> others);

  // The handler table: aggregated, or one table per node.
  void print_cycles(std::ostream &os, bool per_node) const;
  // Self and inclusive cycles per function, and the hottest source lines
  // (when `lines` is given).
  void print_hotspots(std::ostream &os, const LineTable *lines,
                      size_t top) const;
  nlohmann::json to_json(const LineTable *lines, size_t top) const;

  // One message per budget some call exceeded; empty when all were kept.
  std::vector<std::string> budget_failures() const;
  size_t measured_functions() const;

private:
  struct HandlerRow {
    uint32_t function;
    std::optional<uint32_t> node; // nullopt: all nodes
    CallStats stats;
    std::vector<uint64_t> cycles; // every call, for the histogram
  };
  std::vector<HandlerRow> handler_rows(std::optional<uint32_t> node) const;
  struct FunctionRow {
    uint32_t function;
    uint64_t self, inclusive, entries;
  };
  std::vector<FunctionRow> function_rows() const;
  struct LineRow {
    SourceLine where;
    uint64_t cycles;
    uint32_t function;
  };
  std::vector<LineRow> line_rows(const LineTable &lines) const;
  double micros(uint64_t cycles) const;
  uint64_t end_time_ps() const; // the latest node's

  FunctionMap functions_;
  const Model &model_;
  RunEvents *events_;
  std::vector<CycleBudget> budgets_;
  std::vector<std::unique_ptr<CoreProfiler>> profilers_; // during the run
  std::vector<CoreProfile> results_;                     // after it
  const Cpu *code_reader_ = nullptr; // reads code for per-instruction costs
};

} // namespace nicemu
