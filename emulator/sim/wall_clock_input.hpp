// Input from outside the run that lives in wall time: the interface the run
// loop paces itself by (Simulation::set_wall_clock_input, node/). Here, next
// to virtual time, so that what provides such input (the TAP bridge,
// fabric/tap_bridge.hpp) need not know the run loop.
#pragma once

#include "sim/time.hpp"

#include <cstdint>

namespace nicemu {

// Something outside the run that lives in wall time: a TAP device bridged
// to the network (nicemu run --tap). While one is attached, virtual time
// never runs ahead of the wall-clock time since the run started (the run
// sleeps when it is ahead), and the run does not end as a deadlock when
// nothing is left to do: input may still come. Such a run is not
// deterministic.
class WallClockInput {
public:
  virtual ~WallClockInput() = default;
  // Takes in what has arrived, never blocking. `now` is the virtual time
  // the run has reached (no core is past it): input enters at `now`.
  virtual void poll(Time now) = 0;
  // Blocks (in wall time) until input may have arrived, at most
  // `timeout_ns` nanoseconds.
  virtual void wait(int64_t timeout_ns) = 0;
};

} // namespace nicemu
