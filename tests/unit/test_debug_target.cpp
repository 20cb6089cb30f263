// The core's debug hooks (CpuDebugger, CpuDebugHooks) on the demo firmware:
// stopping inside the run, stepping and watching never change the run.
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "node/simulation.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <vector>

using namespace nicemu;

namespace {

std::vector<uint8_t> demo_flash(const Model &model) {
  std::vector<uint8_t> image =
      read_file_bytes(std::string(NICEMU_FIRMWARE_DIR) + "/demo.img");
  std::vector<uint8_t> flash(model.flash_size, 0xFF);
  std::copy(image.begin(), image.end(), flash.begin());
  return flash;
}

struct Outcome {
  uint64_t cycles = 0, instructions = 0;
  uint32_t exit_code = 0;
  NodeState state = NodeState::Reset;
  std::vector<std::string> console;
  bool operator==(const Outcome &) const = default;
};

// Counts instructions; at the `stop_at`-th, calls `act` (as a debugger
// holding the run would).
class Probe final : public CpuDebugger {
public:
  uint64_t seen = 0, stop_at = 0;
  std::function<void(uint32_t pc)> act;
  std::vector<std::pair<uint32_t, bool>> accesses;
  void before_instruction(uint32_t pc) override {
    if (++seen == stop_at && act)
      act(pc);
  }
  void memory_access(uint32_t addr, unsigned, bool write) override {
    accesses.push_back({addr, write});
  }
};

// Slices of at most 100 us, as while a debugger is attached.
struct SliceCap final : RunDebugger {
  void between_slices() override {}
  bool killed() const override { return false; }
  Time max_slice() const override { return 100'000'000; }
};

Outcome run_demo(const std::function<void(Node &, Probe &)> &setup = {},
                 bool capped = false) {
  const Model &model = load_model("lanai4");
  Simulation sim;
  SliceCap cap;
  if (capped)
    sim.set_debugger(&cap);
  Outcome out;
  NodeConfig config;
  config.console = [&](uint32_t, const std::string &line) {
    out.console.push_back(line);
  };
  Node &node = sim.add_node(model, config);
  node.boot(demo_flash(model));
  Probe probe;
  node.cpu().set_debugger(&probe);
  if (setup)
    setup(node, probe);
  sim.run();
  out.cycles = node.cpu().cycles();
  out.instructions = node.cpu().instructions();
  out.exit_code = node.exit_code();
  out.state = node.state();
  node.cpu().set_debugger(nullptr);
  return out;
}

} // namespace

TEST_CASE("debug hooks: instruction hooks count every instruction and change "
          "nothing") {
  Outcome plain = run_demo();
  REQUIRE(plain.state == NodeState::Halted);
  uint64_t seen = 0;
  Outcome hooked = run_demo([&](Node &node, Probe &) {
    node.cpu().set_debug_hooks({true, {}, {}});
  });
  CHECK(hooked == plain);
  // Slices end anywhere while debugging.
  CHECK(run_demo({}, true) == plain);
  Outcome capped = run_demo(
      [&](Node &node, Probe &) {
        node.cpu().set_debug_hooks({true, {}, {}});
      },
      true);
  CHECK(capped == plain);
  (void)seen;
}

TEST_CASE("debug hooks: removing the instruction hook inside a block (a "
          "debugger detaching at a breakpoint) changes nothing") {
  Outcome plain = run_demo();
  for (uint64_t at : {1ull, 2ull, 1000ull, 3001ull, 7777ull}) {
    CAPTURE(at);
    Outcome hooked = run_demo([&](Node &node, Probe &probe) {
      node.cpu().set_debug_hooks({true, {}, {}});
      probe.stop_at = at;
      probe.act = [&](uint32_t) { node.cpu().set_debug_hooks({}); };
    });
    CHECK(hooked == plain);
  }
}

TEST_CASE("debug hooks: removing at a loop head") {
  Outcome plain = run_demo();
  Outcome hooked = run_demo(
      [&](Node &node, Probe &probe) {
        node.cpu().set_debug_hooks({true, {}, {}});
        probe.stop_at = UINT64_MAX;
        probe.act = nullptr;
        static Node *n = nullptr;
        n = &node;
        struct At final : CpuDebugger {
          void before_instruction(uint32_t pc) override {
            if (pc == 0x4cc && !done) {
              done = true;
              CpuRegisters r = n->cpu().registers(); // as GDB's stop reply does
              CHECK(r.pc == pc);
              n->cpu().set_debug_hooks({});
            }
          }
          void memory_access(uint32_t, unsigned, bool) override {}
          bool done = false;
        };
        static At at;
        at.done = false;
        node.cpu().set_debugger(&at);
      },
      true);
  CHECK(hooked == plain);
}
