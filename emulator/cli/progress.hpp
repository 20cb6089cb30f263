// The progress line of long commands (`nicemu run`, `nicemu bench ...`;
// --progress and --no-progress, on by default when stderr is a terminal):
// one line on stderr, drawn half a second into the command and then
// rewritten in place (carriage return) at most four times a second, and
// removed before other output of the command and at the end. Never on
// stdout, never in JSON. Wall time paces the display only: it never
// reaches a run's virtual time, and the line only reads the run.
#pragma once

#include "bench/bench_hooks.hpp"
#include "node/simulation.hpp"
#include "sim/time.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace nicemu::cli {

enum class ProgressMode { Auto, On, Off };

// --progress, --no-progress.
void add_progress_options(CLI::App &cmd, ProgressMode &mode);
// On, or Auto with stderr a terminal.
bool progress_wanted(ProgressMode mode);

class ProgressLine {
public:
  explicit ProgressLine(bool enabled);
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine &) = delete;
  ProgressLine &operator=(const ProgressLine &) = delete;

  bool enabled() const { return enabled_; }
  // Whether it is time to draw again; cheap enough for every round of a
  // run (a coarse clock).
  bool due();
  // Replaces the line (cut to the terminal's width).
  void draw(const std::string &text);
  // Removes the line, if one is shown.
  void clear();
  // Wall seconds since the line was made.
  double elapsed() const;

private:
  bool enabled_;
  size_t shown_ = 0; // characters on the line now
  size_t width_ = 0; // the terminal's columns less one; 0: not a terminal
  double start_ = 0, next_ = 0;
};

// "950 ns", "12.345 us", "1.234 ms", "2.500 s".
std::string format_virtual(Time t);

// `nicemu run`: the virtual time reached, how fast it goes and the emulated
// MIPS; with --max-time, the share done and the wall time it may still take.
class RunProgress final : public RunMonitor {
public:
  RunProgress(ProgressLine &line, Time max_time)
      : line_(line), max_time_(max_time) {}
  void between_rounds(const Simulation &sim) override;

private:
  ProgressLine &line_;
  Time max_time_;
};

// `nicemu bench ...`: which run of how many, how far it is in virtual time,
// and the wall time of the run and of the whole benchmark.
class BenchProgressLine final : public BenchProgress {
public:
  BenchProgressLine(ProgressLine &line, std::string bench)
      : line_(line), bench_(std::move(bench)) {}
  void plan(int runs) override { runs_ = runs; }
  void starting(const std::string &what) override;
  void between_rounds(const Simulation &sim) override;

private:
  ProgressLine &line_;
  std::string bench_, what_;
  int runs_ = 0, run_ = 0;
  double run_start_ = 0;
};

} // namespace nicemu::cli
