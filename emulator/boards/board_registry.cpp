// The list of boards, and the check that a model fits the board it names.
#include "boards/board.hpp"

#include "boards/board_list.hpp"
#include "fabric/fabric_params.hpp"
#include "nicemu/error.hpp"

#include <algorithm>

namespace nicemu {

FabricParams Board::network(const Model &model) const {
  return fabric_params(model);
}

Topology Board::default_topology(uint32_t nodes, const Model &,
                                 const FabricParams &params) const {
  return make_topology(nodes, params.switch_ports);
}

// A register write on one card reaches another no sooner than the Tx
// engine's gap plus the shortest path.
Time Board::network_lookahead(const Model &model, const Fabric &fabric) const {
  return model.timing("tx_dma.gap") + fabric.min_path_latency();
}

std::vector<const Board *> all_boards() {
  return {&lanai4_board(), &comet_board(), &martini_board(), &uzura_board()};
}

const Board *find_board(const std::string &name) {
  for (const Board *board : all_boards())
    if (board->name() == name)
      return board;
  return nullptr;
}

namespace {

std::string board_names() {
  std::string names;
  for (const Board *board : all_boards())
    names += (names.empty() ? "" : ", ") + board->name();
  return names;
}

} // namespace

void check_model_against(const Model &model, const Board &board) {
  check_model_keys(model, board.model_keys(), board.name());
  for (const std::string &memory : board.required_memories()) {
    bool present =
        std::any_of(model.memories.begin(), model.memories.end(),
                    [&](const MemoryRegion &r) { return r.name == memory; });
    if (!present)
      throw Error(model.source.string() + ": model \"" + model.name +
                  "\": the " + board.name() +
                  " board needs a [[memory]] "
                  "named \"" +
                  memory + "\"");
  }
}

const Board &checked_board(const Model &model) {
  if (model.board.empty())
    throw Error(model.source.string() + ": model \"" + model.name +
                "\" names no board: add board = \"NAME\" at the top (boards: " +
                board_names() + ")");
  const Board *board = find_board(model.board);
  if (!board)
    throw Error(model.source.string() + ": model \"" + model.name +
                "\": unknown board \"" + model.board +
                "\" (boards: " + board_names() + ")");
  check_model_against(model, *board);
  return *board;
}

} // namespace nicemu
