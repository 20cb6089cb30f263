#include "node/core_workers.hpp"

#include "nicemu/spin_wait.hpp"

#include <algorithm>
#include <utility>

#include <pthread.h>
#include <sched.h>
#include <signal.h>

namespace nicemu {

namespace {

// How long a thread that waits keeps its core before it sleeps: some tens
// of microseconds of spinning, then yields (which hand the core to a
// runnable host process, if there is one). Waking a thread that sleeps
// costs more than most rounds: without the spin, the 8- and 64-node
// barrier loops ran 6 to 10 times slower (docs/architecture.md,
// "Threads").
constexpr int kSpins = 4000;
constexpr int kYields = 64;

// The low half of the state while a round's job and count are written.
constexpr uint32_t kOpening = 0xFFFFFFFFu;

// Waits until `load()` differs from `seen`: spins, yields, then sleeps via
// `sleep()` (which must return once the value may have changed); at once
// when `resting` says so.
template <class Load, class Sleep>
void wait_while_same(Load load, uint64_t seen, Sleep sleep,
                     const std::atomic<bool> &resting) {
  for (int i = 0; i < kSpins && !resting.load(std::memory_order_relaxed); ++i) {
    if (load() != seen)
      return;
    cpu_relax();
  }
  for (int i = 0; i < kYields && !resting.load(std::memory_order_relaxed);
       ++i) {
    if (load() != seen)
      return;
    sched_yield();
  }
  while (load() == seen)
    sleep();
}

} // namespace

unsigned default_threads(uint32_t nodes) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cores = unsigned(std::max(1, CPU_COUNT(&set)));
  return std::clamp(nodes / 4, 1u, cores);
}

CoreWorkers::CoreWorkers(unsigned threads) {
  // The workers block every signal (they inherit the mask): SIGCHLD,
  // SIGINT and SIGTERM keep going to the run loop's thread, whose handlers
  // set flags that only it reads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  for (unsigned w = 1; w < threads; ++w)
    workers_.emplace_back([this] { work(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

CoreWorkers::~CoreWorkers() {
  stop_.store(true);
  state_.fetch_add(uint64_t(1) << 32); // a new generation: every worker looks
  state_.notify_all();
  for (auto &t : workers_)
    t.join();
}

// A round's job and count are written while its state says "opening", and
// read only once it is open. The claim succeeds only if the state has not
// moved since, so the round has not ended: a round ends when every job was
// taken and finished, and the one being claimed was not.
void CoreWorkers::take_jobs(uint64_t generation) {
  for (;;) {
    uint64_t s = state_.load();
    if ((s >> 32) != generation)
      return; // the round is over, and another began
    uint32_t next = uint32_t(s);
    if (next == kOpening) {
      cpu_relax();
      continue;
    }
    const std::function<void(size_t)> *job = job_.load();
    const size_t count = count_.load();
    if (next >= count)
      return; // every job is taken
    if (!state_.compare_exchange_weak(s, s + 1))
      continue;
    size_t k = next;
    try {
      (*job)(k);
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!error_ || k < error_job_) {
        error_ = std::current_exception();
        error_job_ = k;
      }
    }
    if (done_.fetch_add(1) + 1 == count && caller_asleep_.load())
      done_.notify_all();
  }
}

void CoreWorkers::work() {
  uint64_t seen = 0; // the generation last looked at
  for (;;) {
    wait_while_same([this] { return state_.load() >> 32; }, seen,
                    [this, &seen] {
                      sleepers_.fetch_add(1);
                      uint64_t s = state_.load();
                      if ((s >> 32) == seen)
                        state_.wait(s); // returns at once if it moved
                      sleepers_.fetch_sub(1);
                    },
                    resting_);
    seen = state_.load() >> 32;
    if (stop_.load())
      return;
    take_jobs(seen);
  }
}

void CoreWorkers::run(size_t count, const std::function<void(size_t)> &job) {
  if (workers_.empty() || count < 2) {
    for (size_t k = 0; k < count; ++k)
      job(k);
    return;
  }
  uint64_t generation = (state_.load() >> 32) + 1;
  state_.store(generation << 32 | kOpening);
  job_.store(&job);
  count_.store(count);
  done_.store(0);
  resting_.store(false);
  state_.store(generation << 32); // open: job 0 next
  if (sleepers_.load()) // seq_cst: a worker going to sleep sees the round
    state_.notify_all();
  take_jobs(generation);
  // Only jobs a worker took and has not finished are left.
  for (int i = 0; done_.load() != count; ++i) {
    if (i < kSpins) {
      cpu_relax();
    } else if (i < kSpins + kYields) {
      sched_yield();
    } else {
      caller_asleep_.store(true);
      uint32_t d = done_.load();
      if (d != count)
        done_.wait(d); // returns at once if it moved
      caller_asleep_.store(false);
    }
  }
  if (error_) {
    std::exception_ptr first = std::exchange(error_, nullptr);
    std::rethrow_exception(first);
  }
}

} // namespace nicemu
