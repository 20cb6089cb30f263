#include "plot/svg_plot.hpp"

#include "nicemu/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace nicemu {

namespace {

constexpr double kWidth = 720, kHeight = 300;                      // one chart
constexpr double kLeft = 80, kRight = 30, kTop = 40, kBottom = 50; // margins
const char *const kColours[] = {"#1f77b4", "#d62728", "#2ca02c",
                                "#9467bd", "#ff7f0e", "#8c564b"};

std::string num(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) >= 1e6 || std::fabs(v) < 1e-2))
    std::snprintf(buf, sizeof buf, "%.3g", v);
  else
    std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

// "Nice" tick values covering [lo, hi]: steps of 1, 2 or 5 times a power
// of ten, about `count` of them.
std::vector<double> ticks(double lo, double hi, int count = 5) {
  if (hi <= lo)
    hi = lo + 1;
  double raw = (hi - lo) / count;
  double power = std::pow(10, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return out;
}

class Canvas {
public:
  explicit Canvas(double y0) : y0_(y0) {}
  double plot_w() const { return kWidth - kLeft - kRight; }
  double plot_h() const { return kHeight - kTop - kBottom; }
  double px(double fx) const { return kLeft + fx * plot_w(); }
  double py(double fy) const { return y0_ + kTop + (1 - fy) * plot_h(); }

  void frame(std::ostream &os, const std::string &title,
             const std::string &x_label, const std::string &y_label) const {
    os << "<text x=\"" << kWidth / 2 << "\" y=\"" << y0_ + 22
       << "\" text-anchor=\"middle\" font-size=\"15\">" << escape(title)
       << "</text>\n";
    os << "<rect x=\"" << kLeft << "\" y=\"" << y0_ + kTop << "\" width=\""
       << plot_w() << "\" height=\"" << plot_h()
       << "\" fill=\"none\" stroke=\"#444\"/>\n";
    os << "<text x=\"" << kLeft + plot_w() / 2 << "\" y=\""
       << y0_ + kHeight - 10 << "\" text-anchor=\"middle\">" << escape(x_label)
       << "</text>\n";
    double cy = y0_ + kTop + plot_h() / 2;
    os << "<text x=\"18\" y=\"" << cy << "\" text-anchor=\"middle\" "
       << "transform=\"rotate(-90 18 " << cy << ")\">" << escape(y_label)
       << "</text>\n";
  }
  void x_tick(std::ostream &os, double fx, const std::string &label) const {
    os << "<line x1=\"" << px(fx) << "\" y1=\"" << py(0) << "\" x2=\"" << px(fx)
       << "\" y2=\"" << py(0) + 5 << "\" stroke=\"#444\"/>"
       << "<text x=\"" << px(fx) << "\" y=\"" << py(0) + 18
       << "\" text-anchor=\"middle\">" << escape(label) << "</text>\n";
  }
  void y_tick(std::ostream &os, double fy, const std::string &label) const {
    os << "<line x1=\"" << kLeft - 5 << "\" y1=\"" << py(fy) << "\" x2=\""
       << kLeft + plot_w() << "\" y2=\"" << py(fy)
       << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 8 << "\" y=\""
       << py(fy) + 4 << "\" text-anchor=\"end\">" << escape(label)
       << "</text>\n";
  }

private:
  double y0_;
};

void draw_line_chart(std::ostream &os, const LineChart &c, double y0) {
  Canvas canvas(y0);
  canvas.frame(os, c.title, c.x_label, c.y_label);
  double x_lo = INFINITY, x_hi = -INFINITY, y_hi = 0;
  for (const Series &s : c.series)
    for (auto [x, y] : s.points) {
      double xv = c.log_x ? std::log2(std::max(x, 1e-12)) : x;
      x_lo = std::min(x_lo, xv);
      x_hi = std::max(x_hi, xv);
      y_hi = std::max(y_hi, y);
    }
  if (!(x_lo <= x_hi))
    return; // no points
  if (x_hi == x_lo)
    x_hi = x_lo + 1;
  std::vector<double> yt = ticks(0, y_hi * 1.05);
  double y_top = yt.back() > 0 ? yt.back() : 1;
  for (double v : yt)
    canvas.y_tick(os, v / y_top, num(v));
  auto fx = [&](double x) {
    double xv = c.log_x ? std::log2(std::max(x, 1e-12)) : x;
    return (xv - x_lo) / (x_hi - x_lo);
  };
  if (c.log_x) {
    for (double e = std::ceil(x_lo); e <= x_hi;
         e += std::max(1.0, std::ceil((x_hi - x_lo) / 8)))
      canvas.x_tick(os, (e - x_lo) / (x_hi - x_lo), num(std::exp2(e)));
  } else {
    for (double v : ticks(x_lo, x_hi))
      canvas.x_tick(os, (v - x_lo) / (x_hi - x_lo), num(v));
  }
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series &s = c.series[i];
    const char *colour = kColours[i % std::size(kColours)];
    os << "<polyline fill=\"none\" stroke=\"" << colour
       << "\" stroke-width=\"2\" points=\"";
    for (auto [x, y] : s.points)
      os << canvas.px(fx(x)) << "," << canvas.py(y / y_top) << " ";
    os << "\"/>\n";
    for (auto [x, y] : s.points)
      os << "<circle cx=\"" << canvas.px(fx(x)) << "\" cy=\""
         << canvas.py(y / y_top) << "\" r=\"3\" fill=\"" << colour
         << "\"><title>" << num(x) << ": " << num(y) << "</title></circle>\n";
    os << "<text x=\"" << kLeft + 10 << "\" y=\"" << y0 + kTop + 16 + 16 * i
       << "\" fill=\"" << colour << "\">" << escape(s.name) << "</text>\n";
  }
}

void draw_histogram(std::ostream &os, const Histogram &h, double y0) {
  Canvas canvas(y0);
  canvas.frame(os, h.title, h.x_label, "calls");
  if (h.counts.empty()) {
    os << "<text x=\"" << kWidth / 2 << "\" y=\"" << y0 + kHeight / 2
       << "\" text-anchor=\"middle\">no calls</text>\n";
    return;
  }
  double top = *std::max_element(h.counts.begin(), h.counts.end());
  std::vector<double> yt = ticks(0, std::max(top, 1.0));
  double y_top = yt.back();
  for (double v : yt)
    canvas.y_tick(os, v / y_top, num(v));
  size_t n = h.counts.size();
  double bar = 1.0 / double(n);
  for (size_t i = 0; i < n; ++i) {
    double lo = h.first + double(i) * h.width;
    double x = canvas.px(double(i) * bar), w = canvas.plot_w() * bar;
    double y = canvas.py(h.counts[i] / y_top);
    os << "<rect x=\"" << x + 1 << "\" y=\"" << y << "\" width=\""
       << std::max(w - 2, 1.0) << "\" height=\"" << canvas.py(0) - y
       << "\" fill=\"" << kColours[0] << "\"><title>" << num(lo) << "-"
       << num(lo + h.width - 1) << " cycles: " << num(h.counts[i])
       << " calls</title></rect>\n";
  }
  for (size_t i = 0; i <= n; i += std::max<size_t>(1, n / 5))
    canvas.x_tick(os, double(i) * bar, num(h.first + double(i) * h.width));
}

std::vector<Histogram> cycle_histograms(const nlohmann::json &report) {
  std::vector<Histogram> out;
  const std::string where = report.value("model", std::string("?")) + ", " +
                            std::to_string(report.value("nodes", 0)) +
                            " node(s)";
  for (const auto &h : report.at("handlers")) {
    if (h.at("calls").get<uint64_t>() == 0)
      continue;
    Histogram g;
    g.title = h.at("name").get<std::string>() + ": " +
              std::to_string(h.at("calls").get<uint64_t>()) +
              " calls, median " +
              std::to_string(h.at("median_cycles").get<uint64_t>()) +
              " cycles (" + where + ")";
    g.first = h.at("histogram").at("first_cycles").get<double>();
    g.width = h.at("histogram").at("bucket_cycles").get<double>();
    for (const auto &c : h.at("histogram").at("counts"))
      g.counts.push_back(c.get<double>());
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<LineChart> niam_bench_charts(const nlohmann::json &bench) {
  std::vector<LineChart> out;
  const std::string model = bench.value("model", std::string("?"));
  if (bench.contains("barrier")) {
    LineChart c{"barrier latency (" + model + ", NI-AM)",
                "nodes",
                "microseconds (virtual)",
                true,
                {}};
    Series s{"barrier", {}};
    for (const auto &b : bench.at("barrier"))
      s.points.push_back(
          {b.at("nodes").get<double>(), b.at("latency_us").get<double>()});
    c.series.push_back(std::move(s));
    out.push_back(std::move(c));
  }
  if (bench.contains("bcopy")) {
    LineChart c{"bcopy bandwidth (" + model + ", 2 nodes)",
                "bytes",
                "MB/s (virtual)",
                true,
                {}};
    Series s{"bcopy", {}};
    for (const auto &b : bench.at("bcopy"))
      s.points.push_back(
          {b.at("bytes").get<double>(), b.at("mb_per_s").get<double>()});
    c.series.push_back(std::move(s));
    out.push_back(std::move(c));
  }
  return out;
}

// `bench dimmnet --json`: the collectives against the node count, and
// DIMM_Send/DIMM_Recv bandwidth against the size, per path and set-up.
std::vector<LineChart> dimmnet_bench_charts(const nlohmann::json &bench) {
  std::vector<LineChart> out;
  const std::string model = bench.value("model", std::string("?"));
  if (bench.contains("collective_curve")) {
    LineChart c{"barrier and global sum (" + model + ", set-up D)",
                "nodes",
                "microseconds (virtual)",
                true,
                {}};
    Series barrier{"barrier", {}}, sum{"global sum (double)", {}};
    for (const auto &k : bench.at("collective_curve")) {
      double nodes = k.at("nodes").get<double>();
      barrier.points.push_back({nodes, k.at("barrier_us").get<double>()});
      sum.points.push_back(
          {nodes, k.at("allreduce_us").at("double").get<double>()});
    }
    c.series.push_back(std::move(barrier));
    c.series.push_back(std::move(sum));
    out.push_back(std::move(c));
  }
  if (bench.contains("sendrecv"))
    for (const auto &s : bench.at("sendrecv")) {
      LineChart c{"DIMM_Send/DIMM_Recv, one message (" + model + ":" +
                      s.at("setup").get<std::string>() + ")",
                  "bytes",
                  "MB/s (virtual)",
                  true,
                  {}};
      const char *paths[][2] = {{"recv_first_botf_us", "Recv first, BOTF"},
                                {"recv_first_push_us", "Recv first, PUSH"},
                                {"send_first_pull_us", "Send first, PULL"}};
      for (const auto &[key, name] : paths) {
        Series series{name, {}};
        for (const auto &m : s.at("messages")) {
          double bytes = m.at("bytes").get<double>(), us = m.at(key);
          if (us > 0)
            series.points.push_back({bytes, bytes / us});
        }
        c.series.push_back(std::move(series));
      }
      out.push_back(std::move(c));
    }
  return out;
}

} // namespace

std::string render_svg(const std::vector<LineChart> &lines,
                       const std::vector<Histogram> &histograms) {
  size_t charts = lines.size() + histograms.size();
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth
     << "\" height=\"" << kHeight * double(std::max<size_t>(charts, 1))
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  double y = 0;
  for (const LineChart &c : lines) {
    draw_line_chart(os, c, y);
    y += kHeight;
  }
  for (const Histogram &h : histograms) {
    draw_histogram(os, h, y);
    y += kHeight;
  }
  os << "</svg>\n";
  return os.str();
}

std::string plot_json(const nlohmann::json &document) {
  if (!document.is_object())
    throw Error("not a JSON object");
  if (document.value("format", std::string()) == "nicemu-cycle-report")
    return render_svg({}, cycle_histograms(document));
  if (document.value("bench", std::string()) == "niam")
    return render_svg(niam_bench_charts(document), {});
  if (document.value("bench", std::string()) == "dimmnet") {
    std::vector<LineChart> charts = dimmnet_bench_charts(document);
    if (charts.empty())
      throw Error("this `bench dimmnet` document has no curves (it was run "
                  "with --no-collectives --no-sendrecv)");
    return render_svg(charts, {});
  }
  throw Error("not a document nicemu can plot (a cycle report from "
              "`nicemu run --report-json`, or `nicemu bench niam --json` or "
              "`bench dimmnet --json`)");
}

} // namespace nicemu
