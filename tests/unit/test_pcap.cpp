// The capture writer (--pcap): one classic nanosecond pcap file per cable,
// link type USER0, each record a 28-byte pseudo-header and the frame as it
// crossed the cable (docs/profiling.md, "Packet captures"); on Ethernet,
// link type ETHERNET, each record the frame without its FCS.
#include "observe/pcap_writer.hpp"

#include "nicemu/error.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace nicemu;
namespace fs = std::filesystem;

namespace {

// A directory of its own for one test, removed with what is in it.
struct TempDir {
  fs::path path;
  TempDir() {
    static int count = 0;
    path = fs::temp_directory_path() /
           ("nicemu-pcap-" + std::to_string(::getpid()) + "-" +
            std::to_string(count++));
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::vector<uint8_t> bytes(const std::string &name) const {
    std::ifstream in(path / name, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "no file " << name);
    return {std::istreambuf_iterator<char>(in), {}};
  }
};

uint64_t le(const std::vector<uint8_t> &b, size_t at, int size) {
  REQUIRE(at + size_t(size) <= b.size());
  uint64_t v = 0;
  for (int i = size - 1; i >= 0; --i)
    v = v << 8 | b[at + size_t(i)];
  return v;
}

// One record of a capture, read back independently of the writer.
struct Record {
  uint64_t seconds, nanoseconds, captured, length;
  uint64_t version, direction, route_bytes, source, packet_id, cable_ps,
      destination;
  std::vector<uint8_t> frame;
};

std::vector<Record> records(const std::vector<uint8_t> &file) {
  std::vector<Record> out;
  for (size_t at = 24; at < file.size();) {
    Record r;
    r.seconds = le(file, at, 4);
    r.nanoseconds = le(file, at + 4, 4);
    r.captured = le(file, at + 8, 4);
    r.length = le(file, at + 12, 4);
    size_t p = at + 16;
    r.version = le(file, p, 1);
    r.direction = le(file, p + 1, 1);
    r.route_bytes = le(file, p + 2, 2);
    r.source = le(file, p + 4, 4);
    r.packet_id = le(file, p + 8, 8);
    r.cable_ps = le(file, p + 16, 8);
    r.destination = le(file, p + 24, 4);
    REQUIRE(p + r.captured <= file.size());
    r.frame.assign(file.begin() + long(p + 28),
                   file.begin() + long(p + r.captured));
    out.push_back(r);
    at = p + r.captured;
  }
  return out;
}

const std::vector<uint8_t> kFrame = {3,    1,    0xDE, 0xAD, 0xBE,
                                     0xEF, 0x11, 0x22, 0x33, 0x44};

} // namespace

TEST_CASE("a capture: nanosecond pcap header, link type USER0") {
  TempDir dir;
  {
    PcapWriter w(dir.path.string());
    LinkRef link{0, "node0", "switch0.p0", 2};
    link.destination = 5;
    w.link_packet(link, 0, 7, Time(1'500'000'123'456), Time(1'500'000'200'000),
                  kFrame);
    w.finish();
  }
  std::vector<uint8_t> file = dir.bytes("link-node0-switch0.p0.pcap");
  CHECK(le(file, 0, 4) == 0xA1B23C4D); // nanosecond timestamps
  CHECK(le(file, 4, 2) == 2);
  CHECK(le(file, 6, 2) == 4);
  CHECK(le(file, 16, 4) == PcapWriter::kSnapLength);
  CHECK(le(file, 20, 4) == 147); // LINKTYPE_USER0
  std::vector<Record> recs = records(file);
  REQUIRE(recs.size() == 1);
  const Record &r = recs[0];
  // The head's time, rounded down to the nanosecond.
  CHECK(r.seconds == 1);
  CHECK(r.nanoseconds == 500'000'123);
  CHECK(r.captured == 28 + kFrame.size());
  CHECK(r.length == r.captured);
  CHECK(r.version == 2);
  CHECK(r.direction == 0);
  CHECK(r.route_bytes == 2);
  CHECK(r.source == 0);
  CHECK(r.packet_id == 7);
  CHECK(r.cable_ps == 76'544);
  CHECK(r.destination == 5);
  CHECK(r.frame == kFrame);
}

TEST_CASE("Ethernet crossings: LINKTYPE_ETHERNET, the frame without FCS") {
  TempDir dir;
  std::vector<uint8_t> frame(64, 0x11); // 60 bytes and a 4-byte FCS
  frame[60] = 0xAA;
  frame[63] = 0xBB;
  {
    PcapWriter w(dir.path.string());
    LinkRef ethernet{0, "node0", "switch0.p0"};
    ethernet.ethernet = true;
    w.link_packet(ethernet, 0, 7, Time(2'000'000'123'456),
                  Time(2'000'000'200'000), frame);
    w.link_packet(ethernet, 0, 8, Time(3'000'000'000'000),
                  Time(3'000'000'100'000), frame);
    // Another cable of the same writer stays Myrinet-style.
    w.link_packet(LinkRef{1, "node1", "switch0.p1", 2}, 1, 9, 1000, 2000,
                  kFrame);
    w.finish();
  }
  std::vector<uint8_t> file = dir.bytes("link-node0-switch0.p0.pcap");
  CHECK(le(file, 0, 4) == 0xA1B23C4D);
  CHECK(le(file, 20, 4) == 1); // LINKTYPE_ETHERNET
  CHECK(uint32_t(PcapWriter::LinkType::Ethernet) == 1);
  // Two records of 16 + 60 bytes: no pseudo-header, no FCS.
  REQUIRE(file.size() == 24 + 2 * (16 + 60));
  CHECK(le(file, 24, 4) == 2);   // seconds
  CHECK(le(file, 28, 4) == 123); // nanoseconds
  CHECK(le(file, 32, 4) == 60);  // captured
  CHECK(le(file, 36, 4) == 60);  // on the wire, without FCS
  CHECK(std::vector<uint8_t>(file.begin() + 40, file.begin() + 100) ==
        std::vector<uint8_t>(frame.begin(), frame.begin() + 60));
  CHECK(le(file, 100, 4) == 3);
  CHECK(le(dir.bytes("link-node1-switch0.p1.pcap"), 20, 4) == 147);
}

TEST_CASE("one file per cable, both directions in it, in the order told") {
  TempDir dir;
  {
    PcapWriter w(dir.path.string());
    w.link_packet(LinkRef{1, "switch0.p1", "node1", 0}, 0, 1, 2000, 3000,
                  kFrame);
    w.link_packet(LinkRef{1, "node1", "switch0.p1", 1}, 1, 2, 4000, 5000,
                  kFrame);
    w.link_packet(LinkRef{5, "switch1.p7", "switch0.p7", 1}, 1, 2, 4500, 5500,
                  kFrame);
    w.link_packet(LinkRef{6, "node3", "node2", 0}, 3, 3, 1000, 2000, kFrame);
    w.finish();
  }
  std::vector<Record> cable = records(dir.bytes("link-node1-switch0.p1.pcap"));
  REQUIRE(cable.size() == 2);
  CHECK(cable[0].direction == 1); // switch -> node: second end to first
  CHECK(cable[0].packet_id == 1);
  CHECK(cable[1].direction == 0);
  CHECK(cable[1].source == 1);
  // Names put nodes first, then switches by (switch, port).
  std::vector<Record> trunk =
      records(dir.bytes("link-switch0.p7-switch1.p7.pcap"));
  REQUIRE(trunk.size() == 1);
  CHECK(trunk[0].direction == 1);
  std::vector<Record> back = records(dir.bytes("link-node2-node3.pcap"));
  REQUIRE(back.size() == 1);
  CHECK(back[0].direction == 1);
  CHECK(PcapWriter::file_name("switch10.p0", "switch9.p3") ==
        "link-switch9.p3-switch10.p0.pcap");
  CHECK(PcapWriter::forward("node2", "node10"));
}

TEST_CASE("many cables and records: buffered, nothing lost") {
  TempDir dir;
  {
    PcapWriter w(dir.path.string());
    std::vector<uint8_t> big(4100, 0x5A);
    for (uint32_t i = 0; i < 2000; ++i)
      w.link_packet(LinkRef{i % 40, "node" + std::to_string(i % 40),
                            "switch0.p" + std::to_string(i % 40), 0},
                    i % 40, i, Time(i) * 1000, Time(i) * 1000 + 500, big);
    w.finish();
  }
  size_t files = 0, total = 0;
  for (const auto &e : fs::directory_iterator(dir.path)) {
    ++files;
    std::vector<Record> recs = records(dir.bytes(e.path().filename().string()));
    total += recs.size();
    for (size_t i = 1; i < recs.size(); ++i)
      CHECK(recs[i].nanoseconds > recs[i - 1].nanoseconds);
  }
  CHECK(files == 40);
  CHECK(total == 2000);
}

TEST_CASE("the directory: created, old captures replaced, bad ones refused") {
  TempDir dir;
  fs::create_directories(dir.path);
  std::ofstream(dir.path / "link-node5-switch0.p5.pcap") << "old";
  std::ofstream(dir.path / "notes.txt") << "mine";
  {
    PcapWriter w(dir.path.string());
    w.finish();
  }
  CHECK(!fs::exists(dir.path / "link-node5-switch0.p5.pcap"));
  CHECK(fs::exists(dir.path / "notes.txt"));

  TempDir nested;
  CHECK_NOTHROW(PcapWriter((nested.path / "a" / "b").string()));
  CHECK(fs::is_directory(nested.path / "a" / "b"));

  // A directory under a regular file cannot exist.
  CHECK_THROWS_WITH_AS(PcapWriter((dir.path / "notes.txt" / "caps").string()),
                       doctest::Contains("--pcap"), Error);
  CHECK_THROWS_WITH_AS(PcapWriter((dir.path / "notes.txt").string()),
                       doctest::Contains("--pcap"), Error);
}
