// A request from outside a run to stop it: SIGINT or SIGTERM, set by the
// command line's signal handler (cli/stop_signals.hpp). The run loop
// (Simulation::run) honours it between two rounds of slices, so a stopped
// run ends at a block boundary of every core, with its observers' files
// closed whole and its host processes stopped, like any other outcome.
#pragma once

#include <atomic>
#include <exception>
#include <string>

namespace nicemu {

class StopRequest {
public:
  // Async-signal-safe: a lock-free atomic store. `signal` is what asked
  // (SIGINT, SIGTERM); 0 counts as a request too (tests, debuggers).
  void request(int signal) noexcept {
    signal_.store(signal ? signal : kUnnamed, std::memory_order_relaxed);
  }
  bool requested() const noexcept {
    return signal_.load(std::memory_order_relaxed) != 0;
  }
  // The signal that asked, or 0.
  int signal() const noexcept {
    int s = signal_.load(std::memory_order_relaxed);
    return s == kUnnamed ? 0 : s;
  }

private:
  static constexpr int kUnnamed = -1;
  static_assert(std::atomic<int>::is_always_lock_free,
                "set from a signal handler");
  std::atomic<int> signal_{0};
};

// Thrown by what cannot give a result once its run was stopped (a
// benchmark): the command ends with 128 + signal, printing nothing more.
class Stopped : public std::exception {
public:
  explicit Stopped(int signal) : signal_(signal) {}
  int signal() const { return signal_; }
  const char *what() const noexcept override { return "stopped"; }

private:
  int signal_;
};

} // namespace nicemu
