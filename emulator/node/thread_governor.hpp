// Whether a round's slices go to the worker threads (CoreWorkers) or stay
// on the run loop's thread, when the user left the threads to nicemu.
//
// On some machines the workers pay for themselves; on others handing them
// a round costs more than it saves (docs/architecture.md, "Threads": on
// the machines of 2026-11 two threads made the 8- and 64-node barrier
// loops 1.5 to 1.75 times slower, where an earlier machine had them 1.1 to
// 1.4 times faster). No fixed default is right for both, so the governor
// tries both ways in short alternating windows of wall time, keeps the one
// that ran more of the cores' slices per wall second (the rounds, and so
// the slices, are the same either way: a slice is a unit of the same
// work, where virtual time jumps while every core sleeps), and tries again
// now and then. Which thread runs a slice changes no result (the threads'
// design), so the choice changes nothing but the wall time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace nicemu {

class ThreadGovernor {
public:
  using Clock = std::function<double()>; // wall time, in seconds

  // Short windows, many of them alternating: a run's phases (cards
  // booting, a barrier, hosts computing) come and go faster than a trial.
  static constexpr double kWindowSeconds = 0.002;
  static constexpr int kTrialWindows = 10;    // alternating: 5 each way
  static constexpr int kExploitWindows = 100; // then keep the better 200 ms
  // The workers must run the slices this much faster to be chosen: a
  // thread less leaves a core to the host processes, and a tie is noise.
  static constexpr double kMargin = 1.1;

  explicit ThreadGovernor(Clock clock = steady_seconds)
      : clock_(std::move(clock)) {}

  // At the start of each round: whether this round's slices may go to the
  // workers. `slices`: how many the run has run so far.
  bool parallel(uint64_t slices) {
    ++rounds_;
    look(slices); // a clock read: tens of ns, against microseconds a round
    if (parallel_)
      ++parallel_rounds_;
    return parallel_;
  }

  uint64_t rounds() const { return rounds_; }
  uint64_t parallel_rounds() const { return parallel_rounds_; }
  // The choice of the last trial (false before the first ends), and
  // whether any trial chose the workers.
  bool chose_parallel() const { return chose_parallel_; }
  bool ever_chose_parallel() const { return ever_chose_parallel_; }

  static double steady_seconds() {
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

private:
  struct Totals {
    double wall = 0;
    double work = 0; // slices
    double rate() const { return wall > 0 ? work / wall : 0; }
  };

  void look(uint64_t slices) {
    const double now = clock_();
    if (!started_) {
      started_ = true;
      window_start_ = now;
      window_slices_ = slices;
      return;
    }
    if (now - window_start_ < kWindowSeconds)
      return;
    const double wall = now - window_start_;
    const double work = double(slices - window_slices_);
    window_start_ = now;
    window_slices_ = slices;
    if (windows_left_ > 0) { // keeping the choice
      if (--windows_left_ == 0) {
        trial_[0] = trial_[1] = Totals{};
        trial_windows_ = 0;
        parallel_ = false;
      }
      return;
    }
    Totals &t = trial_[parallel_ ? 1 : 0];
    t.wall += wall;
    t.work += work;
    if (++trial_windows_ < kTrialWindows) {
      parallel_ = !parallel_;
      return;
    }
    chose_parallel_ = trial_[1].rate() > trial_[0].rate() * kMargin;
    ever_chose_parallel_ |= chose_parallel_;
    parallel_ = chose_parallel_;
    windows_left_ = kExploitWindows;
  }

  Clock clock_;
  uint64_t rounds_ = 0, parallel_rounds_ = 0;
  bool started_ = false;
  double window_start_ = 0;
  uint64_t window_slices_ = 0;
  bool parallel_ = false; // this window's way
  bool chose_parallel_ = false, ever_chose_parallel_ = false;
  int trial_windows_ = 0; // windows of the current trial that ended
  int windows_left_ = 0;  // of keeping the choice; 0: trying
  Totals trial_[2];       // [0]: one thread, [1]: the workers
};

} // namespace nicemu
