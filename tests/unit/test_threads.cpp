// The pieces that let the slices of a round run on several threads: the
// worker pool, and a scheduler that orders events the same whatever thread
// scheduled them when. (The end-to-end runs on 1, 2 and 3 threads are in
// tests/e2e/test_speed_switches.cpp.)
#include "node/core_workers.hpp"
#include "node/thread_governor.hpp"
#include "sim/scheduler.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace nicemu;

TEST_CASE("core workers: every job runs once per round, the caller taking "
          "its share, a worker its own") {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    CAPTURE(threads);
    CoreWorkers workers(threads);
    CHECK(workers.threads() == threads);
    std::set<std::thread::id> ever; // every thread that ran a job
    for (int round = 0; round < 300; ++round) {
      const size_t count = size_t(round % 17);
      std::vector<std::atomic<int>> runs(count);
      std::mutex m;
      workers.run(count, [&](size_t k) {
        runs[k].fetch_add(1);
        // Long enough jobs that the workers turn up.
        std::atomic<int> sink{0};
        for (int spin = 0; spin < 20000; ++spin)
          sink.store(spin, std::memory_order_relaxed);
        runs[k].fetch_add(sink.load() == 19999 ? 0 : 100); // counted below
        std::lock_guard lock(m);
        ever.insert(std::this_thread::get_id());
      });
      for (auto &r : runs)
        REQUIRE(r.load() == 1);
      if (round % 50 == 0)
        workers.rest(); // the workers sleep; the next round wakes them
    }
    CHECK(ever.count(std::this_thread::get_id()) == 1);
    CHECK(ever.size() <= threads);
    if (threads > 1) // on a busy machine a worker may never get a core
      WARN(ever.size() > 1);
  }
}

TEST_CASE("core workers: rounds in quick succession, of growing and "
          "shrinking size: no job runs twice, none is lost") {
  // A worker that turns up late must take nothing from a round that is
  // over, nor from the next one under the old one's name: it once did,
  // when the next round grew, and a core ran twice at once.
  CoreWorkers workers(3);
  std::vector<std::atomic<int>> runs(64);
  for (int round = 0; round < 100000; ++round) {
    const size_t count = 1 + size_t(round * 7) % 61;
    for (size_t k = 0; k < count; ++k)
      runs[k].store(0);
    workers.run(count, [&](size_t k) { runs[k].fetch_add(1); });
    for (size_t k = 0; k < count; ++k)
      REQUIRE(runs[k].load() == 1);
  }
}

TEST_CASE("core workers: a job's exception reaches the caller, the lowest "
          "job's when several throw, and the pool goes on") {
  CoreWorkers workers(3);
  for (int i = 0; i < 20; ++i) {
    try {
      workers.run(6, [](size_t k) {
        if (k >= 2)
          throw std::runtime_error("job " + std::to_string(k));
      });
      FAIL("no exception");
    } catch (const std::runtime_error &e) {
      CHECK(std::string(e.what()) == "job 2");
    }
  }
  std::atomic<int> ran{0};
  workers.run(7, [&](size_t) { ran.fetch_add(1); });
  CHECK(ran.load() == 7);
}

TEST_CASE("core workers: by default one thread per four nodes, at least "
          "one, at most the cores available") {
  CHECK(default_threads(1) == 1);
  CHECK(default_threads(3) == 1);
  CHECK(default_threads(7) == 1);
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  CHECK(default_threads(8) == std::min(2u, cores));
  CHECK(default_threads(4096) <= cores);
  CHECK(default_threads(4096) >= 1);
}

namespace {

// Several origins schedule events at equal times, each from its own thread
// when `threads`, else one after another; returns the order they ran in.
std::vector<std::string> run_order(bool threads) {
  Scheduler s;
  std::vector<std::string> order;
  constexpr int kOrigins = 4, kEvents = 50;
  auto schedule_as = [&](int origin) {
    s.set_origin(EventOrigin::core(uint32_t(origin)));
    for (int e = 0; e < kEvents; ++e) {
      std::string name = std::to_string(origin) + "." + std::to_string(e);
      // Two times, so that origin and sequence both decide.
      s.schedule(1000 + 1000 * (e % 2), "test",
                 [&order, name] { order.push_back(name); });
      if (e % 10 == 9) { // and a cancelled one, its slot reused
        EventId id = s.schedule(500, "cancelled", [] { FAIL("ran"); });
        CHECK(s.is_pending(id));
        CHECK(s.cancel(id));
      }
    }
    s.set_origin(EventOrigin::events());
  };
  if (threads) {
    s.set_concurrent(true);
    std::vector<std::thread> pool;
    for (int o = kOrigins - 1; o >= 0; --o) // started in reverse, to differ
      pool.emplace_back(schedule_as, o);
    for (auto &t : pool)
      t.join();
    s.set_concurrent(false);
  } else {
    for (int o = 0; o < kOrigins; ++o)
      schedule_as(o);
  }
  s.run_until(kTimeNever);
  return order;
}

} // namespace

namespace {

// Drives a governor with a made-up clock: each round takes `serial_s` or
// `parallel_s` seconds of wall time as the governor chose, and runs 4
// slices. Returns the share of rounds it gave the workers from round
// `from` on.
double run_governor(ThreadGovernor &g, double &now, uint64_t &slices,
                    double serial_s, double parallel_s, int rounds, int from) {
  int parallel = 0;
  for (int r = 0; r < rounds; ++r) {
    bool p = g.parallel(slices);
    if (r >= from && p)
      ++parallel;
    now += p ? parallel_s : serial_s;
    slices += 4;
  }
  return double(parallel) / (rounds - from);
}

} // namespace

TEST_CASE("threads governor: keeps the way that runs the slices faster, "
          "after a trial of both, and tries again later") {
  double now = 0;
  uint64_t slices = 0;
  SUBCASE("the workers are twice as fast: chosen") {
    ThreadGovernor g([&now] { return now; });
    // A round 10 us on one thread, 5 us on the workers: the trial (10
    // windows of 2 ms) is over within 6000 rounds.
    run_governor(g, now, slices, 10e-6, 5e-6, 6000, 0);
    CHECK(g.chose_parallel());
    CHECK(g.ever_chose_parallel());
    // Kept for the next 100 windows (some 40,000 rounds here).
    CHECK(run_governor(g, now, slices, 10e-6, 5e-6, 20000, 0) == 1.0);
  }
  SUBCASE("the workers are slower: one thread, once the trial is over") {
    ThreadGovernor g([&now] { return now; });
    double share = run_governor(g, now, slices, 5e-6, 8e-6, 30000, 6000);
    CHECK_FALSE(g.chose_parallel());
    CHECK_FALSE(g.ever_chose_parallel());
    CHECK(share == 0.0);
    CHECK(g.parallel_rounds() > 0); // the trial's windows used them
  }
  SUBCASE("a tie (within the margin): one thread") {
    ThreadGovernor g([&now] { return now; });
    run_governor(g, now, slices, 5e-6, 4.8e-6, 6000, 0);
    CHECK_FALSE(g.chose_parallel());
  }
  SUBCASE("the machine changes: the next trial follows it") {
    ThreadGovernor g([&now] { return now; });
    run_governor(g, now, slices, 5e-6, 8e-6, 6000, 0);
    REQUIRE_FALSE(g.chose_parallel());
    // 100 windows of 2 ms at 5 us a round, then a new trial: by then the
    // workers are the faster way.
    run_governor(g, now, slices, 10e-6, 4e-6, 80000, 0);
    CHECK(g.chose_parallel());
  }
  SUBCASE("rounds that run no slice (hosts computing) decide nothing "
          "rashly: no faster way, one thread") {
    ThreadGovernor g([&now] { return now; });
    for (int r = 0; r < 10000; ++r) {
      g.parallel(slices);
      now += 5e-6;
    }
    CHECK_FALSE(g.chose_parallel());
  }
}

TEST_CASE("scheduler: events scheduled at once from several threads run in "
          "the order of one thread's scheduling them in turn") {
  std::vector<std::string> expected = run_order(false);
  REQUIRE(expected.size() == 200);
  CHECK(expected.front() == "0.0");
  CHECK(expected.back() == "3.49");
  for (int i = 0; i < 20; ++i)
    REQUIRE(run_order(true) == expected);
}

TEST_CASE("scheduler: a thread's origin is its own and this scheduler's") {
  Scheduler a, b;
  std::vector<int> order;
  a.set_origin(EventOrigin::core(5));
  // Another thread still schedules as events() on `a`; this thread as
  // events() on `b`: core 5 sorts after both at the same time.
  a.schedule(10, "core 5", [&] { order.push_back(5); });
  std::thread([&] {
    a.schedule(10, "events", [&] { order.push_back(0); });
  }).join();
  b.schedule(10, "b", [&] { order.push_back(100); });
  CHECK(a.set_origin(EventOrigin::events()).id == EventOrigin::core(5).id);
  a.run_until(kTimeNever);
  b.run_until(kTimeNever);
  CHECK(order == std::vector<int>{0, 5, 100});
}
