// The narrow device interface: a device is its register bank (the
// registers its contract header declares, and what each one does), plus
// whatever callbacks its card or the fabric call (DMA done, packet
// arrived). The bus checks every access against the bank's layout, so a
// device only implements behaviour.
#pragma once

#include "devices/register_bank.hpp"
#include "sim/scheduler.hpp"
#include "sim/time.hpp"

#include <cstdint>
#include <string>

namespace nicemu {

class Fabric;
class StateReader;
class StateWriter;
class HostMemory;
class RunEvents;
struct Model;

// What a device may ask of the node it sits in.
class DeviceHost {
public:
  virtual ~DeviceHost() = default;
  // Exact cycle of the access being served, or of the event being run.
  virtual uint64_t now_cycle() const = 0;
  // The core's clock (devices with a clock of their own: device_clock.hpp).
  virtual const ClockDomain &clock() const = 0;
  virtual Scheduler &scheduler() = 0;
  virtual void raise_irq(uint32_t lines) = 0;
  virtual void irq_state_changed() = 0;
  virtual void halt(uint32_t exit_code) = 0;
  virtual void console_byte(uint8_t byte) = 0;
  virtual uint64_t watchdog_period() const = 0;
  virtual void set_watchdog_period(uint64_t cycles) = 0;
  virtual void kick_watchdog() = 0;

  // For the DMA engines.
  virtual uint32_t node_id() const = 0;
  virtual const Model &model() const = 0;
  // Exact time of the access being served, or of the event being run.
  virtual Time now() const = 0;
  // Card memory (not device registers); false if the range is not inside
  // one memory.
  virtual bool card_range(uint32_t addr, uint32_t len) const = 0;
  virtual bool card_read(uint32_t addr, void *out, uint32_t len) = 0;
  virtual bool card_write(uint32_t addr, const void *in, uint32_t len) = 0;
  virtual HostMemory *host_memory() = 0; // null: no host attached
  virtual Fabric *fabric() = 0;          // null: no network attached
  // Observers of the run (traces, captures); null: nobody observes.
  virtual RunEvents *events() = 0;
  // The earliest virtual time at which the core may still touch card
  // memory on its own: now while it runs; while it sleeps, when its timer
  // fires. The card's other devices may wake it too: whoever asks must
  // account for those. Conservative by default.
  virtual Time core_may_act_from() const { return now(); }
};

class Device : public EventOwner {
public:
  explicit Device(const RegisterLayout &layout) : registers_(layout) {}
  ~Device() override;
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  RegisterBank &registers() { return registers_; }
  const RegisterBank &registers() const { return registers_; }

  // The earliest virtual time at which this device could write host memory,
  // asked at `now` for every write from then on (the host library answers a
  // host's polls of its own memory by itself until then: HostAgent, "host
  // leases"), when the card's core can start nothing before `first_start`
  // (>= now; later than now when the core sleeps and nothing can wake it
  // sooner: Node::earliest_host_write). Only devices that write host memory
  // override it; a device that writes before the time it promised stops the
  // run with an internal error (HostAgent::write), so a missing override
  // cannot go unnoticed.
  virtual Time earliest_host_write(Time /*now*/, Time /*first_start*/) const {
    return kTimeNever;
  }

  // Checkpoint files (docs/replay.md): everything of the device that
  // changes while a run goes, written and read back in the same order into
  // a device built afresh from the same model. Its pending events are made
  // again by restore_event, after load_state. A device that has not learnt
  // this refuses, naming itself: a checkpoint never leaves a part behind.
  virtual void save_state(StateWriter &out) const;
  virtual void load_state(StateReader &in);
  void restore_event(Scheduler &scheduler, const SavedEvent &e) override;
  // The node gives each device its key among the scheduler's event owners.
  void own_events(Scheduler &scheduler, uint64_t key);

protected:
  // The tag of an event the device can make again from `kind`, `a`, `b`.
  EventTag event_tag(uint32_t kind, uint64_t a = 0, uint64_t b = 0) const {
    return {event_owner_, kind, a, b};
  }
  // "the HDMA device", for messages.
  std::string what() const;

private:
  RegisterBank registers_;
  Scheduler *scheduler_ = nullptr; // where it is an event owner
  uint64_t event_owner_ = 0;
};

} // namespace nicemu
