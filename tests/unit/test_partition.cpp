// Sharing a cluster's nodes out among MPI ranks (dist/partition): by the
// topology, from a partition file, and the cables between ranks.
#include "dist/mpi_job.hpp"
#include "dist/partition.hpp"

#include "nicemu/error.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <set>

using namespace nicemu;

namespace {

// Every node on exactly one rank in range, every rank with a node.
void check_complete(const Partition &p, uint32_t nodes) {
  REQUIRE(p.rank_of.size() == nodes);
  std::set<uint32_t> used;
  for (uint32_t r : p.rank_of) {
    CHECK(r < p.ranks);
    used.insert(r);
  }
  CHECK(used.size() == p.ranks);
}

// The switch node `n` is cabled to.
uint32_t switch_of(const Topology &t, uint32_t n) {
  for (const auto &[a, b] : t.cables)
    if (!a.is_switch && a.index == n && b.is_switch)
      return b.index;
  FAIL("node " << n << " is on no switch");
  return 0;
}

} // namespace

TEST_CASE("partition: one crossbar is cut in even halves, its switch on rank "
          "0") {
  Topology t = make_topology(8, 8);
  Partition p = partition_by_topology(t, 2);
  check_complete(p, 8);
  CHECK(p.nodes_of(0) == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(p.nodes_of(1) == std::vector<uint32_t>{4, 5, 6, 7});
  // The switch belongs to rank 0 (a tie goes to the lower rank): rank 1's
  // four cables cross.
  CHECK(cross_rank_cables(t, p) == 4);
}

TEST_CASE("partition: a tree keeps each leaf switch's nodes on one rank, "
          "shares within a sixteenth") {
  for (uint32_t nodes : {64u, 256u, 1024u})
    for (uint32_t ranks : {2u, 3u, 4u}) {
      CAPTURE(nodes);
      CAPTURE(ranks);
      Topology t = make_topology(nodes, 8);
      Partition p = partition_by_topology(t, ranks);
      check_complete(p, nodes);
      // Each cut within a sixteenth of a share of the even cut: a rank
      // holds its share give or take two such distances.
      const double share = double(nodes) / ranks;
      const double slack = std::max(1.0, std::floor(share / 16));
      for (uint32_t r = 0; r < ranks; ++r) {
        double mine = double(p.nodes_of(r).size());
        CHECK(mine >= std::floor(share) - 2 * slack);
        CHECK(mine <= std::ceil(share) + 2 * slack);
      }
      // No leaf switch (7 nodes) is split when a cut may move by 3 nodes,
      // so that a leaf's end is always within reach: its nodes share a rank.
      if (slack >= 3) {
        std::vector<uint32_t> rank_of_switch(t.switches, ~0u);
        for (uint32_t n = 0; n < nodes; ++n) {
          uint32_t &r = rank_of_switch[switch_of(t, n)];
          if (r == ~0u)
            r = p.rank_of[n];
          CHECK(r == p.rank_of[n]);
        }
      }
      // Far fewer cables cross than a round-robin deal of the nodes makes.
      Partition dealt = p;
      for (uint32_t n = 0; n < nodes; ++n)
        dealt.rank_of[n] = n % ranks;
      CHECK(cross_rank_cables(t, p) * (slack >= 3 ? 20 : 4) <
            cross_rank_cables(t, dealt));
    }
}

TEST_CASE("partition: 1024 nodes on 2 ranks, cut where two subtrees meet") {
  Topology t = make_topology(1024, 8);
  Partition p = partition_by_topology(t, 2);
  // The generated tree numbers nodes along its leaves, so each rank holds
  // one run of nodes; the cut falls at a subtree of 49 nodes (7 leaves).
  std::vector<uint32_t> zero = p.nodes_of(0), one = p.nodes_of(1);
  CHECK(zero.front() == 0);
  CHECK(zero.back() + 1 == one.front());
  CHECK(one.back() == 1023);
  CHECK(one.front() % 49 == 0);
  CHECK(cross_rank_cables(t, p) < 10);
}

TEST_CASE("partition: of the subtrees within reach, the cut counts the "
          "cables, not only the subtree's size") {
  // 2745 nodes on 8-port switches: two centres joined by one cable, half
  // the nodes below each. Where a small subtree ends beside a large one,
  // the largest subtree ending in reach cut 2 cables; the count finds 1.
  Topology t = make_topology(2745, 8);
  Partition p = partition_by_topology(t, 2);
  check_complete(p, 2745);
  CHECK(cross_rank_cables(t, p) == 1);
  // 4096 nodes: the same cable; on 4 ranks, no more cables than before.
  Topology big = make_topology(4096, 8);
  CHECK(cross_rank_cables(big, partition_by_topology(big, 2)) == 1);
  CHECK(cross_rank_cables(big, partition_by_topology(big, 4)) <= 7);
  Topology mid = make_topology(1024, 8);
  CHECK(cross_rank_cables(mid, partition_by_topology(mid, 4)) <= 10);
}

TEST_CASE("partition: the same topology gives the same partition") {
  Topology t = make_topology(300, 8);
  CHECK(partition_by_topology(t, 3).rank_of ==
        partition_by_topology(t, 3).rank_of);
}

TEST_CASE("partition: nodes cabled directly, and one rank") {
  Topology t = parse_topology("switches 0\nnodes 2\ncable n0 n1\n", "two", 8);
  Partition p = partition_by_topology(t, 2);
  CHECK(p.rank_of == std::vector<uint32_t>{0, 1});
  CHECK(cross_rank_cables(t, p) == 1);
  Partition one = partition_by_topology(make_topology(20, 8), 1);
  check_complete(one, 20);
  CHECK(cross_rank_cables(make_topology(20, 8), one) == 0);
}

TEST_CASE("partition: more ranks than nodes is refused") {
  CHECK_THROWS_WITH_AS(partition_by_topology(make_topology(2, 8), 3),
                       doctest::Contains("each rank needs at least one node"),
                       Error);
  // Every rank still gets a node when there are just enough.
  Partition p = partition_by_topology(make_topology(5, 8), 5);
  check_complete(p, 5);
}

TEST_CASE("partition file: ranges and lists, comments and blanks") {
  Partition p = parse_partition("# two ranks\n"
                                "0: 0-2, 6\n"
                                "\n"
                                "1: 3-5 ,7  # the rest\n",
                                "p.txt", 8, 2);
  CHECK(p.rank_of == std::vector<uint32_t>{0, 0, 0, 1, 1, 1, 0, 1});
  CHECK(p.origin == "p.txt");
  CHECK(node_ranges(p.nodes_of(0)) == "0-2,6");
  CHECK(node_ranges(p.nodes_of(1)) == "3-5,7");
}

TEST_CASE("partition file: each mistake named with file and line") {
  auto refused = [](const std::string &text, const std::string &what) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(parse_partition(text, "p.txt", 8, 2),
                         doctest::Contains(what.c_str()), Error);
  };
  refused("0 0-7\n", "p.txt:1: expected '<rank>: <nodes>'");
  refused("x: 0-7\n", "p.txt:1: 'x' is not a rank number");
  refused("0: 0-3\n2: 4-7\n", "p.txt:2: rank 2 is not one of the run's "
                              "ranks (0-1)");
  refused("0: 0-3\n0: 4-7\n", "p.txt:2: rank 0 has a line already");
  refused("0: 0-3\n1: 3-7\n", "p.txt:2: node 3 is on rank 0 already");
  refused("0: 0-3\n1: 4-8\n", "p.txt:2: node 8 is not in the run (nodes 0-7)");
  refused("0: 0-3\n1: 7-4\n", "p.txt:2: '7-4' is neither a node number");
  refused("0: 0-3,,4\n1: 5-7\n", "p.txt:1: an empty entry");
  refused("0: 0-3\n1:\n", "p.txt:2: rank 1 is given no nodes");
  refused("0: 0-7\n", "p.txt: rank 1 has no line");
  refused("0: 0-3\n1: 4-6\n", "p.txt: node 7 is on no rank");
  refused("0: 0-3\n1: 4-99999999999\n", "is neither a node number");
}

TEST_CASE("partition: the description names each rank's nodes and the cut") {
  Topology t = make_topology(8, 8);
  std::string text = describe_partition(t, partition_by_topology(t, 2));
  CHECK(text == "partition (from the topology): 8 nodes on 2 ranks\n"
                "  rank 0: 4 nodes (0-3)\n"
                "  rank 1: 4 nodes (4-7)\n"
                "  4 cables between ranks, of 8\n");
}

TEST_CASE("mpi job: read from Open MPI's or PMI's variables, else none") {
  auto clear = [] {
    for (const char *v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                          "PMI_RANK", "PMI_SIZE"})
      unsetenv(v);
  };
  clear();
  CHECK_FALSE(mpi_job_from_environment());
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  auto job = mpi_job_from_environment();
  REQUIRE(job);
  CHECK(job->rank == 1);
  CHECK(job->size == 4);
  setenv("OMPI_COMM_WORLD_RANK", "4", 1); // not below the size: nonsense
  CHECK_FALSE(mpi_job_from_environment());
  clear();
  setenv("PMI_RANK", "0", 1);
  setenv("PMI_SIZE", "2", 1);
  job = mpi_job_from_environment();
  REQUIRE(job);
  CHECK(job->size == 2);
  setenv("PMI_SIZE", "two", 1);
  CHECK_FALSE(mpi_job_from_environment());
  clear();
}
