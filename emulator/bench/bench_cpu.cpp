#include "bench/bench_cpu.hpp"

#include "core/cpu.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "nicemu/regs.h"
#include "node/simulation.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace nicemu {

namespace {

void patch_word(Image &image, const std::string &symbol, uint32_t value) {
  const ImageSymbol *s = image.find_symbol(symbol);
  if (!s)
    throw Error("bench: the image has no symbol '" + symbol + "'");
  for (ImageSegment &seg : image.segments)
    if (s->address - seg.address + 4 <= seg.data.size()) {
      std::memcpy(seg.data.data() + (s->address - seg.address), &value, 4);
      return;
    }
  throw Error("bench: '" + symbol + "' is not in initialised data");
}

std::vector<uint8_t> as_flash(const Image &image, const Model &model) {
  std::vector<uint8_t> bytes = encode_image(image);
  bytes.resize(model.flash_size, 0xFF);
  return bytes;
}

struct AccountedRun {
  double wall = 0;
  uint64_t instructions = 0, cycles = 0;
  uint32_t exit_code = 0;
  Time virtual_time = 0;
  bool halted = false;
};

AccountedRun run_on_node(const Model &model, const std::vector<uint8_t> &flash,
                         bool accounting) {
  Simulation sim;
  NodeConfig config;
  config.accounting = accounting;
  config.watchdog_cycles = 0;
  Node &node = sim.add_node(model, config);
  node.boot(flash);
  RunResult r = sim.run();
  return {r.wall_seconds,      node.cpu().instructions(),
          node.cpu().cycles(), node.exit_code(),
          r.end_time,          node.state() == NodeState::Halted};
}

// The same image in a bare Unicorn engine: memories and the device range as
// plain RAM, stopping where the firmware would exit.
RawRunResult run_raw(const Image &image, const Model &model) {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<RawRunRegion> regions;
  for (const MemoryRegion &m : model.memories) {
    buffers.emplace_back(m.size, 0);
    for (const ImageSegment &s : image.segments)
      if (s.address - m.base < m.size)
        std::memcpy(buffers.back().data() + (s.address - m.base), s.data.data(),
                    s.data.size());
    regions.push_back({m.base, m.size, buffers.back().data()});
  }
  regions.push_back({NICEMU_MMIO_BASE, 0x10000, nullptr});
  const ImageSymbol *exit = image.find_symbol("nicemu_exit");
  if (!exit)
    throw Error("bench: the image has no symbol 'nicemu_exit'");
  return raw_unicorn_run(regions, image.entry, exit->address);
}

CpuKernelFigures measure_kernel(const std::string &name, Image image,
                                const Model &model, uint32_t kernel,
                                uint32_t iterations, int repeats) {
  patch_word(image, "bench_kernel", kernel);
  patch_word(image, "bench_iterations", iterations);
  std::vector<uint8_t> flash = as_flash(image, model);
  CpuKernelFigures f;
  f.name = name;
  f.wall_accounting = f.wall_no_accounting = f.wall_raw = 1e30;
  bool agree = true;
  for (int i = 0; i < repeats; ++i) {
    AccountedRun a = run_on_node(model, flash, true);
    AccountedRun b = run_on_node(model, flash, false);
    RawRunResult c = run_raw(image, model);
    if (!a.halted || !b.halted || !c.ok)
      throw Error("bench: the " + name + " kernel did not run to its end" +
                  (c.ok ? "" : " (raw Unicorn: " + c.error + ")"));
    agree = agree && a.exit_code == b.exit_code && a.exit_code == c.a0;
    f.wall_accounting = std::min(f.wall_accounting, a.wall);
    f.wall_no_accounting = std::min(f.wall_no_accounting, b.wall);
    f.wall_raw = std::min(f.wall_raw, c.wall_seconds);
    f.instructions = a.instructions;
    f.cycles = a.cycles;
    f.exit_code = a.exit_code;
  }
  f.results_agree = agree;
  return f;
}

long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// What one more node costs in resident memory: engines, memories touched,
// cost caches; the flash contents are shared, as in a cluster.
double node_resident_kib(const Image &sleeper, const Model &model, int nodes) {
  auto flash =
      std::make_shared<const std::vector<uint8_t>>(as_flash(sleeper, model));
  long before = resident_kib();
  Simulation sim;
  for (int i = 0; i < nodes; ++i) {
    NodeConfig config;
    config.node = uint32_t(i);
    config.nodes = uint32_t(nodes);
    sim.add_node(model, config).boot(flash);
  }
  sim.run(2'000'000'000); // 2 ms
  return double(resident_kib() - before) / nodes;
}

Image load_image(const std::string &dir, const std::string &name) {
  std::string path = dir + "/" + name;
  if (!std::filesystem::exists(path))
    throw Error("bench: " + path +
                " not found (build the firmware, or give --firmware-dir)");
  return decode_image(read_file_bytes(path));
}

} // namespace

CpuBenchFigures run_cpu_bench(const CpuBenchOptions &o) {
  Image bench = load_image(o.firmware_dir, "bench_cpu.img");
  Model model = load_model(bench.model);
  CpuBenchFigures figures;
  figures.model = model.name;
  figures.kernels.push_back(measure_kernel("checksum", bench, model, 0,
                                           o.checksum_iterations, o.repeats));
  figures.kernels.push_back(measure_kernel("checksum32", bench, model, 2,
                                           o.checksum_iterations, o.repeats));
  figures.kernels.push_back(
      measure_kernel("calls", bench, model, 1, o.call_iterations, o.repeats));

  Image sleeper = load_image(o.firmware_dir, "sleep_1s.img");
  figures.sleep_wall = 1e30;
  for (int i = 0; i < o.repeats; ++i) {
    AccountedRun s = run_on_node(model, as_flash(sleeper, model), true);
    if (!s.halted)
      throw Error("bench: sleep_1s did not halt");
    figures.sleep_wall = std::min(figures.sleep_wall, s.wall);
    figures.sleep_virtual = s.virtual_time;
    figures.sleep_instructions = s.instructions;
  }
  figures.memory_nodes = 64;
  figures.node_resident_kib =
      node_resident_kib(sleeper, model, figures.memory_nodes);
  return figures;
}

} // namespace nicemu
