// nicemu partition -n N --ranks R [--model M] [--topology FILE]
//                  [--partition FILE] [-o FILE]
// How a cluster's nodes would be shared out among MPI ranks
// (docs/distributed.md): by the topology, or as a partition file says
// (checked); optionally written as a partition file to edit.
#include "cli/commands.hpp"
#include "dist/mpi_job.hpp"
#include "dist/partition.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "node/cluster.hpp"

#include <cstdio>
#include <span>

namespace nicemu::cli {

namespace {

struct PartitionOptions {
  uint32_t nodes = 0;
  uint32_t ranks = 0;
  std::string model = "lanai4";
  std::string topology, partition, output;
};

// The partition file's text: one line per rank.
std::string partition_file_text(const Partition &p) {
  std::string text = "# nicemu partition: <rank>: <nodes>\n";
  for (uint32_t r = 0; r < p.ranks; ++r)
    text += std::to_string(r) + ": " + node_ranges(p.nodes_of(r)) + "\n";
  return text;
}

} // namespace

void add_partition_command(CLI::App &app, ExitStatus &) {
  auto o = std::make_shared<PartitionOptions>();
  CLI::App *cmd = app.add_subcommand(
      "partition", "Show how a cluster's nodes would be shared out among MPI "
                   "ranks (by its topology, or checked from a file)");
  cmd->add_option("-n,--nodes", o->nodes, "number of nodes")
      ->required()
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--ranks", o->ranks, "number of MPI ranks")
      ->required()
      ->check(CLI::Range(1u, 1u << 16));
  cmd->add_option("--model", o->model, "model (its switches' port count)")
      ->capture_default_str();
  cmd->add_option("--topology", o->topology,
                  "network topology file (default: as nicemu run cables "
                  "the nodes)");
  cmd->add_option("--partition", o->partition,
                  "check and show this partition file instead "
                  "(docs/distributed.md)");
  cmd->add_option("-o,--output", o->output,
                  "also write the partition as a partition file");
  cmd->callback([o] {
    Model model = load_model(o->model);
    Topology topology = cluster_topology(model, o->nodes, o->topology);
    Partition p = o->partition.empty()
                      ? partition_by_topology(topology, o->ranks)
                      : read_partition(o->partition, o->nodes, o->ranks);
    std::fputs(describe_partition(topology, p).c_str(), stdout);
    if (!o->output.empty()) {
      std::string text = partition_file_text(p);
      write_file_bytes(o->output,
                       std::span(reinterpret_cast<const uint8_t *>(text.data()),
                                 text.size()));
    }
  });
}

int refuse_spread(const MpiJob &job, const std::string &what) {
  if (job.rank == 0)
    std::fprintf(stderr,
                 "nicemu run: started as %u MPI ranks (mpirun): a run spread "
                 "over ranks cannot take %s yet (docs/distributed.md says "
                 "what it can). Run it as one process (--threads uses the "
                 "machine's cores).\n",
                 job.size, what.c_str());
  return 2;
}

} // namespace nicemu::cli
