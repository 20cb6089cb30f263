// What a run says about its network when firmware gets it wrong (issue 23,
// "also"): packets dropped for their route bytes are reported, with why,
// and a run that stops with packets stuck in the network says so instead
// of "nothing left to do". Hand-assembled firmware on two lanai4 cards, run
// in process and with the `nicemu` command.
#include "node_harness.hpp"

#include "node/cluster.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

using namespace nicemu;
using namespace mips_asm;
using namespace node_harness;

namespace {

constexpr uint32_t kPacket = 0x4000;

// Node 0 sends one 64-byte packet led by `route` (from kPacket); every
// node then sleeps for good. Nobody arms its Rx engine.
std::vector<uint8_t> send_then_sleep(uint8_t route) {
  std::vector<uint32_t> code =
      concat({load_base(t9, NICEMU_SYS_BASE),
              {lw(t0, NICEMU_SYS_NODE, t9), nop(), bne(t0, zero, 11), nop()},
              load_base(t8, NICEMU_TX_BASE),
              {ori(t0, zero, kPacket), sw(t0, NICEMU_TX_ADDR, t8),
               addiu(t0, zero, 65), sw(t0, NICEMU_TX_LENGTH, t8),
               addiu(t0, zero, 1), sw(t0, NICEMU_TX_ROUTE_LEN, t8),
               addiu(t0, zero, int32_t(NICEMU_DMA_START)),
               sw(t0, NICEMU_TX_CTRL, t8), nop(),
               /*sleep*/ wait(), beq(zero, zero, -2), nop()}});
  std::vector<uint32_t> packet(17, 0x5A5A5A5A);
  packet[0] = route; // the route byte, then 64 bytes of payload
  const Model model = load_model("lanai4");
  return flash_with({{kEntry, code}, {kPacket, packet}}, "lanai4",
                    model.flash_size);
}

struct TwoCards {
  Model model = load_model("lanai4");
  Simulation sim;
  RunResult result;
  explicit TwoCards(const std::vector<uint8_t> &flash) {
    auto fabric = make_fabric(sim.scheduler(), model, 2, "");
    Time lookahead = network_lookahead(model, *fabric);
    sim.set_fabric(std::move(fabric), lookahead);
    for (uint32_t i = 0; i < 2; ++i) {
      NodeConfig config;
      config.node = i;
      config.nodes = 2;
      config.fabric = sim.fabric();
      sim.add_node(model, config).boot(flash);
    }
    result = sim.run();
  }
};

// `nicemu run -n 2` on `flash`'s image: exit status, stderr and stdout.
std::pair<int, std::string> run_tool(const std::vector<uint8_t> &flash) {
  const Image image = decode_image(flash);
  const auto path = std::filesystem::temp_directory_path() /
                    ("nicemu-network-" + std::to_string(getpid()) + ".img");
  write_file_bytes(path.string(), encode_image(image));
  const std::string command = std::string(NICEMU_TOOL_PATH) +
                              " run -q -n 2 --firmware " + path.string() +
                              " 2>&1";
  std::string out;
  FILE *p = popen(command.c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;)
    out.append(buf, n);
  int status = pclose(p);
  std::filesystem::remove(path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("regression: misrouted packets are reported with why, not only "
          "counted (issue 23, also)") {
  // Route byte 9: the crossbar has ports 0-7.
  TwoCards run(send_then_sleep(9));
  CHECK(run.result.outcome == RunOutcome::Deadlock);
  REQUIRE(run.sim.fabric()->misroutes().size() == 1);
  const Misroute &m = run.sim.fabric()->misroutes()[0];
  CHECK(m.source == 0);
  CHECK(m.why == "route byte 9 names no port of switch s0 (it has 8)");
  CHECK(run.sim.fabric()->packets_in_network() == 0);
  // The command says it, -q or not.
  auto [status, out] = run_tool(send_then_sleep(9));
  INFO(out);
  CHECK(status == 126);
  CHECK(contains(out, "nicemu: network: 1 packet misrouted and dropped (bad "
                      "route bytes from the firmware):\n  at "));
  CHECK(contains(out, " us, from node 0: route byte 9 names no port of switch "
                      "s0 (it has 8)\n"));
}

TEST_CASE("regression: a run that stops with packets stuck in the network "
          "says so (issue 23, also)") {
  // Route byte 1 reaches node 1, whose Rx engine is never armed: the head
  // waits there, holding its path, while both cores sleep.
  TwoCards run(send_then_sleep(1));
  CHECK(run.result.outcome == RunOutcome::Deadlock);
  CHECK(run.sim.fabric()->packets_in_network() == 1);
  CHECK(run.result.message ==
        "every node is asleep, but 1 packet is stuck in the network, waiting "
        "for a link another packet holds or for a receiver that never takes "
        "it (a wormhole deadlock, or a NIC that stopped receiving)");
  CHECK(!contains(run.result.message, "no event is pending"));
  auto [status, out] = run_tool(send_then_sleep(1));
  INFO(out);
  CHECK(status == 126);
  CHECK(contains(out, "nicemu: stopped: every node is asleep, but 1 packet is "
                      "stuck in the network"));
}
