#include "devices/device.hpp"

#include "nicemu/error.hpp"
#include "sim/state_archive.hpp"

namespace nicemu {

Device::~Device() {
  if (scheduler_)
    scheduler_->remove_owner(event_owner_, this);
}

void Device::own_events(Scheduler &scheduler, uint64_t key) {
  if (scheduler_)
    scheduler_->remove_owner(event_owner_, this);
  scheduler_ = &scheduler;
  event_owner_ = key;
  scheduler.add_owner(key, this);
}

std::string Device::what() const {
  return "the " + registers().layout().device() + " device";
}

void Device::save_state(StateWriter &) const {
  throw Error("checkpoint: " + what() +
              " cannot be saved in a checkpoint file yet");
}

void Device::load_state(StateReader &in) {
  in.fail(what() + " cannot be read from a checkpoint file yet");
}

void Device::restore_event(Scheduler &, const SavedEvent &e) {
  throw Error("checkpoint: " + what() + " has no event \"" + e.name + "\"");
}

} // namespace nicemu
