#include "plot/charts.hpp"

#include "nicemu/error.hpp"

#include <nlohmann/json.hpp>

namespace nicemu {

namespace {

using nlohmann::json;

std::string model_of(const json &document) {
  return document.value("model", std::string("?"));
}

// A series of (row[x_key], row[y_key]) over the rows; rows whose y is not
// positive (a figure not measured) are left out.
Series series_of(std::string name, const json &rows, const char *x_key,
                 const char *y_key) {
  Series s{std::move(name), {}, false};
  for (const json &row : rows) {
    double y = row.at(y_key).get<double>();
    if (y > 0)
      s.points.push_back({row.at(x_key).get<double>(), y});
  }
  return s;
}

// A constant limit drawn across the x range of `like`.
Series bound_like(std::string name, const Series &like, double y) {
  Series s{std::move(name), {}, true};
  if (!like.points.empty())
    s.points = {{like.points.front().first, y}, {like.points.back().first, y}};
  return s;
}

std::vector<Histogram> cycle_histograms(const json &report) {
  std::vector<Histogram> out;
  const std::string where = model_of(report) + ", " +
                            std::to_string(report.value("nodes", 0)) +
                            " node(s)";
  for (const json &h : report.at("handlers")) {
    if (h.at("calls").get<uint64_t>() == 0)
      continue;
    Histogram g;
    g.title =
        h.at("name").get<std::string>() + ": " +
        std::to_string(h.at("calls").get<uint64_t>()) + " calls, median " +
        std::to_string(h.at("median_cycles").get<uint64_t>()) +
        " cycles, p99 " + std::to_string(h.at("p99_cycles").get<uint64_t>()) +
        " (" + where + ")";
    g.first = h.at("histogram").at("first_cycles").get<double>();
    g.width = h.at("histogram").at("bucket_cycles").get<double>();
    for (const json &c : h.at("histogram").at("counts"))
      g.counts.push_back(c.get<double>());
    g.median = h.at("median_cycles").get<double>();
    g.p99 = h.at("p99_cycles").get<double>();
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<LineChart> niam_charts(const json &bench) {
  std::vector<LineChart> out;
  const std::string model = model_of(bench);
  if (bench.contains("barrier"))
    out.push_back(
        {"barrier latency (" + model + ", NI-AM)",
         "nodes",
         "microseconds (virtual)",
         {series_of("barrier", bench.at("barrier"), "nodes", "latency_us")}});
  if (bench.contains("bcopy"))
    out.push_back(
        {"bcopy bandwidth (" + model + ", 2 nodes)",
         "bytes",
         "MB/s (virtual)",
         {series_of("bcopy", bench.at("bcopy"), "bytes", "mb_per_s")}});
  return out;
}

// `bench logp --json`: back-to-back messages, measured against LogGP's
// g + k G.
std::vector<LineChart> logp_charts(const json &bench) {
  const json &m = bench.at("measured");
  LineChart c{"back-to-back messages (" + model_of(bench) + ", NI-AM, LogGP)",
              "bytes",
              "microseconds between messages (virtual)",
              {series_of("measured", m.at("bulk"), "bytes", "interval_us")}};
  Series model{"LogGP: g + k G", {}, true};
  double g = m.at("g_us").get<double>();
  double big_g = m.at("G_ns_per_byte").get<double>();
  for (auto [bytes, us] : c.series[0].points)
    model.points.push_back({bytes, g + bytes * big_g / 1000});
  c.series.push_back(std::move(model));
  return {c};
}

// `bench via --json`: one-way latency and bandwidth of VIPL and FM against
// the size, with the framing's bounds and the line rate.
std::vector<LineChart> via_charts(const json &bench) {
  const std::string model = model_of(bench);
  LineChart latency{"one-way latency (" + model + ", 2 nodes)",
                    "bytes",
                    "microseconds (virtual)",
                    {}};
  LineChart bandwidth{
      "bandwidth (" + model + ", 2 nodes)", "bytes", "MB/s (virtual)", {}};
  for (const char *protocol : {"vipl", "fm"}) {
    if (!bench.contains(protocol))
      continue;
    const std::string name = protocol == std::string("vipl") ? "VIPL" : "FM";
    const json &sizes = bench.at(protocol).at("sizes");
    latency.series.push_back(series_of(name, sizes, "bytes", "latency_us"));
    bandwidth.series.push_back(series_of(name, sizes, "bytes", "mb_per_s"));
    Series bound =
        series_of(name + " framing bound", sizes, "bytes", "bound_mb_per_s");
    bound.bound = true;
    bandwidth.series.push_back(std::move(bound));
  }
  if (bandwidth.series.empty())
    return {};
  bandwidth.series.push_back(
      bound_like("line rate", bandwidth.series[0],
                 bench.at("line_rate_mb_per_s").get<double>()));
  return {latency, bandwidth};
}

LineChart dimmnet_collectives(const json &bench) {
  LineChart c{"barrier and global sum (" + model_of(bench) + ", set-up D)",
              "nodes",
              "microseconds (virtual)",
              {}};
  Series barrier{"barrier", {}, false}, sum{"global sum (double)", {}, false};
  for (const json &k : bench.at("collective_curve")) {
    double nodes = k.at("nodes").get<double>();
    barrier.points.push_back({nodes, k.at("barrier_us").get<double>()});
    sum.points.push_back(
        {nodes, k.at("allreduce_us").at("double").get<double>()});
  }
  c.series = {barrier, sum};
  return c;
}

LineChart dimmnet_sendrecv(const std::string &model, const json &s) {
  LineChart c{"DIMM_Send/DIMM_Recv, one message (" + model + ":" +
                  s.at("setup").get<std::string>() + ")",
              "bytes",
              "MB/s (virtual)",
              {}};
  const char *paths[][2] = {{"recv_first_botf_us", "Recv first, BOTF"},
                            {"recv_first_push_us", "Recv first, PUSH"},
                            {"send_first_pull_us", "Send first, PULL"}};
  for (const auto &[key, name] : paths) {
    Series series{name, {}, false};
    for (const json &m : s.at("messages")) {
      double bytes = m.at("bytes").get<double>(), us = m.at(key);
      if (us > 0)
        series.points.push_back({bytes, bytes / us});
    }
    c.series.push_back(std::move(series));
  }
  return c;
}

// `bench dimmnet --json`: each set-up's BOTF, AOTF and PUSH bandwidth, the
// collectives against the node count, DIMM_Send/DIMM_Recv against the size.
std::vector<LineChart> dimmnet_charts(const json &bench) {
  std::vector<LineChart> out;
  const std::string model = model_of(bench);
  for (const json &s : bench.at("setups")) {
    const json &rows = s.at("bandwidth");
    if (rows.empty())
      continue;
    out.push_back(
        {"bandwidth (" + model + ":" + s.at("setup").get<std::string>() + ")",
         "bytes",
         "MB/s (virtual)",
         {series_of("BOTF", rows, "bytes", "botf_mb_per_s"),
          series_of("AOTF", rows, "bytes", "aotf_mb_per_s"),
          series_of("PUSH", rows, "bytes", "push_mb_per_s")}});
  }
  if (bench.contains("collective_curve"))
    out.push_back(dimmnet_collectives(bench));
  if (bench.contains("sendrecv"))
    for (const json &s : bench.at("sendrecv"))
      out.push_back(dimmnet_sendrecv(model, s));
  return out;
}

// `bench uzura --json`: RDMA-write throughput against the size, under the
// source bus's bound.
std::vector<LineChart> uzura_charts(const json &bench) {
  LineChart c{
      "RDMA write, call to completion (" + model_of(bench) + ", 2 nodes)",
      "bytes",
      "MB/s (virtual)",
      {series_of("RDMA write", bench.at("rdma_write"), "bytes", "mb_per_s")}};
  c.series.push_back(bound_like("PCI-X bus bound", c.series[0],
                                bench.at("bus_bound_mb_per_s").get<double>()));
  return {c};
}

std::vector<LineChart> bench_charts(const std::string &bench,
                                    const json &document) {
  if (bench == "niam")
    return niam_charts(document);
  if (bench == "logp")
    return logp_charts(document);
  if (bench == "via")
    return via_charts(document);
  if (bench == "dimmnet")
    return dimmnet_charts(document);
  if (bench == "uzura")
    return uzura_charts(document);
  throw Error("nicemu plot does not draw `bench " + bench +
              "` (it draws bench niam, logp, via, dimmnet and uzura)");
}

} // namespace

Charts charts_of(const json &document) {
  if (!document.is_object())
    throw Error("not a JSON object");
  Charts charts;
  if (document.value("format", std::string()) == "nicemu-cycle-report") {
    charts.histograms = cycle_histograms(document);
    if (charts.histograms.empty())
      throw Error("no handler of this cycle report was called");
    return charts;
  }
  const std::string bench = document.value("bench", std::string());
  if (bench.empty())
    throw Error("not a document nicemu can plot (a cycle report from "
                "`nicemu run --report-json`, or the JSON of `nicemu bench "
                "niam|logp|via|dimmnet|uzura --json`)");
  charts.lines = bench_charts(bench, document);
  if (charts.lines.empty())
    throw Error("this `bench " + bench + "` document has no curves");
  return charts;
}

} // namespace nicemu
