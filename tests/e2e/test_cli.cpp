// End-to-end: the `nicemu` command line on real firmware samples. Packing
// and describing images, flashing, booting from flash, listing models,
// linker scripts and the CPU benchmark.
#include "bench_checks.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>

using namespace e2e;

namespace {

// CRC-32 as zlib computes it, written out here so the test does not check
// nicemu's CRCs with nicemu's own code.
uint32_t crc32_of(const uint8_t *data, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

constexpr size_t kLanai4Flash = 1024 * 1024; // emulator/models/lanai4.toml

bool all_erased(const std::vector<uint8_t> &bytes, size_t from) {
  for (size_t i = from; i < bytes.size(); ++i)
    if (bytes[i] != 0xFF)
      return false;
  return true;
}

bool starts_with(const std::vector<uint8_t> &bytes,
                 const std::vector<uint8_t> &prefix) {
  return bytes.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), bytes.begin());
}

} // namespace

TEST_CASE("image --info describes hello.img: model, entry, segment CRCs, "
          "symbols") {
  const std::string img = firmware("hello.img");
  const std::vector<uint8_t> bytes = read_bytes(img);
  CommandResult r = nicemu({"image", "--info", img});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  CHECK(contains(r.out, "nicemu firmware image, format version 1"));
  CHECK(lines_with(r.out, "model:").size() == 1);
  CHECK(contains(lines_with(r.out, "model:").at(0), "lanai4"));
  const auto entry = lines_with(r.out, "entry:");
  REQUIRE(entry.size() == 1);
  CHECK(contains(entry[0], hex32(raw_entry(bytes))));
  CHECK(contains(r.out, "total size:   " + std::to_string(bytes.size())));
  const auto segments = raw_segments(bytes);
  REQUIRE(!segments.empty());
  CHECK(contains(r.out, "segments:     " + std::to_string(segments.size())));
  for (const RawSegment &s : segments) {
    // The CRC printed is the one of the segment's bytes, on its own line.
    REQUIRE(size_t(s.offset) + s.size <= bytes.size());
    const uint32_t crc = crc32_of(bytes.data() + s.offset, s.size);
    CHECK(crc == s.crc);
    const auto line = lines_with(r.out, hex32(s.address));
    REQUIRE_MESSAGE(!line.empty(),
                    "no line for segment at " << hex32(s.address));
    bool listed = false;
    for (const std::string &l : line)
      listed = listed || contains(l, hex32(crc));
    CHECK_MESSAGE(listed, "CRC " << hex32(crc) << " not shown for segment "
                                 << hex32(s.address));
  }
  // The firmware is freestanding C++: main may be mangled, "main()".
  bool has_main = false;
  for (const std::string &l : lines_with(r.out, "main"))
    has_main = has_main || l.ends_with(" main") || l.ends_with(" main()");
  CHECK_MESSAGE(has_main, "symbol main is not listed");
}

TEST_CASE("image packs hello.elf into exactly hello.img") {
  TempDir dir;
  const std::string out = dir.file("repacked.img");
  CommandResult r =
      nicemu({"image", firmware("hello.elf"), "-o", out, "--model", "lanai4"});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "packed " + out));
  CHECK(contains(r.out, "model lanai4"));
  // Deterministic packing: same ELF, same model, same bytes.
  CHECK(read_bytes(out) == read_bytes(firmware("hello.img")));
}

TEST_CASE("image refuses what is not a MIPS32 little-endian executable") {
  TempDir dir;
  const std::string out = dir.file("out.img");
  SUBCASE("a text file") {
    const std::string text = dir.file("notes.txt");
    write_bytes(text, std::vector<uint8_t>(200, 'x'));
    CommandResult r = nicemu({"image", text, "-o", out});
    INFO(r);
    CHECK(r.status == 1);
    CHECK(contains(r.err, "nicemu: error: " + text));
    CHECK(contains(r.err, "not an ELF file"));
  }
  SUBCASE("a truncated ELF file") {
    std::vector<uint8_t> elf = read_bytes(firmware("hello.elf"));
    for (size_t length : {size_t(20), size_t(60), elf.size() / 2}) {
      CAPTURE(length);
      const std::string cut = dir.file("cut.elf");
      write_bytes(cut, {elf.begin(), elf.begin() + long(length)});
      CommandResult r = nicemu({"image", cut, "-o", out});
      INFO(r);
      CHECK(r.status == 1);
      CHECK(contains(r.err, "nicemu: error: " + cut));
      CHECK(contains(r.err, "truncated"));
    }
  }
  SUBCASE("an x86-64 executable (nicemu itself)") {
    CommandResult r = nicemu({"image", NICEMU_TOOL_PATH, "-o", out});
    INFO(r);
    CHECK(r.status == 1);
    CHECK(contains(r.err, "not a MIPS32 little-endian executable"));
    CHECK(contains(r.err, "x86-64"));
  }
  CHECK(!fs::exists(out));
}

TEST_CASE("flash writes the image into an erased flash of the model's size") {
  TempDir dir;
  const std::string flash = dir.file("node0.flash");
  const std::vector<uint8_t> big = read_bytes(firmware("bench_cpu.img"));
  const std::vector<uint8_t> small = read_bytes(firmware("hello.img"));
  REQUIRE(big.size() > small.size());

  CommandResult r =
      nicemu({"flash", firmware("bench_cpu.img"), "--flash", flash});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "verified"));
  std::vector<uint8_t> bytes = read_bytes(flash);
  REQUIRE(bytes.size() == kLanai4Flash);
  CHECK(starts_with(bytes, big));
  CHECK(all_erased(bytes, big.size()));

  // A shorter image must not leave the tail of the longer one behind.
  r = nicemu({"flash", firmware("hello.img"), "--flash", flash});
  INFO(r);
  REQUIRE(r.status == 0);
  bytes = read_bytes(flash);
  REQUIRE(bytes.size() == kLanai4Flash);
  CHECK(starts_with(bytes, small));
  CHECK(all_erased(bytes, small.size()));

  r = nicemu({"run", "--model", "lanai4", "--flash", flash});
  INFO(r);
  CHECK(r.status == 0);
  CHECK(r.out == "[node0] hello from node 0 of 1\n");
  RunSummary s = parse_summary(r.err);
  CHECK(contains(r.err, "--- nicemu: lanai4 model, 1 node ---"));
  CHECK(s.state == "halted");
  CHECK(s.exit == "0");
  CHECK(s.instructions > 100);
  CHECK(s.cycles >= s.instructions);
  CHECK(s.virtual_us > 0);
  // 33 MHz: the cycles and the virtual time agree.
  CHECK(s.virtual_us == doctest::Approx(s.cycles / 33.0).epsilon(0.01));
  CHECK(s.wall_ms >= 0);
  CHECK(s.mips >= 0);
  CHECK(contains(r.err, "emulated MIPS"));
}

TEST_CASE("run --firmware: exit code and start-up code") {
  SUBCASE("exit_code returns 3 from main") {
    CommandResult r = nicemu({"run", "--firmware", firmware("exit_code.img")});
    INFO(r);
    CHECK(r.status == 3);
    CHECK(r.out.empty());
    RunSummary s = parse_summary(r.err);
    CHECK(s.state == "halted");
    CHECK(s.exit == "3");
  }
  SUBCASE("ctors: constructors, .bss and .data are set up before main") {
    CommandResult r = nicemu({"run", "--firmware", firmware("ctors.img")});
    INFO(r);
    CHECK(r.status == 0);
    CHECK(r.out == "[node0] ctors ok\n");
  }
  SUBCASE("--quiet leaves out the summary") {
    CommandResult r =
        nicemu({"run", "-q", "--firmware", firmware("hello.img")});
    INFO(r);
    CHECK(r.status == 0);
    CHECK(r.out == "[node0] hello from node 0 of 1\n");
    CHECK(r.err.empty());
  }
}

TEST_CASE("models lists the four reference models") {
  CommandResult r = nicemu({"models"});
  INFO(r);
  REQUIRE(r.status == 0);
  for (const char *name : {"lanai4", "martini", "comet", "uzura"}) {
    bool listed = false;
    for (const std::string &l : lines_with(r.out, name))
      listed = listed || l.rfind(name, 0) == 0;
    CHECK_MESSAGE(listed, name << " is not listed");
  }
  CHECK(contains(r.out, "search path:"));
}

TEST_CASE("ldscript --model martini maps code to isram and data to dsram") {
  CommandResult r = nicemu({"ldscript", "--model", "martini"});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "MEMORY"));
  CHECK(contains(r.out, "isram (rx) : ORIGIN = 0x00000000"));
  CHECK(contains(r.out, "dsram (rw) : ORIGIN = 0x00100000"));
  CHECK(contains(r.out, "> isram"));
  CHECK(contains(r.out, "> dsram"));
  CHECK(contains(r.out, "ENTRY(_start)"));

  TempDir dir;
  const std::string out = dir.file("martini.ld");
  r = nicemu({"ldscript", "--model", "martini", "-o", out});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK(read_text(out) == nicemu({"ldscript", "--model", "martini"}).out);
}

TEST_CASE("bench cpu --json: all runs agree, sleeping covers 1 s") {
  CommandResult r = nicemu({"bench", "cpu", "--json", "--repeats", "1"});
  INFO(r);
  REQUIRE(r.status == 0);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  CHECK(j.at("bench") == "cpu");
  TempDir dir;
  check_bench_schema(dir, r.out, "cpu");
  CHECK(j.at("model") == "lanai4");
  std::vector<std::string> names;
  std::map<std::string, uint32_t> results;
  for (const auto &k : j.at("kernels")) {
    const std::string name = k.at("name");
    CAPTURE(name);
    names.push_back(name);
    results[name] = k.at("result").get<uint32_t>();
    CHECK(k.at("results_agree") == true);
    CHECK(k.at("instructions").get<uint64_t>() > 0);
    CHECK(k.at("cycles").get<uint64_t>() >=
          k.at("instructions").get<uint64_t>());
    for (const char *mode : {"accounting", "no_accounting", "raw_unicorn"})
      CHECK(k.at("mips").at(mode).get<double>() > 0);
  }
  CHECK(names == std::vector<std::string>{"checksum", "checksum32", "calls"});
  // Two implementations of one checksum over the same data.
  CHECK(results["checksum"] == results["checksum32"]);
  const auto &sleep = j.at("sleep");
  CHECK(sleep.at("virtual_seconds").get<double>() ==
        doctest::Approx(1.0).epsilon(0.01));
  CHECK(sleep.at("wall_seconds").get<double>() > 0);
  CHECK(sleep.at("instructions").get<uint64_t>() > 0);
}
