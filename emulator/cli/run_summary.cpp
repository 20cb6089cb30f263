#include "cli/run_summary.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace nicemu::cli {

namespace {

// Nodes shown at each end of a condensed summary.
constexpr size_t kExtremes = 3;
// Runs of ranks named in a condensed host line before "...".
constexpr size_t kRankRuns = 8;

void print_header() {
  std::fprintf(stderr, "%-5s %-9s %5s %14s %14s %14s\n", "node", "state",
               "exit", "instructions", "cycles", "slept cycles");
}

std::string exit_of(const NodeRow &n) {
  return n.state == NodeState::Halted ? std::to_string(n.exit_code) : "-";
}

void print_row(const NodeRow &n) {
  std::fprintf(stderr, "%-5u %-9s %5s %14llu %14llu %14llu\n", n.id,
               state_name(n.state), exit_of(n).c_str(),
               (unsigned long long)n.instructions, (unsigned long long)n.cycles,
               (unsigned long long)n.slept);
}

// "1020 halted (exit 0), 3 halted (exit 2), 1 faulted".
std::string state_counts(const std::vector<NodeRow> &nodes) {
  std::map<std::pair<std::string, std::string>, size_t> counts;
  for (const NodeRow &n : nodes)
    ++counts[{state_name(n.state), exit_of(n)}];
  std::string out;
  for (const auto &[key, count] : counts) {
    out += (out.empty() ? "" : ", ") + std::to_string(count) + " " + key.first;
    if (key.second != "-")
      out += " (exit " + key.second + ")";
  }
  return out;
}

// Totals, then the nodes that took the most and the fewest cycles.
void print_condensed(const std::vector<NodeRow> &nodes) {
  std::vector<const NodeRow *> by_cycles;
  for (const NodeRow &n : nodes)
    by_cycles.push_back(&n);
  std::stable_sort(
      by_cycles.begin(), by_cycles.end(),
      [](const NodeRow *a, const NodeRow *b) { return a->cycles > b->cycles; });
  std::fprintf(stderr, "slowest (most cycles):\n");
  for (size_t i = 0; i < kExtremes; ++i)
    print_row(*by_cycles[i]);
  std::fprintf(stderr, "fastest (fewest cycles):\n");
  for (size_t i = by_cycles.size() - kExtremes; i < by_cycles.size(); ++i)
    print_row(*by_cycles[i]);
  unsigned long long instructions = 0, cycles = 0, slept = 0;
  for (const NodeRow &n : nodes) {
    instructions += n.instructions;
    cycles += n.cycles;
    slept += n.slept;
  }
  std::fprintf(stderr, "%-5s %-9s %5s %14llu %14llu %14llu\n", "total", "", "",
               instructions, cycles, slept);
  std::fprintf(stderr, "states: %s\n", state_counts(nodes).c_str());
}

// "0-2, 4-1023", at most kRankRuns runs, then ", ...".
std::string rank_runs(const std::vector<uint32_t> &ranks) {
  std::string out;
  size_t runs = 0;
  for (size_t i = 0; i < ranks.size(); ++runs) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (runs == kRankRuns)
      return out + ", ...";
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i)
      out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

} // namespace

NodeRow node_row(const Node &n) {
  return {n.id(),
          n.state(),
          n.exit_code(),
          n.cpu().instructions(),
          n.cpu().cycles(),
          n.sleep_cycles(),
          n.cpu().fast_forwarded()};
}

void print_summary(Simulation &sim, const RunResult &r, const Model &model,
                   bool per_node, const std::vector<NodeRow> *rows) {
  std::vector<NodeRow> own;
  if (!rows) {
    for (auto &n : sim.nodes())
      own.push_back(node_row(*n));
    rows = &own;
  }
  const std::vector<NodeRow> &nodes = *rows;
  const bool condensed = nodes.size() > kCondensedNodes && !per_node;
  std::fprintf(stderr, "--- nicemu: %s model, %zu node%s%s ---\n",
               model.full_name().c_str(), nodes.size(),
               nodes.size() == 1 ? "" : "s",
               condensed ? " (condensed; --per-node for every node)" : "");
  print_header();
  if (condensed)
    print_condensed(nodes);
  else
    for (const NodeRow &n : nodes)
      print_row(n);
  uint64_t instructions = 0;
  Cpu::Skipped skipped;
  for (const NodeRow &n : nodes) {
    instructions += n.instructions;
    skipped.cycles += n.skipped.cycles;
    skipped.instructions += n.skipped.instructions;
  }
  // Skipped iterations count in the table, but were not emulated.
  double mips =
      r.wall_seconds > 0
          ? double(instructions - skipped.instructions) / r.wall_seconds / 1e6
          : 0;
  std::fprintf(stderr,
               "virtual time %.3f us, wall time %.3f ms, %.1f emulated MIPS",
               double(r.end_time) / 1e6, r.wall_seconds * 1e3, mips);
  if (const ThreadGovernor *g = sim.thread_governor();
      g && g->parallel_rounds() > 0)
    // Left to nicemu: the workers ran the rounds while they paid, and
    // their trials (node/thread_governor.hpp).
    std::fprintf(stderr,
                 " on %u threads for %.0f %% of its rounds (nicemu's "
                 "choice; --threads sets it)",
                 sim.workers_threads(),
                 100.0 * double(g->parallel_rounds()) / double(g->rounds()));
  else if (sim.threads_used() > 1)
    std::fprintf(stderr, " on %u threads", sim.threads_used());
  std::fputc('\n', stderr);
  if (skipped.cycles)
    std::fprintf(stderr,
                 "fast-forward: %llu cycles (%llu instructions) of polling "
                 "loops counted without being emulated (--no-fast-forward "
                 "emulates them)\n",
                 (unsigned long long)skipped.cycles,
                 (unsigned long long)skipped.instructions);
  if (const Fabric *fabric = sim.fabric();
      fabric && fabric->stats().packets_spoofed)
    std::fprintf(stderr,
                 "network: %llu frames dropped by the switches for a forged "
                 "source address (another node's MAC)\n",
                 (unsigned long long)fabric->stats().packets_spoofed);
  if (const Fabric *fabric = sim.fabric(); fabric && fabric->faults().any()) {
    const FabricStats &s = fabric->stats();
    std::fprintf(stderr,
                 "network: %llu packets sent, %llu delivered; injected "
                 "faults: %llu corrupted, %llu lost, %llu duplicated\n",
                 (unsigned long long)s.packets_sent,
                 (unsigned long long)s.packets_delivered,
                 (unsigned long long)s.packets_corrupted,
                 (unsigned long long)s.packets_lost,
                 (unsigned long long)s.packets_duplicated);
  }
}

// A line per host, or per group of hosts with the same outcome.
static void print_host_outcome_lines(const std::vector<std::string> &outcomes,
                                     bool per_node);

void print_host_outcomes(const HostGroup &hosts, bool per_node) {
  uint64_t polls = 0, leased = 0;
  for (uint32_t r = 0; r < hosts.ranks(); ++r) {
    polls += hosts.agent(r).polls();
    leased += hosts.agent(r).leased_polls();
  }
  print_host_outcomes(hosts.outcomes(), polls, leased, per_node);
}

void print_host_outcomes(const std::vector<std::string> &outcomes,
                         uint64_t polls, uint64_t leased, bool per_node) {
  print_host_outcome_lines(outcomes, per_node);
  // How much the host leases saved (wall time only: the virtual results
  // are the same with --no-leases).
  if (leased)
    std::fprintf(stderr,
                 "host leases: %llu of %llu polls answered by the host "
                 "library, with no round trip to the emulator\n",
                 (unsigned long long)leased, (unsigned long long)polls);
}

static void print_host_outcome_lines(const std::vector<std::string> &outcomes,
                                     bool per_node) {
  if (outcomes.size() <= kCondensedNodes || per_node) {
    for (size_t i = 0; i < outcomes.size(); ++i)
      std::fprintf(stderr, "host %zu: %s\n", i, outcomes[i].c_str());
    return;
  }
  // One line per outcome, in the order of their first rank.
  std::vector<std::pair<std::string, std::vector<uint32_t>>> groups;
  for (uint32_t r = 0; r < outcomes.size(); ++r) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto &x) {
      return x.first == outcomes[r];
    });
    if (g == groups.end())
      groups.push_back({outcomes[r], {r}});
    else
      g->second.push_back(r);
  }
  for (const auto &[outcome, ranks] : groups)
    std::fprintf(stderr, "host%s %s (%zu of %zu): %s\n",
                 ranks.size() == 1 ? "" : "s", rank_runs(ranks).c_str(),
                 ranks.size(), outcomes.size(), outcome.c_str());
}

} // namespace nicemu::cli
