// Doorbells: the DOORBELL device (FIFOs the host writes, the firmware pops),
// the host agent's doorbell write (its cost, the held write of a full FIFO,
// a run that ends when nobody ever pops) and its timed wait on a word
// (WaitWordUntil), and its posted PIO writes. The agent tests run a host
// "program" on a thread of this process against a real node: the in-process
// form of `nicemu run -n 1`.
#include "devices/doorbell.hpp"
#include "devices/registers.hpp"
#include "host/agent.hpp"
#include "host/channel.hpp"
#include "host_end.hpp"
#include "nicemu/error.hpp"
#include "node_harness.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace nicemu;
using namespace mips_asm;
using namespace node_harness;
using channel::Op;
using channel::Reply;
using channel::Request;
using channel::Status;

namespace {

// A card with doorbells and host costs in round numbers: 100 MHz (10 ns a
// cycle), 4 FIFOs of 2 entries (a burst of 3 fills one), doorbell write
// 0.5 us, host poll 0.2 us.
const char *kBellModel = R"(
name = "bellcard"
description = "card with doorbells for unit tests"
id = 98
[core]
clock_hz = 100_000_000
watchdog_cycles = 1_000_000
[cycles]
load_use = 0
mul = 0
div = 0
taken_branch = 0
mmio_read = 2
mmio_write = 1
interrupt_entry = 5
wake = 3
[[memory]]
name = "sram"
base = 0
size = "64 KiB"
[flash]
size = "256 KiB"
[timing.host_dma]
gap_to_sram = "1 us"
per_word_to_sram = "10 ns"
gap_to_host = "2 us"
per_word_to_host = "20 ns"
[timing.host]
pio_write_word = "1 us"
pio_read_word = "1 us"
doorbell_write = "0.5 us"
poll_own_memory = "0.2 us"
[params.doorbell]
fifos = 4
depth = 2
entry_bits = 32
)";

constexpr Time kUs = 1'000'000; // ps
constexpr Time kDoorbellWrite = kUs / 2;
constexpr Time kPoll = kUs / 5;

const Model &bell_model() {
  static Model m = parse_model(kBellModel, "bellcard.toml");
  return m;
}

// The same card without doorbells (and without a doorbell_write figure).
const Model &no_bell_model() {
  static Model m = [] {
    std::string text = kBellModel;
    text = text.substr(0, text.find("[params.doorbell]"));
    text.erase(text.find("doorbell_write"),
               text.find('\n', text.find("doorbell_write")) + 1 -
                   text.find("doorbell_write"));
    return parse_model(text, "nobellcard.toml");
  }();
  return m;
}

const Model &comet() {
  static Model m = load_model("comet");
  return m;
}

// The card's doorbell FIFOs, or null.
DoorbellDevice *doorbell_of(Node &node) {
  return dynamic_cast<DoorbellDevice *>(node.device_at(NICEMU_DOORBELL_BASE));
}

const Model &lanai4() {
  static Model m = load_model("lanai4");
  return m;
}

// A card that is never booted: its registers, reached as the debugger
// reaches them (the bus checks, with side effects, no wait states).
struct Card {
  Scheduler scheduler;
  Node node;
  explicit Card(const Model &model)
      : node(model, scheduler, config_for(model)) {}

  uint32_t read(uint32_t addr) {
    uint32_t value = 0;
    std::string why;
    REQUIRE_MESSAGE(node.debug_mmio(addr, false, value, why), why);
    return value;
  }
  void write(uint32_t addr, uint32_t value) {
    std::string why;
    REQUIRE_MESSAGE(node.debug_mmio(addr, true, value, why), why);
  }
  uint32_t bell(uint32_t offset) { return read(NICEMU_DOORBELL_BASE + offset); }
  uint32_t count(uint32_t fifo) {
    write(NICEMU_DOORBELL_BASE + NICEMU_DOORBELL_SELECT, fifo);
    return bell(NICEMU_DOORBELL_COUNT);
  }
  uint32_t pop(uint32_t fifo) {
    write(NICEMU_DOORBELL_BASE + NICEMU_DOORBELL_SELECT, fifo);
    return bell(NICEMU_DOORBELL_POP);
  }
  uint32_t pending() { return read(NICEMU_IRQ_BASE + NICEMU_IRQ_PENDING); }
  void clear(uint32_t lines) {
    write(NICEMU_IRQ_BASE + NICEMU_IRQ_PENDING, lines);
  }
};

// ---- the host agent, in process ------------------------------------------

// What the host thread did: every reply, and the error that ended it.
struct HostCalls {
  channel::HostEnd &end;
  std::vector<Reply> replies;
  std::string error;
  Reply call(Op op, uint32_t a = 0, uint32_t b = 0, uint32_t c = 0,
             uint64_t arg64 = 0) {
    Request r;
    r.op = op;
    r.a = a;
    r.b = b;
    r.c = c;
    r.arg64 = arg64;
    replies.push_back(end.call(r));
    return replies.back();
  }
  // A doorbell write: a store to FIFO `fifo`'s word of the card's doorbell
  // window (the host library's doorbell()).
  Reply doorbell(uint32_t fifo, uint32_t value) {
    return call(Op::Write, NICEMU_HOST_DOORBELLS + 4 * fifo, 4, 0, value);
  }
  // A word of the host's own memory (arena offset).
  void store(uint64_t offset, uint32_t value) {
    std::memcpy(end.arena() + offset, &value, 4);
  }
};

// One node booted from `flash`, its host agent, and the run loop's view of
// the host (ExternalActor), as HostGroup gives it for a process.
class Rig final : public ExternalActor {
public:
  Rig(const Model &model, const std::vector<uint8_t> &flash)
      : agent_(0, 1, 1 << 20, sim_.scheduler(), model) {
    sim_.set_external(this);
    NodeConfig config = config_for(model);
    config.host_memory = &agent_;
    node_ = &sim_.add_node(model, config);
    node_->boot(flash);
    agent_.attach(node_);
  }

  // Runs `program` on a thread as the host until it exits or the run stops
  // (then its call in progress fails, as a process's would).
  RunResult run(const std::function<void(HostCalls &)> &program) {
    end_ = std::make_unique<channel::HostEnd>(agent_.channel().fd(),
                                              wake_.write_fd);
    host_ = std::make_unique<HostCalls>(HostCalls{*end_, {}, {}});
    std::thread thread([&] {
      try {
        program(*host_);
        end_->exit(0);
      } catch (const std::exception &e) {
        host_->error = e.what();
      }
    });
    RunResult result = sim_.run();
    if (!agent_.exited())
      agent_.shut_down();
    thread.join();
    return result;
  }
  HostCalls &host() { return *host_; }
  Node &node() { return *node_; }
  uint32_t card_word(uint32_t addr) {
    uint32_t v = 0;
    REQUIRE(node_->card_read(addr, &v, 4));
    return v;
  }

  HostAgent &agent() { return agent_; }
  Scheduler &scheduler() { return sim_.scheduler(); }

  void poll() override { agent_.poll(); }
  Time earliest_action() const override { return agent_.earliest_action(); }
  void events_ran() override { agent_.release_reply(); }
  void wait() override {
    if (!wake_.wait(10'000))
      failure_ = "the host thread made no call for 10 s";
  }
  bool finished() const override { return agent_.exited(); }
  std::string failure() const override {
    return failure_.empty() ? agent_.failure() : failure_;
  }

private:
  Simulation sim_;
  channel::WakePipe wake_;
  HostAgent agent_;
  Node *node_ = nullptr;
  std::unique_ptr<channel::HostEnd> end_;
  std::unique_ptr<HostCalls> host_;
  std::string failure_;
};

// ---- firmware ------------------------------------------------------------

std::vector<uint8_t> bell_flash(const std::vector<uint32_t> &code) {
  return flash_with({{kEntry, code}}, "bellcard");
}

std::vector<uint32_t> sleep_forever() {
  return {wait(), beq(zero, zero, -2), nop()};
}

// Sleeps until the timer reaches `cycle` (< 32768), then runs `then` and
// sleeps for good. t7 = TIMER, t8 = IRQ, t9 = the device `base`.
std::vector<uint32_t> at_cycle(uint32_t cycle, uint32_t base,
                               const std::vector<uint32_t> &then) {
  return concat(
      {load_base(t7, NICEMU_TIMER_BASE),
       load_base(t8, NICEMU_IRQ_BASE),
       load_base(t9, base),
       {addiu(t0, zero, int32_t(cycle)), sw(t0, NICEMU_TIMER_DEADLINE_LO, t7),
        addiu(t0, zero, 1), sw(t0, NICEMU_TIMER_CTRL, t7),
        sw(t0, NICEMU_IRQ_ENABLE, t8), wait(), sw(t0, NICEMU_IRQ_PENDING, t8),
        sw(zero, NICEMU_IRQ_ENABLE, t8)},
       then,
       sleep_forever()});
}

// At cycle 10000 (100 us): pops FIFO 0 into card word 0x7000.
std::vector<uint32_t> pop_at_100us() {
  return at_cycle(10000, NICEMU_DOORBELL_BASE,
                  {sw(zero, NICEMU_DOORBELL_SELECT, t9),
                   lw(t1, NICEMU_DOORBELL_POP, t9), sw(t1, 0x7000, zero)});
}

// At cycle 1000 (10 us): host DMA of card word 0x6000 (0x77) to arena
// offset 64 (bus kArenaBusBase + 64).
std::vector<uint32_t> dma_at_10us() {
  std::vector<uint32_t> code = {addiu(t0, zero, 0x77), sw(t0, 0x6000, zero)};
  std::vector<uint32_t> rest = at_cycle(
      1000, NICEMU_HDMA_BASE,
      concat({load_base(t0, uint32_t(channel::kArenaBusBase + 64)),
              {sw(t0, NICEMU_HDMA_HOST_ADDR, t9), ori(t0, zero, 0x6000),
               sw(t0, NICEMU_HDMA_CARD_ADDR, t9), addiu(t0, zero, 4),
               sw(t0, NICEMU_HDMA_LENGTH, t9),
               addiu(t0, zero, int32_t(NICEMU_DMA_START | NICEMU_DMA_TO_HOST)),
               sw(t0, NICEMU_HDMA_CTRL, t9)}}));
  code.insert(code.end(), rest.begin(), rest.end());
  return code;
}

} // namespace

// ---- the device ------------------------------------------------------------

TEST_CASE("doorbell: comet's bank comes from its model: 8 FIFOs of 16") {
  Card card(comet());
  REQUIRE(doorbell_of(card.node) != nullptr);
  CHECK(card.bell(NICEMU_DOORBELL_FIFOS) == 8);
  CHECK(card.bell(NICEMU_DOORBELL_DEPTH) == 16);
  CHECK(doorbell_of(card.node)->fifos() == 8);
  CHECK(doorbell_of(card.node)->depth() == 16);
  CHECK((card.read(NICEMU_SYS_BASE + NICEMU_SYS_CAPS) & NICEMU_CAP_DOORBELL));
  CHECK(card.bell(NICEMU_DOORBELL_NONEMPTY) == 0);
  CHECK(card.bell(NICEMU_DOORBELL_SELECT) == 0);
}

TEST_CASE("doorbell: FIFOs keep order, NONEMPTY, COUNT, an empty pop is 0") {
  Card card(comet());
  DoorbellDevice &bell = *doorbell_of(card.node);
  REQUIRE(bell.push(0, 1));
  REQUIRE(bell.push(0, 2));
  REQUIRE(bell.push(0, 3));
  REQUIRE(bell.push(5, 0x50));
  REQUIRE(bell.push(7, 0)); // 0 is a valid entry: NONEMPTY tells
  CHECK(card.bell(NICEMU_DOORBELL_NONEMPTY) == 0xA1u);
  CHECK(card.count(0) == 3);
  CHECK(card.count(5) == 1);
  CHECK(card.count(1) == 0);
  CHECK(card.pop(0) == 1);
  CHECK(card.bell(NICEMU_DOORBELL_COUNT) == 2); // FIFO 0 still selected
  CHECK(card.bell(NICEMU_DOORBELL_POP) == 2);
  CHECK(card.bell(NICEMU_DOORBELL_POP) == 3);
  CHECK(card.bell(NICEMU_DOORBELL_POP) == 0); // empty
  CHECK(card.bell(NICEMU_DOORBELL_COUNT) == 0);
  CHECK(card.bell(NICEMU_DOORBELL_NONEMPTY) == 0xA0u);
  CHECK(card.pop(7) == 0);
  CHECK(card.bell(NICEMU_DOORBELL_NONEMPTY) == 0x20u);
  CHECK(card.pop(5) == 0x50);
  CHECK(card.bell(NICEMU_DOORBELL_NONEMPTY) == 0);
  // A FIFO past the last: SELECT keeps the number; COUNT and POP read 0.
  REQUIRE(bell.push(3, 9));
  card.write(NICEMU_DOORBELL_BASE + NICEMU_DOORBELL_SELECT, 8);
  CHECK(card.bell(NICEMU_DOORBELL_SELECT) == 8);
  CHECK(card.bell(NICEMU_DOORBELL_COUNT) == 0);
  CHECK(card.bell(NICEMU_DOORBELL_POP) == 0);
  CHECK(card.count(3) == 1);
  CHECK_FALSE(bell.push(8, 1));
  CHECK(bell.count(8) == 0);
}

TEST_CASE("doorbell: SOURCE tells which process rang the entry POP took") {
  Card card(comet());
  DoorbellDevice &bell = *doorbell_of(card.node);
  REQUIRE(bell.push(2, 0x100, 1));
  REQUIRE(bell.push(2, 0x200, 0));
  REQUIRE(bell.push(4, 0x300, 3));
  CHECK(card.bell(NICEMU_DOORBELL_SOURCE) == 0); // nothing popped yet
  CHECK(card.pop(2) == 0x100);
  CHECK(card.bell(NICEMU_DOORBELL_SOURCE) == 1);
  CHECK(card.pop(4) == 0x300);
  CHECK(card.bell(NICEMU_DOORBELL_SOURCE) == 3);
  CHECK(card.pop(2) == 0x200);
  CHECK(card.bell(NICEMU_DOORBELL_SOURCE) == 0);
  // An empty pop leaves it as it was.
  CHECK(card.pop(2) == 0);
  CHECK(card.bell(NICEMU_DOORBELL_SOURCE) == 0);
}

TEST_CASE("doorbell: a full FIFO refuses a push and keeps what it has") {
  Card card(comet());
  DoorbellDevice &bell = *doorbell_of(card.node);
  for (uint32_t i = 0; i < 16; ++i)
    REQUIRE(bell.push(2, 100 + i));
  CHECK_FALSE(bell.push(2, 999));
  CHECK(card.count(2) == 16);
  CHECK(bell.push(3, 1)); // the other FIFOs are not affected
  for (uint32_t i = 0; i < 16; ++i)
    CHECK(card.pop(2) == 100 + i);
  CHECK(card.pop(2) == 0);
}

TEST_CASE("doorbell: the interrupt line rises on empty -> non-empty only") {
  Card card(comet());
  DoorbellDevice &bell = *doorbell_of(card.node);
  CHECK(card.pending() == 0);
  bell.push(1, 10);
  CHECK(card.pending() == NICEMU_IRQ_DOORBELL);
  card.clear(NICEMU_IRQ_DOORBELL); // the firmware clears it, as other lines
  CHECK(card.pending() == 0);
  bell.push(1, 11); // FIFO 1 was not empty
  CHECK(card.pending() == 0);
  bell.push(4, 40); // FIFO 4 was
  CHECK(card.pending() == NICEMU_IRQ_DOORBELL);
  card.clear(NICEMU_IRQ_DOORBELL);
  card.pop(1);
  card.pop(4); // popping never raises it
  CHECK(card.pending() == 0);
  bell.push(1, 12); // one entry left: not empty
  CHECK(card.pending() == 0);
  card.pop(1);
  card.pop(1);
  bell.push(1, 13); // empty again before this one
  CHECK(card.pending() == NICEMU_IRQ_DOORBELL);
}

TEST_CASE("doorbell: a pop hands the freed entry to the first waiter") {
  Card card(bell_model());
  DoorbellDevice &bell = *doorbell_of(card.node);
  REQUIRE(bell.push(0, 1));
  REQUIRE(bell.push(0, 2));
  REQUIRE_FALSE(bell.push(0, 3));
  std::vector<std::string> told;
  bell.when_space(0, [&](Time t) {
    told.push_back("first@" + std::to_string(t));
    CHECK(bell.push(0, 3));
  });
  bell.when_space(0, [&](Time) {
    told.push_back("second");
    CHECK(bell.push(0, 4));
  });
  card.pop(1); // another FIFO: nobody is told
  CHECK(told.empty());
  CHECK(card.pop(0) == 1);
  CHECK(told == std::vector<std::string>{"first@0"});
  CHECK(card.count(0) == 2); // the held entry landed at once
  CHECK(card.pop(0) == 2);
  CHECK(told.size() == 2);
  CHECK(card.pop(0) == 3);
  CHECK(card.pop(0) == 4);
  CHECK(card.pop(0) == 0);
}

TEST_CASE("doorbell: the register table has the device at window 8") {
  CHECK(device_window("DOORBELL") == 8u);
  CHECK(std::string(device_name(8)) == "DOORBELL");
  const RegisterInfo *pop = find_register(8, NICEMU_DOORBELL_POP);
  REQUIRE(pop != nullptr);
  CHECK(std::string(pop->name) == "POP");
  CHECK(pop->access == Access::R);
  CHECK(describe_mmio_address(NICEMU_DOORBELL_BASE + NICEMU_DOORBELL_SELECT) ==
        "DOORBELL_SELECT");
  CHECK(NICEMU_DOORBELL_BASE == 0x1F008000);
  // The bus checks it like any other device.
  Card card(comet());
  uint32_t value = 0;
  std::string why;
  CHECK_FALSE(card.node.debug_mmio(NICEMU_DOORBELL_BASE + NICEMU_DOORBELL_POP,
                                   true, value, why));
  CHECK(why == "write to DOORBELL_POP: register is read-only");
  CHECK_FALSE(
      card.node.debug_mmio(NICEMU_DOORBELL_BASE + 0x40, false, value, why));
  CHECK(why == "read from DOORBELL+0x40: no such register");
}

TEST_CASE("doorbell: lanai4 has none, the window is a bus error") {
  Card card(lanai4());
  CHECK(doorbell_of(card.node) == nullptr);
  CHECK((card.read(NICEMU_SYS_BASE + NICEMU_SYS_CAPS) & NICEMU_CAP_DOORBELL) ==
        0);
  uint32_t value = 0;
  std::string why;
  CHECK_FALSE(card.node.debug_mmio(
      NICEMU_DOORBELL_BASE + NICEMU_DOORBELL_NONEMPTY, false, value, why));
  CHECK(why ==
        "read from DOORBELL_NONEMPTY: the lanai4 model has no DOORBELL device");

  // Firmware reading it faults.
  Image image;
  image.model = "lanai4";
  image.entry = kEntry;
  ImageSegment s;
  s.address = kEntry;
  s.flags = ImageSegment::kExec;
  std::vector<uint32_t> code = concat({load_base(t9, NICEMU_DOORBELL_BASE),
                                       {lw(t0, NICEMU_DOORBELL_NONEMPTY, t9),
                                        nop(), beq(zero, zero, -1), nop()}});
  s.data.resize(code.size() * 4);
  std::memcpy(s.data.data(), code.data(), s.data.size());
  s.mem_size = uint32_t(s.data.size());
  image.segments.push_back(s);
  std::vector<uint8_t> flash = encode_image(image);
  flash.resize(lanai4().flash_size, 0xFF);
  Simulation sim;
  Node &node = sim.add_node(lanai4(), NodeConfig{});
  node.boot(flash);
  RunResult r = sim.run();
  REQUIRE(r.outcome == RunOutcome::Faulted);
  CHECK(node.fault().kind == FaultKind::BusError);
  CHECK(node.fault().pc == kEntry + 8);
  CHECK(node.fault().detail ==
        "read from DOORBELL_NONEMPTY: the lanai4 model has no DOORBELL device");
}

TEST_CASE("doorbell: a model's [params.doorbell] is checked") {
  auto card_with = [](const std::string &params) {
    std::string text = kBellModel;
    text = text.substr(0, text.find("[params.doorbell]")) +
           "[params.doorbell]\n" + params;
    Model m = parse_model(text, "bad.toml");
    Scheduler scheduler;
    Node node(m, scheduler, config_for(m));
    return doorbell_of(node) ? doorbell_of(node)->fifos() : 0u;
  };
  CHECK(card_with("fifos = 32\ndepth = 1\n") == 32);
  CHECK_THROWS_WITH_AS(card_with("fifos = 33\ndepth = 4\n"),
                       doctest::Contains("bad.toml:34: model \"bellcard\": "
                                         "[params.doorbell] fifos = 33: must "
                                         "be a whole number from 1 to 32 "
                                         "(the doorbell bank reads it)"),
                       Error);
  CHECK_THROWS_WITH_AS(card_with("fifos = 4\ndepth = 0\n"),
                       doctest::Contains("depth = 0: must be"), Error);
  CHECK_THROWS_WITH_AS(card_with("fifos = 4\ndepth = 2.5\n"),
                       doctest::Contains("depth = 2.5: must be a whole number"),
                       Error);
  CHECK_THROWS_WITH_AS(card_with("fifos = 4\n"),
                       doctest::Contains("[params.doorbell] depth"), Error);
  CHECK_THROWS_WITH_AS(card_with("fifos = 4\ndepth = 2\nentry_bits = 64\n"),
                       doctest::Contains("entry_bits = 64: must be 32 "),
                       Error);
}

// ---- the host's doorbell write -------------------------------------------

TEST_CASE("host port: a doorbell write costs doorbell_write (else one PIO "
          "write), and cards without doorbells have no doorbell window") {
  // When a host write made at 1 us to `addr` completes; 0 if refused.
  auto write_done = [](const Model &model, uint64_t addr) {
    Card card(model);
    HostBusResult got;
    card.node.host_port().write(addr, 4, 7, kUs, [&](const HostBusResult &r) {
      got = r;
      return true;
    });
    return got.ok ? got.done : 0;
  };
  const uint32_t mailbox = comet().host_mailbox();
  CHECK(write_done(bell_model(), NICEMU_HOST_DOORBELLS) ==
        kUs + kDoorbellWrite);
  CHECK(write_done(comet(), NICEMU_HOST_DOORBELLS + 4) ==
        kUs + comet().timing("host.doorbell_write"));
  CHECK(write_done(comet(), mailbox) ==
        kUs + comet().timing("host.pio_write_word"));
  CHECK(write_done(lanai4(), NICEMU_HOST_DOORBELLS) == 0);
  CHECK(write_done(lanai4(), lanai4().host_mailbox()) ==
        kUs + lanai4().timing("host.pio_write_word"));
  // Past the last FIFO, or not a word: refused.
  CHECK(write_done(comet(), NICEMU_HOST_DOORBELLS + 4 * 8) == 0);
  CHECK(write_done(comet(), NICEMU_HOST_DOORBELLS + 2) == 0);
}

TEST_CASE("host doorbell: a write costs doorbell_write, a full FIFO holds "
          "it until the firmware pops, then it lands") {
  Rig rig(bell_model(), bell_flash(pop_at_100us()));
  RunResult r = rig.run([](HostCalls &h) {
    h.call(Op::Hello);
    h.doorbell(0, 11);
    h.doorbell(0, 22); // FIFO 0 is full now (depth 2)
    h.doorbell(0, 33); // held until the pop at 100 us
  });
  CHECK(r.outcome == RunOutcome::Halted);
  const HostCalls &h = rig.host();
  CHECK(h.error.empty());
  REQUIRE(h.replies.size() == 4);
  for (const Reply &rep : h.replies)
    CHECK(rep.status == Status::Ok);
  CHECK(h.replies[1].time == kDoorbellWrite);
  CHECK(h.replies[2].time == 2 * kDoorbellWrite);
  // The pop: the timer at cycle 10000, 3 cycles to wake, a few stores.
  CHECK(h.replies[3].time > 100 * kUs);
  CHECK(h.replies[3].time < 100 * kUs + 200'000);
  CHECK(rig.card_word(0x7000) == 11);
  DoorbellDevice &bell = *doorbell_of(rig.node());
  CHECK(bell.count(0) == 2);
}

TEST_CASE("host doorbell: the firmware pops before the write would have "
          "ended: the held write still costs doorbell_write") {
  Rig rig(bell_model(), bell_flash(pop_at_100us()));
  RunResult r = rig.run([](HostCalls &h) {
    h.call(Op::Hello);
    h.call(Op::Advance, 0, 0, 0, 99 * kUs);
    h.doorbell(0, 1); // 99 us .. 99.5 us
    h.doorbell(0, 2); // 99.5 us .. 100 us
    h.doorbell(0, 3); // at 100 us: full; the pop is ~0.1 us later
  });
  CHECK(r.outcome == RunOutcome::Halted);
  const HostCalls &h = rig.host();
  REQUIRE(h.replies.size() == 5);
  CHECK(h.replies[4].status == Status::Ok);
  // Issued at 100 us, popped before 100.5 us: done at 100.5 us, as unheld.
  CHECK(h.replies[4].time == 100 * kUs + kDoorbellWrite);
  CHECK(rig.card_word(0x7000) == 1);
  CHECK(doorbell_of(rig.node())->count(0) == 2);
}

TEST_CASE("host doorbell: a doorbell wakes a sleeping core") {
  std::vector<uint32_t> code = concat(
      {load_base(t7, NICEMU_TIMER_BASE),
       load_base(t8, NICEMU_IRQ_BASE),
       load_base(t9, NICEMU_DOORBELL_BASE),
       {addiu(t0, zero, int32_t(NICEMU_IRQ_DOORBELL)),
        sw(t0, NICEMU_IRQ_ENABLE, t8), wait(),
        lw(s1, NICEMU_TIMER_CYCLE_LO, t7), lw(t1, NICEMU_IRQ_PENDING, t8),
        sw(t1, 0x7008, zero), sw(zero, NICEMU_DOORBELL_SELECT, t9),
        lw(t1, NICEMU_DOORBELL_POP, t9), sw(t1, 0x7000, zero),
        sw(s1, 0x7004, zero), sw(zero, NICEMU_IRQ_ENABLE, t8)},
       sleep_forever()});
  Rig rig(bell_model(), bell_flash(code));
  RunResult r = rig.run([](HostCalls &h) {
    h.call(Op::Hello);
    h.call(Op::Advance, 0, 0, 0, 50 * kUs);
    h.doorbell(3, 0xABCD); // FIFO 3 of 4
    h.call(Op::Advance, 0, 0, 0, 10 * kUs);
  });
  CHECK(r.outcome == RunOutcome::Halted);
  REQUIRE(rig.host().replies.size() == 4);
  CHECK(rig.host().replies[2].time == 50 * kUs + kDoorbellWrite);
  CHECK(rig.card_word(0x7008) == NICEMU_IRQ_DOORBELL);
  CHECK(rig.card_word(0x7000) == 0); // FIFO 0 selected: empty
  uint32_t woke = rig.card_word(0x7004);
  CHECK(woke >= 5000 + 3); // rang at 50 us = cycle 5000, + the wake cost
  CHECK(woke <= 5000 + 3 + 5);
  CHECK(doorbell_of(rig.node())->count(3) == 1);
}

TEST_CASE("host port: card reads and writes are sized, and each window takes "
          "only the accesses it has") {
  Rig rig(bell_model(), bell_flash(sleep_forever()));
  const uint32_t word = 0x8000;
  rig.run([&](HostCalls &h) {
    h.call(Op::Hello);
    h.call(Op::Write, word, 4, 0, 0x12345678);  // PIO: 1 us
    h.call(Op::Read, word, 4);                  // PIO: 1 us
    h.call(Op::Write, word, 8, 0, 1);           // PIO is 32-bit
    h.call(Op::Read, word, 3);                  // no such size
    h.call(Op::Read, NICEMU_HOST_DOORBELLS, 4); // doorbells: write-only
    h.call(Op::Write, 0xD0000000, 4, 0, 1);     // no window there
  });
  const auto &r = rig.host().replies;
  REQUIRE(r.size() == 7);
  CHECK(r[1].status == Status::Ok);
  CHECK(r[1].time == kUs);
  CHECK(r[2].status == Status::Ok);
  CHECK(r[2].value == 0x12345678);
  CHECK(r[2].data == 0x12345678);
  CHECK(r[2].time == 2 * kUs);
  for (size_t i = 3; i < 7; ++i) {
    CAPTURE(i);
    CHECK(r[i].status == Status::BadArgument);
    CHECK(r[i].time == 2 * kUs); // refused at once: no bus time
  }
}

// The same card with a PIO read three times as dear as a write, so that a
// swap of the two costs shows.
const Model &uneven_pio_model() {
  static Model m = [] {
    std::string text = kBellModel;
    size_t at = text.find("pio_read_word = \"1 us\"");
    REQUIRE(at != std::string::npos);
    text.replace(at, std::string("pio_read_word = \"1 us\"").size(),
                 "pio_read_word = \"3 us\"");
    return parse_model(text, "bellcard.toml");
  }();
  return m;
}

TEST_CASE("host port: a write costs pio_write_word, a read pio_read_word, a "
          "posted write moves the host's clock by pio_write_word") {
  REQUIRE(uneven_pio_model().timing("host.pio_write_word") == kUs);
  REQUIRE(uneven_pio_model().timing("host.pio_read_word") == 3 * kUs);
  Rig rig(uneven_pio_model(), bell_flash(sleep_forever()));
  const uint32_t word = 0x8000;
  Time before_post = 0, after_post = 0;
  rig.run([&](HostCalls &h) {
    h.call(Op::Hello);
    h.call(Op::Advance, 0, 0, 0, 10 * kUs);
    h.call(Op::Write, word, 4, 0, 0x5A5A5A5A); // 10 us + 1 us
    h.call(Op::Read, word, 4);                 // 11 us + 3 us
    before_post = h.end.time();
    h.end.post_write(word, 7);
    after_post = h.end.time();
    h.call(Op::Read, word, 4); // the posted write landed first
  });
  const auto &r = rig.host().replies;
  REQUIRE(r.size() == 5);
  CHECK(r[2].time == 11 * kUs);
  CHECK(r[3].time == 14 * kUs);
  CHECK(r[3].value == 0x5A5A5A5A);
  CHECK(before_post == 14 * kUs);
  CHECK(after_post == 15 * kUs);
  CHECK(r[4].time == 18 * kUs);
  CHECK(r[4].value == 7);
}

TEST_CASE("host doorbell: no such FIFO, or no doorbells: BadArgument") {
  SUBCASE("FIFO 4 of 4") {
    Rig rig(bell_model(), bell_flash(sleep_forever()));
    rig.run([](HostCalls &h) {
      h.call(Op::Hello);
      h.doorbell(4, 1);
      h.doorbell(~0u, 1);
    });
    REQUIRE(rig.host().replies.size() == 3);
    CHECK(rig.host().replies[1].status == Status::BadArgument);
    CHECK(rig.host().replies[2].status == Status::BadArgument);
    CHECK(rig.host().replies[2].time == 0); // refused before the bus
  }
  SUBCASE("a card without doorbells") {
    Rig rig(no_bell_model(),
            flash_with({{kEntry, sleep_forever()}}, "bellcard"));
    rig.run([](HostCalls &h) {
      h.call(Op::Hello);
      h.doorbell(0, 1);
    });
    REQUIRE(rig.host().replies.size() == 2);
    CHECK(rig.host().replies[1].status == Status::BadArgument);
  }
}

TEST_CASE("host doorbell: a write held for ever ends the run as a deadlock, "
          "and the host's call fails instead of hanging") {
  Rig rig(bell_model(), bell_flash(sleep_forever()));
  RunResult r = rig.run([](HostCalls &h) {
    h.call(Op::Hello);
    h.doorbell(2, 1);
    h.doorbell(2, 2);
    h.doorbell(2, 3); // nobody will ever pop
  });
  CHECK(r.outcome == RunOutcome::Deadlock);
  CHECK(r.message ==
        "every host waits for its NIC and no NIC has anything left to do");
  CHECK(r.end_time == 2 * kDoorbellWrite);
  CHECK(rig.host().replies.size() == 3);
  CHECK(rig.host().error.find("the emulator stopped") == 0);
  CHECK(doorbell_of(rig.node())->count(2) == 2);
}

TEST_CASE("host doorbell: a write held while the firmware spins without "
          "popping: the watchdog ends the run") {
  Rig rig(bell_model(), bell_flash({beq(zero, zero, -1), nop()}));
  RunResult r = rig.run([](HostCalls &h) {
    h.call(Op::Hello);
    h.doorbell(0, 1);
    h.doorbell(0, 2);
    h.doorbell(0, 3); // held; the core never pops
  });
  CHECK(r.outcome == RunOutcome::Faulted);
  CHECK(rig.node().fault().kind == FaultKind::Watchdog);
  CHECK(rig.host().error.find("the emulator stopped") == 0);
}

// ---- WaitWordUntil
// -----------------------------------------------------------

TEST_CASE("host timed wait: times out at the deadline exactly, or matches "
          "one poll after the word does") {
  Rig rig(bell_model(), bell_flash(sleep_forever()));
  rig.run([](HostCalls &h) {
    h.call(Op::Hello);
    h.call(Op::WaitWordUntil, 64, ~0u, 1, 7 * kUs); // [1] nobody writes it
    h.store(64, 5);
    h.call(Op::WaitWordUntil, 64, ~0u, 5, 100 * kUs);       // [2] matches now
    h.call(Op::WaitWordUntil, 64, ~0u, 6, 3 * kUs);         // [3] deadline past
    h.call(Op::WaitWordUntil, 64, 0xF0, 0, 100 * kUs);      // [4] masked match
    h.call(Op::WaitWordUntil, 66, ~0u, 0, 100 * kUs);       // [5] unaligned
    h.call(Op::WaitWordUntil, 1u << 20, ~0u, 0, 100 * kUs); // [6] outside
  });
  const auto &rep = rig.host().replies;
  REQUIRE(rep.size() == 7);
  CHECK(rep[1].status == Status::Ok);
  CHECK(rep[1].value == 1); // timed out
  CHECK(rep[1].time == 7 * kUs);
  CHECK(rep[1].word == 0);
  CHECK(rep[2].value == 0); // matched
  CHECK(rep[2].word == 5);
  CHECK(rep[2].time == 7 * kUs + kPoll);
  CHECK(rep[3].value == 1);
  CHECK(rep[3].time == 7 * kUs + kPoll); // at once
  CHECK(rep[3].word == 5);
  CHECK(rep[4].value == 0);
  CHECK(rep[4].word == 5);
  CHECK(rep[4].time == 7 * kUs + 2 * kPoll);
  CHECK(rep[5].status == Status::BadArgument);
  CHECK(rep[6].status == Status::BadArgument);
}

TEST_CASE("host timed wait: a DMA write landing at the deadline itself "
          "counts as a match, one picosecond earlier is a timeout") {
  // First: when does the DMA land? The match is noticed one poll later.
  auto wait_for_dma = [](uint64_t deadline) {
    Rig rig(bell_model(), bell_flash(dma_at_10us()));
    rig.run([deadline](HostCalls &h) {
      h.call(Op::Hello);
      h.call(Op::Register, 0, 4096);
      h.call(Op::WaitWordUntil, 64, ~0u, 0x77, deadline);
    });
    REQUIRE(rig.host().replies.size() == 3);
    return rig.host().replies[2];
  };
  Reply early = wait_for_dma(1000 * kUs);
  CHECK(early.value == 0);
  CHECK(early.word == 0x77);
  Time landed = early.time - kPoll;
  // 10 us, a few cycles to program the engine, 2 us + 1 word x 20 ns.
  CHECK(landed > 12 * kUs + 20'000);
  CHECK(landed < 12 * kUs + 20'000 + 300'000);

  Reply at = wait_for_dma(landed);
  CHECK(at.value == 0);
  CHECK(at.word == 0x77);
  CHECK(at.time == landed + kPoll);

  Reply before = wait_for_dma(landed - 1);
  CHECK(before.value == 1);
  CHECK(before.word == 0);
  CHECK(before.time == landed - 1);
}

// The process reads its own memory directly, the moment it has its reply.
// A device that writes host memory at the reply's very time, in an event
// that runs after the reply's, must have written it by then, however long
// the simulation takes to get there: else what the host sees depends on
// wall time (a flaky FM ping-pong under ASan showed it).
TEST_CASE("host reply: a write landing at the reply's own time is in host "
          "memory when the process has its reply") {
  Rig rig(bell_model(), bell_flash(sleep_forever()));
  rig.agent().set_leases(false); // a lease would rule such a write out
  // After the reply's event (a host's) at kPoll: a core's, and a slow one.
  EventOrigin was = rig.scheduler().set_origin(EventOrigin::core(0));
  rig.scheduler().schedule(kPoll, "test: a late write", [&rig] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    uint32_t value = 0x77;
    CHECK(rig.agent().write(channel::kArenaBusBase + 64, &value, 4));
  });
  rig.scheduler().set_origin(was);
  uint32_t seen = 0;
  rig.run([&seen](HostCalls &h) {
    h.call(Op::Hello);
    h.call(Op::Register, 0, 4096);
    h.call(Op::WaitWord, 64, 0, 0); // mask 0: matches at once
    std::memcpy(&seen, h.end.arena() + 64, 4);
  });
  REQUIRE(rig.host().replies.size() == 3);
  CHECK(rig.host().replies[2].time == kPoll);
  CHECK(rig.host().replies[2].word == 0); // the word when it asked
  CHECK(seen == 0x77);
}

// What the simulation never does (it runs no event while a host computes
// at the time it stands at), done by hand: the run stops, with the reason.
TEST_CASE("host reply: a device that writes a computing host's memory stops "
          "the run, named") {
  Scheduler scheduler;
  HostAgent agent(0, 1, 1 << 20, scheduler, bell_model());
  channel::WakePipe wake;
  channel::HostEnd end(agent.channel().fd(), wake.write_fd);
  std::thread host([&end] {
    Request r;
    r.op = Op::Register;
    r.b = 4096;
    end.call(r);
  });
  for (int i = 0; i < 300 && !agent.request_waiting(); ++i)
    wake.wait(10);
  agent.poll();
  scheduler.run_until(0);
  agent.release_reply(); // the process computes from time 0
  host.join();
  uint32_t value = 1;
  CHECK(agent.write(channel::kArenaBusBase + 64, &value, 4));
  CHECK(agent.failure().find("internal error: a device wrote the memory of "
                             "host rank 0 at 0 ps while the host computed") ==
        0);
}

// ---- posted PIO writes -----------------------------------------------------

// Sleeps until the host's mailbox doorbell (IRQ_HOST), then stores the
// mailbox's first word at 0x7000 and the cycle it woke at 0x7004.
std::vector<uint32_t> mailbox_watcher() {
  return concat({load_base(t8, NICEMU_IRQ_BASE),
                 load_base(t7, NICEMU_TIMER_BASE),
                 {addiu(t0, zero, int32_t(NICEMU_IRQ_HOST)),
                  sw(t0, NICEMU_IRQ_ENABLE, t8), wait(),
                  lw(s1, NICEMU_TIMER_CYCLE_LO, t7), ori(t2, zero, 0xF000),
                  lw(t1, 0, t2), sw(t1, 0x7000, zero), sw(s1, 0x7004, zero),
                  sw(zero, NICEMU_IRQ_ENABLE, t8)},
                 sleep_forever()});
}

TEST_CASE("host posted write: lands at the host's time, as a waited-for "
          "write would") {
  REQUIRE(bell_model().host_mailbox() == 0xF000);
  Rig rig(bell_model(), bell_flash(mailbox_watcher()));
  bool posted = false;
  Time after_post = 0;
  RunResult r = rig.run([&](HostCalls &h) {
    h.call(Op::Hello);
    h.call(Op::Advance, 0, 0, 0, 50 * kUs);
    posted = h.end.post_write(0xF000, 0x1234);
    after_post = h.end.time();
    h.call(Op::Advance, 0, 0, 0, 10 * kUs);
  });
  CHECK(r.outcome == RunOutcome::Halted);
  CHECK(posted);
  CHECK(after_post == 51 * kUs); // pio_write_word is 1 us
  REQUIRE(rig.host().replies.size() == 3);
  CHECK(rig.host().replies[2].time == 61 * kUs);
  CHECK(rig.card_word(0x7000) == 0x1234);
  uint32_t woke = rig.card_word(0x7004);
  CHECK(woke >= 5000 + 3); // written at 50 us = cycle 5000, + the wake cost
  CHECK(woke <= 5000 + 3 + 5);
}

TEST_CASE("host posted write: one the card refuses stops the run, named") {
  Rig rig(bell_model(), bell_flash(sleep_forever()));
  RunResult r = rig.run([](HostCalls &h) {
    h.call(Op::Hello);
    h.end.post_write(0x20000, 1); // past the 64 KiB of SRAM
    h.call(Op::Advance, 0, 0, 0, 10 * kUs);
  });
  CHECK(r.outcome == RunOutcome::HostFailed);
  CHECK(r.message.find("host rank 0: a posted PIO write to card address "
                       "131072 was refused") == 0);
}

TEST_CASE("host posted write: one made just before exit still lands") {
  Rig rig(bell_model(), bell_flash(sleep_forever()));
  RunResult r = rig.run([](HostCalls &h) {
    h.call(Op::Hello);
    h.call(Op::Advance, 0, 0, 0, 5 * kUs);
    REQUIRE(h.end.post_write(0xF000, 0xE817)); // then the rig exits
  });
  CHECK(r.outcome == RunOutcome::Halted);
  CHECK(rig.host().error.empty());
  CHECK(rig.card_word(0xF000) == 0xE817);
  CHECK(rig.host().end.time() == 6 * kUs);
}
