// The keys every `bench NAME --json` document carries: which bench, and the
// format and version that its schema, docs/schemas/bench-NAME.schema.json,
// pins (as the cycle report's format and version do).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace nicemu::cli {

inline constexpr int kBenchJsonVersion = 1;

// `figures` with the format, version and bench keys added.
inline nlohmann::json bench_json(const std::string &bench,
                                 nlohmann::json figures = nlohmann::json()) {
  nlohmann::json j = {{"format", "nicemu-bench-" + bench},
                      {"version", kBenchJsonVersion},
                      {"bench", bench}};
  if (figures.is_object())
    j.update(figures);
  return j;
}

} // namespace nicemu::cli
