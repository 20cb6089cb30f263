// End-to-end: `nicemu run --trace FILE --pcap DIR` on NI-AM clusters. The
// trace is valid JSON with the tracks and spans of docs/profiling.md, well
// nested; tshark, with tools/wireshark/nicemu.lua, reads every capture with
// no malformed packet and decodes the AM headers; two runs give the same
// bytes.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

using namespace e2e;
using json = nlohmann::json;

namespace {

struct ObservedRun {
  TempDir dir;
  CommandResult result;
  std::string trace() const { return dir.file("t.json"); }
  fs::path captures() const { return dir.path() / "caps"; }
  std::vector<fs::path> pcaps() const {
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(captures()))
      files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
  }
};

// Runs `program` on `nodes` nodes of the niam firmware with a trace and
// captures; `extra` goes before the program.
void observed_run(ObservedRun &run, unsigned nodes,
                  const std::vector<std::string> &program,
                  const std::vector<std::string> &extra = {}) {
  std::vector<std::string> args = {"run",
                                   "-n",
                                   std::to_string(nodes),
                                   "--firmware",
                                   NICEMU_NIAM_IMAGE,
                                   "--trace",
                                   run.trace(),
                                   "--pcap",
                                   run.captures().string()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--");
  args.insert(args.end(), program.begin(), program.end());
  run.result = nicemu(args);
}

// ---- The trace --------------------------------------------------------

struct Span {
  double start, end; // microseconds
  std::string name;
};

struct Trace {
  json doc;
  std::map<std::pair<int, int>, std::string> thread_names; // (pid, tid)
  std::map<int, std::string> process_names;
  std::map<std::string, std::vector<Span>> spans; // "pid/track" -> spans
  std::map<std::string, int> link_slices;         // "pid/name" -> count
};

std::string track_key(int pid, const std::string &track) {
  return std::to_string(pid) + "/" + track;
}

Trace read_trace(const std::string &path) {
  Trace t;
  std::string text = read_text(path);
  REQUIRE_MESSAGE(json::accept(text), "not valid JSON: " << path);
  t.doc = json::parse(text);
  REQUIRE(t.doc.contains("traceEvents"));
  auto thread = [&t](const json &e) -> std::string & {
    return t.thread_names[{e["pid"].get<int>(), e["tid"].get<int>()}];
  };
  for (const json &e : t.doc["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name")
      thread(e) = e["args"]["name"];
    else if (e["ph"] == "M" && e["name"] == "process_name")
      t.process_names[e["pid"].get<int>()] = e["args"]["name"];
  std::map<std::string, double> open; // async id -> begin
  for (const json &e : t.doc["traceEvents"]) {
    int pid = e["pid"];
    if (e["ph"] == "X") {
      std::string track = thread(e);
      REQUIRE_MESSAGE(!track.empty(), "span on an unnamed thread: " << e);
      double ts = e["ts"], dur = e["dur"];
      CHECK(ts >= 0);
      CHECK(dur >= 0);
      t.spans[track_key(pid, track)].push_back({ts, ts + dur, e["name"]});
    } else if (e["ph"] == "b") {
      std::string id = e["id"];
      CHECK(open.count(id) == 0);
      open[id] = e["ts"];
      ++t.link_slices[track_key(pid, e["name"])];
      CHECK(thread(e) == "link");
    } else if (e["ph"] == "e") {
      std::string id = e["id"];
      REQUIRE_MESSAGE(open.count(id), "an end without a begin: " << e);
      CHECK(e["ts"].get<double>() >= open[id]);
      open.erase(id);
    }
  }
  CHECK_MESSAGE(open.empty(), "async slices never ended");
  return t;
}

// Spans of one track nest or follow each other, as Chrome's format wants of
// "X" events on one thread.
void check_nesting(const std::string &track, std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  std::vector<double> ends; // the open spans' ends, innermost last
  for (const Span &s : spans) {
    while (!ends.empty() && ends.back() <= s.start + 1e-9)
      ends.pop_back();
    CHECK_MESSAGE((ends.empty() || s.end <= ends.back() + 1e-9),
                  track << ": '" << s.name << "' at " << s.start
                        << " overlaps the span around it");
    ends.push_back(s.end);
  }
}

// ---- The captures -----------------------------------------------------

CommandResult tshark(const fs::path &file, std::vector<std::string> args) {
  static const std::string program = find_tshark();
  std::vector<std::string> all = {"-r", file.string(), "-X",
                                  "lua_script:" NICEMU_WIRESHARK_LUA};
  all.insert(all.end(), args.begin(), args.end());
  CommandResult r = run_command(program, all);
  // Running as root, tshark says so; any Lua error would be reported too.
  CHECK_MESSAGE(!contains(r.err, "Lua"), "tshark:\n" << r);
  return r;
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  return lines;
}

// Number of records in a pcap file, read independently of the writer.
size_t pcap_records(const fs::path &file) {
  std::vector<uint8_t> b = read_bytes(file);
  REQUIRE(b.size() >= 24);
  CHECK(le32(b, 0) == 0xA1B23C4Du);
  CHECK(le32(b, 20) == 147u);
  size_t count = 0;
  for (size_t at = 24; at < b.size(); ++count)
    at += 16 + le32(b, at + 8);
  return count;
}

// The handler table of the niam firmware, from its header.
std::map<int, std::string> niam_handlers() {
  std::map<int, std::string> names;
  // Lines "  NIAM_H_NAME = N, ..." (no std::regex: g++ 12 warns falsely).
  std::istringstream in(read_text(NICEMU_NIAM_PROTOCOL_H));
  for (std::string l; std::getline(in, l);) {
    char name[64] = {};
    int number = -1;
    if (std::sscanf(l.c_str(), " %63[A-Z_] = %d ,", name, &number) == 2 &&
        std::string_view(name).starts_with("NIAM_H_"))
      names[number] = name;
  }
  return names;
}

// Every capture decodes: no malformed packet, no error, and every packet an
// AM with a named handler and a good CRC. Returns the handlers seen.
std::set<std::string> check_captures(const ObservedRun &run) {
  std::set<std::string> handlers;
  std::map<int, std::string> known = niam_handlers();
  REQUIRE(!run.pcaps().empty());
  for (const fs::path &file : run.pcaps()) {
    CAPTURE(file);
    CommandResult bad =
        tshark(file, {"-Y", "_ws.malformed || _ws.expert.severity >= error"});
    INFO(bad);
    CHECK(bad.status == 0);
    CHECK(bad.out.empty());
    CommandResult fields =
        tshark(file, {"-T", "fields", "-E", "separator=,", "-e",
                      "nicemu.version", "-e", "niam.handler", "-e",
                      "niam.handler_name", "-e", "nicemu.crc_good"});
    INFO(fields);
    REQUIRE(fields.status == 0);
    std::vector<std::string> rows = lines_of(fields.out);
    CHECK(rows.size() == pcap_records(file));
    for (const std::string &row : rows) {
      int version = 0, handler = -1;
      char name[64] = {}, good[16] = {};
      REQUIRE_MESSAGE(std::sscanf(row.c_str(), "%d,%d,%63[^,],%15s", &version,
                                  &handler, name, good) == 4,
                      "not decoded: " << row);
      CHECK(version == 2);
      CHECK(known[handler] == name);
      CHECK((std::string(good) == "1" || std::string(good) == "True"));
      handlers.insert(name);
    }
    // The Destination column: the node the route leads to, as in the
    // pseudo-header, never the source.
    CommandResult ends = tshark(
        file, {"-T", "fields", "-E", "separator=,", "-e", "nicemu.source", "-e",
               "nicemu.destination", "-e", "_ws.col.Destination"});
    REQUIRE(ends.status == 0);
    for (const std::string &row : lines_of(ends.out)) {
      CAPTURE(row);
      unsigned source = 0, destination = 0;
      char column[32] = {};
      REQUIRE(std::sscanf(row.c_str(), "%u,%u,%31[^\n]", &source, &destination,
                          column) == 3);
      CHECK(destination != source);
      CHECK(std::string(column) == "node " + std::to_string(destination));
    }
  }
  return handlers;
}

} // namespace

TEST_CASE("a 2-node barrier run: the trace has each track's spans, well "
          "nested") {
  ObservedRun run;
  observed_run(run, 2, {NICEMU_NIAM_BARRIER, "5"});
  INFO(run.result);
  REQUIRE(run.result.status == 0);
  Trace t = read_trace(run.trace());
  CHECK(t.process_names[0] == "node 0");
  CHECK(t.process_names[1] == "node 1");
  for (int node : {0, 1}) {
    CAPTURE(node);
    // The request fetch and the result are host DMA; AMs go out by Tx and
    // in by Rx; the host library's calls are PIO writes and waits.
    for (const char *track : {"host DMA", "Tx", "Rx", "host"})
      CHECK_MESSAGE(!t.spans[track_key(node, track)].empty(),
                    "no spans on " << track);
    std::set<std::string> dma, host;
    for (const Span &s : t.spans[track_key(node, "host DMA")])
      dma.insert(s.name);
    for (const Span &s : t.spans[track_key(node, "host")])
      host.insert(s.name);
    CHECK(dma.count("to card"));
    CHECK(dma.count("to host"));
    CHECK(host.count("PioWrite"));
    CHECK(host.count("Hello"));
    CHECK(t.link_slices[track_key(node, "link out")] > 0);
    CHECK(t.link_slices[track_key(node, "link in")] ==
          t.link_slices[track_key(1 - node, "link out")]);
    // One transfer at a time per engine, one call at a time per host:
    // these spans follow each other.
    for (const char *track : {"Tx", "Rx", "host DMA", "host"}) {
      std::vector<Span> spans = t.spans[track_key(node, track)];
      std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
        return a.start != b.start ? a.start < b.start : a.end < b.end;
      });
      for (size_t i = 1; i < spans.size(); ++i)
        CHECK_MESSAGE(spans[i].start >= spans[i - 1].end - 1e-9,
                      track << " spans overlap at " << spans[i].start);
    }
  }
  for (const auto &[track, spans] : t.spans)
    check_nesting(track, spans);
}

TEST_CASE("tshark reads every capture and the dissector decodes the AM "
          "headers") {
  ObservedRun run;
  observed_run(run, 2, {NICEMU_NIAM_BARRIER, "5"});
  INFO(run.result);
  REQUIRE(run.result.status == 0);
  std::vector<fs::path> files = run.pcaps();
  REQUIRE(files.size() == 2);
  CHECK(files[0].filename() == "link-node0-switch0.p0.pcap");
  CHECK(files[1].filename() == "link-node1-switch0.p1.pcap");
  std::set<std::string> handlers = check_captures(run);
  CHECK(handlers.count("NIAM_H_ROUND"));

  // The detail of the first packet: route, AM header, CRC.
  CommandResult v = tshark(files[0], {"-V", "-c", "1"});
  INFO(v);
  CHECK(v.status == 0);
  for (const char *line :
       {"Pseudo-header version: 2", "Direction: first end to second end",
        "Destination node (where the route leads): 1", "Route bytes: 1",
        "Switch 1: Output port: 1", "[Payload bytes: 32]",
        "NI Active Message, NIAM_H_ROUND", "Tag: 0x4d41494e",
        "Handler: NIAM_H_ROUND (1)", "Argument 0: 0x00000001 (c)",
        "Argument 5: ", "[correct]"})
    CHECK_MESSAGE(contains(v.out, line), "missing: " << line);
}

TEST_CASE("the dissector decodes the reliable mode's link header and the "
          "AM after it") {
  TempDir dir;
  fs::path caps = dir.path() / "caps";
  CommandResult r =
      nicemu({"run", "-n", "2", "--firmware", NICEMU_NIAM_RELIABLE_IMAGE,
              "--pcap", caps.string(), "--", NICEMU_NIAM_BARRIER, "5"});
  INFO(r);
  REQUIRE(r.status == 0);
  fs::path file = caps / "link-node0-switch0.p0.pcap";
  CommandResult bad =
      tshark(file, {"-Y", "_ws.malformed || _ws.expert.severity >= error"});
  CHECK(bad.status == 0);
  CHECK(bad.out.empty());
  // Every packet node 0 sent is numbered from 0 in order, or an
  // acknowledgement alone; the numbered ones carry an AM.
  CommandResult fields = tshark(
      file, {"-Y", "nicemu.direction == 0", "-T", "fields", "-E", "separator=,",
             "-e", "niam_rel.source", "-e", "niam_rel.seq", "-e",
             "niam_rel.flags", "-e", "niam.handler_name"});
  INFO(fields);
  REQUIRE(fields.status == 0);
  int next = 0, acks = 0, rounds = 0;
  for (const std::string &row : lines_of(fields.out)) {
    unsigned source = 99, seq = 0, flags = 0;
    char name[64] = {};
    int n =
        std::sscanf(row.c_str(), "%u,%u,%x,%63s", &source, &seq, &flags, name);
    REQUIRE_MESSAGE(n >= 3, "not decoded: " << row);
    CHECK(source == 0);
    if (flags & 1) { // NIAM_REL_ACK_ONLY
      ++acks;
      CHECK(n == 3);
      continue;
    }
    CHECK(n == 4);
    CHECK(int(seq) == next++);
    rounds += std::string(name) == "NIAM_H_ROUND";
  }
  CHECK(next > 0);
  CHECK(rounds > 0);
  CommandResult v = tshark(file, {"-V", "-c", "1"});
  for (const char *line :
       {"NI-AM reliable link header, seq 0 ack 0", "Source node: 0",
        "Sequence number: 0", "NI Active Message, NIAM_H_"})
    CHECK_MESSAGE(contains(v.out, line), "missing: " << line << "\n" << v.out);
  MESSAGE(next << " numbered packets, " << acks << " acknowledgements alone");
}

TEST_CASE("the dissector flags a bad CRC without calling the packet "
          "malformed") {
  ObservedRun run;
  observed_run(run, 2, {NICEMU_NIAM_BARRIER, "1"});
  REQUIRE(run.result.status == 0);
  fs::path original = run.pcaps().at(0);
  std::vector<uint8_t> b = read_bytes(original);
  // First record: 16-byte record header, 28-byte pseudo-header, the route
  // bytes, then the payload: change a byte of its AM header's argument 5.
  size_t payload = 24 + 16 + 28 + (b[24 + 16 + 2] | b[24 + 16 + 3] << 8);
  b.at(payload + 28) ^= 0x01;
  fs::path broken = run.dir.path() / "broken.pcap";
  write_bytes(broken, b);
  CommandResult bad = tshark(broken, {"-Y", "nicemu.crc.bad"});
  INFO(bad);
  CHECK(lines_of(bad.out).size() == 1);
  CHECK(contains(bad.out, "[BAD CRC]"));
  CommandResult malformed = tshark(broken, {"-Y", "_ws.malformed"});
  CHECK(malformed.out.empty());
}

TEST_CASE("bulk transfers and host messages decode too") {
  ObservedRun run;
  observed_run(run, 2, {NICEMU_AM_PINGPONG});
  INFO(run.result);
  REQUIRE(run.result.status == 0);
  std::set<std::string> handlers = check_captures(run);
  CHECK(handlers.count("NIAM_H_HOST_AM"));
  CHECK(handlers.count("NIAM_H_DATA"));
  CommandResult bulk =
      tshark(run.pcaps().at(0), {"-Y", "niam.bulk_len >= 4000", "-T", "fields",
                                 "-e", "niam.bulk_len"});
  CHECK(!lines_of(bulk.out).empty());
}

TEST_CASE("cables between switches: captured, decoded, on the fabric's "
          "track") {
  ObservedRun run;
  observed_run(run, 9, {NICEMU_NIAM_BARRIER, "1"});
  INFO(run.result);
  REQUIRE(run.result.status == 0);
  bool trunk = false;
  for (const fs::path &f : run.pcaps())
    trunk |= f.filename().string().rfind("link-switch", 0) == 0;
  CHECK(trunk);
  check_captures(run);
  Trace t = read_trace(run.trace());
  bool fabric = false;
  for (const auto &[pid, name] : t.process_names)
    fabric |= name == "fabric";
  CHECK(fabric);
}

TEST_CASE("two runs give byte-identical traces and captures") {
  for (unsigned nodes : {2u, 3u}) {
    CAPTURE(nodes);
    std::vector<std::string> program =
        nodes == 2 ? std::vector<std::string>{NICEMU_AM_PINGPONG}
                   : std::vector<std::string>{NICEMU_NIAM_BARRIER, "5"};
    ObservedRun a, b;
    observed_run(a, nodes, program);
    observed_run(b, nodes, program);
    REQUIRE(a.result.status == 0);
    REQUIRE(b.result.status == 0);
    CHECK(read_text(a.trace()) == read_text(b.trace()));
    std::vector<fs::path> files_a = a.pcaps(), files_b = b.pcaps();
    REQUIRE(files_a.size() == files_b.size());
    for (size_t i = 0; i < files_a.size(); ++i) {
      CHECK(files_a[i].filename() == files_b[i].filename());
      CHECK_MESSAGE(read_bytes(files_a[i]) == read_bytes(files_b[i]),
                    files_a[i].filename() << " differs");
    }
  }
}

TEST_CASE("--trace-filter keeps only the categories asked for") {
  ObservedRun run;
  observed_run(run, 2, {NICEMU_NIAM_BARRIER, "2"},
               {"--trace-filter", "link,host"});
  INFO(run.result);
  REQUIRE(run.result.status == 0);
  Trace t = read_trace(run.trace());
  std::set<std::string> categories;
  for (const json &e : t.doc["traceEvents"])
    if (e.contains("cat"))
      categories.insert(e["cat"]);
  CHECK(categories == std::set<std::string>{"host", "link"});
}

TEST_CASE("the dissector's handler names are niam_protocol.h's") {
  std::map<int, std::string> handlers = niam_handlers();
  REQUIRE(handlers.size() >= 15);
  std::string lua = read_text(NICEMU_WIRESHARK_LUA);
  for (const auto &[index, name] : handlers) {
    // Appended, not "[" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on that.
    std::string entry(1, '[');
    entry += std::to_string(index);
    entry += "] = \"";
    entry += name;
    entry += '"';
    CHECK_MESSAGE(contains(lua, entry),
                  name << " = " << index << " is not in nicemu.lua");
  }
}

TEST_CASE("unwritable trace or capture paths stop the run before it starts") {
  TempDir dir;
  write_bytes(dir.path() / "file", {1});
  const std::string missing = dir.file("no/such/dir/t.json");
  struct Case {
    std::vector<std::string> options;
    std::string says;
  };
  for (const Case &c : std::vector<Case>{
           {{"--trace", missing}, "cannot write"},
           {{"--pcap", dir.file("file/caps")}, "--pcap"},
           {{"--pcap", dir.file("file")}, "--pcap"},
           {{"--trace", dir.file("t.json"), "--trace-filter", "cpu"},
            "unknown category 'cpu'"},
           {{"--trace-filter", "core"}, "needs --trace"}}) {
    std::vector<std::string> args = {"run", "-n", "2", "--firmware",
                                     NICEMU_NIAM_IMAGE};
    args.insert(args.end(), c.options.begin(), c.options.end());
    args.insert(args.end(), {"--", NICEMU_NIAM_BARRIER, "1"});
    CommandResult r = nicemu(args);
    INFO(r);
    CHECK(r.status == 1);
    CHECK(contains(r.err, c.says));
    CHECK(!contains(r.err, "--- nicemu:")); // no run, so no summary
    CHECK(r.out.empty());                   // no host ran
  }
}

// Perfetto draws an arrow from each packet's send to its arrival: a flow
// ("s" then "f", the packet's id) whose ends lie inside the "send" and
// "arrive" slices of the two nodes' "packets" tracks.
TEST_CASE("the trace joins each packet's send to its arrival by a flow") {
  ObservedRun run;
  observed_run(run, 2, {NICEMU_NIAM_BARRIER, "5"});
  INFO(run.result);
  REQUIRE(run.result.status == 0);
  Trace t = read_trace(run.trace());
  struct Flow {
    int starts = 0, finishes = 0;
    double start = 0, finish = 0;
    int from = -1, to = -1;
  };
  std::map<std::string, Flow> flows;
  auto inside = [&](const json &e, const char *slice) {
    double ts = e["ts"];
    for (const Span &s : t.spans[track_key(e["pid"], "packets")])
      if (s.name == slice && s.start < ts && ts < s.end)
        return true;
    return false;
  };
  for (const json &e : t.doc["traceEvents"]) {
    if (e["ph"] != "s" && e["ph"] != "f")
      continue;
    CAPTURE(e.dump());
    CHECK(e["cat"] == "link");
    CHECK(t.thread_names[{e["pid"], e["tid"]}] == "packets");
    Flow &f = flows[e["id"]];
    if (e["ph"] == "s") {
      ++f.starts;
      f.start = e["ts"];
      f.from = e["pid"];
      CHECK(inside(e, "send"));
    } else {
      ++f.finishes;
      f.finish = e["ts"];
      f.to = e["pid"];
      CHECK(e["bp"] == "e");
      CHECK(inside(e, "arrive"));
    }
  }
  // One flow per packet a node sent, from its source to the other node,
  // arriving after it left.
  int sent = t.link_slices[track_key(0, "link out")] +
             t.link_slices[track_key(1, "link out")];
  CHECK(sent > 0);
  CHECK(flows.size() == size_t(sent));
  for (const auto &[id, f] : flows) {
    CAPTURE(id);
    CHECK(f.starts == 1);
    CHECK(f.finishes == 1);
    CHECK(f.from == int(std::stoull(id, nullptr, 16) >> 40)); // the source
    CHECK(f.to == 1 - f.from);
    CHECK(f.finish > f.start);
  }
  check_nesting("packets", t.spans[track_key(0, "packets")]);
  check_nesting("packets", t.spans[track_key(1, "packets")]);
}

// The firmware's console lines and a core's fault are instant events on
// the node's core track, in categories of their own.
TEST_CASE("console lines and faults are instant events in the trace") {
  TempDir dir;
  auto instants = [&](const std::string &image, const std::string &trace) {
    CommandResult r =
        nicemu({"run", "--firmware", firmware(image), "--trace", trace});
    INFO(r);
    Trace t = read_trace(trace);
    std::vector<json> out;
    for (const json &e : t.doc["traceEvents"])
      if (e["ph"] == "i") {
        CHECK(e["s"] == "t");
        CHECK(t.thread_names[{e["pid"], e["tid"]}] == "core");
        out.push_back(e);
      }
    return out;
  };
  std::vector<json> hello = instants("hello.img", dir.file("hello.json"));
  REQUIRE(hello.size() == 1);
  CHECK(hello[0]["cat"] == "console");
  CHECK(hello[0]["name"] == "hello from node 0 of 1");
  CHECK(hello[0]["args"]["line"] == "hello from node 0 of 1");
  CHECK(hello[0]["ts"].get<double>() > 0);
  std::vector<json> fault =
      instants("fault_illegal.img", dir.file("fault.json"));
  REQUIRE(fault.size() == 1);
  CHECK(fault[0]["cat"] == "fault");
  CHECK(contains(fault[0]["args"]["fault"], "illegal instruction at pc 0x"));
  // --trace-filter leaves them out unless asked for.
  CommandResult r =
      nicemu({"run", "--firmware", firmware("hello.img"), "--trace",
              dir.file("core.json"), "--trace-filter", "core"});
  REQUIRE(r.status == 0);
  CHECK(!contains(read_text(dir.file("core.json")), "\"ph\":\"i\""));
}

// Captures of earlier versions (a 24-byte pseudo-header, no destination)
// still decode, with an empty Destination column.
TEST_CASE("the dissector reads version-1 captures") {
  ObservedRun run;
  observed_run(run, 2, {NICEMU_NIAM_BARRIER, "1"});
  REQUIRE(run.result.status == 0);
  std::vector<uint8_t> b = read_bytes(run.pcaps().at(0));
  std::vector<uint8_t> old(b.begin(), b.begin() + 24); // the file header
  for (size_t at = 24; at + 16 <= b.size();) {
    uint32_t captured = le32(b, at + 8);
    std::vector<uint8_t> record(b.begin() + long(at),
                                b.begin() + long(at + 16 + captured));
    record.erase(record.begin() + 16 + 24, record.begin() + 16 + 28);
    record[16] = 1; // version 1
    for (size_t field : {8, 12}) {
      uint32_t v = le32(record, field) - 4;
      for (int i = 0; i < 4; ++i)
        record[field + size_t(i)] = uint8_t(v >> (8 * i));
    }
    old.insert(old.end(), record.begin(), record.end());
    at += 16 + captured;
  }
  fs::path file = run.dir.path() / "v1.pcap";
  write_bytes(file, old);
  CommandResult bad =
      tshark(file, {"-Y", "_ws.malformed || _ws.expert.severity >= error"});
  CHECK(bad.out.empty());
  CommandResult fields =
      tshark(file, {"-T", "fields", "-E", "separator=,", "-e", "nicemu.version",
                    "-e", "niam.handler_name", "-e", "_ws.col.Destination"});
  REQUIRE(fields.status == 0);
  std::vector<std::string> rows = lines_of(fields.out);
  REQUIRE(!rows.empty());
  for (const std::string &row : rows) {
    CHECK(row.starts_with("1,NIAM_H_"));
    CHECK(row.ends_with(",")); // no destination to show
  }
}
