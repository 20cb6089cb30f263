// Threads for the slices of a round (Simulation::set_threads).
//
// A round's slices are short: tens of instructions each, a few microseconds
// of wall time for a whole round of a large cluster. So the calling thread
// never waits for a worker to turn up: every thread takes the round's jobs
// one at a time from a shared counter, and the caller waits only for jobs a
// worker has taken and not finished. A worker that the machine's other
// processes keep off a core leaves the round to the others. Waking a
// sleeping thread costs as much as a round, so after a round the workers
// first spin, then yield, and only then sleep until the next one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
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

  // Runs job(k) once for each k in [0, count), on the calling thread and
  // the workers, in no set order and in parallel; returns when all have
  // returned. An exception thrown by a job is rethrown here (the lowest
  // k's, if several threw).
  void run(size_t count, const std::function<void(size_t)> &job);
  // The caller will not start a round for a while (it waits for host
  // processes): the workers sleep at once instead of spinning, leaving the
  // cores to those processes. The next run wakes them.
  void rest() { resting_.store(true); }

private:
  void work();
  // Takes and runs the round's jobs while there are any, for the round
  // `generation`; false once that round has no job left.
  void take_jobs(uint64_t generation);

  std::vector<std::thread> workers_;
  // The round: its generation (high 32 bits) and the next job to take (low
  // 32 bits; all ones while the round is being set up), changed together so
  // that a late worker takes nothing from a round that is over.
  std::atomic<uint64_t> state_{0};
  std::atomic<const std::function<void(size_t)> *> job_{nullptr};
  std::atomic<size_t> count_{0};
  std::atomic<uint32_t> done_{0};          // jobs of the round finished
  std::atomic<unsigned> sleepers_{0};      // workers asleep on state_
  std::atomic<bool> caller_asleep_{false}; // run() asleep on done_
  std::atomic<bool> stop_{false};
  std::atomic<bool> resting_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
  size_t error_job_ = 0;
};

} // namespace nicemu
