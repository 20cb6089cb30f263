// VIPL on the via firmware: what vipl_vi.cpp gives the part above it
// (vipl.cpp; the order is in vipl_card.hpp).
#pragma once

#include "vipl_card.hpp"

namespace nicemu::vipl {

// Ends every VI and CQ of `nic` (VipCloseNic).
void close_vis_and_cqs(Handle nic);

} // namespace nicemu::vipl
