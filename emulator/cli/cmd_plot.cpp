// nicemu plot REPORT.json [-o OUT.svg|OUT.png] [--format svg|png]
//                         [--script FILE]
// Writes a gnuplot script with the data inside it and runs gnuplot on it.
#include "cli/commands.hpp"
#include "nicemu/error.hpp"
#include "plot/charts.hpp"
#include "plot/gnuplot_run.hpp"
#include "plot/gnuplot_script.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

namespace nicemu::cli {

namespace {

struct PlotOptions {
  std::string input, output, format, script;
};

nlohmann::json read_document(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw Error("plot: cannot read " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception &e) {
    throw Error("plot: " + path + " is not JSON: " + e.what());
  }
}

Charts read_charts(const std::string &path) {
  nlohmann::json document = read_document(path);
  try {
    return charts_of(document);
  } catch (const nlohmann::json::exception &e) {
    throw Error("plot: " + path + ": unexpected content: " + e.what());
  } catch (const Error &e) {
    throw Error("plot: " + path + ": " + e.what());
  }
}

// --format, else the output's extension, else SVG.
PlotFormat format_of(const PlotOptions &o) {
  if (!o.format.empty())
    return o.format == "png" ? PlotFormat::Png : PlotFormat::Svg;
  return std::filesystem::path(o.output).extension() == ".png"
             ? PlotFormat::Png
             : PlotFormat::Svg;
}

// The script goes where --script says, else to a temporary file removed
// once gnuplot has run.
void draw(const std::string &script, const std::string &keep) {
  std::string path = keep;
  if (path.empty()) {
    std::string tmp =
        (std::filesystem::temp_directory_path() / "nicemu-plot-XXXXXX.gp")
            .string();
    int fd = mkstemps(tmp.data(), 3);
    if (fd < 0)
      throw Error("plot: cannot create a temporary file in " +
                  std::filesystem::temp_directory_path().string());
    close(fd);
    path = tmp;
  }
  std::ofstream(path) << script;
  try {
    run_gnuplot(path);
  } catch (const Error &e) {
    if (keep.empty())
      std::filesystem::remove(path);
    throw Error(std::string("plot: ") + e.what());
  }
  if (keep.empty())
    std::filesystem::remove(path);
}

void plot(PlotOptions o) {
  Charts charts = read_charts(o.input);
  PlotFormat format = format_of(o);
  if (o.output.empty())
    o.output =
        std::filesystem::path(o.input)
            .replace_extension(format == PlotFormat::Png ? ".png" : ".svg")
            .string();
  std::error_code ignored;
  std::filesystem::remove(o.output, ignored); // no stale plot counts
  draw(gnuplot_script(charts, format, o.output), o.script);
  if (!std::filesystem::exists(o.output))
    throw Error("plot: gnuplot did not write " + o.output);
  std::cout << "wrote " << o.output << "\n";
}

} // namespace

void add_plot_command(CLI::App &app, ExitStatus &) {
  auto o = std::make_shared<PlotOptions>();
  CLI::App *cmd = app.add_subcommand(
      "plot", "Draw a JSON report with gnuplot (SVG or PNG): the cycle "
              "histogram of every handler (run --report-json), or the "
              "curves of bench niam, logp, via, dimmnet and uzura --json");
  cmd->add_option("report", o->input, "the JSON file")->required();
  cmd->add_option("-o,--output", o->output,
                  "the SVG or PNG file (default: the report's name with "
                  ".svg, or .png with --format png)");
  cmd->add_option("--format", o->format,
                  "svg or png (default: from the output's extension, else "
                  "svg)")
      ->check(CLI::IsMember({"svg", "png"}));
  cmd->add_option("--script", o->script,
                  "keep the gnuplot script (data included) in this file");
  cmd->callback([o] { plot(*o); });
}

} // namespace nicemu::cli
