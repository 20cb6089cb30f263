// What a run writes and reports of itself besides its summary: the trace
// and captures (--trace, --pcap) and the cycle reports (--report,
// --report-json, --measure, --budget; docs/profiling.md). One process's
// run and a run spread over MPI ranks (cli/run_spread.cpp) both use these.
#pragma once

#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "observe/run_observers.hpp"
#include "profile/cycle_report.hpp"
#include "profile/line_table.hpp"

#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nicemu::cli {

struct ReportOptions {
  ObserveOptions observe; // --trace, --trace-filter, --pcap
  std::vector<std::string> report, measure, budget;
  std::string report_json, elf;
  bool per_node = false;
  size_t top = 15;
  bool profiling() const {
    return !report.empty() || !report_json.empty() || !measure.empty() ||
           !budget.empty();
  }
  // A trace with the cores' handler spans, which the profiler finds.
  bool traces_cores() const;
};

// The cycle profiling a run was asked for (directly, or for a trace's
// handler spans), checked before the run starts.
class CycleReports {
public:
  // `firmware`: the image's path (its ELF is looked for beside it). Throws
  // nicemu::Error for a bad option, symbol or file.
  CycleReports(const ReportOptions &o, const std::string &firmware,
               const std::vector<uint8_t> &flash, const Model &model,
               RunEvents *events);
  CycleProfiling &profiling() { return *profiling_; }
  // After the run (CycleProfiling::finish): the tables to stdout, the JSON
  // file, the budgets exceeded to stderr. Returns kExitBudget if a budget
  // was exceeded, else 0.
  int print();

private:
  const ReportOptions &o_;
  Image image_;
  std::unique_ptr<CycleProfiling> profiling_;
  bool cycles_ = false, hotspots_ = false;
  std::optional<LineTable> lines_;
  std::unique_ptr<std::ofstream> json_;
};

} // namespace nicemu::cli
