#include "node/core_workers.hpp"

#include <algorithm>

#include <sched.h>

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

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Waits until `load()` differs from `seen`: spins, yields, then sleeps via
// `sleep()` (which must return once the value may have changed); at once
// when `resting` says so.
template <class Load, class Sleep>
void wait_while_same(Load load, uint64_t seen, Sleep sleep,
                     const std::atomic<bool> &resting) {
  for (int i = 0; i < kSpins && !resting.load(std::memory_order_relaxed); ++i) {
    if (load() != seen)
      return;
    pause();
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
  errors_.resize(threads ? threads : 1);
  for (unsigned w = 1; w < threads; ++w)
    workers_.emplace_back([this, w] { work(w); });
}

CoreWorkers::~CoreWorkers() {
  stop_.store(true);
  round_.fetch_add(1);
  round_.notify_all();
  for (auto &t : workers_)
    t.join();
}

void CoreWorkers::work(unsigned w) {
  uint64_t seen = 0;
  for (;;) {
    wait_while_same([this] { return round_.load(); }, seen,
                    [this, &seen] {
                      sleepers_.fetch_add(1);
                      round_.wait(seen); // returns at once if it moved
                      sleepers_.fetch_sub(1);
                    },
                    resting_);
    seen = round_.load();
    if (stop_.load())
      return;
    try {
      (*job_)(w);
    } catch (...) {
      errors_[w] = std::current_exception();
    }
    if (busy_.fetch_sub(1) == 1 && caller_asleep_.load())
      busy_.notify_one();
  }
}

void CoreWorkers::run(const std::function<void(unsigned)> &job) {
  if (workers_.empty()) {
    job(0);
    return;
  }
  job_ = &job;
  resting_.store(false);
  busy_.store(unsigned(workers_.size()));
  round_.fetch_add(1);
  if (sleepers_.load()) // seq_cst: a worker going to sleep sees the round
    round_.notify_all();
  try {
    job(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  wait_while_same([this] { return uint64_t(busy_.load() == 0); }, 0,
                  [this] {
                    caller_asleep_.store(true);
                    if (unsigned b = busy_.load())
                      busy_.wait(b);
                    caller_asleep_.store(false);
                  },
                  never_rest_);
  job_ = nullptr;
  for (auto &e : errors_)
    if (e) {
      std::exception_ptr first = e;
      for (auto &clear : errors_)
        clear = nullptr;
      std::rethrow_exception(first);
    }
}

} // namespace nicemu
