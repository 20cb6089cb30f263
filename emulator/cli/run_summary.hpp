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

void print_summary(Simulation &sim, const RunResult &r, const Model &model,
                   bool per_node);
// "host 3: exited with status 0" per rank, or one line per distinct
// outcome naming its ranks.
void print_host_outcomes(const HostGroup &hosts, bool per_node);

} // namespace nicemu::cli
