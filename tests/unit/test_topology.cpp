// Topologies: generated shapes, routes, and the topology file's checks.
#include "fabric/fabric.hpp"

#include "nicemu/error.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace nicemu;

namespace {

using Bytes = std::vector<uint8_t>;

// The generated tree's height above the leaves (the root's level).
uint32_t tree_height(uint32_t nodes) {
  uint32_t level = (nodes + 6) / 7, height = 1;
  for (; level > 8; ++height)
    level = (level + 6) / 7;
  return height;
}

// Route length in the generated tree (8 ports): up to the lowest common
// ancestor and down again, one byte per switch.
size_t tree_route_length(uint32_t nodes, uint32_t a, uint32_t b) {
  uint32_t up = 0, la = a / 7, lb = b / 7, height = tree_height(nodes);
  while (up < height && la != lb)
    ++up, la /= 7, lb /= 7;
  return 2 * up + 1;
}

Topology parse(const std::string &text) {
  return parse_topology(text, "topo.txt", 8);
}

} // namespace

TEST_CASE("up to one switch's ports: one crossbar, node i on port i") {
  Topology t = make_topology(8, 8);
  CHECK(t.switches == 1);
  CHECK(t.cables.size() == 8);
  CHECK(t.route(3, 5) == Bytes{5});
  CHECK(t.route(5, 3) == Bytes{3});
  Topology one = make_topology(1, 8);
  CHECK(one.switches == 1);
  one.validate();
}

TEST_CASE("generated networks validate for 1..100 and 1024 nodes") {
  for (uint32_t n = 1; n <= 100; ++n) {
    CAPTURE(n);
    Topology t = make_topology(n, 8);
    CHECK(t.nodes == n);
    CHECK(t.ports_per_switch == 8);
    CHECK_NOTHROW(t.validate());
  }
  CHECK_NOTHROW(make_topology(1024, 8).validate());
}

TEST_CASE("beyond one switch: a tree of 7-down, 1-up switches") {
  Topology t16 = make_topology(16, 8);
  CHECK(t16.switches == 4); // 3 leaves and the root
  CHECK(t16.cables.size() == 16 + 3);
  CHECK(t16.route(0, 1) == Bytes{1});
  CHECK(t16.route(0, 15) == Bytes{7, 2, 1});
  CHECK(t16.route(15, 0) == Bytes{7, 0, 0});
  Topology t64 = make_topology(64, 8);
  CHECK(t64.switches == 10 + 2 + 1);
  CHECK(t64.route(0, 63) == Bytes{7, 7, 1, 2, 0});
  Topology t1024 = make_topology(1024, 8);
  CHECK(t1024.switches == 147 + 21 + 3 + 1);
  CHECK(t1024.route(0, 1023) == Bytes{7, 7, 7, 2, 6, 6, 1});
}

TEST_CASE("route lengths on generated trees, every pair") {
  for (uint32_t nodes : {9u, 16u, 64u, 100u, 1024u}) {
    CAPTURE(nodes);
    Topology t = make_topology(nodes, 8);
    size_t longest = 0;
    for (uint32_t a = 0; a < nodes; ++a) {
      std::vector<Bytes> routes = t.routes_from(a);
      REQUIRE(routes.size() == nodes);
      CHECK(routes[a].empty());
      for (uint32_t b = 0; b < nodes; ++b) {
        if (a == b)
          continue;
        if (routes[b].size() != tree_route_length(nodes, a, b))
          FAIL_CHECK("route " << a << " -> " << b);
        longest = std::max(longest, routes[b].size());
      }
    }
    CHECK(longest == 2 * tree_height(nodes) + 1);
    CHECK(t.routes_from(nodes / 3)[nodes - 1] == t.route(nodes / 3, nodes - 1));
  }
}

TEST_CASE("routes: shortest first, then the lowest port") {
  // s0 reaches s1 directly on port 5, or through s2 (port 1) or s3 (port 3).
  Topology t = parse(R"(switches 4
nodes 2
node 0 s0:0
node 1 s1:0
cable s0:3 s3:0
cable s3:1 s1:3
cable s0:1 s2:0
cable s2:1 s1:1
cable s0:5 s1:5
)");
  CHECK(t.route(0, 1) == Bytes{5, 0});
  t.cables.pop_back(); // without the direct cable: two equal paths
  CHECK(t.route(0, 1) == Bytes{1, 1, 0});
  CHECK(t.route(1, 0) == Bytes{1, 0, 0});
}

TEST_CASE("route errors") {
  Topology t = make_topology(4, 8);
  CHECK_THROWS_WITH_AS(
      t.route(3, 3),
      "route: from node 3 to itself (a node needs no route to itself)", Error);
  CHECK_THROWS_WITH_AS(t.route(0, 4),
                       "route: node 4 does not exist (the topology has 4 "
                       "nodes)",
                       Error);
}

TEST_CASE("two nodes back to back need no route bytes") {
  Topology t = parse("switches 0\nnodes 2\ncable n0 n1\n");
  CHECK(t.route(0, 1).empty());
  CHECK(t.routes_from(1)[0].empty());
}

TEST_CASE("make_topology refuses what it cannot build") {
  CHECK_THROWS_WITH_AS(make_topology(0, 8),
                       "make_topology: a topology needs at least one node",
                       Error);
  CHECK_THROWS_AS(make_topology(4, 0), Error);
  CHECK_THROWS_AS(make_topology(4, 300), Error);
  CHECK_THROWS_AS(make_topology(3, 2), Error);
  CHECK_NOTHROW(make_topology(100, 3).validate());
}

TEST_CASE("validate names the cable at fault") {
  Topology t = make_topology(4, 8);
  t.cables[2].second.port = 9;
  CHECK_THROWS_WITH_AS(
      t.validate(),
      "topology: cable 2: port s0:9 does not exist (switches have 8 ports)",
      Error);
  t = make_topology(4, 8);
  t.cables[3].second.port = 0;
  CHECK_THROWS_WITH_AS(t.validate(),
                       "topology: cable 3: port s0:0 is already cabled "
                       "(cable 0)",
                       Error);
}

TEST_CASE("a topology file: comments, node and cable lines") {
  Topology t = parse(R"(# two switches, three nodes
ports 8
switches 2   # s0 and s1
nodes 3

node 0 s0:0
node 1 s0:1
cable s1:4 n2
cable s0:7 s1:7
)");
  CHECK(t.nodes == 3);
  CHECK(t.switches == 2);
  REQUIRE(t.cables.size() == 4);
  CHECK(t.cables[2].first.is_switch);
  CHECK(t.cables[2].first.index == 1);
  CHECK(t.cables[2].first.port == 4);
  CHECK(!t.cables[2].second.is_switch);
  CHECK(t.cables[2].second.index == 2);
  CHECK(t.route(0, 2) == Bytes{7, 4});
  CHECK(t.route(2, 1) == Bytes{7, 1});
}

TEST_CASE("topology file errors name the line") {
  const std::string head = "switches 2\nnodes 3\n";
  const std::string cabled = head + "node 0 s0:0\nnode 1 s0:1\nnode 2 s1:0\n";
  auto error = [](const std::string &text) {
    try {
      parse(text);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error(head + "node 0 s0:9\n") ==
        "topo.txt:3: port s0:9 does not exist (switches have 8 ports)");
  CHECK(error(head + "node 0 s2:1\n") ==
        "topo.txt:3: switch s2 does not exist (the topology has 2 switches)");
  CHECK(error(head + "cable n3 s0:1\n") ==
        "topo.txt:3: node n3 does not exist (the topology has 3 nodes)");
  CHECK(error(head + "node 0 s0:1\n# x\ncable s0:1 s1:1\n") ==
        "topo.txt:5: port s0:1 is already cabled (line 3)");
  CHECK(error(head + "node 0 s0:1\nnode 0 s1:1\n") ==
        "topo.txt:4: node n0 is already cabled (line 3)");
  CHECK(error(head + "cable s0:1 s0:2\n") ==
        "topo.txt:3: cable s0:1 s0:2 connects switch s0 to itself");
  CHECK(error(head + "cable s1:1 s1:1\n") ==
        "topo.txt:3: cable s1:1 s1:1 connects a port to itself");
  CHECK(error(head + "cable s0:1 x1\n") ==
        "topo.txt:3: 'x1' is not an endpoint (expected s<switch>:<port> or "
        "n<node>)");
  CHECK(error(head + "node x s0:1\n") ==
        "topo.txt:3: expected 'node <number> s<switch>:<port>'");
  CHECK(error(head + "cable s0:1\n") ==
        "topo.txt:3: expected 'cable <endpoint> <endpoint>'");
  CHECK(error("switches two\n") == "topo.txt:1: 'two' is not a number");
  CHECK(error("switches\n") == "topo.txt:1: expected 'switches <count>'");
  CHECK(error(head + "nodes 4\n") ==
        "topo.txt:3: 'nodes' given twice (line 2)");
  CHECK(error("nodes 2\nnode 0 s0:0\n") ==
        "topo.txt:2: cables must come after 'switches' and 'nodes'");
  CHECK(error(cabled + "ports 8\n") ==
        "topo.txt:6: 'ports' must come before the cables");
  CHECK(error("ports 16\n") ==
        "topo.txt:1: the file is for 16-port switches, the model's have 8");
  CHECK(error("switchs 2\n") ==
        "topo.txt:1: unknown statement 'switchs' (expected ports, switches, "
        "nodes, node or cable)");
  CHECK(error("nodes 0\n") == "topo.txt:1: a topology needs at least one node");
  CHECK(error("switches 2\n\n") == "topo.txt:2: the file has no 'nodes' line");
  CHECK(error("") == "topo.txt:1: the file has no 'nodes' line");
  CHECK(error(head + "node 0 s0:0\nnode 2 s1:0\n") ==
        "topo.txt:2: node 1 is not cabled");
  CHECK(error(cabled) == "topo.txt:5: node 2 cannot reach node 0");
  CHECK(error("switches 3\nnodes 2\nnode 0 s0:0\nnode 1 s0:1\n") ==
        "topo.txt:1: switch s1 has no cables");
  CHECK(error("switches 3\nnodes 2\nnode 0 s0:0\nnode 1 s0:1\n"
              "cable s1:0 s2:0\n") ==
        "topo.txt:5: switch s1 cannot reach node 0");
  CHECK(error(cabled + "cable s0:7 s1:7\n") == "no error");
}

TEST_CASE("read_topology reads a file and names it in errors") {
  auto path = std::filesystem::temp_directory_path() / "nicemu_topo_test.txt";
  {
    std::ofstream out(path);
    out << "switches 1\nnodes 2\nnode 0 s0:0\nnode 1 s0:9\n";
  }
  CHECK_THROWS_WITH_AS(
      read_topology(path.string(), 8),
      (path.string() + ":4: port s0:9 does not exist (switches have 8 ports)")
          .c_str(),
      Error);
  {
    std::ofstream out(path);
    out << "switches 1\nnodes 2\nnode 0 s0:0\nnode 1 s0:1\n";
  }
  CHECK(read_topology(path.string(), 8).route(1, 0) == Bytes{0});
  std::filesystem::remove(path);
  CHECK_THROWS_AS(read_topology(path.string(), 8), Error);
}

namespace {

// `switches` switches in a line, node 0 on the first, node 1 on the last.
std::string chain(uint32_t switches) {
  std::string text = "switches " + std::to_string(switches) +
                     "\nnodes 2\nnode 0 s0:0\nnode 1 s" +
                     std::to_string(switches - 1) + ":0\n";
  for (uint32_t s = 0; s + 1 < switches; ++s)
    text +=
        "cable s" + std::to_string(s) + ":1 s" + std::to_string(s + 1) + ":2\n";
  return text;
}

} // namespace

TEST_CASE("the longest route is found without walking every pair "
          "(issue 23.9)") {
  CHECK(!parse(chain(8)).route_longer_than(8));
  auto r = parse(chain(12)).route_longer_than(8);
  REQUIRE(r);
  CHECK(r->from == 0);
  CHECK(r->to == 1);
  CHECK(r->bytes == 12);
  CHECK(r->bytes == parse(chain(12)).route(0, 1).size());
  // Generated networks: 7 bytes up to 2744 nodes, 8 with two centres up
  // to 4802, 9 beyond.
  CHECK(!make_topology(2744, 8).route_longer_than(8));
  CHECK(!make_topology(1024, 8).route_longer_than(7));
  CHECK(make_topology(2745, 8).route_longer_than(7));
  CHECK(!make_topology(2745, 8).route_longer_than(8));
  CHECK(!make_topology(4802, 8).route_longer_than(8));
  auto big = make_topology(4803, 8).route_longer_than(8);
  REQUIRE(big);
  CHECK(big->bytes == 9);
  CHECK(big->from == 0);
  // Back to back: no switch, no route bytes.
  CHECK(!parse("switches 0\nnodes 2\ncable n0 n1\n").route_longer_than(0));
}

TEST_CASE("a tall tree becomes two centres where that shortens routes: "
          "4096 nodes on 8-port switches fit the route table") {
  Topology t = make_topology(4096, 8);
  t.validate();
  // Each half: 293 leaves of 7 nodes (the last with 4), 42 and 6 switches
  // above them, and its centre: 342 switches, the first half first.
  CHECK(t.switches == 684);
  const uint32_t a = 341, b = 683; // the centres
  size_t centre_cables = 0;
  bool joined = false;
  for (const auto &[x, y] : t.cables) {
    if (x.is_switch && y.is_switch &&
        ((x.index == a && y.index == b) || (x.index == b && y.index == a))) {
      joined = true;
      CHECK(x.port == 7);
      CHECK(y.port == 7);
    }
    centre_cables += (x.is_switch && (x.index == a || x.index == b)) +
                     (y.is_switch && (y.index == a || y.index == b));
  }
  CHECK(joined);
  CHECK(centre_cables == 2 * 6 + 2); // 6 children each, and their cable
  // Within a half: up 3 levels and down (7 bytes); across: 8.
  CHECK(t.route(0, 2047).size() == 7);
  CHECK(t.route(0, 2048) == Bytes{7, 7, 7, 7, 0, 0, 0, 0});
  CHECK(t.route(4095, 0).size() == 8);
  CHECK(!t.route_longer_than(8));
  // Shorter trees keep their shape (figures were measured on them): up to
  // four levels, one root, although two centres would shorten some.
  for (uint32_t nodes : {64u, 98u, 1024u, 2744u}) {
    CAPTURE(nodes);
    Topology same = make_topology(nodes, 8);
    CHECK(same.route(0, nodes - 1).size() == 2 * tree_height(nodes) + 1);
  }
  // Beyond two centres' reach one root is shorter again (9 bytes, not 10).
  CHECK(make_topology(4803, 8).route(0, 4802).size() == 9);
}
