// Running hand-assembled firmware on a whole node: a test model with round
// numbers, images built from instruction words, and a run that records the
// console. Shared by the node-level unit tests.
#pragma once

#include "boards/common/shared_parts.hpp"
#include "devices/host_memory.hpp"
#include "mips_asm.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "nicemu/regs.h"
#include "node/simulation.hpp"

#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace node_harness {

using namespace nicemu;
using namespace mips_asm;

// 100 MHz: one cycle is 10 ns, so times are easy to check by hand.
inline const char *kTestModel = R"(
name = "testcard"
description = "card for unit tests"
id = 99
[core]
clock_hz = 100_000_000
watchdog_cycles = 100_000
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
)";

inline const Model &test_model() {
  static Model m = parse_model(kTestModel, "testcard.toml");
  return m;
}

// The boards of the unit tests' own cards (models that name no board): a
// card with host DMA ("testcard"), and with doorbells and a PCI host side
// ("bellcard", "bad"; "nobellcard" without doorbells), by the name of the
// file they were parsed as. nullptr for a model of the shipped ones, whose node
// then takes the board the model names.
inline const Board *board_for_test(const Model &model) {
  static const SharedPartsBoard testcard("testcard", "card for unit tests",
                                         {SharedPart::HostDma});
  static const SharedPartsBoard bellcard(
      "bellcard", "card with doorbells for unit tests",
      {SharedPart::HostDma, SharedPart::Doorbells, SharedPart::PciHost});
  static const SharedPartsBoard nobellcard(
      "nobellcard", "card without doorbells for unit tests",
      {SharedPart::HostDma, SharedPart::PciHost});
  const std::string file = model.source.stem().string();
  if (file == "testcard")
    return &testcard;
  if (file == "bellcard" || file == "bad")
    return &bellcard;
  if (file == "nobellcard")
    return &nobellcard;
  return nullptr;
}

// A node's configuration for `model`, with its test board if it has one.
inline NodeConfig config_for(const Model &model) {
  NodeConfig config;
  config.board = board_for_test(model);
  return config;
}

inline constexpr uint32_t kEntry = 0x1000;

// Code words placed at given addresses, packed as an image and flashed.
// Built for the model named `model`, in a flash of `flash_size` bytes.
inline std::vector<uint8_t>
flash_with(const std::vector<std::pair<uint32_t, std::vector<uint32_t>>> &parts,
           const std::string &model, uint32_t flash_size) {
  Image image;
  image.model = model;
  image.entry = kEntry;
  for (const auto &[addr, words] : parts) {
    ImageSegment s;
    s.address = addr;
    s.flags = ImageSegment::kExec;
    s.data.resize(words.size() * 4);
    std::memcpy(s.data.data(), words.data(), s.data.size());
    s.mem_size = uint32_t(s.data.size());
    image.segments.push_back(s);
  }
  std::vector<uint8_t> flash = encode_image(image);
  flash.resize(flash_size, 0xFF);
  return flash;
}

// For the test card (or an image claiming to be for `model`).
inline std::vector<uint8_t>
flash_with(const std::vector<std::pair<uint32_t, std::vector<uint32_t>>> &parts,
           const std::string &model = "testcard") {
  return flash_with(parts, model, test_model().flash_size);
}

struct Run {
  Simulation sim;
  Node *node = nullptr;
  std::vector<std::string> console;
  RunResult result;
  Run(const std::vector<uint8_t> &flash, Time max_time = kTimeNever,
      std::optional<uint64_t> watchdog = std::nullopt,
      HostMemory *host = nullptr, RunEvents *events = nullptr) {
    NodeConfig config = config_for(test_model());
    config.watchdog_cycles = watchdog;
    config.host_memory = host;
    config.events = events;
    config.console = [this](uint32_t n, const std::string &line) {
      console.push_back(std::to_string(n) + ":" + line);
    };
    node = &sim.add_node(test_model(), config);
    node->boot(flash);
    result = sim.run(max_time);
  }
};

inline std::vector<uint32_t> load_base(Reg r, uint32_t base) {
  return {lui(r, int32_t(base >> 16)), ori(r, r, int32_t(base & 0xffff))};
}

inline std::vector<uint32_t>
concat(std::initializer_list<std::vector<uint32_t>> parts) {
  std::vector<uint32_t> out;
  for (const auto &p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

} // namespace node_harness
