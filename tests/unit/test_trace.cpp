// The trace writer (--trace): Chrome trace-event JSON with a process per node
// and a track per activity, sorted so that the file does not depend on the
// order events are told in, and categories that can be left out.
#include "observe/event_fanout.hpp"
#include "observe/trace_writer.hpp"

#include "nicemu/error.hpp"
#include "sim/scheduler.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace nicemu;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A file name of its own for one test, removed afterwards.
struct TempFile {
  std::string path;
  TempFile() {
    static int count = 0;
    path = (fs::temp_directory_path() /
            ("nicemu-trace-" + std::to_string(::getpid()) + "-" +
             std::to_string(count++) + ".json"))
               .string();
  }
  ~TempFile() { fs::remove(path); }
  std::string text() const {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  json parse() const { return json::parse(text()); }
};

Time us(double v) {
  return Time(v * 1e6);
}

std::vector<json> events_with(const json &trace, const std::string &ph) {
  std::vector<json> found;
  for (const json &e : trace["traceEvents"])
    if (e["ph"] == ph)
      found.push_back(e);
  return found;
}

// "pid/tid" -> thread name, from the metadata events.
std::map<std::string, std::string> thread_names(const json &trace) {
  std::map<std::string, std::string> names;
  for (const json &e : events_with(trace, "M"))
    if (e["name"] == "thread_name")
      names[std::to_string(e["pid"].get<int>()) + "/" +
            std::to_string(e["tid"].get<int>())] = e["args"]["name"];
  return names;
}

std::string track_of(const json &trace, const json &e) {
  return thread_names(trace)[std::to_string(e["pid"].get<int>()) + "/" +
                             std::to_string(e["tid"].get<int>())];
}

const uint8_t kFrame[] = {1, 0x4E, 0x49, 0x41, 0x4D, 0xAA, 0xBB, 0xCC, 0xDD};

// A little of every kind, told in the order `forward` says.
void tell_some(RunEvents &w, bool forward) {
  auto host = [&] { w.host_call(1, "PioWrite", us(0), us(0.51)); };
  auto dma = [&] {
    w.dma_transfer(0, DmaEngineKind::HostDma, us(1), us(2.5), 64, true);
  };
  auto core = [&] { w.handler_call(0, "handle_round", us(1), us(2.5)); };
  auto link = [&] {
    w.link_packet(LinkRef{0, "node0", "switch0.p0", 1}, 0, 0x42, us(3), us(4),
                  kFrame);
  };
  std::vector<std::function<void()>> tells = {host, dma, core, link};
  if (!forward)
    std::reverse(tells.begin(), tells.end());
  for (const auto &tell : tells)
    tell();
}

} // namespace

TEST_CASE("handler calls become nested spans on the node's core track") {
  TempFile file;
  {
    TraceWriter w(file.path);
    // A handler in a dispatch, told as they end (inner first).
    w.handler_call(2, "handle_round", 1'234'567, 2'000'000);
    w.handler_call(2, "dispatch", 1'000'000, 3'000'999);
    w.finish();
  }
  json trace = file.parse();
  std::vector<json> spans = events_with(trace, "X");
  REQUIRE(spans.size() == 2);
  for (const json &s : spans) {
    CHECK(s["cat"] == "core");
    CHECK(s["pid"] == 2);
    CHECK(track_of(trace, s) == "core");
  }
  // Sorted by end: the inner span first. Microseconds, whole nanoseconds.
  CHECK(spans[0]["name"] == "handle_round");
  CHECK(spans[0]["ts"].get<double>() == doctest::Approx(1.234));
  CHECK(spans[0]["dur"].get<double>() == doctest::Approx(0.766));
  CHECK(spans[1]["name"] == "dispatch");
  CHECK(spans[1]["ts"].get<double>() == doctest::Approx(1.0));
  CHECK(spans[1]["dur"].get<double>() == doctest::Approx(2.0));
  // The digits are written from integers: exactly three decimals.
  CHECK(file.text().find("\"ts\":1.234,\"dur\":0.766") != std::string::npos);
  bool named = false;
  for (const json &m : events_with(trace, "M"))
    if (m["name"] == "process_name" && m["pid"] == 2)
      named = m["args"]["name"] == "node 2";
  CHECK(named);
}

TEST_CASE("each kind of event has its track and category") {
  TempFile file;
  {
    TraceWriter w(file.path);
    tell_some(w, true);
    w.dma_transfer(0, DmaEngineKind::Tx, us(5), us(6), 36, false);
    w.dma_transfer(1, DmaEngineKind::Rx, us(6), us(7), 32, false);
    w.finish();
  }
  json trace = file.parse();
  std::map<std::string, std::string> seen; // track -> name of its span
  for (const json &e : events_with(trace, "X"))
    seen[track_of(trace, e)] = e["name"];
  CHECK(seen["host"] == "PioWrite");
  CHECK(seen["host DMA"] == "to host");
  CHECK(seen["core"] == "handle_round");
  CHECK(seen["Tx"] == "send");
  CHECK(seen["Rx"] == "receive");
  // A node's cable: a "link out" slice on the sender's link track (async:
  // slices on one cable may overlap), with the packet's details.
  std::vector<json> begins = events_with(trace, "b"),
                    ends = events_with(trace, "e");
  REQUIRE(begins.size() == 1);
  REQUIRE(ends.size() == 1);
  CHECK(begins[0]["name"] == "link out");
  CHECK(begins[0]["cat"] == "link");
  CHECK(track_of(trace, begins[0]) == "link");
  CHECK(begins[0]["id"] == ends[0]["id"]);
  CHECK(begins[0]["ts"].get<double>() == doctest::Approx(3.0));
  CHECK(ends[0]["ts"].get<double>() == doctest::Approx(4.0));
  const json &args = begins[0]["args"];
  CHECK(args["packet"] == "0x42");
  CHECK(args["route"] == json::array({1}));
  CHECK(args["bytes"] == 8);
  CHECK(args["from"] == "node0");
}

TEST_CASE("link slices: in on the receiver, cables between switches on the "
          "fabric") {
  TempFile file;
  {
    TraceWriter w(file.path);
    w.link_packet(LinkRef{3, "switch0.p7", "switch1.p7", 1}, 0, 1, us(1), us(2),
                  kFrame);
    w.link_packet(LinkRef{4, "switch1.p2", "node9", 0}, 0, 1, us(2), us(3),
                  kFrame);
    w.link_packet(LinkRef{0, "node0", "node1", 0}, 0, 2, us(4), us(5), kFrame);
    w.finish();
  }
  json trace = file.parse();
  std::vector<std::string> where;
  for (const json &b : events_with(trace, "b"))
    where.push_back(std::to_string(b["pid"].get<int>()) + " " +
                    b["name"].get<std::string>());
  const std::string fabric = std::to_string(TraceWriter::kFabricPid);
  CHECK(where == std::vector<std::string>{fabric + " switch0.p7 -> switch1.p7",
                                          "9 link in", "0 link out",
                                          "1 link in"});
  // Every slice has its own id, in file order.
  std::vector<json> begins = events_with(trace, "b");
  CHECK(begins[0]["id"] == "0x1");
  CHECK(begins[3]["id"] == "0x4");
}

TEST_CASE("the file does not depend on the order events are told in") {
  TempFile a, b;
  {
    TraceWriter w(a.path);
    tell_some(w, true);
    w.finish();
  }
  {
    TraceWriter w(b.path);
    tell_some(w, false);
    w.finish();
  }
  CHECK(a.text() == b.text());
  CHECK_NOTHROW(a.parse());
}

TEST_CASE("with the run's clock, events are written as the run goes, in the "
          "same order") {
  TempFile with_clock, without;
  auto tell = [](TraceWriter &w, Scheduler *s) {
    // Many events, each told at the time it ends, as the emulator does.
    for (int i = 0; i < 10'000; ++i) {
      Time end = us(i) + 500;
      if (s)
        s->run_until(end);
      w.dma_transfer(uint32_t(i % 3), DmaEngineKind::Tx, us(i), end, 4, false);
      w.host_call(uint32_t(i % 2), "Advance", us(i), end);
    }
  };
  Scheduler clock;
  {
    TraceWriter w(with_clock.path);
    w.set_clock(&clock);
    tell(w, &clock);
    w.finish();
  }
  {
    TraceWriter w(without.path);
    tell(w, nullptr);
    w.finish();
  }
  CHECK(with_clock.text() == without.text());
  CHECK(events_with(with_clock.parse(), "X").size() == 20'000);
}

TEST_CASE("--trace-filter leaves out whole categories") {
  CHECK(parse_trace_categories("core") == kTraceCore);
  CHECK(parse_trace_categories("dma,link") == (kTraceDma | kTraceLink));
  CHECK(parse_trace_categories("all") == kTraceAll);
  CHECK_THROWS_WITH_AS(parse_trace_categories("core,disk"),
                       doctest::Contains("unknown category 'disk'"), Error);
  CHECK_THROWS_AS(parse_trace_categories(""), Error);
  CHECK_THROWS_AS(parse_trace_categories("core,"), Error);

  TempFile file;
  {
    TraceWriter w(file.path, kTraceHost | kTraceLink);
    tell_some(w, true);
    w.finish();
  }
  json trace = file.parse();
  // The host call, and the packet's send on its "packets" track (link).
  std::vector<json> spans = events_with(trace, "X");
  REQUIRE(spans.size() == 2);
  std::multiset<std::string> categories;
  for (const json &span : spans)
    categories.insert(span["cat"]);
  CHECK(categories == std::multiset<std::string>{"host", "link"});
  CHECK(events_with(trace, "b").size() == 1);
  for (const auto &[track, name] : thread_names(trace))
    CHECK((name == "host" || name == "link" || name == "packets"));
}

TEST_CASE("names are escaped so the file stays valid JSON") {
  TempFile file;
  {
    TraceWriter w(file.path);
    w.handler_call(0, "a\"b\\c\nd\xff", 0, 1000);
    w.finish();
  }
  json trace = file.parse();
  CHECK(events_with(trace, "X").at(0)["name"] == "a\"b\\c\nd?");
}

TEST_CASE("an empty run is a valid trace, a bad path is an error") {
  TempFile file;
  {
    TraceWriter w(file.path);
    w.finish();
    w.finish(); // once is enough; nothing is recorded after
    w.host_call(0, "late", 0, 1);
  }
  CHECK(file.parse()["traceEvents"].empty());
  CHECK_THROWS_WITH_AS(TraceWriter("/nonexistent-dir/t.json"),
                       doctest::Contains("cannot write"), Error);
}

TEST_CASE("a fan-out tells every observer, the emulator sees null when none "
          "listens") {
  EventFanout fanout;
  CHECK(fanout.events() == nullptr);
  TempFile a, b;
  TraceWriter first(a.path), second(b.path);
  fanout.add(&first);
  CHECK(fanout.events() == &first);
  fanout.add(&second);
  REQUIRE(fanout.events() == &fanout);
  tell_some(fanout, true);
  fanout.console_line(1, 5'000'000, "hello");
  fanout.fault(1, 6'000'000, "bus error at pc 0x00000010");
  first.finish();
  second.finish();
  CHECK(a.text() == b.text());
  // Three spans and the packet's send.
  CHECK(events_with(a.parse(), "X").size() == 4);
  std::vector<json> instants = events_with(a.parse(), "i");
  REQUIRE(instants.size() == 2);
  CHECK(instants[0]["cat"] == "console");
  CHECK(instants[0]["name"] == "hello");
  CHECK(instants[0]["ts"] == 5.0);
  CHECK(instants[1]["cat"] == "fault");
  CHECK(instants[1]["args"]["fault"] == "bus error at pc 0x00000010");
}
