// One NIC: its core, memories, flash and devices, on the shared scheduler.
//
// The node is the bus: device accesses from the core arrive here, are
// checked against the register table, and go to the device that owns the
// window. It also owns the core's life cycle: run a slice, sleep until an
// interrupt, take interrupts at block boundaries, halt, fault, watchdog.
#pragma once

#include "boards/board.hpp"
#include "core/cpu.hpp"
#include "devices/device.hpp"
#include "devices/irq.hpp"
#include "devices/sys.hpp"
#include "mem/zeroed_buffer.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "sim/scheduler.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nicemu {

class StateReader;
class StateWriter;

enum class NodeState { Reset, Running, Sleeping, Halted, Faulted };
// "reset", "running", ... for summaries and debuggers.
const char *state_name(NodeState state);

struct NodeConfig {
  uint32_t node = 0;
  uint32_t nodes = 1;
  std::optional<uint64_t> watchdog_cycles; // overrides the model's default
  bool accounting = true;
  Fabric *fabric = nullptr;          // the network, if any
  HostMemory *host_memory = nullptr; // the host's registered memory, if any
  RunEvents *events = nullptr;       // observers of the run, if any
  // The board that assembles the card; null: the one the model names
  // (checked_board). Tests pass boards of their own. Either way the model
  // is checked against the board.
  const Board *board = nullptr;
  // Receives each complete console line of the firmware (without '\n').
  std::function<void(uint32_t node, const std::string &line)> console;
};

class Node final : public CpuBus, public DeviceHost, private CardAssembly {
public:
  Node(const Model &model, Scheduler &scheduler, NodeConfig config);
  ~Node() override;

  // Boot ROM: loads and verifies the image in `flash`, then releases reset.
  // Nodes booting the same flash contents may share one copy of it (the
  // flash window is read-only).
  void boot(std::shared_ptr<const std::vector<uint8_t>> flash);
  void boot(std::span<const uint8_t> flash);
  // The debugger's `monitor reset`: boots again from the same flash, between
  // slices, while the node runs or sleeps. Memories are cleared and loaded
  // again, registers cleared, the devices replaced by new ones at their
  // reset values (the timer's pending event cancelled). Virtual time does
  // not go back: the core's cycle counter goes on from the present (the
  // time since a sleep counts as slept cycles). Only for a node without a
  // network or a host (their pending traffic cannot be undone). Throws
  // nicemu::Error saying why it cannot.
  void reset();

  // Runs the core until its time reaches `horizon` (at a block boundary) or
  // it sleeps, halts or faults. Takes a due interrupt first.
  void run_until(Time horizon);
  Time time() const; // the core's own time (>= scheduler time while running)

  NodeState state() const { return state_; }
  // Told of every change of state, after it (the simulation keeps its set
  // of running nodes with it).
  void set_state_observer(std::function<void(NodeState was, NodeState now)> f) {
    state_observer_ = std::move(f);
  }
  // Told when an interrupt becomes due on the running core: it is taken
  // when the core's next slice starts, even an empty one (the simulation
  // gives the core that slice in the next round).
  void set_interrupt_observer(std::function<void()> f) {
    interrupt_observer_ = std::move(f);
  }
  bool finished() const {
    return state_ == NodeState::Halted || state_ == NodeState::Faulted;
  }
  uint32_t id() const { return config_.node; }
  uint32_t exit_code() const { return exit_code_; }
  const Fault &fault() const { return fault_; }
  // Stops the node with a fault found outside the core (e.g. deadlock).
  void fail(Fault f);
  const Image &image() const { return image_; }
  const Model &model() const override { return model_; }
  const Board &board() const { return board_; }
  Cpu &cpu() { return *cpu_; }
  const Cpu &cpu() const { return *cpu_; }
  uint64_t sleep_cycles() const { return sleep_cycles_; }
  // Installs (or with nullptr removes) a profiler of this node's core.
  void set_block_observer(BlockObserver *observer) {
    observer_ = observer;
    cpu_->set_block_observer(observer);
  }
  BlockObserver *block_observer() const { return observer_; }
  void flush_console();
  // While held, what the core tells the world (console lines, its fault's
  // report) waits until release_output: the slices of a round that run at
  // once on several threads pass it on at the round's end, in node order,
  // as slices run one after another would have.
  void hold_output(bool on) { hold_output_ = on; }
  void release_output();
  // The debugger reads or writes a device register (`size` bytes, at most
  // 4; a 64-bit register in halves), checked like the
  // core's accesses, with the register's side effects, but no wait states
  // and no watchdog progress. False (with `why`) if refused.
  bool debug_mmio(uint32_t addr, bool write, uint32_t &value, std::string &why,
                  unsigned size = 4);

  // CpuBus
  bool mmio_read(uint32_t addr, unsigned size, uint32_t &value,
                 std::string &why) override;
  bool mmio_write(uint32_t addr, unsigned size, uint32_t value,
                  std::string &why) override;
  bool read_is_stable(uint32_t addr) const override;

  // DeviceHost
  uint64_t now_cycle() const override;
  const ClockDomain &clock() const override { return clock_; }
  Scheduler &scheduler() override { return scheduler_; }
  void raise_irq(uint32_t lines) override { irq_->raise(lines); }
  void irq_state_changed() override;
  void halt(uint32_t exit_code) override;
  void console_byte(uint8_t byte) override;
  uint64_t watchdog_period() const override { return watchdog_period_; }
  void set_watchdog_period(uint64_t cycles) override;
  void kick_watchdog() override;
  uint32_t node_id() const override { return config_.node; }
  Time now() const override;
  bool card_range(uint32_t addr, uint32_t len) const override;
  bool card_read(uint32_t addr, void *out, uint32_t len) override;
  bool card_write(uint32_t addr, const void *in, uint32_t len) override;
  HostMemory *host_memory() override { return config_.host_memory; }
  Fabric *fabric() override { return config_.fabric; }
  RunEvents *events() override { return config_.events; }
  Time core_may_act_from() const override;
  // The earliest time any of the card's devices could write host memory,
  // asked at `now` (Device::earliest_host_write).
  Time earliest_host_write(Time now) const {
    return earliest_host_write(now, now);
  }
  // The same, when the core can start nothing before `first_start`.
  Time earliest_host_write(Time now, Time first_start) const;
  // Whether the core was asleep at `now` (and still is): went to sleep at
  // or before it. The same in every run, however the slices fell.
  bool asleep_since(Time now) const {
    return state_ == NodeState::Sleeping && time() <= now;
  }
  // The device whose window starts at `base` (NICEMU_<DEV>_BASE), or null.
  Device *device_at(uint32_t base) const;
  // The windows host programs reach (mapped by the board).
  HostPort &host_port() override { return host_port_; }

  // Checkpoint files (docs/replay.md): the core, the memories that can be
  // written, the devices and where the node stands, between two rounds of
  // slices. load_state takes them into a node booted from the same flash;
  // the devices' pending events come back with the scheduler's load.
  void save_state(StateWriter &out) const;
  void load_state(StateReader &in);

private:
  struct Memory {
    MemoryRegion region;
    ZeroedBuffer<uint8_t> bytes;
  };
  bool access(uint32_t addr, unsigned size, bool write, uint64_t &value,
              std::string &why);
  bool cpu_access(uint32_t addr, unsigned size, bool write, uint64_t &value,
                  std::string &why);
  void write_card(uint32_t addr, const uint8_t *data, uint32_t len);
  void add_devices();
  // CardAssembly
  DeviceHost &device_host() override { return *this; }
  void install(uint32_t base, std::unique_ptr<Device> device,
               uint32_t caps) override;
  const Memory *memory_for(uint32_t addr, uint32_t len) const;
  void take_interrupt();
  void check_watchdog();
  void set_state(NodeState state);
  uint64_t watchdog_deadline() const;

  const Model &model_;
  const Board &board_;
  Scheduler &scheduler_;
  NodeConfig config_;
  ClockDomain clock_;
  std::vector<Memory> memories_;
  std::shared_ptr<const std::vector<uint8_t>> flash_;
  std::unique_ptr<Cpu> cpu_;
  // The bus: the device of each 4 KiB page of the MMIO range, and where
  // its window starts.
  struct Window {
    Device *device = nullptr;
    uint32_t base = 0;
  };
  std::vector<Window> pages_;
  std::vector<std::unique_ptr<Device>> devices_;
  HostPort host_port_;
  // Devices replaced by reset(): kept, as events may still refer to them.
  std::vector<std::unique_ptr<Device>> retired_devices_;
  uint32_t caps_ = 0;
  IrqController *irq_ = nullptr;
  NodeState state_ = NodeState::Reset;
  std::function<void(NodeState, NodeState)> state_observer_;
  std::function<void()> interrupt_observer_;
  Image image_;
  uint32_t exit_code_ = 0;
  Fault fault_;
  bool in_cpu_access_ = false;
  uint64_t watchdog_period_ = 0;
  uint64_t last_progress_ = 0; // cycle of the last device access or wake
  uint64_t sleep_cycles_ = 0;  // cycles skipped while asleep
  BlockObserver *observer_ = nullptr;
  std::string console_line_;
  bool hold_output_ = false;
  std::vector<std::function<void()>> held_output_;
};

} // namespace nicemu
