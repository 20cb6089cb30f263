// The boards of the NIC families nicemu ships, one folder each. The
// registry (board_registry.cpp) lists them; nothing else names them.
#pragma once

#include "boards/board.hpp"

namespace nicemu {

const Board &lanai4_board();  // lanai4/
const Board &comet_board();   // comet/
const Board &martini_board(); // martini/
const Board &uzura_board();   // uzura/

} // namespace nicemu
