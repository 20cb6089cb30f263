// nicemu plot REPORT.json [-o OUT.svg]
#include "cli/commands.hpp"
#include "nicemu/error.hpp"
#include "plot/svg_plot.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace nicemu::cli {

void add_plot_command(CLI::App &app, ExitStatus &) {
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand(
      "plot", "Draw a JSON report as SVG: the cycle histogram of every "
              "handler (run --report-json), or the curves of bench niam "
              "--json");
  cmd->add_option("report", *input, "the JSON file")->required();
  cmd->add_option("-o,--output", *output,
                  "the SVG file (default: the report's name with .svg)");
  cmd->callback([input, output] {
    std::ifstream in(*input);
    if (!in)
      throw Error("plot: cannot read " + *input);
    nlohmann::json document;
    try {
      document = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception &e) {
      throw Error("plot: " + *input + " is not JSON: " + e.what());
    }
    std::string svg;
    try {
      svg = plot_json(document);
    } catch (const nlohmann::json::exception &e) {
      throw Error("plot: " + *input + ": unexpected content: " + e.what());
    } catch (const Error &e) {
      throw Error("plot: " + *input + ": " + e.what());
    }
    std::string path =
        output->empty()
            ? std::filesystem::path(*input).replace_extension(".svg").string()
            : *output;
    std::ofstream out(path);
    out << svg;
    if (!out)
      throw Error("plot: cannot write " + path);
    std::cout << "wrote " << path << "\n";
  });
}

} // namespace nicemu::cli
