#include "cli/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace nicemu::cli {

namespace {

constexpr double kFirstDraw = 0.5; // wall seconds: short commands show none
constexpr double kInterval = 0.25; // at most four times a second

// A few milliseconds of resolution, a few nanoseconds to read.
double coarse_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

std::string format(const char *fmt, double value, const char *unit) {
  char text[48];
  std::snprintf(text, sizeof text, fmt, value, unit);
  return text;
}

// "0.4 s", "12 s", "3 min 20 s".
std::string format_wall(double s) {
  if (s < 10)
    return format("%.1f%s", s, " s");
  if (s < 600)
    return format("%.0f%s", s, " s");
  return std::to_string(long(s) / 60) + " min " + std::to_string(long(s) % 60) +
         " s";
}

uint64_t instructions(const Simulation &sim) {
  uint64_t sum = 0;
  for (const auto &n : sim.nodes())
    sum += n->cpu().instructions();
  return sum;
}

} // namespace

void add_progress_options(CLI::App &cmd, ProgressMode &mode) {
  const char *group = "Progress";
  CLI::Option *on = cmd.add_flag_callback(
                           "--progress", [&mode] { mode = ProgressMode::On; },
                           "show progress on stderr, updated in place "
                           "(default: when stderr is a terminal)")
                        ->group(group);
  CLI::Option *off =
      cmd.add_flag_callback(
             "--no-progress", [&mode] { mode = ProgressMode::Off; },
             "no progress line")
          ->group(group);
  on->excludes(off);
}

bool progress_wanted(ProgressMode mode) {
  return mode == ProgressMode::On ||
         (mode == ProgressMode::Auto && ::isatty(STDERR_FILENO));
}

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled) {
  start_ = coarse_seconds();
  next_ = start_ + kFirstDraw;
  if (enabled_ && ::isatty(STDERR_FILENO)) {
    winsize ws{};
    unsigned columns = 80;
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
      columns = ws.ws_col;
    width_ = columns - 1; // writing the last column may wrap the line
  }
}

bool ProgressLine::due() {
  if (!enabled_)
    return false;
  double now = coarse_seconds();
  if (now < next_)
    return false;
  next_ = now + kInterval;
  return true;
}

void ProgressLine::draw(const std::string &text) {
  if (!enabled_)
    return;
  std::string line = "\r" + text.substr(0, width_ ? width_ : text.size());
  size_t length = line.size() - 1;
  if (length < shown_)
    line.append(shown_ - length, ' '); // what is left of the longer line
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  shown_ = length;
}

void ProgressLine::clear() {
  if (!enabled_ || shown_ == 0)
    return;
  std::string blank = "\r" + std::string(shown_, ' ') + "\r";
  std::fwrite(blank.data(), 1, blank.size(), stderr);
  std::fflush(stderr);
  shown_ = 0;
}

double ProgressLine::elapsed() const {
  return coarse_seconds() - start_;
}

std::string format_virtual(Time t) {
  double ps = double(t);
  if (ps < 1e6)
    return format("%.0f%s", ps / 1e3, " ns");
  if (ps < 1e9)
    return format("%.3f%s", ps / 1e6, " us");
  if (ps < 1e12)
    return format("%.3f%s", ps / 1e9, " ms");
  return format("%.3f%s", ps / 1e12, " s");
}

void RunProgress::between_rounds(const Simulation &sim) {
  if (!line_.due())
    return;
  // "run: 4.362 s virtual (55 % of --max-time, 0.4 s left), 0.5 s wall,
  // 285.3 MIPS"
  Time now = sim.present();
  double wall = line_.elapsed();
  std::string text = "run: " + format_virtual(now) + " virtual";
  if (max_time_ != kTimeNever && max_time_ > 0) {
    double done = double(now) / double(max_time_);
    text += format(" (%.0f%s", 100 * done, " % of --max-time");
    if (done > 0.001 && done < 1)
      text += ", " + format_wall(wall * (1 - done) / done) + " left";
    text += ")";
  }
  text += ", " + format_wall(wall) + " wall, " +
          format("%.1f%s", double(instructions(sim)) / wall / 1e6, " MIPS");
  line_.draw(text);
}

void BenchProgressLine::starting(const std::string &what) {
  ++run_;
  what_ = what;
  run_start_ = line_.elapsed();
}

void BenchProgressLine::between_rounds(const Simulation &sim) {
  if (!line_.due())
    return;
  // "bench niam 7/11: niam_bench_barrier 100, 64 nodes, 1.234 ms virtual,
  // 12 s (45 s in all)"
  std::string text = bench_ + " " + std::to_string(run_);
  if (runs_ > 0)
    text += "/" + std::to_string(runs_);
  double wall = line_.elapsed();
  text += ": " + what_ + ", " + format_virtual(sim.present()) + " virtual, " +
          format_wall(wall - run_start_) + " (" + format_wall(wall) +
          " in all)";
  line_.draw(text);
}

} // namespace nicemu::cli
