#include "profile/cycle_report.hpp"

#include "core/block_cost.hpp"
#include "nicemu/error.hpp"
#include "node/simulation.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <ostream>
#include <tuple>

namespace nicemu {

namespace {

constexpr size_t kHistogramBuckets = 20;

// "  123.4" style fixed columns without iostream state juggling.
std::string fmt(const char *format, auto... args) {
  int n = std::snprintf(nullptr, 0, format, args...);
  std::string out(size_t(std::max(n, 0)) + 1, '\0');
  std::snprintf(out.data(), out.size(), format, args...);
  out.pop_back();
  return out;
}

CycleBudget parse_budget(const std::string &text) {
  size_t eq = text.rfind('=');
  CycleBudget b;
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error("--budget '" + text + "': expected HANDLER=CYCLES");
  b.handler = text.substr(0, eq);
  const std::string number = text.substr(eq + 1);
  if (number.find_first_not_of("0123456789") != std::string::npos ||
      number.size() > 18)
    throw Error("--budget '" + text + "': '" + number +
                "' is not a whole number of cycles");
  b.cycles = std::stoull(number);
  return b;
}

// Nearest-rank percentile of sorted values.
uint64_t percentile(const std::vector<uint64_t> &sorted, double p) {
  if (sorted.empty())
    return 0;
  size_t rank = size_t(p * double(sorted.size()) + 0.999999);
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

} // namespace

CallStats CallStats::of(std::vector<uint64_t> cycles, uint64_t stall) {
  CallStats s;
  s.calls = cycles.size();
  s.stall = stall;
  if (cycles.empty())
    return s;
  std::sort(cycles.begin(), cycles.end());
  for (uint64_t c : cycles)
    s.total += c;
  s.min = cycles.front();
  s.max = cycles.back();
  s.median = cycles[(cycles.size() - 1) / 2];
  s.p99 = percentile(cycles, 0.99);
  s.mean = double(s.total) / double(s.calls);
  return s;
}

CycleProfiling::CycleProfiling(const Image &image, const Model &model,
                               const std::vector<std::string> &measure,
                               const std::vector<std::string> &budgets,
                               RunEvents *events)
    : functions_(image), model_(model), events_(events) {
  auto unknown = [&](const std::string &name, const char *option) {
    return Error(std::string(option) + " " + name +
                 ": no function of that name in the firmware image (names "
                 "may be raw, demangled, or demangled without parameters; "
                 "`nicemu image --info` lists them)");
  };
  for (const std::string &name : measure)
    if (functions_.measure(name) == FunctionMap::kNone)
      throw unknown(name, "--measure");
  for (const std::string &text : budgets) {
    CycleBudget b = parse_budget(text);
    b.function = functions_.measure(b.handler);
    if (b.function == FunctionMap::kNone)
      throw unknown(b.handler, "--budget");
    budgets_.push_back(b);
  }
}

CycleProfiling::~CycleProfiling() = default;

size_t CycleProfiling::measured_functions() const {
  return size_t(std::count_if(functions_.functions().begin(),
                              functions_.functions().end(),
                              [](const auto &f) { return f.measured; }));
}

void CycleProfiling::attach(Simulation &sim) {
  for (auto &node : sim.nodes()) {
    profilers_.push_back(std::make_unique<CoreProfiler>(
        functions_, node->cpu(), node->clock(), node->id(), events_));
    node->set_block_observer(profilers_.back().get());
  }
  if (!sim.nodes().empty())
    code_reader_ = &sim.nodes().front()->cpu();
}

void CycleProfiling::finish(Simulation &sim) {
  for (size_t i = 0; i < profilers_.size(); ++i) {
    Node &node = *sim.nodes()[i];
    profilers_[i]->finish(node.cpu().cycles());
    node.set_block_observer(nullptr);
    results_.push_back(profilers_[i]->result(node.time()));
  }
  profilers_.clear();
}

void CycleProfiling::add_results(std::vector<CoreProfile> others) {
  for (CoreProfile &p : others) {
    if (p.functions.size() != functions_.functions().size())
      throw Error("cycle report: node " + std::to_string(p.node) +
                  "'s profile has " + std::to_string(p.functions.size()) +
                  " functions, this image " +
                  std::to_string(functions_.functions().size()));
    results_.push_back(std::move(p));
  }
  // Node order, as one process keeps them (the worst call of a budget is
  // the first found).
  std::stable_sort(results_.begin(), results_.end(),
                   [](const CoreProfile &a, const CoreProfile &b) {
                     return a.node < b.node;
                   });
}

uint64_t CycleProfiling::end_time_ps() const {
  uint64_t end = 0;
  for (const CoreProfile &p : results_)
    end = std::max<uint64_t>(end, p.end_time);
  return end;
}

double CycleProfiling::micros(uint64_t cycles) const {
  return double(cycles) * 1e6 / double(model_.clock_hz);
}

std::vector<CycleProfiling::HandlerRow>
CycleProfiling::handler_rows(std::optional<uint32_t> node) const {
  std::vector<HandlerRow> rows;
  const auto &fns = functions_.functions();
  for (uint32_t f = 0; f < fns.size(); ++f) {
    if (!fns[f].measured)
      continue;
    HandlerRow row{f, node, {}, {}};
    uint64_t stall = 0;
    for (const CoreProfile &p : results_) {
      if (node && p.node != *node)
        continue;
      for (const CallSample &c : p.functions[f].calls) {
        row.cycles.push_back(c.cycles);
        stall += c.stall;
      }
    }
    row.stats = CallStats::of(row.cycles, stall);
    rows.push_back(std::move(row));
  }
  // The costliest first; never-called handlers last, in address order.
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.stats.total > b.stats.total;
  });
  return rows;
}

void CycleProfiling::print_cycles(std::ostream &os, bool per_node) const {
  std::vector<std::optional<uint32_t>> scopes;
  if (per_node)
    for (const CoreProfile &p : results_)
      scopes.push_back(p.node);
  else
    scopes.push_back(std::nullopt);
  const double mhz = double(model_.clock_hz) / 1e6;
  for (auto scope : scopes) {
    os << "--- handler cycles: " << model_.name << " at " << fmt("%.3f", mhz)
       << " MHz, "
       << (scope ? "node " + std::to_string(*scope)
           : results_.size() == 1
               ? std::string("1 node")
               : "all " + std::to_string(results_.size()) + " nodes")
       << " ---\n";
    if (measured_functions() == 0) {
      os << "no handlers: mark them with NICEMU_HANDLER in the firmware or "
            "name them with --measure SYMBOL\n";
      continue;
    }
    os << fmt("%-22s %8s %12s %7s %7s %7s %7s %6s %9s %9s %9s\n", "handler",
              "calls", "cycles", "min", "median", "p99", "max", "stall",
              "median us", "p99 us", "max us");
    for (const HandlerRow &r : handler_rows(scope)) {
      const CallStats &s = r.stats;
      std::string name = functions_.functions()[r.function].name;
      if (name.size() > 22)
        name = name.substr(0, 21) + "~";
      if (s.calls == 0) {
        os << fmt("%-22s %8s\n", name.c_str(), "-");
        continue;
      }
      os << fmt("%-22s %8" PRIu64 " %12" PRIu64 " %7" PRIu64 " %7" PRIu64
                " %7" PRIu64 " %7" PRIu64 " %5.1f%% %9.3f %9.3f %9.3f\n",
                name.c_str(), s.calls, s.total, s.min, s.median, s.p99, s.max,
                s.total ? 100.0 * double(s.stall) / double(s.total) : 0.0,
                micros(s.median), micros(s.p99), micros(s.max));
    }
  }
  os << "(cycles: entry to return, exact; stall: device wait states, sleep "
        "and wake-up inside the calls)\n";
}

std::vector<CycleProfiling::FunctionRow> CycleProfiling::function_rows() const {
  std::vector<FunctionRow> rows;
  for (uint32_t f = 0; f < functions_.functions().size(); ++f) {
    FunctionRow row{f, 0, 0, 0};
    for (const CoreProfile &p : results_) {
      const FunctionProfile &fp = p.functions[f];
      row.self += fp.self;
      row.inclusive += fp.inclusive;
      row.entries += fp.entries;
    }
    if (row.self || row.inclusive)
      rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.self > b.self;
  });
  return rows;
}

// Spreads each block's cycles over its instructions by their static cost
// (the model's cycle table); what the block paid beyond that (device wait
// states, the taken-branch penalty) goes to its last instruction.
std::vector<CycleProfiling::LineRow>
CycleProfiling::line_rows(const LineTable &lines) const {
  std::map<uint64_t, BlockProfile> merged; // by address << 32 | size
  for (const CoreProfile &p : results_)
    for (const BlockProfile &b : p.blocks) {
      BlockProfile &m = merged[uint64_t(b.addr) << 32 | b.size];
      m.addr = b.addr;
      m.size = b.size;
      m.executions += b.executions;
      m.cycles += b.cycles;
    }
  // A line inlined into several functions gets a row in each.
  std::map<std::tuple<std::string, uint32_t, uint32_t>, LineRow> by_line;
  for (const auto &[key, b] : merged) {
    std::vector<uint32_t> words(b.size / 4);
    if (!code_reader_ ||
        !code_reader_->read_memory(b.addr, words.data(), b.size))
      continue;
    BlockInfo info = cost_block(b.addr, words, model_.cycles);
    uint64_t static_cycles = uint64_t(info.cost) * b.executions;
    for (uint32_t i = 0; i < info.instructions; ++i) {
      uint64_t c = uint64_t(info.prefix[i + 1] - info.prefix[i]) * b.executions;
      if (i + 1 == info.instructions && b.cycles > static_cycles)
        c += b.cycles - static_cycles;
      uint32_t pc = b.addr + 4 * i;
      std::optional<SourceLine> where = lines.at(pc);
      SourceLine line = where ? *where : SourceLine{"(no line)", 0};
      uint32_t function = functions_.index_at(pc);
      LineRow &row = by_line[{line.file, line.line, function}];
      row.where = line;
      row.cycles += c;
      row.function = function;
    }
  }
  std::vector<LineRow> rows;
  for (auto &[key, row] : by_line)
    rows.push_back(row);
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.cycles > b.cycles;
  });
  return rows;
}

void CycleProfiling::print_hotspots(std::ostream &os, const LineTable *lines,
                                    size_t top) const {
  uint64_t total = 0, sleep = 0;
  for (const CoreProfile &p : results_) {
    total += p.unattributed_cycles;
    sleep += p.sleep_cycles;
    for (const FunctionProfile &fp : p.functions)
      total += fp.self;
  }
  os << "--- hotspots: " << results_.size()
     << (results_.size() == 1 ? " node" : " nodes") << ", " << total
     << " cycles executed, " << sleep << " asleep ---\n";
  os << fmt("%-30s %12s %6s %12s %6s %10s\n", "function", "self", "self%",
            "inclusive", "incl%", "calls");
  auto pct = [&](uint64_t c) {
    return total ? 100.0 * double(c) / double(total) : 0.0;
  };
  size_t shown = 0;
  for (const FunctionRow &r : function_rows()) {
    if (shown++ == top)
      break;
    std::string name = functions_.functions()[r.function].name;
    if (name.size() > 30)
      name = name.substr(0, 29) + "~";
    os << fmt("%-30s %12" PRIu64 " %5.1f%% %12" PRIu64 " %5.1f%% %10" PRIu64
              "\n",
              name.c_str(), r.self, pct(r.self), r.inclusive, pct(r.inclusive),
              r.entries);
  }
  if (!lines) {
    os << "(no source lines: give the firmware's ELF with --elf FW.elf)\n";
    return;
  }
  os << fmt("%-44s %12s %6s  %s\n", "hottest lines", "cycles", "%", "function");
  shown = 0;
  for (const LineRow &r : line_rows(*lines)) {
    if (shown++ == top)
      break;
    std::string file = r.where.file;
    if (size_t slash = file.rfind('/'); slash != std::string::npos)
      file = file.substr(slash + 1);
    std::string where =
        r.where.line ? file + ":" + std::to_string(r.where.line) : file;
    std::string fn = r.function == FunctionMap::kNone
                         ? "?"
                         : functions_.functions()[r.function].name;
    os << fmt("%-44s %12" PRIu64 " %5.1f%%  ", where.c_str(), r.cycles,
              pct(r.cycles))
       << fn << "\n";
  }
}

nlohmann::json CycleProfiling::to_json(const LineTable *lines,
                                       size_t top) const {
  using nlohmann::json;
  auto handler_json = [&](const HandlerRow &r) {
    const auto &fn = functions_.functions()[r.function];
    const CallStats &s = r.stats;
    json h = {{"name", fn.name},         {"symbol", fn.raw},
              {"address", fn.lo},        {"calls", s.calls},
              {"total_cycles", s.total}, {"stall_cycles", s.stall},
              {"min_cycles", s.min},     {"median_cycles", s.median},
              {"p99_cycles", s.p99},     {"max_cycles", s.max},
              {"mean_cycles", s.mean},   {"total_us", micros(s.total)},
              {"min_us", micros(s.min)}, {"median_us", micros(s.median)},
              {"p99_us", micros(s.p99)}, {"max_us", micros(s.max)}};
    // Equal-width buckets from min to max; the last one includes max.
    uint64_t width = std::max<uint64_t>(1, (s.max - s.min + kHistogramBuckets) /
                                               kHistogramBuckets);
    std::vector<uint64_t> counts(s.calls ? kHistogramBuckets : 0, 0);
    for (uint64_t c : r.cycles)
      ++counts[std::min<size_t>((c - s.min) / width, kHistogramBuckets - 1)];
    h["histogram"] = {
        {"first_cycles", s.min}, {"bucket_cycles", width}, {"counts", counts}};
    return h;
  };
  json report = {{"format", "nicemu-cycle-report"},
                 {"version", 1},
                 {"model", model_.name},
                 {"clock_hz", model_.clock_hz},
                 {"nodes", results_.size()},
                 {"virtual_time_ps", end_time_ps()}};
  json handlers = json::array();
  for (const HandlerRow &r : handler_rows(std::nullopt))
    handlers.push_back(handler_json(r));
  report["handlers"] = handlers;
  json per_node = json::array();
  for (const CoreProfile &p : results_) {
    json rows = json::array();
    for (const HandlerRow &r : handler_rows(p.node))
      rows.push_back(handler_json(r));
    per_node.push_back({{"node", p.node}, {"handlers", rows}});
  }
  report["per_node"] = per_node;
  json functions = json::array();
  for (const FunctionRow &r : function_rows())
    functions.push_back({{"name", functions_.functions()[r.function].name},
                         {"self_cycles", r.self},
                         {"inclusive_cycles", r.inclusive},
                         {"calls", r.entries}});
  json hot_lines = json::array();
  if (lines) {
    size_t shown = 0;
    for (const LineRow &r : line_rows(*lines)) {
      if (shown++ == top)
        break;
      hot_lines.push_back(
          {{"file", r.where.file},
           {"line", r.where.line},
           {"cycles", r.cycles},
           {"function", r.function == FunctionMap::kNone
                            ? ""
                            : functions_.functions()[r.function].name}});
    }
  }
  report["hotspots"] = {{"functions", functions}, {"lines", hot_lines}};
  json budgets = json::array();
  for (const CycleBudget &b : budgets_) {
    uint64_t over = 0, worst = 0;
    for (const CoreProfile &p : results_)
      for (const CallSample &c : p.functions[b.function].calls)
        if (c.cycles > b.cycles) {
          ++over;
          worst = std::max(worst, c.cycles);
        }
    budgets.push_back({{"handler", b.handler},
                       {"budget_cycles", b.cycles},
                       {"calls_over", over},
                       {"worst_cycles", worst}});
  }
  report["budgets"] = budgets;
  return report;
}

std::vector<std::string> CycleProfiling::budget_failures() const {
  std::vector<std::string> failures;
  for (const CycleBudget &b : budgets_) {
    uint64_t over = 0, calls = 0;
    const CallSample *worst = nullptr;
    uint32_t worst_node = 0;
    for (const CoreProfile &p : results_)
      for (const CallSample &c : p.functions[b.function].calls) {
        ++calls;
        if (c.cycles <= b.cycles)
          continue;
        ++over;
        if (!worst || c.cycles > worst->cycles) {
          worst = &c;
          worst_node = p.node;
        }
      }
    if (over)
      failures.push_back(fmt(
          "%s: %" PRIu64 " of %" PRIu64 " calls over the budget of %" PRIu64
          " cycles; the worst took %" PRIu64 " cycles, on node %u at %.3f us",
          b.handler.c_str(), over, calls, b.cycles, worst->cycles, worst_node,
          double(worst->start) / 1e6));
  }
  return failures;
}

} // namespace nicemu
