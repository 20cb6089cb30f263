#include "cli/run_spread.hpp"

#include "cli/run_summary.hpp"
#include "cli/stop_signals.hpp"
#include "debug/fault_report.hpp"
#include "dist/mpi_link.hpp"
#include "dist/partition.hpp"
#include "dist/rank_share.hpp"
#include "host/cluster_run.hpp"
#include "nicemu/error.hpp"
#include "node/cluster.hpp"
#include "observe/event_log.hpp"
#include "sim/state_archive.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <mutex>

namespace nicemu::cli {

namespace {

using Lines = std::vector<std::pair<uint32_t, std::string>>; // node, line

void write_lines(StateWriter &out, const Lines &lines) {
  out.u64(lines.size());
  for (const auto &[node, line] : lines) {
    out.u32(node);
    out.str(line);
  }
}

void read_lines(StateReader &in, Lines &to) {
  for (uint64_t i = 0, n = in.count(1 << 24); i < n; ++i) {
    uint32_t node = in.u32();
    to.emplace_back(node, in.str(1 << 24));
  }
}

// The lines of one round from every rank, as one process prints them: in
// node order (a round's slices run in node order; a node's lines stay in
// their order).
void print_lines(Lines &lines) {
  std::stable_sort(
      lines.begin(), lines.end(),
      [](const auto &a, const auto &b) { return a.first < b.first; });
  for (const auto &[node, line] : lines)
    std::cout << "[node" << node << "] " << line << "\n";
  std::cout << std::flush;
  lines.clear();
}

void write_row(StateWriter &out, const NodeRow &r) {
  for (uint64_t w : {uint64_t(r.id), uint64_t(r.state), uint64_t(r.exit_code),
                     r.instructions, r.cycles, r.slept, r.skipped.cycles,
                     r.skipped.instructions})
    out.u64(w);
}

NodeRow read_row(StateReader &in) {
  NodeRow r;
  r.id = uint32_t(in.u64());
  r.state = NodeState(in.u64());
  r.exit_code = uint32_t(in.u64());
  r.instructions = in.u64();
  r.cycles = in.u64();
  r.slept = in.u64();
  r.skipped.cycles = in.u64();
  r.skipped.instructions = in.u64();
  return r;
}

// The cycle profiles of a rank's cores (CycleProfiling::results).
void write_profiles(StateWriter &out, const std::vector<CoreProfile> &all) {
  out.u64(all.size());
  for (const CoreProfile &p : all) {
    out.fields(p.node, p.sleep_cycles, p.unattributed_cycles, p.end_time);
    out.u64(p.functions.size());
    for (const FunctionProfile &f : p.functions) {
      out.fields(f.self, f.inclusive, f.entries);
      out.pods(f.calls);
    }
    out.pods(p.blocks);
  }
}

std::vector<CoreProfile> read_profiles(StateReader &in) {
  std::vector<CoreProfile> all(in.count(1 << 24));
  for (CoreProfile &p : all) {
    in.fields(p.node, p.sleep_cycles, p.unattributed_cycles, p.end_time);
    p.functions.resize(in.count(1 << 24));
    for (FunctionProfile &f : p.functions) {
      in.fields(f.self, f.inclusive, f.entries);
      f.calls = in.pods<CallSample>(uint64_t(1) << 32);
    }
    p.blocks = in.pods<BlockProfile>(uint64_t(1) << 32);
  }
  return all;
}

// Set-up that fails fails on every rank alike, or on some: every rank
// learns whether any failed, rank 0 says why, and none goes on alone.
bool all_ready(MpiLink &link, const std::string &error) {
  StateWriter out;
  out.str(error);
  std::vector<std::vector<uint8_t>> all = link.exchange(out.data());
  bool ready = true;
  std::string first;
  for (uint32_t r = 0; r < all.size(); ++r) {
    StateReader in(all[r], "rank " + std::to_string(r) + "'s set-up");
    std::string e = in.str();
    if (e.empty())
      continue;
    if (ready)
      first = e;
    if (link.rank() == 0 && (ready || e != first))
      std::cerr << "nicemu: error: "
                << (all.size() > 1 && e != first
                        ? "rank " + std::to_string(r) + ": "
                        : "")
                << e << "\n";
    ready = false;
  }
  return ready;
}

} // namespace

int run_spread(const ClusterOptions &o, const ReportOptions &reports,
               const RunInputs &in, const SpreadOptions &s, const MpiJob &job) {
  MpiLink link;
  if (link.ranks() != job.size)
    link.abort("MPI says " + std::to_string(link.ranks()) +
               " ranks, the launcher's variables " + std::to_string(job.size));
  StopSignals signals;
  const bool rank0 = link.rank() == 0;
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<RankShare> share;
  Partition partition;
  std::mutex m;
  Lines pending, merged; // this rank's since the last agree; rank 0's to print
  std::string error;
  // Rank 0 writes the trace and the captures: its copy of the network tells
  // every crossing, and every rank's cards' events come to it with the
  // collectives (EventLog). Each rank profiles its own cores; the profiles
  // go to every rank at the end, which makes the reports (rank 0 prints
  // them) and the budgets' exit code alike everywhere.
  ReportOptions mine = reports;
  if (!rank0) {
    mine.observe = {};
    mine.report_json.clear();
  }
  std::unique_ptr<RunObservers> observers;
  EventLog cards_told; // this rank's cards', since the last collective
  const bool tracing = !reports.observe.trace.empty();
  std::unique_ptr<CycleReports> cycle_reports;
  Time told_before = 0; // rank 0: every rank's events before it are here
  try {
    const Model &model = in.model;
    observers = std::make_unique<RunObservers>(mine.observe);
    if ((reports.profiling() || reports.traces_cores()) &&
        !in.node_flash.empty())
      throw Error("run: --node-firmware does not combine with profiling or "
                  "core traces (they read one image's symbols)");
    if (reports.profiling() || reports.traces_cores())
      cycle_reports = std::make_unique<CycleReports>(
          mine, o.firmware, in.flash, model, tracing ? &cards_told : nullptr);
    Topology topology =
        cluster_topology(model, o.nodes, o.topology,
                         in.topology_text ? &*in.topology_text : nullptr);
    partition = s.partition.empty()
                    ? partition_by_topology(topology, link.ranks())
                    : read_partition(s.partition, o.nodes, link.ranks());
    ClusterSpec spec;
    spec.nodes = o.nodes;
    spec.topology = o.topology;
    spec.topology_text = in.topology_text;
    spec.link_faults = o.link_faults;
    if (o.watchdog >= 0)
      spec.watchdog_cycles = uint64_t(o.watchdog);
    spec.fast_forward = !o.no_fast_forward;
    spec.core_queue = true;
    // Threads per rank: one unless asked (the ranks share the cores).
    spec.threads = o.threads ? run_threads(o) : 1;
    spec.adaptive_threads = o.threads ? run_threads_adaptive(o) : false;
    spec.node_flash = in.node_flash;
    spec.program = o.program;
    spec.procs_per_node = o.procs_per_node;
    spec.host_options = host_options(o);
    spec.network = true;
    spec.stop = &signals.request();
    spec.events = tracing ? &cards_told : nullptr;
    for (uint32_t n = 0; n < o.nodes; ++n)
      spec.owned.push_back(partition.rank_of[n] == link.rank());
    spec.console = [&](uint32_t node, const std::string &line) {
      std::lock_guard lock(m);
      pending.emplace_back(node, line);
    };
    cluster = start_cluster(
        model, std::make_shared<const std::vector<uint8_t>>(in.flash), spec);
    share = std::make_unique<RankShare>(link, partition.rank_of,
                                        cluster->sim.scheduler(),
                                        *cluster->sim.fabric());
    cluster->sim.fabric()->set_events(observers->events());
    observers->start([&told_before] { return told_before; });
    if (cycle_reports)
      cycle_reports->profiling().attach(cluster->sim);
    if (rank0 && !s.quiet)
      std::cerr << "nicemu: one cluster over " << link.ranks() << " MPI ranks, "
                << describe_partition(topology, partition);
  } catch (const std::exception &e) {
    error = e.what();
    if (error.empty())
      error = "set-up failed";
  }
  if (!all_ready(link, error))
    return 1;
  Simulation &sim = cluster->sim;
  RunEvents ignored;
  RunEvents &told_here = observers->events() ? *observers->events() : ignored;
  share->set_riders(
      [&](StateWriter &out) {
        {
          std::lock_guard lock(m);
          write_lines(out, pending);
          pending.clear();
        }
        cards_told.write(out);
      },
      [&](uint32_t r, StateReader &in) {
        read_lines(in, merged);
        EventLog::play(in, told_here);
        if (r + 1 == link.ranks()) {
          if (rank0)
            print_lines(merged);
          merged.clear();
          told_before = sim.scheduler().now();
        }
      });
  RunResult r;
  try {
    sim.set_ranks(share.get());
    r = sim.run(max_run_time(o));
  } catch (const std::exception &e) {
    link.abort(std::string("the run failed: ") + e.what());
  }
  // How the hosts went, before stop() ends those still running (which a
  // rank whose own hosts did not fail would take for its failure).
  HostGroup *hosts = cluster->hosts.get();
  const std::string host_failure = hosts ? hosts->failure() : "";
  const int host_code = hosts ? hosts->exit_code() : 0;
  // Host processes per node (--procs-per-node): node n's are hosts
  // n * per_node to (n + 1) * per_node - 1.
  const uint32_t per_node = o.procs_per_node;
  // Where each of its hosts stood, for a deadlock's message.
  std::vector<std::string> stalls(size_t(o.nodes) * per_node);
  if (hosts && r.outcome == RunOutcome::Deadlock)
    for (auto &n : sim.nodes())
      for (uint32_t h = n->id() * per_node; h < (n->id() + 1) * per_node; ++h)
        stalls[h] = hosts->stall_of(h);
  if (cycle_reports)
    cycle_reports->profiling().finish(sim);
  if (hosts)
    hosts->stop();
  // What rank 0 prints: the last console lines, the nodes' rows and fault
  // reports.
  StateWriter out;
  {
    std::lock_guard lock(m);
    write_lines(out, pending);
    pending.clear();
  }
  cards_told.write(out);
  if (cycle_reports)
    write_profiles(out, cycle_reports->profiling().results());
  out.u64(sim.nodes().size());
  for (auto &n : sim.nodes()) {
    write_row(out, node_row(*n));
    out.str(n->state() == NodeState::Faulted ? fault_report(*n) : "");
    // Its hosts: how each ended, its polls.
    out.flag(hosts != nullptr);
    if (hosts)
      for (uint32_t h = n->id() * per_node; h < (n->id() + 1) * per_node; ++h) {
        out.str(hosts->outcomes()[h]);
        out.u64(hosts->agent(h).polls());
        out.u64(hosts->agent(h).leased_polls());
        out.str(stalls[h]);
      }
  }
  out.str(host_failure);
  out.u64(uint64_t(host_code));
  out.u64(share->messages());
  std::vector<std::vector<uint8_t>> all = link.exchange(out.data());
  std::vector<NodeRow> rows;
  std::vector<std::pair<uint32_t, std::string>> faults;
  std::vector<std::string> outcomes(size_t(o.nodes) * per_node);
  uint64_t polls = 0, leased = 0;
  // The hosts' exit code: the failed host's (its rank's), else the first
  // rank's that is not 0.
  int hosts_code = 0;
  bool failure_seen = false;
  uint64_t messages = 0; // every rank's
  for (uint32_t k = 0; k < all.size(); ++k) {
    StateReader in(all[k], "rank " + std::to_string(k) + "'s results");
    read_lines(in, merged);
    EventLog::play(in, told_here);
    if (cycle_reports && k != link.rank())
      cycle_reports->profiling().add_results(read_profiles(in));
    else if (cycle_reports)
      read_profiles(in);
    for (uint64_t i = 0, n = in.count(o.nodes); i < n; ++i) {
      rows.push_back(read_row(in));
      if (std::string f = in.str(1 << 24); !f.empty())
        faults.emplace_back(rows.back().id, f);
      if (in.flag())
        for (uint32_t h = rows.back().id * per_node;
             h < (rows.back().id + 1) * per_node; ++h) {
          outcomes.at(h) = in.str();
          polls += in.u64();
          leased += in.u64();
          stalls.at(h) = in.str();
        }
    }
    const bool failed = !in.str().empty();
    const int code = int(in.u64());
    messages += in.u64();
    if (!failure_seen && (failed || (!hosts_code && code)))
      hosts_code = code;
    failure_seen = failure_seen || failed;
  }
  std::sort(rows.begin(), rows.end(),
            [](const NodeRow &a, const NodeRow &b) { return a.id < b.id; });
  std::sort(faults.begin(), faults.end());
  std::vector<uint32_t> codes;
  for (const NodeRow &row : rows)
    codes.push_back(row.exit_code);
  const bool stopped = signals.requested();
  // The network's last crossings (stuck behind a packet at the end) after
  // the run's events, as in one process.
  observers->finish([&sim] { sim.fabric()->flush_events(); });
  int budget_code = 0;
  if (rank0) {
    print_lines(merged);
    if (stopped)
      std::cerr << "nicemu: stopped by " << signals.name() << "\n";
    for (const auto &[node, report] : faults)
      std::cerr << "nicemu: " << report;
    print_misroutes(sim);
    // A deadlock: the network's part, then every rank's hosts (each rank
    // knows only its own).
    if (r.outcome == RunOutcome::Deadlock && hosts) {
      std::string who = HostGroup::describe_stall(stalls);
      r.message =
          sim.network_deadlock() + (who.empty() ? "" : " (" + who + ")");
    }
    if (r.outcome == RunOutcome::Deadlock ||
        r.outcome == RunOutcome::HostFailed)
      std::cerr << "nicemu: stopped: " << r.message << "\n";
    else if (r.outcome == RunOutcome::MaxTime)
      std::cerr << "nicemu: stopped at --max-time " << o.max_time << "\n";
    if (!s.quiet)
      print_summary(sim, r, in.model, reports.per_node, &rows);
    if (reports.profiling())
      budget_code = cycle_reports->print();
    if (!s.quiet) {
      if (hosts)
        print_host_outcomes(outcomes, polls, leased, reports.per_node);
      std::fprintf(stderr,
                   "ranks: %u, %llu messages between them (each from one "
                   "rank to every other, or a collective)\n",
                   link.ranks(), (unsigned long long)messages);
    }
    std::fflush(stderr);
  } else if (reports.profiling() &&
             !cycle_reports->profiling().budget_failures().empty()) {
    budget_code = kExitBudget;
  }
  sim.set_ranks(nullptr);
  share.reset();
  if (stopped)
    return signals.exit_code();
  if (hosts &&
      (r.outcome == RunOutcome::Halted || r.outcome == RunOutcome::HostFailed))
    return hosts_code ? hosts_code
                      : (r.outcome == RunOutcome::HostFailed ? 1 : budget_code);
  const int code = outcome_exit_code(r, codes);
  return code ? code : budget_code;
}

} // namespace nicemu::cli
