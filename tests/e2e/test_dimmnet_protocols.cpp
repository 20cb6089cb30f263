// End-to-end: the protocols on DIMMnet-1 (nicemu/dimmnet.h, docs/dimmnet.md
// "Protocols"): barrier, global sum, ring buffers and DIMM_Send/DIMM_Recv.
// tests/e2e/programs/dimmnet_protocols.cpp checks data on every rank; here
// every rank must say ok, and what ranks print is compared across them.
#include "bench_checks.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

using namespace e2e;

namespace {

CommandResult run_protocols(unsigned nodes, const std::string &model,
                            const std::vector<std::string> &args) {
  std::vector<std::string> cmd = {"run",
                                  "-n",
                                  std::to_string(nodes),
                                  "--model",
                                  model,
                                  "--firmware",
                                  NICEMU_DIMMNET_IMAGE,
                                  "--",
                                  NICEMU_DIMMNET_PROTOCOLS};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return nicemu(cmd);
}

CommandResult scenario(unsigned nodes, const std::vector<std::string> &args,
                       const std::string &model = "martini:D") {
  CommandResult r = run_protocols(nodes, model, args);
  INFO(r);
  CHECK(r.status == 0);
  for (unsigned rank = 0; rank < nodes; ++rank)
    CHECK(contains(r.out,
                   "rank " + std::to_string(rank) + ": " + args[0] + ": ok\n"));
  return r;
}

// "rank R: counters ..." of rank `rank`.
std::string counters(const CommandResult &r, unsigned rank) {
  for (const std::string &line : lines_with(r.out, "counters"))
    if (line.rfind("rank " + std::to_string(rank) + ":", 0) == 0)
      return line.substr(line.find("counters"));
  return "";
}

} // namespace

TEST_CASE("DIMMnet protocols: barriers on 2, 3, 8, 9 and 64 nodes: nobody "
          "leaves before the last arrives") {
  for (unsigned nodes : {2u, 3u, 8u, 9u, 64u}) {
    CAPTURE(nodes);
    CommandResult r = scenario(nodes, {"barrier"});
    std::map<int, double> last_in, first_out;
    std::map<int, int> seen;
    for (const std::string &line : lines_with(r.out, ": barrier ")) {
      int rank = 0, k = 0;
      double enter = 0, exit = 0;
      if (std::sscanf(line.c_str(), "rank %d: barrier %d enter %lf exit %lf",
                      &rank, &k, &enter, &exit) != 4)
        continue;
      last_in[k] = std::max(last_in[k], enter);
      first_out[k] = seen[k] ? std::min(first_out[k], exit) : exit;
      ++seen[k];
    }
    REQUIRE(seen.size() == 5);
    for (const auto &[k, count] : seen) {
      CAPTURE(k);
      CHECK(count == int(nodes));
      CHECK(last_in[k] <= first_out[k]);
    }
  }
}

TEST_CASE("DIMMnet protocols: global sums, minima and maxima of four types "
          "are the same bits on every rank, and the tree order's") {
  for (unsigned nodes : {2u, 3u, 8u, 9u, 64u}) {
    CAPTURE(nodes);
    CommandResult r = scenario(nodes, {"allreduce"});
    // The program checks each result against its own reference; here all
    // ranks must print the same bits.
    std::map<std::string, std::set<std::string>> results;
    for (const std::string &line : lines_with(r.out, ": allreduce ")) {
      size_t at = line.find("allreduce ");
      size_t eq = line.find(" = ");
      if (eq == std::string::npos)
        continue;
      results[line.substr(at, eq - at)].insert(line.substr(eq + 3));
    }
    CHECK(results.size() == 12); // 4 types x 3 operations
    for (const auto &[what, values] : results) {
      CAPTURE(what);
      CHECK(values.size() == 1);
    }
  }
}

TEST_CASE("DIMMnet protocols: DIMM_Send and DIMM_Recv move every size class "
          "in both orders, intact") {
  // Sizes 0, 1, 8, 464, 465, 4 KiB, 4 KiB + 1, 64 KiB, 1 MiB, 1 MiB + 1,
  // each way, Recv first and Send first.
  CommandResult r = scenario(2, {"sendrecv"});
  // Per rank: 10 announcements each way; BOTF for 1, 8 and 464 bytes; PUSH
  // above (1 MiB and 1 MiB + 1 in two rounds: the receive area holds 255
  // buffers of 4 KiB); every later Recv pulls; four multi-round messages.
  for (unsigned rank : {0u, 1u})
    CHECK(counters(r, rank) ==
          "counters sends_first 10 recvs_first 10 botf 3 push 8 pull 11 "
          "multi 4 registered 2");
}

TEST_CASE("DIMMnet protocols: multi-round transfers through small receive "
          "areas, by PUSH and by BOTF pieces") {
  CommandResult push = scenario(2, {"sendrecv", "--mode", "push", "--buffers",
                                    "3", "--sizes", "0,465,12288,12289,40000"});
  // 12289 bytes need 2 rounds of 3 buffers, 40000 bytes 4.
  for (unsigned rank : {0u, 1u})
    CHECK(counters(push, rank) ==
          "counters sends_first 5 recvs_first 5 botf 0 push 8 pull 8 multi 4 "
          "registered 2");
  CommandResult botf = scenario(2, {"sendrecv", "--mode", "botf", "--buffers",
                                    "1", "--sizes", "1,4096,4097,9000"});
  for (unsigned rank : {0u, 1u})
    CHECK(counters(botf, rank) ==
          "counters sends_first 4 recvs_first 4 botf 7 push 0 pull 7 multi 4 "
          "registered 2");
}

TEST_CASE("DIMMnet protocols: dynamic registration: the first announcement "
          "goes to the receiving card's core") {
  CommandResult r =
      scenario(2, {"sendrecv", "--dynamic", "--sizes", "0,1,464,465,70000"});
  // The flag region's head counts the ranks the core registered: the one
  // peer (a static region counts both ranks from the start).
  for (unsigned rank : {0u, 1u})
    CHECK(counters(r, rank) ==
          "counters sends_first 5 recvs_first 5 botf 2 push 2 pull 4 multi 0 "
          "registered 1");
}

TEST_CASE("DIMMnet protocols: the receive-status address replaces the "
          "separate completion notice where the model has it") {
  scenario(2, {"sendrecv", "--status", "--sizes", "0,1,464,465,4097,300000"},
           "martini:SR-status");
  scenario(2,
           {"sendrecv", "--status", "--mode", "botf", "--buffers", "2",
            "--sizes", "5,9000"},
           "martini:SR-status");
  // Without the model option the library says why it cannot.
  CommandResult r = run_protocols(2, "martini:SR", {"sendrecv", "--status"});
  CHECK(r.status != 0);
  CHECK(contains(r.out, "otf.status_address"));
}

TEST_CASE("DIMMnet protocols: Send/Recv around a ring of 9 nodes through "
          "switches") {
  scenario(9, {"neighbours"});
}

TEST_CASE("DIMMnet protocols: a ring buffer streams through wrap-around, "
          "full and empty, losing and repeating nothing") {
  CommandResult r = scenario(2, {"ring"});
  for (unsigned rank : {0u, 1u}) {
    unsigned stalls = 0;
    for (const std::string &line : lines_with(r.out, "ring stalls"))
      if (line.rfind("rank " + std::to_string(rank) + ":", 0) == 0)
        std::sscanf(line.c_str(), "%*[^s]stalls %u", &stalls);
    CAPTURE(rank);
    CHECK(stalls > 0); // the producer found it full, the consumer empty
  }
}

TEST_CASE("DIMMnet protocols: bad arguments and too-large messages are "
          "refused with a message, and the pair stays in step") {
  CommandResult r = scenario(2, {"errors"});
  CHECK(contains(r.out, "is larger than the buffer"));
}

TEST_CASE("DIMMnet protocols: nodes in different process groups cannot open "
          "them together") {
  CommandResult r = scenario(2, {"pgid"});
  CHECK(contains(r.out, "same process group"));
}

// Each rank's lines in order, and the run's summary (ranks' lines may
// interleave differently in the output).
std::string by_rank(const CommandResult &r) {
  std::vector<std::string> lines = lines_with(r.out, "rank ");
  std::stable_sort(lines.begin(), lines.end(),
                   [](const std::string &a, const std::string &b) {
                     return a.substr(0, a.find(':')) < b.substr(0, b.find(':'));
                   });
  std::string all = run_summary(r.err);
  for (const std::string &line : lines)
    all += line + "\n";
  return all;
}

TEST_CASE("DIMMnet protocols: the same run gives the same times") {
  auto run = [] {
    return by_rank(run_protocols(9, "martini:D", {"barrier"})) +
           by_rank(run_protocols(2, "martini:D",
                                 {"sendrecv", "--sizes", "1,465,5000"}));
  };
  std::string a = run(), b = run();
  CHECK(contains(a, "virtual time"));
  CHECK(contains(a, "barrier 4 enter"));
  CHECK(a == b);
}

// nicemu bench dimmnet's protocol figures (virtual time: exact relations),
// and nicemu plot draws their curves.
TEST_CASE("DIMMnet protocols: nicemu bench dimmnet --json, and its plot") {
  TempDir dir;
  CommandResult r = nicemu({"bench", "dimmnet", "--quick", "--setup", "D",
                            "--no-interrupt", "--json"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  double rtt = j["setups"][0]["rtt_us"].get<double>();
  // Set-up D on 2 and 8 nodes. On two nodes a barrier is one AOTF byte up
  // and the root's back: the AOTF round trip.
  REQUIRE(j["collectives"].size() == 2);
  const nlohmann::json &two = j["collectives"][0], &eight = j["collectives"][1];
  CHECK(two["nodes"] == 2);
  CHECK(two["barrier_us"].get<double>() == doctest::Approx(rtt).epsilon(0.01));
  CHECK(eight["barrier_us"].get<double>() > two["barrier_us"].get<double>());
  // A global sum sends a value before the flag: it costs more than a
  // barrier; the host adds for free, so the four types cost the same.
  for (const nlohmann::json *k : {&two, &eight}) {
    const nlohmann::json &a = (*k)["allreduce_us"];
    CHECK(a["double"].get<double>() > (*k)["barrier_us"].get<double>());
    CHECK(a["unsigned"] == a["double"]);
    CHECK(a["float"] == a["unsigned_long_long"]);
  }
  // The curve reaches 64 nodes and grows with them.
  const nlohmann::json &curve = j["collective_curve"];
  REQUIRE(curve.size() == 3);
  CHECK(curve[2]["nodes"] == 64);
  CHECK(curve[2]["barrier_us"].get<double>() >
        curve[1]["barrier_us"].get<double>());
  // DIMM_Send/DIMM_Recv in set-ups SR and SR-status.
  REQUIRE(j["sendrecv"].size() == 2);
  const nlohmann::json &sr = j["sendrecv"][0], &st = j["sendrecv"][1];
  CHECK(sr["setup"] == "SR");
  CHECK(st["receive_status"] == true);
  REQUIRE(sr["messages"].size() == 10); // 4 bytes to 64 KiB
  CHECK(sr["messages"][0]["bytes"] == 4);
  for (const auto &m : sr["messages"]) {
    CAPTURE(m.dump());
    // Each path takes longer for more bytes than the link moves in the
    // time (500 MB/s): no path is faster than the wire.
    for (const char *path :
         {"recv_first_botf_us", "recv_first_push_us", "send_first_pull_us"})
      CHECK(m[path].get<double>() * 500 > m["bytes"].get<double>());
  }
  // The receive status saves the PUSH's ACK and the separate notice.
  CHECK(st["messages"][0]["recv_first_push_us"].get<double>() + 1 <
        sr["messages"][0]["recv_first_push_us"].get<double>());
  // Send first: the same PULL path either way.
  CHECK(st["messages"][5]["send_first_pull_us"].get<double>() ==
        doctest::Approx(sr["messages"][5]["send_first_pull_us"].get<double>())
            .epsilon(0.05));

  // Every part present validates against the schema; the plot has set-up
  // D's bandwidth, the collectives and DIMM_Send/DIMM_Recv of SR and
  // SR-status.
  std::string json = check_bench_schema(dir, r.out, "dimmnet");
  std::string text = check_plot(dir, json, 4);
  CHECK(contains(text, "barrier and global sum"));
  CHECK(contains(text, "Recv first, PUSH"));
  CHECK(contains(text, ":SR-status)"));
}
