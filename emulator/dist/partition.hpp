// How the nodes of one emulated cluster are shared out among MPI ranks
// (docs/distributed.md, "Partitioning"): each rank will emulate its nodes'
// cards and start their host programs. By default the partition follows
// the topology, so that the nodes of one switch, and of one subtree of
// switches where the sizes allow, stay on one rank; a partition file
// overrides it.
#pragma once

#include "fabric/fabric.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace nicemu {

struct Partition {
  uint32_t ranks = 1;
  std::vector<uint32_t> rank_of; // node -> rank
  std::string origin;            // "the topology", or the file's name

  // The nodes of `rank`, in increasing order.
  std::vector<uint32_t> nodes_of(uint32_t rank) const;
};

// The nodes in the order of a depth-first walk of the switches (from the
// middle of a longest path, a tree's centre; each switch's own nodes
// first, then its neighbours' subtrees, ports in order), cut into `ranks`
// parts. Each cut lies within a sixteenth of a part of where even shares
// would put it: at the end of the largest subtree that ends there (the
// nearest among equals), else exactly at the even cut (a switch's nodes are
// then split). Nodes cabled to each other with no switch between are taken
// in node order. Throws nicemu::Error if there are fewer nodes than ranks.
Partition partition_by_topology(const Topology &topology, uint32_t ranks);

// A partition file (format in docs/distributed.md): one line per rank,
//   <rank>: <nodes>        e.g.  1: 512-1023, 2000
// where <nodes> is a comma-separated list of nodes and ranges a-b; '#'
// starts a comment. Every node of the run must be on exactly one rank, and
// every rank must have at least one node. Throws nicemu::Error naming the
// file (and the line) and what is wrong.
Partition parse_partition(const std::string &text, const std::string &origin,
                          uint32_t nodes, uint32_t ranks);
Partition read_partition(const std::string &path, uint32_t nodes,
                         uint32_t ranks);

// Cables whose two ends belong to different ranks. A node belongs to its
// rank; a switch to the rank that holds most of the nodes cabled to it, or,
// with none, most of the nodes that its neighbours one hop nearer to the
// nodes stand for (ties: the lowest rank). Packets between ranks cross
// these cables.
uint64_t cross_rank_cables(const Topology &topology, const Partition &p);

// "0-511,1024" for sorted node numbers.
std::string node_ranges(const std::vector<uint32_t> &nodes);

// A few lines for a person: where it came from, each rank's nodes and their
// count, the cables between ranks.
std::string describe_partition(const Topology &topology, const Partition &p);

} // namespace nicemu
