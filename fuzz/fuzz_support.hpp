// What the fuzz targets share: reading the input, booting the shipped
// firmware, and a two-card network whose node 1 has a host.
#pragma once

#include "host/agent.hpp"
#include "host/channel.hpp"
#include "nicemu/error.hpp"
#include "nicemu/model.hpp"
#include "node/cluster.hpp"
#include "node/simulation.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace nicemu::fuzz {

// The input, read from the front; reads past its end give zeros.
class FuzzInput {
public:
  FuzzInput(const uint8_t *data, size_t size) : data_(data), left_(size) {}
  size_t left() const { return left_; }
  void bytes(void *out, size_t n) {
    size_t take = std::min(n, left_);
    std::memcpy(out, data_, take);
    std::memset(static_cast<uint8_t *>(out) + take, 0, n - take);
    data_ += take;
    left_ -= take;
  }
  template <class T> T take() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }
  // Up to `n` bytes: fewer if the input ends first.
  std::vector<uint8_t> up_to(size_t n) {
    n = std::min(n, left_);
    std::vector<uint8_t> out(data_, data_ + n);
    data_ += n;
    left_ -= n;
    return out;
  }

private:
  const uint8_t *data_;
  size_t left_;
};

// A check of the target failed: abort, which libFuzzer reports as a crash.
[[noreturn]] inline void violated(const char *target, const char *what) {
  std::fprintf(stderr, "%s: %s\n", target, what);
  std::abort();
}

// A shipped firmware image (NICEMU_FIRMWARE_ROOT/`image`) in an erased
// flash of `model`'s size.
inline std::shared_ptr<const std::vector<uint8_t>>
shipped_flash(const Model &model, const std::string &image) {
  const std::string path = std::string(NICEMU_FIRMWARE_ROOT) + "/" + image;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    violated("fuzz", ("cannot read " + path).c_str());
  std::vector<uint8_t> flash{std::istreambuf_iterator<char>(in), {}};
  flash.resize(model.flash_size, 0xFF);
  return std::make_shared<const std::vector<uint8_t>>(std::move(flash));
}

// Two cards of `model` on their network, both booted from `flash`. Node 1
// has a host whose whole arena (`arena` bytes) is registered: the
// emulator lets the card's DMA reach every byte of it.
struct TwoCards {
  Simulation sim;
  HostAgent host;
  Node *card = nullptr; // node 1
  TwoCards(const Model &model,
           const std::shared_ptr<const std::vector<uint8_t>> &flash,
           uint64_t arena)
      : host(1, 2, arena, sim.scheduler(), model) {
    std::unique_ptr<Fabric> net = make_fabric(sim.scheduler(), model, 2, "");
    Time lookahead = network_lookahead(model, *net);
    sim.set_fabric(std::move(net), lookahead);
    host.channel().control().regions[0] = {0, arena};
    for (uint32_t i = 0; i < 2; ++i) {
      NodeConfig config;
      config.node = i;
      config.nodes = 2;
      config.fabric = sim.fabric();
      if (i == 1)
        config.host_memory = &host;
      Node &node = sim.add_node(model, config);
      node.boot(flash);
      if (i == 1) {
        host.attach(&node);
        card = &node;
      }
    }
  }
  ~TwoCards() { host.shut_down(); }
};

} // namespace nicemu::fuzz
