// The host DMA engine driven by hand-assembled firmware: timing from the
// model, data landing at completion, and protection errors that move nothing.
#include "node_harness.hpp"
#include "observe/run_events.hpp"

#include <doctest/doctest.h>

#include <cstring>

using namespace nicemu;
using namespace mips_asm;
using namespace node_harness;

namespace {

// One registered region of host memory at bus address kHostBase.
constexpr uint32_t kHostBase = 0x10000000;

struct FakeHost : HostMemory {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(4096);
  bool registered(uint64_t addr, size_t len) const override {
    return addr >= kHostBase && len <= bytes.size() &&
           addr - kHostBase <= bytes.size() - len;
  }
  bool read(uint64_t addr, void *out, size_t len) const override {
    if (!registered(addr, len))
      return false;
    std::memcpy(out, bytes.data() + (addr - kHostBase), len);
    return true;
  }
  bool write(uint64_t addr, const void *in, size_t len) override {
    if (!registered(addr, len))
      return false;
    std::memcpy(bytes.data() + (addr - kHostBase), in, len);
    return true;
  }
};

// Starts one transfer (host `host_addr` <-> card 0x6000, 16 bytes), spins on
// STATUS until DONE or ERROR, stores the cycle before the start and after
// the end at 0x7000/0x7004 and STATUS/ERROR at 0x7008/0x700c, then exits.
std::vector<uint32_t> one_transfer(uint32_t host_addr, uint32_t ctrl) {
  return concat(
      {load_base(t9, NICEMU_HDMA_BASE),
       load_base(t8, NICEMU_TIMER_BASE),
       load_base(t0, host_addr),
       {sw(t0, NICEMU_HDMA_HOST_ADDR, t9), ori(t0, zero, 0x6000),
        sw(t0, NICEMU_HDMA_CARD_ADDR, t9), addiu(t0, zero, 16),
        sw(t0, NICEMU_HDMA_LENGTH, t9), addiu(t0, zero, int32_t(ctrl)),
        lw(s1, NICEMU_TIMER_CYCLE_LO, t8), sw(t0, NICEMU_HDMA_CTRL, t9),
        /*poll*/ lw(t1, NICEMU_HDMA_STATUS, t9), andi(t2, t1, 6),
        beq(t2, zero, -3), nop(), lw(s2, NICEMU_TIMER_CYCLE_LO, t8),
        sw(s1, 0x7000, zero), sw(s2, 0x7004, zero), sw(t1, 0x7008, zero),
        lw(t3, NICEMU_HDMA_ERROR, t9), sw(t3, 0x700c, zero)},
       load_base(t9, NICEMU_SYS_BASE),
       {sw(zero, NICEMU_SYS_EXIT, t9), beq(zero, zero, -1), nop()}});
}

// Calls the function at 0x6000 and stores its result at 0x7010; loads 16
// bytes from the host over it by host DMA; calls it again and stores the
// result at 0x7014; exits.
std::vector<uint32_t> call_load_call() {
  return concat(
      {{jal(0x6000), nop(), sw(v0, 0x7010, zero)},
       load_base(t9, NICEMU_HDMA_BASE),
       load_base(t0, kHostBase),
       {sw(t0, NICEMU_HDMA_HOST_ADDR, t9), ori(t0, zero, 0x6000),
        sw(t0, NICEMU_HDMA_CARD_ADDR, t9), addiu(t0, zero, 16),
        sw(t0, NICEMU_HDMA_LENGTH, t9),
        addiu(t0, zero, int32_t(NICEMU_DMA_START)),
        sw(t0, NICEMU_HDMA_CTRL, t9),
        /*poll*/ lw(t1, NICEMU_HDMA_STATUS, t9), andi(t2, t1, 6),
        beq(t2, zero, -3), nop(), jal(0x6000), nop(), sw(v0, 0x7014, zero)},
       load_base(t9, NICEMU_SYS_BASE),
       {sw(zero, NICEMU_SYS_EXIT, t9), beq(zero, zero, -1), nop()}});
}

// A function that returns `value`, padded to 16 bytes.
std::vector<uint32_t> returns(int32_t value) {
  return {jr(ra), addiu(v0, zero, value), nop(), nop()};
}

uint32_t card_word(Run &r, uint32_t addr) {
  uint32_t v = 0;
  REQUIRE(r.node->card_read(addr, &v, 4));
  return v;
}

} // namespace

TEST_CASE(
    "host DMA to the card takes gap + words x per-word, data at the end") {
  FakeHost host;
  for (size_t i = 0; i < 16; ++i)
    host.bytes[i] = uint8_t(0xA0 + i);
  Run r(flash_with({{kEntry, one_transfer(kHostBase, NICEMU_DMA_START)}}),
        kTimeNever, std::nullopt, &host);
  REQUIRE(r.result.outcome == RunOutcome::Halted);
  CHECK(card_word(r, 0x7008) == NICEMU_DMA_DONE);
  CHECK(card_word(r, 0x6000) == 0xA3A2A1A0u);
  CHECK(card_word(r, 0x600c) == 0xAFAEADACu);
  // Started one cycle (+ the CYCLE_LO read's 2 wait states) after the first
  // reading; done 1 us + 4 x 10 ns = 104 cycles later; seen by the next poll.
  uint32_t took = card_word(r, 0x7004) - card_word(r, 0x7000);
  CHECK(took >= 3 + 104);
  CHECK(took <= 3 + 104 + 12);
}

TEST_CASE("host DMA to the host lands in host memory") {
  FakeHost host;
  std::vector<uint32_t> code =
      one_transfer(kHostBase + 64, NICEMU_DMA_START | NICEMU_DMA_TO_HOST);
  // Put a known word at card 0x6000 first.
  code.insert(code.begin(),
              {lui(t0, 0x1234), ori(t0, t0, 0x5678), sw(t0, 0x6000, zero)});
  Run r(flash_with({{kEntry, code}}), kTimeNever, std::nullopt, &host);
  REQUIRE(r.result.outcome == RunOutcome::Halted);
  uint32_t word;
  std::memcpy(&word, host.bytes.data() + 64, 4);
  CHECK(word == 0x12345678u);
  uint32_t took = card_word(r, 0x7004) - card_word(r, 0x7000);
  CHECK(took >= 3 + 200 + 4 * 2); // 2 us + 4 x 20 ns
}

// Host leases rest on this promise (HostAgent::check_watch): asked at any
// time, the engine names a time before which it writes no host memory.
TEST_CASE("host DMA: the earliest host write it promises is when its "
          "transfer lands, or a fresh transfer's gap and word away") {
  struct TimedHost : FakeHost {
    Scheduler *clock = nullptr;
    std::vector<Time> writes;
    bool write(uint64_t addr, const void *in, size_t len) override {
      writes.push_back(clock ? clock->now() : 0);
      return FakeHost::write(addr, in, len);
    }
  } host;
  std::vector<uint32_t> code =
      one_transfer(kHostBase + 64, NICEMU_DMA_START | NICEMU_DMA_TO_HOST);
  // Stopped 1 us in: the 2.08 us transfer to the host is in flight.
  Run r(flash_with({{kEntry, code}}), 1'000'000, std::nullopt, &host);
  REQUIRE(r.result.outcome == RunOutcome::MaxTime);
  REQUIRE(host.writes.empty());
  const Time in_flight = r.node->earliest_host_write(1'000'000);
  CHECK(in_flight > 1'000'000);
  CHECK(in_flight < 1'000'000 + 2'080'000);
  // A transfer in flight lands when it does, however late the core could
  // start another.
  CHECK(r.node->earliest_host_write(1'000'000, kTimeNever) == in_flight);
  host.clock = &r.sim.scheduler();
  r.sim.run(kTimeNever);
  REQUIRE(host.writes.size() == 1);
  CHECK(host.writes[0] == in_flight); // exactly when it lands
  // Idle: a transfer started now lands the model's gap and one word later.
  const Time later = 50'000'000;
  CHECK(r.node->earliest_host_write(later) == later + 2'000'000 + 20'000);
  // A core that can start nothing before some time (asleep, nothing to wake
  // it sooner): from then; and never, if nothing ever can.
  const Time woken = later + 7'000'000;
  CHECK(r.node->earliest_host_write(later, woken) ==
        woken + 2'000'000 + 20'000);
  CHECK(r.node->earliest_host_write(later, kTimeNever) == kTimeNever);
}

TEST_CASE("host DMA outside registered memory is refused and moves nothing") {
  FakeHost host;
  std::fill(host.bytes.begin(), host.bytes.end(), 0x5A);
  Run r(
      flash_with({{kEntry, one_transfer(kHostBase + 4088, NICEMU_DMA_START)}}),
      kTimeNever, std::nullopt, &host);
  REQUIRE(r.result.outcome == RunOutcome::Halted);
  CHECK(card_word(r, 0x7008) == NICEMU_DMA_ERROR);
  CHECK(card_word(r, 0x700c) == NICEMU_DMA_EHOST);
  CHECK(card_word(r, 0x6000) == 0); // untouched
  CHECK(card_word(r, 0x5ffc) == 0);
  CHECK(card_word(r, 0x6010) == 0);
}

TEST_CASE("host DMA on a node with no host attached reports it") {
  Run r(flash_with({{kEntry, one_transfer(kHostBase, NICEMU_DMA_START)}}));
  REQUIRE(r.result.outcome == RunOutcome::Halted);
  CHECK(card_word(r, 0x700c) == NICEMU_DMA_ENOHOST);
}

TEST_CASE("host DMA tells observers each transfer: node, times, bytes, "
          "direction") {
  struct Transfers : RunEvents {
    struct Seen {
      uint32_t node;
      DmaEngineKind engine;
      Time start, end;
      uint32_t bytes;
      bool to_host;
    };
    std::vector<Seen> seen;
    void dma_transfer(uint32_t node, DmaEngineKind engine, Time start, Time end,
                      uint32_t bytes, bool to_host) override {
      seen.push_back({node, engine, start, end, bytes, to_host});
    }
  } observer;
  FakeHost host;
  Run r(flash_with({{kEntry, one_transfer(kHostBase, NICEMU_DMA_START |
                                                         NICEMU_DMA_TO_HOST)}}),
        kTimeNever, std::nullopt, &host, &observer);
  REQUIRE(r.result.outcome == RunOutcome::Halted);
  REQUIRE(observer.seen.size() == 1);
  const auto &t = observer.seen[0];
  CHECK(t.node == 0);
  CHECK(t.engine == DmaEngineKind::HostDma);
  CHECK(t.bytes == 16);
  CHECK(t.to_host);
  CHECK(t.end - t.start == 2'000'000 + 4 * 20'000); // 2 us + 4 x 20 ns
}

TEST_CASE("regression: code loaded by DMA over a function that already ran "
          "runs (issue 23.3)") {
  FakeHost host;
  std::vector<uint32_t> code = returns(2);
  std::memcpy(host.bytes.data(), code.data(), 16);
  Run r(flash_with({{kEntry, call_load_call()}, {0x6000, returns(1)}}),
        kTimeNever, std::nullopt, &host);
  REQUIRE(r.result.outcome == RunOutcome::Halted);
  CHECK(card_word(r, 0x6000) == code[0]); // the DMA landed
  CHECK(card_word(r, 0x7010) == 1);
  CHECK(card_word(r, 0x7014) == 2); // was 1: the old translation ran
}
