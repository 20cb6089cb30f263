// VIPL on the via firmware: what vipl_connect.cpp gives the parts above it
// (vipl_vi.cpp, vipl.cpp; the order is in vipl_card.hpp).
#pragma once

#include "vipl_card.hpp"

namespace nicemu::vipl {

// ---- The event ring
// One poll of host memory: the emulator catches up with this host's clock,
// so what the card wrote by now is visible. Then takes the events.
void poll();
// Takes every event that has arrived.
void drain_events();
// Waits for the next event until `deadline`, then takes the events; false
// if none came.
bool wait_event(uint64_t deadline);

// ---- Connections
// A VI stops making a connection (destroyed, closed): a late answer is
// refused.
void abandon_connecting(Vi &vi);
// Ends every connection request of `nic` waiting to be accepted
// (VipCloseNic).
void close_connections(Handle nic);

} // namespace nicemu::vipl
