// Fuzz target: the GDB remote stub fed a byte stream as a debugger (or
// anyone reaching its port) could send it: packets, acks, interrupts
// (0x03), with connections opened and closed and the target stopping in
// between. Here the target is two cores' registers and 8 KB of memory
// each, so every reply path is reached; the stub must never crash, and
// its replies are bounded.
//
// Control bytes of the input (outside what is fed): 0xF0 disconnects,
// 0xF1 connects, 0xF2 stops the target if it runs.
#include "gdb/stub.hpp"
#include "gdb/target.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

using namespace nicemu::gdb;

namespace {

class MemoryTarget final : public Target {
public:
  static constexpr uint32_t kBase = 0x1000, kSize = 0x2000;
  std::map<ThreadId, std::array<uint32_t, 38>> regs{{1, {}}, {2, {}}};
  std::map<ThreadId, std::vector<uint8_t>> mem{
      {1, std::vector<uint8_t>(kSize)}, {2, std::vector<uint8_t>(kSize)}};
  std::map<std::tuple<int, uint32_t, uint32_t>, int> points;
  bool resumed = false;

  std::vector<ThreadId> threads() override { return {1, 2}; }
  std::string thread_name(ThreadId t) override {
    return "node" + std::to_string(t - 1);
  }
  std::string thread_extra(ThreadId) override { return "running"; }
  bool read_register(ThreadId t, unsigned r, uint32_t &v) override {
    if (!regs.count(t) || r >= 38)
      return false;
    v = regs[t][r];
    return true;
  }
  bool write_register(ThreadId t, unsigned r, uint32_t v) override {
    if (!regs.count(t) || r >= 38)
      return false;
    regs[t][r] = v;
    return true;
  }
  bool read_memory(ThreadId t, uint32_t a, std::span<uint8_t> out) override {
    if (!mem.count(t) || a < kBase || uint64_t(a) - kBase + out.size() > kSize)
      return false;
    std::memcpy(out.data(), &mem[t][a - kBase], out.size());
    return true;
  }
  bool write_memory(ThreadId t, uint32_t a,
                    std::span<const uint8_t> d) override {
    if (!mem.count(t) || a < kBase || uint64_t(a) - kBase + d.size() > kSize)
      return false;
    std::memcpy(&mem[t][a - kBase], d.data(), d.size());
    return true;
  }
  PointResult insert_breakpoint(BreakKind k, uint32_t a) override {
    return add(int(k), a, 0);
  }
  PointResult remove_breakpoint(BreakKind k, uint32_t a) override {
    return remove(int(k), a, 0);
  }
  PointResult insert_watchpoint(WatchKind k, uint32_t a, uint32_t l) override {
    return add(2 + int(k), a, l);
  }
  PointResult remove_watchpoint(WatchKind k, uint32_t a, uint32_t l) override {
    return remove(2 + int(k), a, l);
  }
  void resume(const ResumePlan &) override { resumed = true; }
  void interrupt() override {}
  void detach() override { resumed = true; }
  void kill() override { points.clear(); } // the run ends with them
  bool monitor(const std::string &command, std::string &output) override {
    output = "monitor: " + command.substr(0, 64) + "\n";
    return command == "nodes";
  }

private:
  // The stub's promise (target.hpp): one insert per distinct point, and
  // removes only of inserted ones. Breaking it is a bug the fuzzer reports.
  PointResult add(int kind, uint32_t a, uint32_t l) {
    if (++points[{kind, a, l}] > 1)
      __builtin_trap();
    return PointResult::Done;
  }
  PointResult remove(int kind, uint32_t a, uint32_t l) {
    auto it = points.find({kind, a, l});
    if (it == points.end())
      __builtin_trap();
    points.erase(it);
    return PointResult::Done;
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MemoryTarget target;
  size_t sent = 0;
  Stub stub(target, [&](std::string_view bytes) {
    sent += bytes.size();
    if (sent > (size_t(64) << 20))
      __builtin_trap(); // replies out of all proportion to the input
  });
  stub.connected();
  size_t start = 0;
  auto flush = [&](size_t end) {
    if (end > start)
      stub.feed({reinterpret_cast<const char *>(data + start), end - start});
  };
  for (size_t i = 0; i < size; ++i) {
    uint8_t b = data[i];
    if (b < 0xF0 || b > 0xF2)
      continue;
    flush(i);
    start = i + 1;
    if (b == 0xF0)
      stub.disconnected();
    else if (b == 0xF1)
      stub.connected();
    else if (target.resumed) {
      target.resumed = false;
      stub.on_stop(StopEvent::stepped(1 + i % 2));
    }
  }
  flush(size);
  stub.disconnected();
  return 0;
}
