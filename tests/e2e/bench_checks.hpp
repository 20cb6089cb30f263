// Checks shared by the tests that run a bench or write a report: its JSON
// against its schema (docs/schemas/, with python3-jsonschema), and
// `nicemu plot` of it as SVG and PNG: the files valid (the SVG parses as
// XML, the PNG starts with its signature) and every chart's y range above
// its highest value (read from the gnuplot script that --script keeps).
#pragma once

#include "cli_helpers.hpp"

#include <cctype>
#include <map>
#include <sstream>

namespace e2e {

// `json_path` validates against docs/schemas/`schema`.schema.json.
inline void check_schema(const std::string &json_path,
                         const std::string &schema) {
  const fs::path schema_path =
      fs::path(NICEMU_SOURCE_DIR) / "docs/schemas" / (schema + ".schema.json");
  CommandResult v = run_command(
      "/usr/bin/python3", {"-c",
                           "import json, sys, jsonschema\n"
                           "jsonschema.validate(json.load(open(sys.argv[1])),"
                           " json.load(open(sys.argv[2])))\n"
                           "print('valid')",
                           json_path, schema_path.string()});
  INFO(v);
  CHECK(v.status == 0);
  CHECK(v.out == "valid\n");
}

// The text of `json` saved in `dir` as `name`, validated against the schema
// of `bench NAME --json`.
inline std::string check_bench_schema(const TempDir &dir,
                                      const std::string &json,
                                      const std::string &bench) {
  std::string path = dir.file("bench-" + bench + ".json");
  write_bytes(path, std::vector<uint8_t>(json.begin(), json.end()));
  check_schema(path, "bench-" + bench);
  return path;
}

struct ChartRange {
  double y_lo = 0, y_hi = 0; // set yrange [lo:hi]
  double data_lo = 1e300, data_hi = -1e300;
};

// The chart number of a line "$c<chart>s<series> << EOD" (a datablock) or
// "plot $c<chart>s..." (its plot command), or -1. (No std::regex: g++ 12
// warns falsely at -O1 and the ASan build fails.)
inline int chart_of(const std::string &line, const std::string &prefix,
                    bool datablock) {
  if (line.rfind(prefix, 0) != 0)
    return -1;
  size_t at = prefix.size(), digits = at;
  while (digits < line.size() && std::isdigit(uint8_t(line[digits])))
    ++digits;
  if (digits == at || digits >= line.size() || line[digits] != 's')
    return -1;
  if (datablock) {
    size_t series = digits + 1;
    while (series < line.size() && std::isdigit(uint8_t(line[series])))
      ++series;
    if (series == digits + 1 || line.substr(series) != " << EOD")
      return -1;
  }
  return std::stoi(line.substr(at, digits - at));
}

// Per chart of a gnuplot script from nicemu plot: its y range and the
// extremes of the data it plots (datablocks $c<chart>s<series>).
inline std::map<int, ChartRange> chart_ranges(const std::string &script) {
  std::map<int, ChartRange> out;
  std::istringstream in(script);
  std::string line;
  double lo = 0, hi = 0;
  while (std::getline(in, line)) {
    if (int chart = chart_of(line, "$c", true); chart >= 0) {
      ChartRange &r = out[chart];
      while (std::getline(in, line) && line != "EOD") {
        double x = 0, y = 0;
        std::istringstream(line) >> x >> y;
        r.data_lo = std::min(r.data_lo, y);
        r.data_hi = std::max(r.data_hi, y);
      }
    } else if (line.rfind("set yrange [", 0) == 0 && line.back() == ']') {
      // Numbers only ("[*:*]", autoscale, is reset before each chart).
      std::istringstream range(line.substr(12, line.size() - 13));
      double a = 0, b = 0;
      char colon = 0;
      if (range >> a >> colon >> b && colon == ':' && range.peek() == EOF) {
        lo = a;
        hi = b;
      }
    } else if (int plotted = chart_of(line, "plot $c", false); plotted >= 0) {
      out[plotted].y_lo = lo;
      out[plotted].y_hi = hi;
    }
  }
  return out;
}

// A PNG file's first eight bytes.
inline bool is_png(const std::string &path) {
  std::vector<uint8_t> b = read_bytes(path);
  const uint8_t magic[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return b.size() > 8 && std::equal(magic, magic + 8, b.begin());
}

// The root element's tag if the file parses as XML, else the parser's
// complaint.
inline std::string xml_root(const std::string &path) {
  CommandResult r = run_command("/usr/bin/python3",
                                {"-c",
                                 "import sys, xml.etree.ElementTree as ET\n"
                                 "print(ET.parse(sys.argv[1]).getroot().tag)",
                                 path});
  return r.status == 0 ? r.out : r.err;
}

// `nicemu plot json_path` as SVG and PNG; returns the gnuplot script. The
// charts' count is checked when `charts` is not 0.
inline std::string check_plot(const TempDir &dir, const std::string &json_path,
                              size_t charts = 0) {
  const std::string stem = fs::path(json_path).stem().string();
  const std::string svg = dir.file(stem + ".svg"),
                    png = dir.file(stem + ".png"),
                    script = dir.file(stem + ".gp");
  CommandResult r = nicemu({"plot", json_path, "-o", svg, "--script", script});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(xml_root(svg) == "{http://www.w3.org/2000/svg}svg\n");
  CommandResult p = nicemu({"plot", json_path, "-o", png});
  INFO(p);
  REQUIRE(p.status == 0);
  CHECK(is_png(png));
  std::string text = read_text(script);
  std::map<int, ChartRange> ranges = chart_ranges(text);
  if (charts)
    CHECK(ranges.size() == charts);
  for (const auto &[chart, range] : ranges) {
    CAPTURE(chart);
    CAPTURE(range.data_hi);
    CAPTURE(range.y_hi);
    CHECK(range.data_hi >= range.data_lo); // the chart has data
    CHECK(range.y_hi > range.data_hi);     // above the highest
    CHECK(range.y_lo <= range.data_lo);
  }
  return text;
}

} // namespace e2e
