// The summary `nicemu run` and `nicemu debug` print on stderr at the end:
// a row per node, or for a large run (more than kCondensedNodes nodes,
// unless --per-node) totals, the slowest and fastest nodes and counts of
// their states; and how each host process ended, likewise condensed.
#pragma once

#include "host/hosts.hpp"
#include "nicemu/model.hpp"
#include "node/simulation.hpp"

#include <cstddef>

namespace nicemu::cli {

// Above this many nodes (or host processes) the summary is condensed.
constexpr size_t kCondensedNodes = 16;

// A node's row of the summary: what a rank of a spread run sends rank 0.
struct NodeRow {
  uint32_t id = 0;
  NodeState state = NodeState::Reset;
  uint32_t exit_code = 0;
  uint64_t instructions = 0, cycles = 0, slept = 0;
  Cpu::Skipped skipped; // fast-forwarded, counted above
};
NodeRow node_row(const Node &n);

// `rows`: every node's (a spread run's, gathered); null: sim's nodes.
void print_summary(Simulation &sim, const RunResult &r, const Model &model,
                   bool per_node, const std::vector<NodeRow> *rows = nullptr);
// "host 3: exited with status 0" per rank, or one line per distinct
// outcome naming its ranks.
void print_host_outcomes(const HostGroup &hosts, bool per_node);
// The same from every host's outcome, by rank, and the polls (a spread
// run's, gathered).
void print_host_outcomes(const std::vector<std::string> &outcomes,
                         uint64_t polls, uint64_t leased, bool per_node);

} // namespace nicemu::cli
