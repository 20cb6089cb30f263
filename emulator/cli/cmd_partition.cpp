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

int refuse_mpi_ranks(uint32_t nodes) {
  std::optional<MpiJob> job = mpi_job_from_environment();
  if (!job || job->size < 2)
    return 0;
  if (job->rank == 0)
    std::fprintf(
        stderr,
        "nicemu run: started as %u MPI ranks (mpirun), but one cluster cannot "
        "be spread over several ranks yet (docs/distributed.md says what is "
        "built and what is planned), and %u copies of the same run would each "
        "print and write the same things. Run it as one process (--threads "
        "uses the machine's cores); `nicemu partition -n %u --ranks %u` shows "
        "how its nodes would be shared out.\n",
        job->size, job->size, nodes, job->size);
  return 2;
}

} // namespace nicemu::cli
