#include "host/cluster_run.hpp"

#include "boards/board.hpp"
#include "host/host_tape.hpp"
#include "nicemu/error.hpp"
#include "node/cluster.hpp"

namespace nicemu {

std::unique_ptr<Cluster>
start_cluster(const Model &model,
              std::shared_ptr<const std::vector<uint8_t>> flash,
              const ClusterSpec &spec) {
  if (spec.nodes == 0)
    throw Error("run: -n must be at least 1");
  if (spec.link_faults.any() && spec.nodes == 1 && spec.topology.empty())
    throw Error("run: --link-corrupt and --link-loss need a network (-n 2 or "
                "more, or --topology)");
  auto cluster = std::make_unique<Cluster>();
  Simulation &sim = cluster->sim;
  sim.set_stop_request(spec.stop);
  sim.set_monitor(spec.monitor);
  sim.set_core_queue(spec.core_queue);
  sim.set_threads(checked_board(model).cores_run_in_parallel() ? spec.threads
                                                               : 1,
                  spec.adaptive_threads);
  if (spec.nodes > 1 || !spec.topology.empty() || spec.network) {
    auto fabric =
        make_fabric(sim.scheduler(), model, spec.nodes, spec.topology,
                    spec.topology_text ? &*spec.topology_text : nullptr);
    Time lookahead = network_lookahead(model, *fabric);
    fabric->set_events(spec.events);
    if (spec.link_faults.any())
      fabric->inject_faults(spec.link_faults);
    sim.set_fabric(std::move(fabric), lookahead);
  }
  // Host programs: one process per node, each reaching its NIC through its
  // own channel; the run is theirs.
  for (const auto &[node, image] : spec.node_flash)
    if (node >= spec.nodes)
      throw Error("run: --node-firmware names node " + std::to_string(node) +
                  "; the run has nodes 0 to " + std::to_string(spec.nodes - 1));
  if (spec.procs_per_node == 0 || spec.procs_per_node > 16)
    throw Error("run: --procs-per-node takes 1 to 16");
  if (spec.procs_per_node > 1 &&
      (spec.program.empty() || !checked_board(model).hosts_share_card()))
    throw Error("run: --procs-per-node needs a host program and a card that "
                "several processes share (martini, comet); the " +
                model.board + " card has one host process per node");
  if (!spec.program.empty()) {
    cluster->hosts =
        std::make_unique<HostGroup>(spec.nodes, sim.scheduler(), model,
                                    spec.host_options, spec.procs_per_node);
    cluster->hosts->set_stop_request(spec.stop);
    sim.set_external(cluster->hosts.get());
  }
  if (!spec.owned.empty() &&
      (spec.owned.size() != spec.nodes || (spec.tape && spec.program.size())))
    throw Error("run: a rank's share of the nodes needs every node named "
                "and no recording (not built yet)");
  for (uint32_t i = 0; i < spec.nodes; ++i) {
    if (!spec.owned.empty() && !spec.owned[i])
      continue; // another rank's
    NodeConfig config;
    config.node = i;
    config.nodes = spec.nodes;
    config.fabric = sim.fabric();
    config.watchdog_cycles = spec.watchdog_cycles;
    config.console = spec.console;
    config.events = spec.events;
    const uint32_t k = spec.procs_per_node;
    if (cluster->hosts) // DMA reaches each process's own bus window
      config.host_memory = &cluster->hosts->node_memory(i);
    Node &node = sim.add_node(model, config);
    node.cpu().set_fast_forward(spec.fast_forward);
    auto own = spec.node_flash.find(i);
    node.boot(own != spec.node_flash.end() ? own->second : flash);
    if (cluster->hosts) {
      node.host_port().set_processes(k);
      for (uint32_t p = 0; p < k; ++p) {
        HostAgent &agent = cluster->hosts->agent(i * k + p);
        agent.attach(&node);
        agent.set_quiet_until([&sim](Time now, uint32_t n, uint32_t rank) {
          return sim.quiet_until(now, n, rank);
        });
      }
      node.host_port().set_peers(cluster->hosts.get());
    }
  }
  if (cluster->hosts && spec.tape && spec.tape->playing()) {
    cluster->hosts->replay(*spec.tape);
  } else if (cluster->hosts) {
    if (spec.tape)
      cluster->hosts->record(*spec.tape);
    cluster->hosts->launch(spec.program, spec.owned);
  }
  return cluster;
}

} // namespace nicemu
