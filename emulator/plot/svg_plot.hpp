// `nicemu plot`: SVG charts from nicemu's JSON outputs, drawn here (SVG is
// text; no plotting stack needed): the cycle histogram of every handler of
// a cycle report (--report-json), the curves of `bench niam --json`
// (barrier latency against nodes, bcopy bandwidth against size) and of
// `bench dimmnet --json` (barrier and global sum against nodes,
// DIMM_Send/DIMM_Recv bandwidth against size).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace nicemu {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points; // (x, y), x ascending
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = false;
  std::vector<Series> series;
};

struct Histogram {
  std::string title;           // the handler
  double first = 0, width = 1; // bucket i covers [first + i*width, +width)
  std::vector<double> counts;
  std::string x_label = "cycles";
};

// One SVG document with the charts stacked vertically.
std::string render_svg(const std::vector<LineChart> &lines,
                       const std::vector<Histogram> &histograms);

// The charts of one of nicemu's JSON documents. Throws nicemu::Error if it
// is none nicemu knows how to plot.
std::string plot_json(const nlohmann::json &document);

} // namespace nicemu
