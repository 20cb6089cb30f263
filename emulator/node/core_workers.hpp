// Threads for the slices of a round (Simulation::set_threads).
//
// A round's slices are short: tens of instructions each, a few microseconds
// of wall time for a whole round of a large cluster. Waking a sleeping
// thread costs as much, so after a round the workers first spin, then
// yield, and only then sleep until the next one.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace nicemu {

// The threads a run of `nodes` nodes uses unless told otherwise: the cores
// this process may use, but no more than one per four nodes. Measured on
// the NI-AM barrier loop (docs/architecture.md, "Threads"): two or four
// nodes lose more to handing rounds to a worker than they gain.
unsigned default_threads(uint32_t nodes);

class CoreWorkers {
public:
  // `threads` in all: the caller of run and threads - 1 workers.
  explicit CoreWorkers(unsigned threads);
  ~CoreWorkers();
  CoreWorkers(const CoreWorkers &) = delete;
  CoreWorkers &operator=(const CoreWorkers &) = delete;

  unsigned threads() const { return unsigned(workers_.size()) + 1; }

  // Runs job(0) on the calling thread and job(w) on worker w, for each w
  // from 1 to threads() - 1, and returns when all have returned. An
  // exception thrown by a job is rethrown here (the lowest w's if several
  // threw).
  void run(const std::function<void(unsigned)> &job);
  // The caller will not start a round for a while (it waits for host
  // processes): the workers sleep at once instead of spinning, leaving the
  // cores to those processes. The next run wakes them.
  void rest() { resting_.store(true); }

private:
  void work(unsigned w);

  std::vector<std::thread> workers_;
  const std::function<void(unsigned)> *job_ = nullptr;
  std::vector<std::exception_ptr> errors_; // by thread
  std::atomic<uint64_t> round_{0};         // counts the rounds started
  std::atomic<unsigned> busy_{0};          // workers still in the round
  std::atomic<unsigned> sleepers_{0};      // workers asleep on round_
  std::atomic<bool> caller_asleep_{false}; // run() asleep on busy_
  std::atomic<bool> stop_{false};
  std::atomic<bool> resting_{false};
  const std::atomic<bool> never_rest_{false}; // the caller's own wait
};

} // namespace nicemu
