#include "node/node.hpp"

#include "devices/console.hpp"
#include "devices/host_dma.hpp"
#include "devices/network.hpp"
#include "devices/registers.hpp"
#include "devices/timer.hpp"
#include "mem/boot_rom.hpp"
#include "nicemu/error.hpp"
#include "nicemu/regs.h"
#include "observe/run_events.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <utility>

namespace nicemu {

namespace {

constexpr uint32_t kMmioSize = 0x01000000; // 0x1F000000-0x1FFFFFFF

const Board &checked(const Model &model, const Board &board) {
  check_model_against(model, board);
  return board;
}

uint32_t round_up_4k(uint32_t n) {
  return (n + 0xFFF) & ~0xFFFu;
}

} // namespace

Node::Node(const Model &model, Scheduler &scheduler, NodeConfig config)
    : model_(model), board_(config.board ? checked(model, *config.board)
                                         : checked_board(model)),
      scheduler_(scheduler), config_(std::move(config)), clock_(model.clock_hz),
      watchdog_period_(
          config_.watchdog_cycles.value_or(model.watchdog_cycles)) {
  cpu_ = make_unicorn_cpu(*this, CpuOptions{model.cycles, config_.accounting});
  // The code memory first: the core keeps its fast cost cache for it.
  std::vector<MemoryRegion> regions = model.memories;
  std::stable_partition(regions.begin(), regions.end(),
                        [&](const MemoryRegion &r) {
                          return r.base == model.code_region().base;
                        });
  memories_.reserve(regions.size());
  for (const MemoryRegion &r : regions) {
    memories_.push_back({r, ZeroedBuffer<uint8_t>(r.size)});
    cpu_->map_ram(r.base, r.size, memories_.back().bytes.data(), r.writable);
  }
  cpu_->map_mmio(NICEMU_MMIO_BASE, kMmioSize);

  add_devices();
}

Node::~Node() = default;

// The core's own devices, and those of the board the model names.
void Node::add_devices() {
  caps_ = NICEMU_CAP_TIMER | NICEMU_CAP_IRQ | NICEMU_CAP_WATCHDOG;
  board_.assemble(*this, model_);
  NodeIdentity id{config_.node,
                  config_.nodes,
                  model_.id,
                  uint32_t(model_.clock_hz),
                  model_.code_region().size,
                  caps_};
  install(NICEMU_SYS_BASE, std::make_unique<SysDevice>(*this, id), 0);
  install(NICEMU_CONSOLE_BASE, std::make_unique<ConsoleDevice>(*this), 0);
  install(NICEMU_TIMER_BASE, std::make_unique<TimerDevice>(*this), 0);
  auto irq = std::make_unique<IrqController>(*this);
  irq_ = irq.get();
  install(NICEMU_IRQ_BASE, std::move(irq), 0);
}

void Node::install(uint32_t base, std::unique_ptr<Device> device,
                   uint32_t caps) {
  assert(device && base >= NICEMU_MMIO_BASE &&
         (base - NICEMU_MMIO_BASE) % NICEMU_DEVICE_WINDOW == 0);
  assert(device->registers().complete() && "a register has no behaviour");
  uint32_t first = (base - NICEMU_MMIO_BASE) / NICEMU_DEVICE_WINDOW;
  uint32_t pages =
      (device->registers().layout().window_bytes() + NICEMU_DEVICE_WINDOW - 1) /
      NICEMU_DEVICE_WINDOW;
  if (first + pages > pages_.size())
    pages_.resize(first + pages);
  for (uint32_t p = first; p < first + pages; ++p) {
    assert(!pages_[p].device && "two devices in one window");
    pages_[p] = Window{device.get(), base};
  }
  device->own_events(scheduler_, device_event_owner(config_.node, first));
  devices_.push_back(std::move(device));
  caps_ |= caps;
}

Device *Node::device_at(uint32_t base) const {
  uint32_t page = (base - NICEMU_MMIO_BASE) / NICEMU_DEVICE_WINDOW;
  return page < pages_.size() ? pages_[page].device : nullptr;
}

const Node::Memory *Node::memory_for(uint32_t addr, uint32_t len) const {
  for (const Memory &m : memories_)
    if (addr - m.region.base < m.region.size &&
        len <= m.region.base + m.region.size - addr)
      return &m;
  return nullptr;
}

bool Node::card_range(uint32_t addr, uint32_t len) const {
  return memory_for(addr, len) != nullptr;
}

bool Node::card_read(uint32_t addr, void *out, uint32_t len) {
  const Memory *m = memory_for(addr, len);
  if (!m)
    return false;
  std::memcpy(out, m->bytes.data() + (addr - m->region.base), len);
  return true;
}

// Behind the core's back (Unicorn sees only its own stores): the core drops
// code it translated from these bytes, if any.
bool Node::card_write(uint32_t addr, const void *in, uint32_t len) {
  Memory *m = const_cast<Memory *>(memory_for(addr, len));
  if (!m)
    return false;
  std::memcpy(m->bytes.data() + (addr - m->region.base), in, len);
  cpu_->code_written(addr, len);
  return true;
}

Time Node::now() const {
  return in_cpu_access_ ? clock_.time_of(cpu_->access_cycle())
                        : scheduler_.now();
}

void Node::write_card(uint32_t addr, const uint8_t *data, uint32_t len) {
  Memory *m = const_cast<Memory *>(memory_for(addr, len));
  if (!m)
    throw Error("boot: segment at " + std::to_string(addr) + " outside memory");
  uint8_t *dst = m->bytes.data() + (addr - m->region.base);
  if (data)
    std::memcpy(dst, data, len);
  else
    std::memset(dst, 0, len);
}

void Node::boot(std::span<const uint8_t> flash) {
  boot(
      std::make_shared<const std::vector<uint8_t>>(flash.begin(), flash.end()));
}

void Node::boot(std::shared_ptr<const std::vector<uint8_t>> flash) {
  if (flash_)
    throw Error("boot: this node has already booted");
  image_ = boot_from_flash(*flash, model_,
                           [this](uint32_t a, const uint8_t *d, uint32_t n) {
                             write_card(a, d, n);
                           });
  // The flash window: the flash contents, read-only, in whole pages.
  if (flash->size() != round_up_4k(uint32_t(flash->size()))) {
    auto padded = std::make_shared<std::vector<uint8_t>>(*flash);
    padded->resize(round_up_4k(uint32_t(flash->size())), 0xFF);
    flash = std::move(padded);
  }
  flash_ = flash;
  cpu_->map_ram(NICEMU_FLASH_WINDOW, uint32_t(flash_->size()),
                const_cast<uint8_t *>(flash_->data()), false);
  cpu_->flush_code_cache();
  cpu_->set_pc(image_.entry);
  set_state(NodeState::Running);
  last_progress_ = cpu_->cycles();
}

void Node::reset() {
  if (!flash_)
    throw Error("reset: the node has not booted");
  if (config_.fabric || config_.host_memory)
    throw Error("reset: only a node without a network or a host can be "
                "reset (restart nicemu run)");
  if (finished())
    throw Error(std::string("reset: the node has ") + state_name(state_) +
                " (restart nicemu run)");
  flush_console();
  // Disarm the timer: its event would fire into the new devices.
  if (auto *timer = dynamic_cast<TimerDevice *>(device_at(NICEMU_TIMER_BASE)))
    timer->stop();
  for (auto &d : devices_)
    retired_devices_.push_back(std::move(d));
  devices_.clear();
  pages_.clear();
  host_port_.clear();
  irq_ = nullptr;
  add_devices();
  for (Memory &m : memories_)
    std::memset(m.bytes.data(), 0, m.bytes.size());
  image_ = boot_from_flash(*flash_, model_,
                           [this](uint32_t a, const uint8_t *d, uint32_t n) {
                             write_card(a, d, n);
                           });
  cpu_->flush_code_cache();
  for (unsigned r = 1; r < 34; ++r)
    cpu_->write_register(r, 0);
  cpu_->set_pc(image_.entry);
  // Virtual time goes on: a sleeping core catches up with the present.
  uint64_t now = clock_.cycle_at_or_after(scheduler_.now());
  if (now > cpu_->cycles()) {
    sleep_cycles_ += now - cpu_->cycles();
    cpu_->add_cycles(now - cpu_->cycles());
  }
  watchdog_period_ = config_.watchdog_cycles.value_or(model_.watchdog_cycles);
  exit_code_ = 0;
  set_state(NodeState::Running);
  last_progress_ = cpu_->cycles();
}

void Node::set_state(NodeState state) {
  NodeState was = std::exchange(state_, state);
  if (was != state && state_observer_)
    state_observer_(was, state);
}

Time Node::earliest_host_write(Time now, Time first_start) const {
  Time t = kTimeNever;
  for (const auto &d : devices_)
    t = std::min(t, d->earliest_host_write(now, first_start));
  return t;
}

Time Node::core_may_act_from() const {
  switch (state_) {
  case NodeState::Halted:
  case NodeState::Faulted:
    return kTimeNever;
  case NodeState::Sleeping: {
    auto *timer = dynamic_cast<TimerDevice *>(device_at(NICEMU_TIMER_BASE));
    std::optional<Time> fires = timer ? timer->fires_at() : std::nullopt;
    return fires ? std::max(*fires, now()) : kTimeNever;
  }
  default:
    return now();
  }
}

Time Node::time() const {
  return clock_.time_of(cpu_->cycles());
}

uint64_t Node::watchdog_deadline() const {
  return watchdog_period_ ? last_progress_ + watchdog_period_ : UINT64_MAX;
}

void Node::run_until(Time horizon) {
  if (state_ != NodeState::Running)
    return;
  if (irq_->should_interrupt())
    take_interrupt();
  if (state_ != NodeState::Running)
    return;
  uint64_t limit =
      horizon == kTimeNever ? UINT64_MAX : clock_.cycle_at_or_after(horizon);
  StopReason why = cpu_->run(std::min(limit, watchdog_deadline()));
  switch (why) {
  case StopReason::Limit:
    check_watchdog();
    break;
  case StopReason::Sleep:
    set_state(NodeState::Sleeping);
    last_progress_ = cpu_->cycles();
    irq_state_changed(); // an enabled line may already be pending
    break;
  case StopReason::Halt:
    set_state(NodeState::Halted);
    flush_console();
    break;
  case StopReason::Fault:
    fail(cpu_->fault());
    break;
  }
}

void Node::check_watchdog() {
  if (watchdog_period_ && cpu_->cycles() >= watchdog_deadline()) {
    Fault f;
    f.kind = FaultKind::Watchdog;
    f.pc = cpu_->pc();
    f.detail = "no device access, sleep or watchdog kick for " +
               std::to_string(watchdog_period_) +
               " cycles (the firmware is stuck in a loop?)";
    fail(f);
  }
}

void Node::fail(Fault f) {
  fault_ = std::move(f);
  set_state(NodeState::Faulted);
  flush_console();
  if (config_.events) {
    char pc[16];
    std::snprintf(pc, sizeof pc, "0x%08x", fault_.pc);
    std::string what = std::string(fault_name(fault_.kind)) + " at pc " + pc;
    if (!fault_.detail.empty())
      what += ": " + fault_.detail;
    if (hold_output_)
      held_output_.push_back([this, at = time(), what] {
        config_.events->fault(config_.node, at, what);
      });
    else
      config_.events->fault(config_.node, time(), what);
  }
}

void Node::take_interrupt() {
  if (irq_->vector() == 0) {
    Fault f;
    f.kind = FaultKind::BusError;
    f.pc = cpu_->pc();
    f.detail = "interrupt taken while IRQ_VECTOR is 0 (no interrupt stub)";
    fail(f);
    return;
  }
  irq_->enter(cpu_->pc());
  if (observer_)
    observer_->interrupt_taken(cpu_->pc(), cpu_->cycles());
  cpu_->set_pc(irq_->vector());
  cpu_->add_cycles(model_.cycles.interrupt_entry);
}

void Node::irq_state_changed() {
  if (state_ == NodeState::Sleeping && irq_->active()) {
    uint64_t now =
        std::max(cpu_->cycles(), clock_.cycle_at_or_after(scheduler_.now()));
    sleep_cycles_ += now - cpu_->cycles();
    if (observer_)
      observer_->slept(now - cpu_->cycles() + model_.cycles.wake);
    cpu_->add_cycles(now - cpu_->cycles() + model_.cycles.wake);
    last_progress_ = cpu_->cycles();
    set_state(NodeState::Running);
    if (irq_->should_interrupt() && interrupt_observer_)
      interrupt_observer_();
  } else if (state_ == NodeState::Running && irq_->should_interrupt()) {
    cpu_->request_stop(); // taken at the next block boundary
    if (interrupt_observer_)
      interrupt_observer_();
  }
}

uint64_t Node::now_cycle() const {
  if (in_cpu_access_)
    return cpu_->access_cycle();
  return clock_.cycle_at_or_after(scheduler_.now());
}

// The bus: the device whose window holds `addr` (one lookup), then its
// register bank, which checks the access and runs the register's behaviour.
// `write`: the access is a write of `value`; else `value` receives the read.
bool Node::access(uint32_t addr, unsigned size, bool write, uint64_t &value,
                  std::string &why) {
  uint32_t page = (addr - NICEMU_MMIO_BASE) / NICEMU_DEVICE_WINDOW;
  const char *verb = write ? "write to " : "read from ";
  const Window *w =
      page < pages_.size() && pages_[page].device ? &pages_[page] : nullptr;
  if (!w) {
    const char *name = device_name(page);
    why = std::string(verb) + describe_mmio_address(addr) +
          (name ? ": the " + model_.name + " model has no " + name + " device"
                : std::string(": no device at this address"));
    return false;
  }
  uint32_t offset = addr - w->base;
  RegisterBank &bank = w->device->registers();
  bool done = write ? bank.write(offset, size, value, why)
                    : bank.read(offset, size, value, why);
  if (!done)
    why = verb + describe_register(bank.layout(), offset) + ": " + why;
  return done;
}

bool Node::cpu_access(uint32_t addr, unsigned size, bool write, uint64_t &value,
                      std::string &why) {
  in_cpu_access_ = true;
  uint64_t progress = last_progress_;
  last_progress_ = cpu_->access_cycle(); // a device access is progress
  bool done = access(addr, size, write, value, why);
  if (!done)
    last_progress_ = progress;
  in_cpu_access_ = false;
  return done;
}

bool Node::mmio_read(uint32_t addr, unsigned size, uint32_t &value,
                     std::string &why) {
  uint64_t v = 0;
  bool done = cpu_access(addr, size, false, v, why);
  value = uint32_t(v);
  return done;
}

bool Node::mmio_write(uint32_t addr, unsigned size, uint32_t value,
                      std::string &why) {
  uint64_t v = value;
  return cpu_access(addr, size, true, v, why);
}

bool Node::read_is_stable(uint32_t addr) const {
  uint32_t page = (addr - NICEMU_MMIO_BASE) / NICEMU_DEVICE_WINDOW;
  if (page >= pages_.size() || !pages_[page].device)
    return false;
  return pages_[page].device->registers().read_is_stable(addr -
                                                         pages_[page].base);
}

bool Node::debug_mmio(uint32_t addr, bool write, uint32_t &value,
                      std::string &why, unsigned size) {
  uint64_t v = value;
  bool done = access(addr, size, write, v, why);
  value = uint32_t(v);
  return done;
}

void Node::halt(uint32_t exit_code) {
  exit_code_ = exit_code;
  cpu_->halt();
}

void Node::console_byte(uint8_t byte) {
  if (byte == '\n') {
    flush_console();
    return;
  }
  console_line_.push_back(char(byte));
  if (console_line_.size() >= 4096) // a runaway line still gets out
    flush_console();
}

void Node::flush_console() {
  if (console_line_.empty())
    return;
  // In a device access: its cycle; at a halt or fault: the core's time.
  Time at = in_cpu_access_ ? now() : time();
  auto tell = [this, at](const std::string &line) {
    if (config_.console)
      config_.console(config_.node, line);
    if (config_.events)
      config_.events->console_line(config_.node, at, line);
  };
  if (hold_output_)
    held_output_.push_back(
        [tell, line = std::move(console_line_)] { tell(line); });
  else
    tell(console_line_);
  console_line_.clear();
}

void Node::release_output() {
  for (auto &tell : held_output_)
    tell();
  held_output_.clear();
}

// A shorter period takes effect at once: the running slice ends no later
// than the new deadline, so whether the watchdog bites does not depend on
// how the run was sliced.
void Node::set_watchdog_period(uint64_t cycles) {
  watchdog_period_ = cycles;
  kick_watchdog();
  if (in_cpu_access_)
    cpu_->limit_slice(watchdog_deadline());
}

void Node::kick_watchdog() {
  last_progress_ = in_cpu_access_ ? cpu_->access_cycle() : cpu_->cycles();
}

const char *state_name(NodeState s) {
  switch (s) {
  case NodeState::Reset:
    return "reset";
  case NodeState::Running:
    return "running";
  case NodeState::Sleeping:
    return "sleeping";
  case NodeState::Halted:
    return "halted";
  case NodeState::Faulted:
    return "faulted";
  }
  return "?";
}

} // namespace nicemu
