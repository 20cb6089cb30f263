#include "plot/gnuplot_script.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace nicemu {

namespace {

constexpr int kWidth = 960, kChartHeight = 320; // pixels

// A gnuplot string in single quotes: no escapes but the doubled quote.
std::string quoted(const std::string &text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

struct Extent {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
  // Positive values whose largest is `ratio` times the smallest or more
  // (sizes from 4 bytes to 64 KiB, node counts from 2 to 64): a log axis
  // shows them all.
  bool spans(double ratio) const { return lo > 0 && hi / lo >= ratio; }
};

// The range of an axis with a margin, so that the highest point or bar
// stays inside the frame: above the maximum, never at the tick below it.
// `from_zero`: a y axis that starts at 0, with `headroom` (a fraction of
// the span) above the highest value, for the key or the labels.
std::string range(const Extent &e, bool log, bool from_zero,
                  double headroom = 0.12) {
  if (e.empty())
    return "[*:*]";
  if (log)
    return "[" + num(e.lo / 1.5) + ":" + num(e.hi * 1.5) + "]";
  double lo = from_zero ? std::min(0.0, e.lo) : e.lo;
  double span = e.hi > lo ? e.hi - lo : std::max(std::fabs(e.hi), 1.0);
  return "[" + num(from_zero ? lo : lo - 0.05 * span) + ":" +
         num(e.hi + (from_zero ? headroom : 0.05) * span) + "]";
}

void datablock(std::ostream &os, const std::string &name,
               const std::vector<std::pair<double, double>> &points) {
  os << name << " << EOD\n";
  for (auto [x, y] : points)
    os << num(x) << " " << num(y) << "\n";
  os << "EOD\n";
}

// Settings one chart leaves behind that the next must not inherit.
void reset_chart(std::ostream &os) {
  os << "unset logscale\nunset arrow\nunset label\nunset title\n"
     << "set key outside right top box\n"
     << "set xrange [*:*]\nset yrange [*:*]\nset format x '%g'\n";
}

void line_chart(std::ostream &os, const LineChart &c, size_t index) {
  reset_chart(os);
  Extent xs, ys;
  for (const Series &s : c.series)
    for (auto [x, y] : s.points) {
      xs.add(x);
      ys.add(y);
    }
  bool log_x = xs.spans(10), log_y = ys.spans(30);
  os << "set title " << quoted(c.title) << "\nset xlabel " << quoted(c.x_label)
     << "\nset ylabel " << quoted(c.y_label) << "\n";
  if (log_x)
    os << "set logscale x 2\n";
  if (log_y)
    os << "set logscale y 10\n";
  os << "set xrange " << range(xs, log_x, false) << "\n";
  os << "set yrange " << range(ys, log_y, true) << "\n";
  os << "plot ";
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series &s = c.series[i];
    os << (i ? ", \\\n     " : "") << "$c" << index << "s" << i
       << " using 1:2 with "
       << (s.bound ? "lines dashtype 2 lw 1.5" : "linespoints pt 7 ps 0.6 lw 2")
       << " lc " << i + 1 << " title " << quoted(s.name);
  }
  os << "\n";
}

// A dashed vertical line at `at` cycles in front of the bars, labelled
// with its name and value on its left or right side (so that a median and
// a p99 at one value do not overwrite each other).
void mark(std::ostream &os, const char *name, double at, const char *colour,
          bool left) {
  os << "set arrow from " << num(at) << ", graph 0 to " << num(at)
     << ", graph 1 nohead front dashtype 2 lw 1.5 lc rgb '" << colour << "'\n"
     << "set label " << quoted(std::string(name) + " " + num(at)) << " at "
     << num(at) << ", graph 0.93 "
     << (left ? "right offset -0.5,0" : "left offset 0.5,0")
     << " front textcolor rgb '" << colour << "'\n";
}

void histogram(std::ostream &os, const Histogram &h, size_t index) {
  reset_chart(os);
  Extent counts;
  for (double c : h.counts)
    counts.add(c);
  counts.add(0);
  // The buckets and the marks, with a margin of a bucket or more on each
  // side (a single bucket gets room for its labels).
  double lo = std::min(h.first, h.median);
  double end =
      std::max({h.first + double(h.counts.size()) * h.width, h.median, h.p99});
  double pad = std::max({h.width, (end - lo) * 0.05, 3.0});
  os << "set title " << quoted(h.title) << "\nset xlabel " << quoted(h.x_label)
     << "\nset ylabel 'calls'\nunset key\n";
  os << "set xrange [" << num(lo - pad) << ":" << num(end + pad) << "]\n";
  os << "set yrange " << range(counts, false, true, 0.3) << "\n";
  os << "set boxwidth " << num(h.width * 0.9) << " absolute\n";
  mark(os, "median", h.median, "#d62728", true);
  mark(os, "p99", h.p99, "#2ca02c", false);
  os << "plot $c" << index << "s0 using 1:2 with boxes fill solid 0.6 "
     << "lc rgb '#1f77b4' title 'calls'\n";
}

std::vector<std::pair<double, double>> bars(const Histogram &h) {
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < h.counts.size(); ++i)
    out.push_back({h.first + (double(i) + 0.5) * h.width, h.counts[i]});
  return out;
}

} // namespace

std::string gnuplot_script(const Charts &charts, PlotFormat format,
                           const std::string &output) {
  std::ostringstream os;
  size_t n = std::max<size_t>(charts.size(), 1);
  os << "# nicemu plot: " << n << " chart(s)\n";
  os << "set terminal "
     << (format == PlotFormat::Svg ? "svg dynamic" : "pngcairo") << " size "
     << kWidth << "," << kChartHeight * n
     << " noenhanced font 'sans,10' background rgb 'white'\n";
  os << "set output " << quoted(output) << "\n";
  size_t index = 0;
  for (const LineChart &c : charts.lines) {
    for (size_t i = 0; i < c.series.size(); ++i)
      datablock(os, "$c" + std::to_string(index) + "s" + std::to_string(i),
                c.series[i].points);
    ++index;
  }
  for (const Histogram &h : charts.histograms)
    datablock(os, "$c" + std::to_string(index++) + "s0", bars(h));
  os << "set grid\nset tics nomirror\n"
     << "set multiplot layout " << n << ",1\n";
  index = 0;
  for (const LineChart &c : charts.lines)
    line_chart(os, c, index++);
  for (const Histogram &h : charts.histograms)
    histogram(os, h, index++);
  os << "unset multiplot\nset output\n";
  return os.str();
}

} // namespace nicemu
