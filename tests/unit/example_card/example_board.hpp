// The example card family's board (docs/adding-a-card.md): the shared host
// DMA engine plus the family's own SUM engine.
#pragma once

#include "boards/board.hpp"

namespace nicemu::example {

const Board &example_board();

} // namespace nicemu::example
