// A gnuplot script that draws Charts into one SVG or PNG file, the charts
// stacked vertically; the data travels inside the script as datablocks, so
// the script alone reproduces the plot (`nicemu plot --script` keeps it).
// Each y axis reaches above its highest value, an axis is logarithmic where
// its values span a wide range (x: ten times or more, such as sizes in
// bytes; y: thirty times or more), and every histogram marks its median and
// p99.
#pragma once

#include "plot/charts.hpp"

#include <string>

namespace nicemu {

enum class PlotFormat { Svg, Png };

std::string gnuplot_script(const Charts &charts, PlotFormat format,
                           const std::string &output);

} // namespace nicemu
