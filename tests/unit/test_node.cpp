// A whole card booted from flash, with hand-assembled firmware: the boot ROM,
// devices, sleeping, interrupts, the watchdog and the run loop's outcomes.
#include "node_harness.hpp"

#include "nicemu/error.hpp"

#include <doctest/doctest.h>

using namespace nicemu;
using namespace mips_asm;
using namespace node_harness;

namespace {

// Sleeps until the timer's deadline at cycle 1000, then exits with the cycle
// counter read right after waking.
std::vector<uint32_t> sleep_until_1000() {
  return concat({load_base(t7, NICEMU_TIMER_BASE),
                 load_base(t8, NICEMU_IRQ_BASE),
                 {addiu(t0, zero, 1000), sw(t0, NICEMU_TIMER_DEADLINE_LO, t7),
                  addiu(t0, zero, 1), sw(t0, NICEMU_TIMER_CTRL, t7),
                  sw(t0, NICEMU_IRQ_ENABLE, t8), wait(),
                  lw(t1, NICEMU_TIMER_CYCLE_LO, t7)},
                 load_base(t9, NICEMU_SYS_BASE),
                 {sw(t1, NICEMU_SYS_EXIT, t9), beq(zero, zero, -1), nop()}});
}

// Takes 5 periodic timer interrupts through a stub at 0x1100, then exits 5.
std::vector<std::pair<uint32_t, std::vector<uint32_t>>> five_interrupts() {
  std::vector<uint32_t> main =
      concat({load_base(t9, NICEMU_SYS_BASE),
              load_base(t8, NICEMU_IRQ_BASE),
              load_base(t7, NICEMU_TIMER_BASE),
              {addiu(t0, zero, 0x1100), sw(t0, NICEMU_IRQ_VECTOR, t8),
               addiu(t0, zero, 100), sw(t0, NICEMU_TIMER_PERIOD, t7),
               sw(t0, NICEMU_TIMER_DEADLINE_LO, t7), addiu(t0, zero, 1),
               sw(t0, NICEMU_TIMER_CTRL, t7), sw(t0, NICEMU_IRQ_ENABLE, t8),
               sw(t0, NICEMU_IRQ_MASTER, t8),
               /*loop*/ wait(), addiu(t1, zero, 5), bne(s0, t1, -3), nop(),
               sw(s0, NICEMU_SYS_EXIT, t9), beq(zero, zero, -1), nop()}});
  // The stub: acknowledge, count, return with the jr/delay-slot trick.
  std::vector<uint32_t> stub =
      concat({load_base(k1, NICEMU_IRQ_BASE),
              {addiu(k0, zero, int32_t(NICEMU_IRQ_TIMER)),
               sw(k0, NICEMU_IRQ_PENDING, k1), addiu(s0, s0, 1),
               lw(k0, NICEMU_IRQ_EPC, k1), addiu(k1, k1, 1), jr(k0),
               sw(k1, NICEMU_IRQ_MASTER - 1, k1)}});
  return {{kEntry, main}, {0x1100, stub}};
}

} // namespace

TEST_CASE("scheduler runs events in time, then priority, then schedule order") {
  Scheduler s;
  std::string order;
  s.schedule(20, "c", [&] { order += 'c'; });
  s.schedule(
      10, "b", [&] { order += 'b'; }, 1);
  s.schedule(
      10, "a", [&] { order += 'a'; }, 0);
  s.schedule(
      10, "a2", [&] { order += 'A'; }, 0);
  EventId gone = s.schedule(15, "x", [&] { order += 'x'; });
  CHECK(s.cancel(gone));
  CHECK_FALSE(s.cancel(gone));
  s.run_until(15);
  CHECK(order == "aAb");
  CHECK(s.now() == 15);
  s.schedule(15, "d", [&] {
    order += 'd';
    s.schedule(15, "e", [&] { order += 'e'; });
  });
  s.run_until(100);
  CHECK(order == "aAbdec");
  CHECK(s.now() == 100);
  CHECK(s.empty());
}

TEST_CASE("clock domains convert exactly, in 64 bits or 128") {
  // The reference: the definitions, in 128-bit arithmetic.
  auto time_of = [](uint64_t hz, uint64_t c) {
    return Time((unsigned __int128)c * kPicosPerSecond / hz);
  };
  auto cycle_at = [](uint64_t hz, Time t) {
    unsigned __int128 n = (unsigned __int128)t * hz;
    return uint64_t((n + kPicosPerSecond - 1) / kPicosPerSecond);
  };
  const uint64_t clocks[] = {33'000'000,           100'000'000,
                             133'333'333,          7,
                             1'000'000'000'000ull, 3'000'000'000'000ull};
  const uint64_t values[] = {0,
                             1,
                             2,
                             32,
                             33,
                             999'999,
                             1'000'001,
                             123'456'789'012ull,
                             (1ull << 44) + 3,
                             UINT64_MAX / 1'000'000 + 1, // 33 MHz: 128 bits
                             UINT64_MAX / 33 - 1,
                             UINT64_MAX / 33 + 1,
                             UINT64_MAX / 2,
                             kTimeNever - 1};
  int checked = 0;
  for (uint64_t hz : clocks) {
    ClockDomain clock(hz);
    for (uint64_t v : values) {
      if ((unsigned __int128)v * kPicosPerSecond / hz <= UINT64_MAX) {
        CHECK(clock.time_of(v) == time_of(hz, v));
        ++checked;
      }
      if (((unsigned __int128)v * hz + kPicosPerSecond - 1) / kPicosPerSecond <=
          UINT64_MAX) {
        CHECK(clock.cycle_at_or_after(v) == cycle_at(hz, v));
        ++checked;
      }
    }
  }
  CHECK(checked > 100);
  // 33 MHz: cycle 33 starts at exactly 1 us; 1 ps later is cycle 34.
  ClockDomain lanai(33'000'000);
  CHECK(lanai.time_of(33) == 1'000'000);
  CHECK(lanai.cycle_at_or_after(1'000'000) == 33);
  CHECK(lanai.cycle_at_or_after(1'000'001) == 34);
}

TEST_CASE("scheduler: an event id never names a later event in its slot") {
  Scheduler s;
  std::string order;
  EventId first = s.schedule(10, "first", [&] { order += '1'; });
  CHECK(s.is_pending(first));
  CHECK(s.pending() == 1);
  CHECK(s.cancel(first));
  CHECK_FALSE(s.is_pending(first));
  CHECK(s.empty());
  CHECK(s.next_time() == kTimeNever); // the cancelled entry is gone
  // The freed slot is reused; the old id must not reach the new event.
  EventId second = s.schedule(20, "second", [&] { order += '2'; });
  CHECK(second != first);
  CHECK_FALSE(s.cancel(first));
  CHECK(s.is_pending(second));
  CHECK(s.next_time() == 20);
  s.run_until(20);
  CHECK(order == "2");
  CHECK_FALSE(s.is_pending(second));
  CHECK_FALSE(s.cancel(second)); // already ran
  EventId third = s.schedule(30, "third", [&] { order += '3'; });
  CHECK_FALSE(s.cancel(second));
  CHECK(s.run_next());
  CHECK(order == "23");
  CHECK_FALSE(s.is_pending(third));
  CHECK_FALSE(s.run_next());
  CHECK(s.now() == 30);
}

TEST_CASE("scheduler: the earliest pending event of some owners, skipping "
          "cancelled ones") {
  Scheduler s;
  const EventTag mine{device_event_owner(1, 0), 1, 0, 0};
  const EventTag other{device_event_owner(2, 0), 1, 0, 0};
  auto is_mine = [](const EventTag &t) {
    return t.owner == device_event_owner(1, 0);
  };
  auto nothing = [] {};
  s.schedule(50, "other", nothing, 0, other);
  EventId gone = s.schedule(60, "mine, cancelled", nothing, 0, mine);
  s.schedule(80, "mine", nothing, 0, mine);
  CHECK(s.earliest_pending(1000, is_mine) == 60);
  CHECK(s.earliest_pending(55, is_mine) == 55); // none before the bound
  s.cancel(gone);
  CHECK(s.earliest_pending(1000, is_mine) == 80);
  s.schedule(65, "mine, later", nothing, 0, mine);
  CHECK(s.earliest_pending(1000, is_mine) == 65);
  s.run_until(70);
  CHECK(s.earliest_pending(1000, is_mine) == 80);
}

// Cores' slices interleave differently from run to run of the loop (and
// under a debugger): events at one time must not run in the order they were
// scheduled, but by who scheduled them.
TEST_CASE("events at one time run by origin, whatever order they came in") {
  auto run = [](bool node1_first) {
    Scheduler s;
    std::string order;
    auto from = [&](EventOrigin o, char c) {
      EventOrigin was = s.set_origin(o);
      s.schedule(10, "from an origin", [&order, c] { order += c; });
      s.set_origin(was);
    };
    s.schedule(10, "e", [&] { order += 'e'; }); // from the loop or an event
    if (node1_first) {
      from(EventOrigin::core(1), '1');
      from(EventOrigin::host(0), 'h');
      from(EventOrigin::core(0), '0');
      from(EventOrigin::core(0), 'o');
    } else {
      from(EventOrigin::core(0), '0');
      from(EventOrigin::host(0), 'h');
      from(EventOrigin::core(0), 'o');
      from(EventOrigin::core(1), '1');
    }
    s.run_until(10);
    return order;
  };
  // Events first, then cores by node (each in its own order), then hosts.
  CHECK(run(true) == "e0o1h");
  CHECK(run(false) == "e0o1h");
}

TEST_CASE("what an event schedules is numbered as the event's owner, so "
          "one card's events do not move another's") {
  // Card 0's device event and card 1's run at time 10 in either order, then
  // a network event; each schedules one event at 20. At 20 they run by
  // origin: the network's first, then card 0's, then card 1's (each card's
  // in its own order), however the events at 10 fell.
  auto run = [](bool card1_first) {
    Scheduler s;
    std::string order;
    auto at20 = [&](char c) {
      s.schedule(20, "later", [&order, c] { order += c; });
    };
    EventTag card0{device_event_owner(0, 3)}, card1{device_event_owner(1, 3)};
    EventTag network{kFabricEventOwner};
    s.schedule(
        10, "card 0",
        [&] {
          at20('a');
          at20('b');
        },
        card1_first ? 1 : 0, card0);
    s.schedule(
        10, "card 1", [&] { at20('c'); }, 0, card1);
    s.schedule(
        10, "network", [&] { at20('n'); }, 2, network);
    s.run_until(20);
    return order;
  };
  CHECK(run(true) == "nabc");
  CHECK(run(false) == "nabc");
  // A host's events come after the cards', before the cores'.
  CHECK(EventOrigin::of_event({host_event_owner(7)}).id >
        EventOrigin::card(1000).id);
  CHECK(EventOrigin::of_event({host_event_owner(7)}).id <
        EventOrigin::core(0).id);
  CHECK(EventOrigin::of_event({device_event_owner(4, 1)}).id ==
        EventOrigin::card(4).id);
  CHECK(EventOrigin::of_event({kFabricEventOwner}).id ==
        EventOrigin::events().id);
}

TEST_CASE("a sleeping core skips to the timer and wakes for the wake cost") {
  Run r(flash_with({{kEntry, sleep_until_1000()}}));
  REQUIRE(r.result.outcome == RunOutcome::Halted);
  // 10 instructions + 3 register writes of 1 wait state end the first block
  // at cycle 13; the deadline is cycle 1000; waking costs 3.
  CHECK(r.node->sleep_cycles() == 1000 - 13);
  CHECK(r.node->exit_code() == 1003);
  CHECK(r.node->cpu().instructions() == 14);
}

namespace {

// Sleeps on a timer deadline at cycle `deadline` (both halves written),
// then exits with the cycle counter read right after waking.
std::vector<uint32_t> sleep_until(uint64_t deadline) {
  return concat({load_base(t7, NICEMU_TIMER_BASE),
                 load_base(t8, NICEMU_IRQ_BASE),
                 load_base(t0, uint32_t(deadline >> 32)),
                 {sw(t0, NICEMU_TIMER_DEADLINE_HI, t7)},
                 load_base(t0, uint32_t(deadline)),
                 {sw(t0, NICEMU_TIMER_DEADLINE_LO, t7), addiu(t0, zero, 1),
                  sw(t0, NICEMU_TIMER_CTRL, t7), sw(t0, NICEMU_IRQ_ENABLE, t8),
                  wait(), lw(t1, NICEMU_TIMER_CYCLE_LO, t7)},
                 load_base(t9, NICEMU_SYS_BASE),
                 {sw(t1, NICEMU_SYS_EXIT, t9), beq(zero, zero, -1), nop()}});
}

} // namespace

TEST_CASE("regression: a far-future timer does not fire early (issue 23.2)") {
  // At 100 MHz a cycle is 10000 ps: cycle 0x68DB8BAC710CC starts 8384 ps
  // past 2^64 ps, which a 64-bit product wrapped to 8384 ps (the timer
  // woke the core at once); lanai4's cycle 0x229a5ebb773a0 likewise.
  CHECK(ClockDomain(100'000'000).time_of(0x68DB8BAC710CCull) == kTimeNever);
  CHECK(ClockDomain(33'000'000).time_of(0x229a5ebb773a0ull) == kTimeNever);
  // Past 2^64 ps, and past the end of virtual time (2^63 ps): never.
  for (uint64_t deadline :
       {uint64_t(0x68DB8BAC710CCull), kTimeEnd / 10000 + 1, ~uint64_t(0)}) {
    CAPTURE(deadline);
    // (A limit of 1 s of virtual time: wrapped times never end the run.)
    Run r(flash_with({{kEntry, sleep_until(deadline)}}), kPicosPerSecond);
    CHECK(r.result.outcome == RunOutcome::Deadlock);
    CHECK(r.node->time() < 1'000'000); // asleep after a few instructions
  }
  // The last cycle that starts before the end still fires, exactly then.
  ClockDomain clock(100'000'000);
  CHECK(clock.time_of(kTimeEnd / 10000) <= kTimeEnd);
}

TEST_CASE("timer interrupts run the stub and return where they interrupted") {
  Run r(flash_with(five_interrupts()));
  REQUIRE(r.result.outcome == RunOutcome::Halted);
  CHECK(r.node->exit_code() == 5);
  // Five periods of 100 cycles, plus the short tail after the last one.
  CHECK(r.node->cpu().cycles() > 500);
  CHECK(r.node->cpu().cycles() < 600);
}

TEST_CASE("runs are deterministic") {
  Run a(flash_with(five_interrupts()));
  Run b(flash_with(five_interrupts()));
  CHECK(a.node->cpu().cycles() == b.node->cpu().cycles());
  CHECK(a.node->cpu().instructions() == b.node->cpu().instructions());
  CHECK(a.node->sleep_cycles() == b.node->sleep_cycles());
  CHECK(a.result.end_time == b.result.end_time);
}

TEST_CASE("an interrupt with no vector is a fault, not a jump to 0") {
  std::vector<uint32_t> code =
      concat({load_base(t8, NICEMU_IRQ_BASE),
              {addiu(t0, zero, int32_t(NICEMU_IRQ_SOFT)),
               sw(t0, NICEMU_IRQ_ENABLE, t8), sw(t0, NICEMU_IRQ_RAISE, t8),
               addiu(t0, zero, 1), sw(t0, NICEMU_IRQ_MASTER, t8), nop(),
               beq(zero, zero, -1), nop()}});
  Run r(flash_with({{kEntry, code}}));
  CHECK(r.result.outcome == RunOutcome::Faulted);
  CHECK(r.node->fault().detail.find("IRQ_VECTOR") != std::string::npos);
}

TEST_CASE("the watchdog stops firmware stuck in a loop") {
  Run r(flash_with({{kEntry, {nop(), beq(zero, zero, -1), nop()}}}));
  REQUIRE(r.result.outcome == RunOutcome::Faulted);
  CHECK(r.node->fault().kind == FaultKind::Watchdog);
  CHECK(r.node->cpu().cycles() >= 100'000);
  CHECK(r.node->cpu().cycles() < 100'010);
  CHECK((r.node->fault().pc == 0x1004 || r.node->fault().pc == 0x1000));
}

namespace {

// Arms the timer every 7 cycles (`slices`: enabled; else the same writes
// with the timer off), shortens the watchdog to 50 cycles, then computes
// 300 cycles without a device access and exits. The timer's events cut
// the run into short slices; its line stays disabled.
std::vector<uint32_t> shorten_watchdog(bool slices) {
  return concat(
      {load_base(t7, NICEMU_TIMER_BASE),
       load_base(t9, NICEMU_SYS_BASE),
       {addiu(t0, zero, 7), sw(t0, NICEMU_TIMER_PERIOD, t7),
        sw(t0, NICEMU_TIMER_DEADLINE_LO, t7), addiu(t0, zero, slices ? 1 : 0),
        sw(t0, NICEMU_TIMER_CTRL, t7), addiu(t0, zero, 50),
        sw(t0, NICEMU_SYS_WDT_PERIOD, t9), addiu(t1, zero, 100),
        /*loop*/ addiu(t1, t1, -1), bne(t1, zero, -2), nop(),
        sw(zero, NICEMU_SYS_EXIT, t9), beq(zero, zero, -1), nop()}});
}

} // namespace

TEST_CASE("regression: a shortened watchdog bites at once, however the run "
          "is sliced (issue 23.7)") {
  Run whole(flash_with({{kEntry, shorten_watchdog(false)}}));
  Run sliced(flash_with({{kEntry, shorten_watchdog(true)}}));
  for (Run *r : {&whole, &sliced}) {
    REQUIRE(r->result.outcome == RunOutcome::Faulted);
    CHECK(r->node->fault().kind == FaultKind::Watchdog);
  }
  // The first block boundary 50 cycles after the write: both runs alike.
  CHECK(whole.node->cpu().cycles() == sliced.node->cpu().cycles());
  CHECK(whole.node->fault().pc == sliced.node->fault().pc);
  CHECK(whole.node->cpu().cycles() < 100);
}

TEST_CASE("max time stops a run that never ends, at exactly that time") {
  Run r(flash_with({{kEntry, {nop(), beq(zero, zero, -1), nop()}}}),
        50'000'000 /* 50 us */, 0);
  CHECK(r.result.outcome == RunOutcome::MaxTime);
  CHECK(r.result.end_time == 50'000'000);
  CHECK(r.node->cpu().cycles() >= 5000);
}

TEST_CASE("a core asleep with nothing to wake it is a deadlock") {
  Run r(flash_with({{kEntry, {nop(), nop(), nop(), wait(), nop()}}}));
  CHECK(r.result.outcome == RunOutcome::Deadlock);
  // Regression: the run ended at the scheduler's time, which nothing had
  // moved (0), not at the time the core reached.
  CHECK(r.node->time() > 0);
  CHECK(r.result.end_time == r.node->time());
}

namespace {

// Asks for a stop once the run has passed `at` (as a signal handler
// would, at any moment), counting the rounds it was shown.
struct StopAt final : RunMonitor {
  StopRequest &stop;
  Time at;
  int rounds = 0;
  StopAt(StopRequest &s, Time t) : stop(s), at(t) {}
  void between_rounds(const Simulation &sim) override {
    ++rounds;
    if (sim.present() >= at)
      stop.request(2);
  }
};

} // namespace

TEST_CASE("a stop request ends a lone spinning core's run between slices") {
  Simulation sim;
  NodeConfig config = config_for(test_model());
  config.watchdog_cycles = 0;
  Node &node = sim.add_node(test_model(), config);
  node.boot(flash_with({{kEntry, {nop(), beq(zero, zero, -1), nop()}}}));
  StopRequest stop;
  StopAt monitor(stop, 5 * Simulation::kLongestSlice);
  sim.set_stop_request(&stop);
  sim.set_monitor(&monitor);
  RunResult r = sim.run();
  CHECK(r.outcome == RunOutcome::Stopped);
  CHECK(stop.signal() == 2);
  // Nothing is scheduled, yet the core's slices end every kLongestSlice:
  // asked before the sixth round's slices, the run ends before the
  // seventh's.
  CHECK(monitor.rounds == 6);
  CHECK(r.end_time >= 6 * Simulation::kLongestSlice);
  CHECK(r.end_time < 6 * Simulation::kLongestSlice + 100'000); // a block
  CHECK(r.end_time == node.time());
}

TEST_CASE("console bytes become lines of the node's output") {
  std::vector<uint32_t> code = load_base(t9, NICEMU_CONSOLE_BASE);
  for (char c : std::string("hi\nthere"))
    for (uint32_t w : {addiu(t0, zero, c), sw(t0, NICEMU_CONSOLE_TX, t9)})
      code.push_back(w);
  for (uint32_t w :
       concat({load_base(t9, NICEMU_SYS_BASE),
               {sw(zero, NICEMU_SYS_EXIT, t9), beq(zero, zero, -1), nop()}}))
    code.push_back(w);
  Run r(flash_with({{kEntry, code}}));
  CHECK(r.console == std::vector<std::string>{"0:hi", "0:there"});
}

TEST_CASE("device registers refuse bad accesses with a bus error") {
  auto run_store = [](uint32_t w) {
    std::vector<uint32_t> code =
        concat({load_base(t9, NICEMU_SYS_BASE),
                {w, nop(), beq(zero, zero, -1), nop()}});
    Run r(flash_with({{kEntry, code}}));
    REQUIRE(r.result.outcome == RunOutcome::Faulted);
    CHECK(r.node->fault().kind == FaultKind::BusError);
    CHECK(r.node->fault().pc == kEntry + 8);
    return r.node->fault().detail;
  };
  CHECK(run_store(sw(zero, 0x7F0, t9)) ==
        "write to SYS+0x7f0: no such register");
  CHECK(run_store(sw(zero, NICEMU_SYS_ID, t9)) ==
        "write to SYS_ID: register is read-only");
  CHECK(run_store(sb(zero, NICEMU_SYS_EXIT, t9)) ==
        "write to SYS_EXIT: 1-byte access to a 32-bit register");
  CHECK(run_store(sw(zero, 0x7000, t9)) ==
        "write to ROUTE_DEST: the testcard model has no ROUTE device");
  std::vector<uint32_t> far = {lui(t9, 0x1F01),     nop(),
                               sw(zero, 0, t9),     nop(),
                               beq(zero, zero, -1), nop()};
  Run r(flash_with({{kEntry, far}}));
  REQUIRE(r.result.outcome == RunOutcome::Faulted);
  CHECK(r.node->fault().detail ==
        "write to 0x1f010000: no device at this address");
}

TEST_CASE("the boot ROM refuses a bad flash, saying why") {
  Simulation sim;
  Node &node = sim.add_node(test_model(), config_for(test_model()));
  std::vector<uint8_t> erased(test_model().flash_size, 0xFF);
  CHECK_THROWS_WITH_AS(node.boot(erased), doctest::Contains("erased"), Error);
  CHECK_THROWS_WITH_AS(node.boot(flash_with({{kEntry, {nop()}}}, "lanai4")),
                       doctest::Contains("built for model 'lanai4'"), Error);
  std::vector<uint8_t> corrupted = flash_with({{kEntry, {nop(), nop()}}});
  // Flip a byte near the end of the image, inside its data or symbols.
  Image good = decode_image(corrupted);
  size_t size = encode_image(good).size();
  corrupted[size - 3] ^= 0x40;
  CHECK_THROWS_AS(node.boot(corrupted), Error);
  CHECK_THROWS_WITH_AS(
      node.boot(flash_with({{0x20000, {nop()}}})), // past the 64 KiB SRAM
      doctest::Contains("0x00020000"), Error);
}

TEST_CASE("nodes can share one flash image, a node boots only once") {
  auto flash = std::make_shared<const std::vector<uint8_t>>(
      flash_with({{kEntry, sleep_until_1000()}}));
  Simulation sim;
  Node &a = sim.add_node(test_model(), config_for(test_model()));
  NodeConfig second = config_for(test_model());
  second.node = 1;
  second.nodes = 2;
  Node &b = sim.add_node(test_model(), second);
  a.boot(flash);
  b.boot(flash);
  CHECK(flash.use_count() == 3);
  CHECK_THROWS_WITH_AS(a.boot(flash), doctest::Contains("already booted"),
                       Error);
  RunResult r = sim.run();
  CHECK(r.outcome == RunOutcome::Halted);
  CHECK(a.exit_code() == 1003);
  CHECK(b.exit_code() == 1003);
}
