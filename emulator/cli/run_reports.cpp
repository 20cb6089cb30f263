#include "cli/run_reports.hpp"

#include "cli/run_setup.hpp"
#include "nicemu/error.hpp"
#include "observe/trace_writer.hpp"

#include <nlohmann/json.hpp>

#include <iostream>

namespace nicemu::cli {

bool ReportOptions::traces_cores() const {
  return !observe.trace.empty() &&
         (parse_trace_categories(
              observe.trace_filter.empty() ? "all" : observe.trace_filter) &
          kTraceCore);
}

CycleReports::CycleReports(const ReportOptions &o, const std::string &firmware,
                           const std::vector<uint8_t> &flash,
                           const Model &model, RunEvents *events)
    : o_(o), image_(decode_image(flash)) {
  for (const std::string &what : o.report) {
    if (what == "cycles")
      cycles_ = true;
    else if (what == "hotspots")
      hotspots_ = true;
    else
      throw Error("--report " + what + ": expected cycles or hotspots");
  }
  if (!o.measure.empty() || !o.budget.empty())
    cycles_ = cycles_ || o.report.empty();
  std::string elf = o.elf;
  if (elf.empty() && !firmware.empty())
    elf = find_elf_for_image(firmware, image_.build_id);
  if (!elf.empty() && (hotspots_ || !o.report_json.empty())) {
    if (!o.elf.empty() && image_from_elf(elf, "").build_id != image_.build_id)
      throw Error("--elf " + elf +
                  ": not the ELF file this image was built "
                  "from (build ids differ)");
    lines_ = LineTable::read(elf);
  }
  if (!o.report_json.empty()) {
    json_ = std::make_unique<std::ofstream>(o.report_json);
    if (!*json_)
      throw Error("--report-json " + o.report_json + ": cannot write");
  }
  profiling_ = std::make_unique<CycleProfiling>(image_, model, o.measure,
                                                o.budget, events);
}

int CycleReports::print() {
  const LineTable *lines = lines_ ? &*lines_ : nullptr;
  if (cycles_)
    profiling_->print_cycles(std::cout, o_.per_node);
  if (hotspots_)
    profiling_->print_hotspots(std::cout, lines, o_.top);
  std::cout << std::flush;
  if (json_)
    *json_ << profiling_->to_json(lines, o_.top).dump(1) << "\n";
  int code = 0;
  for (const std::string &failure : profiling_->budget_failures()) {
    std::cerr << "nicemu: cycle budget exceeded: " << failure << "\n";
    code = kExitBudget;
  }
  return code;
}

} // namespace nicemu::cli
