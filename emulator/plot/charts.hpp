// The charts of nicemu's JSON outputs, as data: the cycle histogram of every
// handler of a cycle report (--report-json, with its median and p99), and
// the curves of each `bench ... --json` (niam, logp, via, dimmnet, uzura).
// gnuplot_script.hpp draws them.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace nicemu {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points; // (x, y), x ascending
  bool bound = false; // a limit or a model, drawn as a dashed line
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

struct Histogram {
  std::string title;           // the handler
  double first = 0, width = 1; // bucket i covers [first + i*width, +width)
  std::vector<double> counts;
  double median = 0, p99 = 0; // cycles, marked on the chart
  std::string x_label = "cycles";
};

struct Charts {
  std::vector<LineChart> lines;
  std::vector<Histogram> histograms;
  size_t size() const { return lines.size() + histograms.size(); }
};

// The charts of one of nicemu's JSON documents. Throws nicemu::Error if it
// is none nicemu knows how to plot, or has nothing to draw.
Charts charts_of(const nlohmann::json &document);

} // namespace nicemu
