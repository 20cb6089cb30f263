// The example card family of docs/adding-a-card.md, built as the document
// builds it: a register header, one device on a clock of its own, a board,
// a model file. The tests drive the SUM engine through the bus as a
// debugger does, and from firmware as a user's firmware would.
#include "example_board.hpp"
#include "node_harness.hpp"
#include "sum_engine.hpp"

#include "nicemu/error.hpp"
#include "nicemu/regs_example.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace nicemu;
using namespace mips_asm;
using namespace node_harness;

namespace {

const Model &example_model() {
  static Model m = load_model(NICEMU_EXAMPLE_CARD_MODEL);
  return m;
}

constexpr Time kNs = 1000;            // ps
constexpr Time kSumPeriod = 25 * kNs; // params.sum.clock_hz = 40 MHz

// A card that is never booted, on a scheduler the test advances.
struct Card {
  Scheduler scheduler;
  Node node;
  Card()
      : node(example_model(), scheduler, [] {
          NodeConfig c;
          c.board = &example::example_board();
          return c;
        }()) {}

  uint32_t read(uint32_t addr) {
    uint32_t value = 0;
    std::string why;
    REQUIRE_MESSAGE(node.debug_mmio(addr, false, value, why), why);
    return value;
  }
  void write(uint32_t addr, uint32_t value, unsigned size = 4) {
    std::string why;
    REQUIRE_MESSAGE(node.debug_mmio(addr, true, value, why, size), why);
  }
  // Sums `words` placed at 0x8000, started at virtual time `at`; returns
  // when the engine said it was done.
  Time sum(const std::vector<uint32_t> &words, Time at) {
    REQUIRE(node.card_write(0x8000, words.data(), uint32_t(words.size() * 4)));
    scheduler.advance_to(at);
    write(NICEMU_SUM_BASE + NICEMU_SUM_ADDR, 0x8000);
    write(NICEMU_SUM_BASE + NICEMU_SUM_LENGTH, uint32_t(words.size() * 4));
    write(NICEMU_SUM_BASE + NICEMU_SUM_CTRL, NICEMU_SUM_START, 1);
    CHECK(read(NICEMU_SUM_BASE + NICEMU_SUM_STATUS) == NICEMU_SUM_BUSY);
    REQUIRE(scheduler.run_next());
    return scheduler.now();
  }
};

} // namespace

TEST_CASE("example card: the model fits its board, which has the SUM engine") {
  Card card;
  CHECK(card.node.board().name() == "example");
  CHECK((card.read(NICEMU_SYS_BASE + NICEMU_SYS_CAPS) & NICEMU_CAP_SUM) != 0);
  CHECK((card.read(NICEMU_SYS_BASE + NICEMU_SYS_CAPS) & NICEMU_CAP_HDMA) != 0);
  // The model was checked against the board: a key it does not read is
  // refused even for a board the caller chose.
  Model bad = example_model();
  bad.key_lines["params.sum.clock_mhz"] = 0;
  Scheduler scheduler;
  NodeConfig c;
  c.board = &example::example_board();
  CHECK_THROWS_WITH_AS(Node(bad, scheduler, c),
                       doctest::Contains("(did you mean clock_hz? the SUM "
                                         "engine reads it)"),
                       Error);
}

TEST_CASE("example card: a sum takes start-up plus a word per cycle of the "
          "engine's own clock") {
  Card card;
  Time done = card.sum({1, 2, 3, 0xFFFFFFFF}, 0);
  CHECK(done == (3 + 4) * kSumPeriod);
  // The 64-bit result, in the 32-bit halves the core reads.
  CHECK(card.read(NICEMU_SUM_BASE + NICEMU_SUM_RESULT) == 5);
  CHECK(card.read(NICEMU_SUM_BASE + NICEMU_SUM_RESULT + 4) == 1);
  CHECK(card.read(NICEMU_SUM_BASE + NICEMU_SUM_STATUS) == NICEMU_SUM_DONE);
  CHECK((card.read(NICEMU_IRQ_BASE + NICEMU_IRQ_PENDING) & NICEMU_IRQ_SUM) !=
        0);
  // STATUS: write one to clear DONE.
  card.write(NICEMU_SUM_BASE + NICEMU_SUM_STATUS, NICEMU_SUM_DONE);
  CHECK(card.read(NICEMU_SUM_BASE + NICEMU_SUM_STATUS) == 0);
}

TEST_CASE("example card: work handed over between two edges of the engine's "
          "clock waits for the next edge") {
  Card card;
  // Started 10 ns into the engine's first 25 ns cycle: the start-up begins
  // at the next edge, 15 ns later.
  Time done = card.sum({7}, 10 * kNs);
  CHECK(done == (1 + 3 + 1) * kSumPeriod);
  Time second = card.sum({1, 1}, 4 * 25 * kNs + 5 * kNs + done);
  CHECK(second == done + (4 + 1 + 3 + 2) * kSumPeriod);
  // The history array, newest first, in the window's second page.
  CHECK(card.read(NICEMU_SUM_BASE + NICEMU_SUM_HISTORY) == 2);
  CHECK(card.read(NICEMU_SUM_BASE + NICEMU_SUM_HISTORY + 4) == 7);
  CHECK(NICEMU_SUM_BASE + NICEMU_SUM_HISTORY - NICEMU_MMIO_BASE == 0x11000u);
}

TEST_CASE("example card: the bus enforces the header's widths and directions") {
  Card card;
  std::string why;
  uint32_t v = 0;
  CHECK(!card.node.debug_mmio(NICEMU_SUM_BASE + NICEMU_SUM_CTRL, true, v, why));
  CHECK(why == "write to SUM_CTRL: 4-byte access to a 8-bit register");
  CHECK(
      !card.node.debug_mmio(NICEMU_SUM_BASE + NICEMU_SUM_RESULT, true, v, why));
  CHECK(why == "write to SUM_RESULT: register is read-only");
  CHECK(!card.node.debug_mmio(NICEMU_SUM_BASE + 0x1F00, false, v, why));
  CHECK(why == "read from SUM+0x1f00: no such register");
}

TEST_CASE("example card: firmware starts a sum with a byte store, sleeps "
          "until its interrupt line, and reads the result") {
  // The firmware sums 4 words it stores at 0x8000 and exits with the low
  // word of the result plus STATUS (DONE = 2).
  std::vector<uint32_t> code =
      concat({load_base(t9, NICEMU_SUM_BASE),
              load_base(t8, NICEMU_IRQ_BASE),
              load_base(t7, 0x8000),
              {addiu(t0, zero, 10),
               sw(t0, 0, t7),
               addiu(t0, zero, 20),
               sw(t0, 4, t7),
               addiu(t0, zero, 30),
               sw(t0, 8, t7),
               addiu(t0, zero, 40),
               sw(t0, 12, t7),
               sw(t7, NICEMU_SUM_ADDR, t9),
               addiu(t0, zero, 16),
               sw(t0, NICEMU_SUM_LENGTH, t9),
               addiu(t0, zero, int32_t(NICEMU_IRQ_SUM)),
               sw(t0, NICEMU_IRQ_ENABLE, t8),
               addiu(t0, zero, 1),
               sb(t0, NICEMU_SUM_CTRL, t9),
               wait(),
               lw(t1, NICEMU_SUM_RESULT, t9),
               lw(t2, NICEMU_SUM_STATUS, t9),
               nop(),
               addu(t1, t1, t2)},
              load_base(t6, NICEMU_SYS_BASE),
              {sw(t1, NICEMU_SYS_EXIT, t6), beq(zero, zero, -1), nop()}});
  std::vector<uint8_t> flash =
      flash_with({{kEntry, code}}, "example", example_model().flash_size);

  Simulation sim;
  NodeConfig c;
  c.board = &example::example_board();
  Node &node = sim.add_node(example_model(), c);
  node.boot(flash);
  RunResult r = sim.run();
  REQUIRE(r.outcome == RunOutcome::Halted);
  CHECK(node.exit_code() == 100 + NICEMU_SUM_DONE);
  CHECK(node.sleep_cycles() > 0); // it slept while the engine worked
}
