// Fuzz target: the host channel as the emulator reads it. A host program is
// untrusted code that shares memory with the emulator: it may post any
// request words, lengths and addresses, post writes, move its clock and
// scribble on the control block at any time. Whatever it does must end in
// an answer or a clear error for that host, never a crash, and never a
// write outside its arena (AddressSanitizer watches the emulator's side).
//
// The input is a list of steps, each a selector byte and its operands:
//   0: a request (the bytes of a channel::Request) is posted
//   1: a posted write (address, size, value)
//   2: a scribble: offset (2 bytes), length (1 byte), then the bytes
//   3: the host's clock is set (8 bytes)
//   4: the host says it exited
// The card is a lanai4 running the sample that sleeps forever.
#include "fuzz_support.hpp"
#include "host/agent.hpp"
#include "host/channel.hpp"
#include "nicemu/error.hpp"
#include "nicemu/model.hpp"
#include "node/simulation.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace nicemu;
using channel::ControlBlock;
using channel::HostState;
using channel::Request;
using nicemu::fuzz::FuzzInput;

namespace {

constexpr uint64_t kArena = 1 << 20;

class HostileHost final : public ExternalActor {
public:
  HostileHost(FuzzInput &input, HostAgent &agent)
      : input_(input), agent_(agent), cb_(agent.channel().control()) {}

  void poll() override {
    if (input_.left() > 0)
      step();
    agent_.poll();
  }
  Time earliest_action() const override { return agent_.earliest_action(); }
  void events_ran() override { agent_.release_reply(); }
  void wait() override {}
  bool finished() const override {
    return input_.left() == 0 || agent_.exited();
  }
  std::string failure() const override { return agent_.failure(); }

private:
  void step() {
    switch (input_.take<uint8_t>() % 5) {
    case 0: {
      Request r;
      input_.bytes(&r, sizeof r);
      cb_.request = r;
      ++cb_.request_seq;
      cb_.state.store(uint32_t(HostState::Requesting));
      return;
    }
    case 1: {
      uint32_t seq = cb_.posted_seq.load();
      cb_.posted.a = input_.take<uint32_t>();
      cb_.posted.b = input_.take<uint32_t>();
      cb_.posted.arg64 = input_.take<uint64_t>();
      cb_.posted.time = cb_.host_time.load();
      cb_.posted_seq.store(seq + 1);
      return;
    }
    case 2: {
      size_t at = input_.take<uint16_t>() % sizeof(ControlBlock);
      size_t len =
          std::min<size_t>(input_.take<uint8_t>(), sizeof(ControlBlock) - at);
      input_.bytes(reinterpret_cast<uint8_t *>(&cb_) + at, len);
      return;
    }
    case 3:
      cb_.host_time.store(input_.take<uint64_t>());
      return;
    default:
      cb_.state.store(uint32_t(HostState::Exited));
    }
  }

  FuzzInput &input_;
  HostAgent &agent_;
  ControlBlock &cb_;
};

// A core that sleeps at once: `wait` in a loop at the reset address.
std::vector<uint8_t> sleeping_flash(const Model &model) {
  Image image;
  image.model = model.name;
  image.entry = 0x1000;
  ImageSegment s;
  s.address = 0x1000;
  s.flags = ImageSegment::kExec;
  const uint32_t code[] = {0x42000020, 0x1000fffe, 0}; // wait; b .-4; nop
  s.data.resize(sizeof code);
  std::memcpy(s.data.data(), code, sizeof code);
  s.mem_size = uint32_t(s.data.size());
  image.segments.push_back(s);
  std::vector<uint8_t> flash = encode_image(image);
  flash.resize(model.flash_size, 0xFF);
  return flash;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const Model model = load_model("lanai4");
  static const std::vector<uint8_t> flash = sleeping_flash(model);
  FuzzInput input(data, size);
  Simulation sim;
  HostAgent agent(0, 1, kArena, sim.scheduler(), model);
  HostileHost host(input, agent);
  sim.set_external(&host);
  NodeConfig config;
  config.host_memory = &agent;
  Node &node = sim.add_node(model, config);
  node.boot(flash);
  agent.attach(&node);
  try {
    sim.run(10'000'000'000); // 10 ms of virtual time at most
  } catch (const Error &) {
  }
  if (!agent.exited())
    agent.shut_down();
  return 0;
}
