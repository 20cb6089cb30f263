// End-to-end: DIMMnet-1 (the martini card, dimmnet firmware) driven by host
// programs through nicemu/dimmnet.h. tests/e2e/programs/dimmnet_checks.cpp
// runs one scenario per run and checks its data byte by byte; here every
// rank must say ok. Then the ping-pong example, its figures per set-up, and
// determinism.
#include "bench_checks.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

using namespace e2e;

namespace {

CommandResult run_dimmnet(unsigned nodes, const std::string &model,
                          const std::vector<std::string> &program,
                          const std::vector<std::string> &extra = {}) {
  std::vector<std::string> args = {
      "run", "-n",         std::to_string(nodes), "--model",
      model, "--firmware", NICEMU_DIMMNET_IMAGE};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--");
  args.insert(args.end(), program.begin(), program.end());
  return nicemu(args);
}

void scenario(const std::string &name, unsigned nodes = 2,
              const std::string &model = "martini:D", unsigned per_node = 1) {
  CommandResult r = run_dimmnet(nodes, model, {NICEMU_DIMMNET_CHECKS, name},
                                {"--procs-per-node", std::to_string(per_node)});
  INFO(r);
  CHECK(r.status == 0);
  for (unsigned rank = 0; rank < nodes * per_node; ++rank)
    CHECK(contains(r.out,
                   "rank " + std::to_string(rank) + ": " + name + ": ok\n"));
}

// The round trip the ping-pong example prints, in microseconds.
double round_trip_us(const CommandResult &r) {
  double rtt = -1;
  for (const std::string &line : lines_with(r.out, "aotf ping-pong:"))
    std::sscanf(line.c_str(),
                "aotf ping-pong: %*d round trips of 8 bytes, round trip %lf",
                &rtt);
  return rtt;
}

} // namespace

TEST_CASE("DIMMnet: AOTF stores of 1, 2, 4 and 8 bytes land exactly") {
  scenario("aotf");
}

TEST_CASE("DIMMnet: BOTF packets of 1-464 bytes, and window reuse rules") {
  scenario("botf");
}

TEST_CASE("DIMMnet: HTLB hits, misses refilled by the firmware, rejects") {
  scenario("htlb");
}

TEST_CASE("DIMMnet: transaction credits run out, hold the host, come back") {
  scenario("credits");
}

// Two host processes per node, in two process groups.
TEST_CASE("DIMMnet: the receiver drops out-of-region packets, and one "
          "group cannot reach another's") {
  scenario("protection", 2, "martini:D", 2);
}

TEST_CASE("DIMMnet: several processes per node need a card that allows "
          "them") {
  CommandResult r =
      nicemu({"run", "-n", "2", "--procs-per-node", "2", "--model", "lanai4",
              "--firmware", firmware("hello.img"), "--", "/bin/true"});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.err, "--procs-per-node needs a host program and a card "
                        "that several processes share (martini, comet)"));
}

TEST_CASE("DIMMnet: PUSH and PULL between SO-DIMM banks and LLCM") {
  scenario("rdma");
}

TEST_CASE("DIMMnet: command packets run firmware handlers") {
  scenario("commands");
}

TEST_CASE("DIMMnet: the receive-status address, as a model option") {
  TempDir dir;
  std::string text =
      read_text(fs::path(NICEMU_SOURCE_DIR) / "emulator/models/martini.toml");
  const std::string off = "status_address = 0";
  REQUIRE(text.find(off) != std::string::npos);
  text.replace(text.find(off), off.size(), "status_address = 1");
  fs::path model = dir.path() / "martini-status.toml";
  write_bytes(model, std::vector<uint8_t>(text.begin(), text.end()));
  scenario("status", 2, model.string() + ":D");
}

TEST_CASE("DIMMnet: eight nodes through RHiNET-2/SW switches, and "
          "interrupt-AOTF") {
  scenario("ring", 8);
  scenario("ring", 2, "martini:SR"); // two nodes through one switch
}

TEST_CASE("DIMMnet: a packet to its own node turns around") {
  scenario("loopback", 1);
}

TEST_CASE("DIMMnet: the library refuses a card that is not DIMMnet") {
  CommandResult r =
      nicemu({"run", "-n", "1", "--model", "lanai4", "--firmware",
              firmware("hello.img"), "--", NICEMU_DIMMNET_CHECKS, "loopback"});
  INFO(r);
  CHECK(r.status != 0);
  CHECK(contains(r.out, "dimm_open: no DIMMnet card"));
}

// The example of the README; the set-ups differ in link, clocks and host
// CPU, and the round trip follows: the slower SWIF clock and link of the
// electrical set-ups, the 66 MHz DIMM clock, the Pentium 4's dearer loads.
TEST_CASE("DIMMnet: the AOTF ping-pong example in set-ups A-F") {
  std::map<std::string, double> rtt;
  for (const char *setup : {"A", "B", "C", "D", "E", "F"}) {
    CommandResult r = run_dimmnet(2, std::string("martini:") + setup,
                                  {NICEMU_AOTF_PINGPONG, "200"});
    INFO(r);
    REQUIRE(r.status == 0);
    rtt[setup] = round_trip_us(r);
    CHECK(rtt[setup] > 1.0);
    CHECK(rtt[setup] < 4.0);
  }
  CHECK(rtt["C"] > rtt["D"]); // DIMM 66 MHz against 100 MHz
  CHECK(rtt["E"] > rtt["D"]); // Pentium 4 loads cost more
}

// The library answers a polling loop's loads itself while the card says
// LLCM cannot change: the same figures, far fewer round trips.
TEST_CASE("DIMMnet: polling loads answered by the library change nothing") {
  TempDir dir;
  std::string out[2];
  size_t loads[2] = {0, 0};
  for (int cached = 0; cached < 2; ++cached) {
    std::string trace = dir.file("t" + std::to_string(cached) + ".json");
    std::vector<std::string> args = {"run",
                                     "-n",
                                     "2",
                                     "--model",
                                     "martini:E",
                                     "--firmware",
                                     NICEMU_DIMMNET_IMAGE,
                                     "--trace",
                                     trace,
                                     "--",
                                     "env",
                                     std::string("NICEMU_DIMMNET_LOAD_CACHE=") +
                                         (cached ? "1" : "0"),
                                     NICEMU_AOTF_PINGPONG,
                                     "300"};
    CommandResult r = nicemu(args);
    INFO(r);
    REQUIRE(r.status == 0);
    out[cached] = r.out + run_summary(r.err);
    std::string text = read_text(trace);
    for (size_t at = 0;
         (at = text.find("\"LlcmLoad\"", at)) != std::string::npos; ++at)
      ++loads[cached];
  }
  CHECK(out[0] == out[1]);
  CHECK(loads[0] > 3000); // ~12 loads a round trip
  CHECK(loads[1] * 2 < loads[0]);
}

// --pcap on DIMMnet-1 links: link type USER1, and the Wireshark dissector
// decodes every packet's header (tools/wireshark/nicemu.lua).
TEST_CASE("DIMMnet: packet captures decode in Wireshark") {
  TempDir dir;
  fs::path caps = dir.path() / "caps";
  CommandResult r = run_dimmnet(2, "martini:D", {NICEMU_DIMMNET_CHECKS, "rdma"},
                                {"--pcap", caps.string()});
  INFO(r);
  REQUIRE(r.status == 0);
  fs::path file = caps / "link-node0-node1.pcap";
  std::vector<uint8_t> b = read_bytes(file);
  REQUIRE(b.size() > 24);
  CHECK(le32(b, 20) == 148u); // LINKTYPE_USER1
  auto tshark = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"-r", file.string(), "-X",
                                    "lua_script:" NICEMU_WIRESHARK_LUA};
    all.insert(all.end(), args.begin(), args.end());
    CommandResult t = run_command(find_tshark(), all);
    CHECK_MESSAGE(!contains(t.err, "Lua"), "tshark:\n" << t);
    return t;
  };
  CommandResult bad =
      tshark({"-Y", "_ws.malformed || _ws.expert.severity >= error"});
  INFO(bad);
  CHECK(bad.status == 0);
  CHECK(bad.out.empty());
  CommandResult fields =
      tshark({"-T", "fields", "-E", "separator=,", "-e", "dimmnet.command",
              "-e", "dimmnet.length", "-e", "nicemu.crc_good"});
  INFO(fields);
  REQUIRE(fields.status == 0);
  std::set<unsigned> commands;
  size_t rows = 0;
  std::istringstream in(fields.out);
  for (std::string row; std::getline(in, row); ++rows) {
    unsigned command = 99, length = 0;
    char good[16] = {};
    REQUIRE_MESSAGE(
        std::sscanf(row.c_str(), "%x,%u,%15s", &command, &length, good) == 3,
        "not decoded: " << row);
    CHECK((std::string(good) == "1" || std::string(good) == "True"));
    commands.insert(command);
  }
  CHECK(rows > 20);
  // WRITE, PUSH, ACK, PULL and PULL_DATA all crossed the cable.
  CHECK(commands == std::set<unsigned>{0, 1, 2, 3, 4});
  // Source and Destination columns: the header's nodes, the two ends.
  CommandResult ends = tshark({"-T", "fields", "-E", "separator=,", "-e",
                               "dimmnet.source", "-e", "dimmnet.dest", "-e",
                               "_ws.col.Source", "-e", "_ws.col.Destination"});
  REQUIRE(ends.status == 0);
  std::istringstream lines(ends.out);
  std::set<std::string> pairs;
  for (std::string row; std::getline(lines, row);)
    pairs.insert(row);
  CHECK(pairs ==
        std::set<std::string>{"0,1,node 0,node 1", "1,0,node 1,node 0"});
}

TEST_CASE("DIMMnet: the same run gives the same figures and packets") {
  TempDir dir;
  std::string out[2];
  std::vector<uint8_t> capture[2];
  for (int i = 0; i < 2; ++i) {
    fs::path caps = dir.path() / ("caps" + std::to_string(i));
    CommandResult r = run_dimmnet(2, "martini:B", {NICEMU_AOTF_PINGPONG, "50"},
                                  {"--pcap", caps.string()});
    INFO(r);
    REQUIRE(r.status == 0);
    out[i] = r.out + run_summary(r.err);
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(caps))
      files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path &f : files) {
      std::vector<uint8_t> b = read_bytes(f);
      capture[i].insert(capture[i].end(), b.begin(), b.end());
    }
  }
  CHECK(out[0] == out[1]);
  CHECK(!capture[0].empty());
  CHECK(capture[0] == capture[1]);
}

// nicemu bench dimmnet: its figures agree with each other and with the
// model (virtual time, so exact relations hold).
TEST_CASE("DIMMnet: nicemu bench dimmnet --json") {
  CommandResult r = nicemu({"bench", "dimmnet", "--quick", "--setup", "D",
                            "--json", "--no-collectives", "--no-sendrecv"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  CHECK(j["bench"] == "dimmnet");
  TempDir dir;
  check_bench_schema(dir, r.out, "dimmnet");
  REQUIRE(j["setups"].size() == 1);
  const nlohmann::json &d = j["setups"][0];
  CHECK(d["setup"] == "D");
  // The round trip the example measures, and one way is half of it.
  CHECK(d["rtt_us"].get<double>() == doctest::Approx(1.957).epsilon(0.002));
  CHECK(d["one_way_us"].get<double>() * 2 == d["rtt_us"].get<double>());
  // The stages add up to store-to-LLCM, which is less than one way.
  double sum = 0;
  for (const auto &st : d["stages"])
    sum += st["ns"].get<double>();
  CHECK(sum == doctest::Approx(d["store_to_llcm_ns"].get<double>()));
  CHECK(sum < d["one_way_us"].get<double>() * 1000);
  // Set-up D's stages: 4 SWIF cycles at 100 MHz, 7 receive-side ones, and
  // 256 ns for a padded 128-byte packet plus the 151 ns outside the SWIF.
  CHECK(d["stages"][3]["ns"].get<double>() == 40);
  CHECK(d["stages"][4]["ns"].get<double>() == 407);
  CHECK(d["stages"][5]["ns"].get<double>() == 70 + 3); // 7 cycles + edge
  // The host's costs are the set-up's (plus a share of the timer reads).
  CHECK(d["load_ns"].get<double>() == doctest::Approx(173.6).epsilon(0.01));
  CHECK(d["store_ns"].get<double>() == doctest::Approx(53.6).epsilon(0.01));
  // AOTF is held to one padded packet per 8 bytes; PUSH overtakes BOTF
  // above 4 KiB and nears the 500 MB/s link.
  const nlohmann::json &bw = d["bandwidth"];
  REQUIRE(bw.size() == 14);
  CHECK(bw[9]["bytes"] == 4096);
  CHECK(bw[9]["aotf_mb_per_s"].get<double>() < 8 / 0.256 + 1);
  CHECK(d["push_beats_botf_from_bytes"] == 8192);
  CHECK(bw[13]["push_mb_per_s"].get<double>() > 400);
  CHECK(bw[13]["push_mb_per_s"].get<double>() < 500);
  // Interrupt-AOTF costs the receiving core's handler on each word.
  const nlohmann::json &i = j["interrupt_aotf"];
  CHECK(i["setup"] == "SR");
  CHECK(i["interrupt_rtt_us"].get<double>() >
        i["aotf_rtt_us"].get<double>() + 1.0);
}
