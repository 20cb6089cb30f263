// End-to-end: Comet-FM (nicemu/fm.h) on the via firmware, comet model, 2
// and 3 nodes. tests/e2e/programs/fm_checks.c runs the scenarios; every rank
// prints "ok" or what failed, and what it sent to and received from each
// node (messages, bytes, a checksum of the bytes in order): here every rank
// must say ok and what one node sent must be what the other received. The
// frames on the wire are read back with tshark.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

using namespace e2e;

namespace {

CommandResult run_fm(unsigned nodes, const std::vector<std::string> &program,
                     const std::vector<std::string> &extra = {}) {
  std::vector<std::string> args = {
      "run",   "-n",         std::to_string(nodes), "--model",
      "comet", "--firmware", NICEMU_VIA_IMAGE};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--");
  args.insert(args.end(), program.begin(), program.end());
  return nicemu(args);
}

// Runs scenario `scenario` of fm_checks_prog on `nodes` nodes; every rank
// must report ok.
CommandResult checks(unsigned nodes, const std::string &scenario,
                     const std::vector<std::string> &extra = {}) {
  CommandResult r = run_fm(nodes, {NICEMU_FM_CHECKS, scenario}, extra);
  INFO(r);
  CHECK(r.status == 0);
  for (unsigned rank = 0; rank < nodes; ++rank)
    CHECK_MESSAGE(contains(r.out, "rank " + std::to_string(rank) + ": " +
                                      scenario + ": ok\n"),
                  "rank " << rank << " is not ok");
  CHECK(!contains(r.out, "failures"));
  return r;
}

// The message lengths of fm_checks' plan: message k has sizes[k % 8] bytes.
constexpr int kPlan[] = {0, 1, 3, 4, 5, 63, 1439, 1440};

long plan_bytes(int messages) {
  long bytes = 0;
  for (int k = 0; k < messages; ++k)
    bytes += kPlan[k % 8];
  return bytes;
}

struct Flow {
  unsigned src, dst;
  int messages;
  long bytes;
};

// "rank R: SCENARIO: from|to N: M messages, B bytes, sum 0x..." lines: the
// sender's "to" line and the receiver's "from" line of every flow agree,
// with the messages and bytes expected, and there are no other flows.
void same_tallies(const CommandResult &r, const std::string &scenario,
                  const std::vector<Flow> &flows) {
  INFO(r);
  // (rank, "from"/"to", peer) -> "M messages, B bytes, sum 0x..."
  std::map<std::tuple<unsigned, std::string, unsigned>, std::string> seen;
  for (const std::string &line : lines_with(r.out, scenario + ": ")) {
    unsigned rank = 0, peer = 0;
    char dir[8] = {};
    int at = -1;
    if (std::sscanf(line.c_str(), "rank %u: %*[a-z]: %7[a-z] %u: %n", &rank,
                    dir, &peer, &at) == 3 &&
        at > 0 && contains(line, " messages, "))
      seen[{rank, dir, peer}] = line.substr(size_t(at));
  }
  CHECK(seen.size() == 2 * flows.size());
  for (const Flow &f : flows) {
    CAPTURE(f.src);
    CAPTURE(f.dst);
    const std::string sent = seen[{f.src, "to", f.dst}];
    const std::string got = seen[{f.dst, "from", f.src}];
    CHECK(sent == got);
    int messages = -1;
    long bytes = -1;
    unsigned sum = 0;
    REQUIRE_MESSAGE(std::sscanf(got.c_str(), "%d messages, %ld bytes, sum %x",
                                &messages, &bytes, &sum) == 3,
                    "no tally of node " << f.dst << " from node " << f.src);
    CHECK(messages == f.messages);
    CHECK(bytes == f.bytes);
  }
}

// Every ordered pair of distinct nodes of `nodes`, `messages` plan messages.
std::vector<Flow> all_pairs(unsigned nodes, int messages) {
  std::vector<Flow> flows;
  for (unsigned s = 0; s < nodes; ++s)
    for (unsigned d = 0; d < nodes; ++d)
      if (s != d)
        flows.push_back({s, d, messages, plan_bytes(messages)});
  return flows;
}

// The number after `key` in the line of `text` that contains `needle`.
double figure(const std::string &text, const std::string &needle,
              const std::string &key) {
  std::vector<std::string> found = lines_with(text, needle);
  REQUIRE_MESSAGE(found.size() == 1, "no line with " << needle);
  size_t at = found[0].find(key);
  REQUIRE_MESSAGE(at != std::string::npos, "no " << key << " in " << found[0]);
  return std::stod(found[0].substr(at + key.size()));
}

} // namespace

TEST_CASE("FM: FM_initialize, node numbers, calls before it and after "
          "FM_finalize") {
  for (unsigned nodes : {2u, 3u}) {
    CAPTURE(nodes);
    CommandResult r = checks(nodes, "init");
    for (unsigned rank = 0; rank < nodes; ++rank)
      CHECK(contains(r.out, "rank " + std::to_string(rank) + ": init: node " +
                                std::to_string(rank) + " of " +
                                std::to_string(nodes) + "\n"));
    // A hello sent and one streamed from every node to every node, itself
    // included.
    std::vector<Flow> flows;
    for (unsigned s = 0; s < nodes; ++s)
      for (unsigned d = 0; d < nodes; ++d)
        flows.push_back({s, d, 2, 8});
    same_tallies(r, "init", flows);
  }
}

TEST_CASE("FM: FM_send of 0..1440 bytes from unaligned offsets: each "
          "message once, in order, from its sender") {
  for (unsigned nodes : {2u, 3u}) {
    CAPTURE(nodes);
    CommandResult r = checks(nodes, "sizes");
    // 4 rounds of the 8 sizes, each size from offsets 0..3.
    CHECK(plan_bytes(32) == 11820);
    same_tallies(r, "sizes", all_pairs(nodes, 32));
  }
}

TEST_CASE("FM: no handler runs while the program does not call FM") {
  CommandResult r = checks(2, "quiet");
  // The 5 messages and the goodbye were on the card, in its receive
  // buffers, before the program called FM_extract; then one call ran them.
  CHECK(contains(r.out, "rank 1: quiet: 6 frames on the card, then "
                        "FM_extract ran 6 handlers\n"));
  same_tallies(r, "quiet", {{0, 1, 5, plan_bytes(5)}});
}

TEST_CASE("FM: 100 FM_send_nw to a slow receiver: the card holds frames, "
          "nothing is lost") {
  CommandResult r = checks(2, "flow");
  same_tallies(r, "flow", {{0, 1, 100, plan_bytes(100)}});
  // The receiver starts 3 ms late: by then the card has filled the
  // library's 16 receive buffers and holds 2 more frames in its own two
  // receive buffers; one FM_extract runs the 16; none runs more.
  CHECK(contains(r.out, "ran 16 handlers (18 frames in), at most 16 per "
                        "call\n"));
  // The sender was held back: its FM_wait returned only after the receiver
  // began extracting (100 messages alone take 3.5 ms on the wire).
  double first = figure(r.out, "rank 1: flow: first FM_extract", " at ");
  double waited = figure(r.out, "rank 0: flow: FM_wait returned", " at ");
  CHECK(first >= 3000);
  CHECK(waited > first);
}

TEST_CASE("FM: two nodes FM_send to each other at once without deadlock") {
  CommandResult r = checks(2, "crossing");
  same_tallies(r, "crossing", all_pairs(2, 40));
  // 40 messages cannot all wait on the peer's card (16 receive buffers):
  // each node ran the other's handlers while its own FM_send waited.
  for (unsigned rank : {0u, 1u}) {
    double during = figure(r.out,
                           "rank " + std::to_string(rank) +
                               ": crossing: handlers run while FM_send waited",
                           "waited: ");
    CHECK(during > 0);
    CHECK(during <= 40);
  }
}

TEST_CASE("FM: 3 nodes, node 2 receives from 0 and 1 interleaved, each in "
          "order") {
  CommandResult r = checks(3, "fanin");
  same_tallies(r, "fanin",
               {{0, 2, 40, plan_bytes(40)}, {1, 2, 40, plan_bytes(40)}});
  std::vector<std::string> line =
      lines_with(r.out, "rank 2: fanin: arrival order ");
  REQUIRE(line.size() == 1);
  char order[128] = {};
  int switches = -1;
  REQUIRE(std::sscanf(line[0].c_str(),
                      "rank 2: fanin: arrival order %127[01], %d switches",
                      order, &switches) == 2);
  std::string o = order;
  CHECK(o.size() == 80);
  CHECK(std::count(o.begin(), o.end(), '0') == 40);
  CHECK(std::count(o.begin(), o.end(), '1') == 40);
  // Interleaved: both senders among the first half of the arrivals.
  std::string first_half = o.substr(0, 40);
  CHECK(std::count(first_half.begin(), first_half.end(), '0') > 0);
  CHECK(std::count(first_half.begin(), first_half.end(), '1') > 0);
  CHECK(switches >= 10);
}

TEST_CASE("FM: errors, FM_strerror's details, messages to a handler id "
          "with no handler are dropped and counted") {
  for (unsigned nodes : {2u, 3u}) {
    CAPTURE(nodes);
    CommandResult r = checks(nodes, "errors");
    std::vector<Flow> flows;
    for (unsigned s = 0; s < nodes; ++s) {
      flows.push_back({s, (s + 1) % nodes, 3, plan_bytes(3)});
      CHECK(contains(r.out,
                     "rank " + std::to_string(s) + ": errors: 2 dropped\n"));
    }
    same_tallies(r, "errors", flows);
  }
}

TEST_CASE("FM: packets to handler ids out of range, from a VIPL program, "
          "are dropped") {
  // Rank 0 sends FM packets of its own making on an FM-over-IP VI: handler
  // ids 256, 65535 and 1000 between three good messages.
  CommandResult r = checks(2, "foreign");
  CHECK(contains(r.out, "rank 1: foreign: 3 dropped\n"));
  same_tallies(r, "foreign", {{0, 1, 3, plan_bytes(3)}});
}

TEST_CASE("FM: send buffers in malloc'd, static and stack memory, "
          "FM_deregister") {
  CommandResult r = checks(2, "register");
  same_tallies(r, "register", all_pairs(2, 10));
}

TEST_CASE("FM: a handler that sends") {
  CommandResult r = checks(2, "reply");
  same_tallies(r, "reply", all_pairs(2, 40));
}

TEST_CASE("FM: streaming, read in other pieces than sent, piece and end "
          "errors") {
  CommandResult r = checks(2, "stream");
  // Streamed (S) and sent (D) messages run in the order sent.
  for (unsigned rank : {0u, 1u})
    CHECK(contains(r.out, "rank " + std::to_string(rank) +
                              ": stream: order SDSSDSSDSS\n"));
  // The bytes the stream handlers read: 1000 + 0 + 1440 + 1 + 5 + 10 (of a
  // 100-byte message) + 10, and 3 plan messages.
  same_tallies(
      r, "stream",
      {{0, 1, 10, 2466 + plan_bytes(3)}, {1, 0, 10, 2466 + plan_bytes(3)}});
}

// ---- The wire -------------------------------------------------------------

namespace {

// tshark on `file`, checking IPv4 and UDP checksums.
CommandResult tshark(const fs::path &file, std::vector<std::string> args) {
  static const std::string program = find_tshark();
  std::vector<std::string> all = {"-r", file.string(),
                                  "-o", "ip.check_checksum:TRUE",
                                  "-o", "udp.check_checksum:TRUE"};
  all.insert(all.end(), args.begin(), args.end());
  return run_command(program, all);
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  return lines;
}

// Records in a pcap file, counted independently of tshark.
size_t pcap_records(const fs::path &file) {
  std::vector<uint8_t> b = read_bytes(file);
  REQUIRE(b.size() >= 24);
  CHECK(le32(b, 20) == 1u); // LINKTYPE_ETHERNET
  size_t count = 0;
  for (size_t at = 24; at + 16 <= b.size(); ++count)
    at += 16 + le32(b, at + 8);
  return count;
}

std::vector<fs::path> captures(const fs::path &dir) {
  std::vector<fs::path> files;
  for (const auto &e : fs::directory_iterator(dir))
    files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

struct Frame {
  std::string protocols, ip_src, ip_dst;
  int ip_status = -1, udp_status = -1, ttl = -1, df = -1;
  unsigned src_port = 0, dst_port = 0, ip_len = 0, udp_len = 0;
};

// tshark's fields of every frame of `file`, and its expert information
// (-z expert: after the rows and an empty line, a section per severity, e.g.
// "Errors (1)"; nothing when there is nothing to say).
struct Decoded {
  std::vector<std::string> rows;
  std::string expert;
};

Decoded decode(const fs::path &file, const std::vector<std::string> &fields,
               const std::vector<std::string> &extra = {}) {
  std::vector<std::string> args = {"-T",          "fields", "-E",
                                   "separator=,", "-z",     "expert"};
  for (const std::string &f : fields) {
    args.push_back("-e");
    args.push_back(f);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  CommandResult r = tshark(file, args);
  INFO(r);
  REQUIRE(r.status == 0);
  Decoded d;
  std::vector<std::string> lines = lines_of(r.out);
  size_t i = 0;
  for (; i < lines.size() && !lines[i].empty(); ++i)
    d.rows.push_back(lines[i]);
  for (; i < lines.size(); ++i)
    d.expert += lines[i] + "\n";
  return d;
}

// Every frame of `file`: Ethernet/IPv4/UDP (nothing malformed), good
// checksums, from port 4815 to port 4815, TTL 64, don't-fragment; no expert
// error or warning.
std::vector<Frame> check_capture(const fs::path &file) {
  CAPTURE(file);
  Decoded d = decode(file, {"frame.protocols", "ip.checksum.status",
                            "udp.checksum.status", "udp.srcport", "udp.dstport",
                            "ip.src", "ip.dst", "ip.ttl", "ip.flags.df",
                            "ip.len", "udp.length"});
  INFO(d.expert);
  CHECK(!contains(d.expert, "Errors"));
  CHECK(!contains(d.expert, "Warns"));
  CHECK(!contains(d.expert, "Malformed"));
  std::vector<Frame> frames;
  for (const std::string &row : d.rows) {
    CAPTURE(row);
    Frame f;
    char protocols[64] = {}, src[32] = {}, dst[32] = {};
    REQUIRE(std::sscanf(row.c_str(),
                        "%63[^,],%d,%d,%u,%u,%31[^,],%31[^,],%d,%d,%u,%u",
                        protocols, &f.ip_status, &f.udp_status, &f.src_port,
                        &f.dst_port, src, dst, &f.ttl, &f.df, &f.ip_len,
                        &f.udp_len) == 11);
    f.protocols = protocols;
    f.ip_src = src;
    f.ip_dst = dst;
    CHECK(f.protocols == "eth:ethertype:ip:udp:data");
    // Wireshark's checksum statuses: 0 bad, 1 good, 2 unverified.
    CHECK(f.ip_status == 1);
    CHECK(f.udp_status == 1);
    CHECK(f.src_port == 4815);
    CHECK(f.dst_port == 4815);
    CHECK(f.ttl == 64);
    CHECK(f.df == 1);
    CHECK(f.ip_len == f.udp_len + 20);
    frames.push_back(f);
  }
  CHECK(frames.size() == pcap_records(file));
  return frames;
}

std::string node_ip(unsigned node) {
  return "10.77.0." + std::to_string(node + 1);
}

} // namespace

TEST_CASE("FM: the ping-pong example's frames decode as Ethernet/IPv4/UDP "
          "with good checksums") {
  TempDir dir;
  CommandResult r =
      run_fm(2, {NICEMU_FM_PINGPONG, "--quick"}, {"--pcap", dir.file("caps")});
  INFO(r);
  REQUIRE(r.status == 0);
  std::vector<fs::path> files = captures(dir.path() / "caps");
  REQUIRE(files.size() == 2);
  for (unsigned node : {0u, 1u}) {
    CAPTURE(node);
    std::vector<Frame> frames = check_capture(files[node]);
    CHECK(frames.size() > 50);
    for (const Frame &f : frames)
      CHECK(((f.ip_src == node_ip(node) && f.ip_dst == node_ip(1 - node)) ||
             (f.ip_src == node_ip(1 - node) && f.ip_dst == node_ip(node))));
  }

  // The check sees a bad checksum: one bit of the first frame's FM header
  // flipped (pcap header 24 bytes, record header 16, Ethernet 14, IPv4 20,
  // UDP 8, then the FM header's last byte).
  std::vector<uint8_t> b = read_bytes(files[0]);
  b.at(24 + 16 + 14 + 20 + 8 + 11) ^= 0x40;
  fs::path broken = dir.path() / "broken.pcap";
  write_bytes(broken, b);
  Decoded d = decode(broken, {"udp.checksum.status"}, {"-c", "1"});
  CHECK(d.rows == std::vector<std::string>{"0"});
  CHECK(contains(d.expert, "Errors (1)"));
  CHECK(contains(d.expert, "Bad checksum"));
}

TEST_CASE("FM: every size on the wire, 3 nodes: one UDP datagram per "
          "message") {
  TempDir dir;
  CommandResult r = checks(3, "sizes", {"--pcap", dir.file("caps")});
  REQUIRE(r.status == 0);
  std::vector<fs::path> files = captures(dir.path() / "caps");
  REQUIRE(files.size() == 3);
  // Each node sends 4 messages of each size to each of the 2 others, and a
  // goodbye of 0 bytes to each: UDP lengths are 8 + 12 + the message.
  std::map<unsigned, int> per_direction;
  for (int size : kPlan)
    per_direction[8 + 12 + unsigned(size)] += 2 * 4;
  per_direction[20] += 2;
  for (unsigned node = 0; node < 3; ++node) {
    CAPTURE(node);
    std::vector<Frame> frames = check_capture(files[node]);
    CHECK(frames.size() == 2 * (2 * 32 + 2));
    std::map<unsigned, int> out, in;
    std::set<std::string> peers;
    for (const Frame &f : frames) {
      if (f.ip_src == node_ip(node)) {
        ++out[f.udp_len];
        peers.insert(f.ip_dst);
      } else {
        CHECK(f.ip_dst == node_ip(node));
        ++in[f.udp_len];
        peers.insert(f.ip_src);
      }
    }
    CHECK(out == per_direction);
    CHECK(in == per_direction);
    CHECK(peers.size() == 2);
    CHECK(!peers.count(node_ip(node)));
  }
}

// ---- Determinism ------------------------------------------------------------

TEST_CASE("FM: two runs print the same and take the same cycles") {
  for (const char *scenario : {"fanin", "flow"}) {
    CAPTURE(scenario);
    unsigned nodes = std::string(scenario) == "fanin" ? 3 : 2;
    CommandResult a = checks(nodes, scenario);
    CommandResult b = checks(nodes, scenario);
    CHECK(sorted_lines(a.out) == sorted_lines(b.out));
    CHECK(run_summary(a.err) == run_summary(b.err));
  }
}
