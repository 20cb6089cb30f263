// Model files: the shipped models, unit parsing, validation errors and the
// model search path.
#include "nicemu/error.hpp"
#include "nicemu/model.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <unistd.h>

using namespace nicemu;
namespace fs = std::filesystem;

namespace {

// The smallest valid model; tests edit one line of it at a time.
const std::string kMinimal = R"(name = "mine"
[core]
clock_hz = 1_000_000
[[memory]]
name = "sram"
base = 0x00000000
size = "64 KiB"
[flash]
size = "64 KiB"
)";

// kMinimal with the first `from` replaced by `to`.
std::string edit(const std::string &from, const std::string &to,
                 const std::string &text = kMinimal) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.substr(0, at) + to + text.substr(at + from.size());
}

// The message of the nicemu::Error that parsing `text` throws.
std::string error_of(const std::string &text) {
  try {
    parse_model(text, "mine.toml");
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

// The message of the nicemu::Error that load_model(name) throws.
std::string error_of_load(const std::string &name) {
  try {
    load_model(name);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// Sets NICEMU_MODEL_PATH for one test and puts the old value back.
class ModelPathGuard {
public:
  explicit ModelPathGuard(const std::string &value) {
    if (const char *old = std::getenv("NICEMU_MODEL_PATH"))
      old_ = old;
    setenv("NICEMU_MODEL_PATH", value.c_str(), 1);
  }
  ~ModelPathGuard() {
    if (old_)
      setenv("NICEMU_MODEL_PATH", old_->c_str(), 1);
    else
      unsetenv("NICEMU_MODEL_PATH");
  }

private:
  std::optional<std::string> old_;
};

// A fresh directory removed at the end of the test.
class TempDir {
public:
  TempDir()
      : path_(fs::temp_directory_path() /
              ("nicemu-test-model-" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path &path() const { return path_; }
  fs::path write(const std::string &file, const std::string &text) const {
    std::ofstream(path_ / file) << text;
    return path_ / file;
  }

private:
  fs::path path_;
};

} // namespace

TEST_SUITE("model") {

  TEST_CASE("the four shipped models are found and load") {
    std::vector<std::string> names = list_models();
    for (const char *name : {"lanai4", "martini", "comet", "uzura"}) {
      CAPTURE(name);
      CHECK(std::find(names.begin(), names.end(), name) != names.end());
      Model m = load_model(name);
      CHECK(m.name == name);
      CHECK(m.source.filename() == std::string(name) + ".toml");
      CHECK(m.clock_hz > 0);
      CHECK(!m.description.empty());
      CHECK(m.code_region().executable);
      CHECK(m.data_region().writable);
    }
  }

  TEST_CASE("lanai4 carries the spec's figures") {
    Model m = load_model("lanai4");
    CHECK(m.id == 1);
    CHECK(m.clock_hz == 33'000'000);
    REQUIRE(m.memories.size() == 1);
    CHECK(m.memories[0].name == "sram");
    CHECK(m.memories[0].base == 0);
    CHECK(m.memories[0].size == 256 * 1024);
    CHECK(m.cycles.load_use == 1);
    CHECK(m.cycles.mul == 11);
    CHECK(m.cycles.div == 34);
    CHECK(m.cycles.taken_branch == 0);
    CHECK(m.timing("tx_dma.gap") == 480'000);
    CHECK(m.timing("tx_dma.per_word") == 30'100);
    CHECK(m.timing("tx_dma.startup") == 100'000);
    CHECK(m.timing("network.one_word_one_switch") == 1'350'000);
    CHECK(m.timing("host_dma.gap_to_sram") == 1'320'000);
    CHECK(m.timing("host_dma.per_word_to_host") == 32'100);
    CHECK(m.timing("host.pio_read_word") == 690'000);
    CHECK(m.timing("host.pio_write_word") == 510'000);
    CHECK(m.param("link.bandwidth_MBps") == 160);
    CHECK(m.param("switch.ports") == 8);
    CHECK(m.param("host.page_bytes") == 4096);
  }

  TEST_CASE("martini has split SRAMs and LLCM") {
    Model m = load_model("martini");
    REQUIRE(m.memories.size() == 3);
    CHECK(m.code_region().name == "isram");
    CHECK(!m.code_region().writable);
    CHECK(m.data_region().name == "dsram");
    CHECK(!m.data_region().executable);
    CHECK(m.data_region().base == 0x00100000);
    const MemoryRegion *llcm = m.region_at(0x00200000);
    REQUIRE(llcm != nullptr);
    CHECK(llcm->name == "llcm");
    CHECK(llcm->size == 128 * 1024);
    CHECK(m.param("sodimm.banks") == 2);
    CHECK(m.param("sodimm.max_bank_bytes") == double(1ull << 30));
    CHECK(m.param("dimm_pipeline.htlb_lookup") == 3);
    CHECK(m.param("swif_pipeline.receive") == 7);
    CHECK(m.timing("switch.per_packet") == 240'000);
    CHECK(m.timing("host.uncached_load_8") == 173'000);
  }

  TEST_CASE("comet has its doorbells and two FastEthernet ports") {
    Model m = load_model("comet");
    CHECK(m.param("doorbell.fifos") == 8);
    CHECK(m.param("doorbell.reserved") == 2);
    CHECK(m.param("doorbell.max_vis") == 3);
    CHECK(m.param("link.ports") == 2);
    CHECK(m.param("link.bandwidth_MBps") == 12.5);
  }

  TEST_CASE("uzura maps its 4 MiB SRAM and carries the PCI-X figures") {
    Model m = load_model("uzura");
    const MemoryRegion *sram = m.region_at(0x00400000);
    REQUIRE(sram != nullptr);
    CHECK(sram->name == "sram");
    CHECK(sram->size == 4u << 20);
    CHECK(!sram->executable);
    CHECK(m.code_region().name == "local");
    CHECK(m.timing("sram.read_latency") == 35'300);
    CHECK(m.timing("host.pio_write_word") == 97'500);
    CHECK(m.timing("host.interrupt") == 4'990'000);
    CHECK(m.timing("host_dma.start_after_doorbell") == 24'000);
    CHECK(m.param("host_bus.peak_MBps") == 1066);
    CHECK(m.param("translation.coverage_bytes") == double(2ull << 30));
  }

  TEST_CASE("durations parse to picoseconds, rounded to nearest") {
    CHECK(parse_duration_ps("0.48 us") == 480'000u);
    CHECK(parse_duration_ps("30.1ns") == 30'100u);
    CHECK(parse_duration_ps("1.35 us") == 1'350'000u);
    CHECK(parse_duration_ps("2 ms") == 2'000'000'000u);
    CHECK(parse_duration_ps("1 s") == 1'000'000'000'000u);
    CHECK(parse_duration_ps("120 ps") == 120u);
    CHECK(parse_duration_ps(" 97.5 ns ") == 97'500u);
    CHECK(parse_duration_ps("3 \xC2\xB5s") == 3'000'000u);
    CHECK(parse_duration_ps("0 ns") == 0u);
    CHECK(parse_duration_ps("0.4 ps") == 0u);
    CHECK(parse_duration_ps("0.5 ps") == 1u);
    CHECK(parse_duration_ps("1.0005 ns") == 1'001u);
    CHECK(parse_duration_ps("1.5000000000000000000000000 ns") == 1'500u);
    for (const char *bad :
         {"", "5", "us", "-1 us", "1.2.3 us", "1 sec", "1e3 ns", "1. ns",
          ".5 ns", "1 u s", "1 US", "100000000 s"}) {
      CAPTURE(bad);
      CHECK(!parse_duration_ps(bad));
    }
  }

  TEST_CASE("sizes parse to bytes and format back") {
    CHECK(parse_size("256 KiB") == 256u * 1024);
    CHECK(parse_size("4 MiB") == 4u << 20);
    CHECK(parse_size("1 GiB") == 1u << 30);
    CHECK(parse_size("4096") == 4096u);
    CHECK(parse_size("512 B") == 512u);
    CHECK(parse_size(" 1KiB ") == 1024u);
    for (const char *bad : {"", "KiB", "1.5 MiB", "256 KB", "4 kib", "-1",
                            "1 TiB", "99999999999999 GiB"}) {
      CAPTURE(bad);
      CHECK(!parse_size(bad));
    }
    CHECK(format_size(uint64_t{256} << 10) == "256 KiB");
    CHECK(format_size(4u << 20) == "4 MiB");
    CHECK(format_size(1u << 30) == "1 GiB");
    CHECK(format_size(1000) == "1000 B");
    CHECK(format_size(0) == "0 B");
  }

  TEST_CASE("the minimal model is valid and fills defaults") {
    Model m = parse_model(kMinimal, "mine.toml");
    CHECK(m.name == "mine");
    CHECK(m.id == 0);
    CHECK(m.watchdog_cycles == 0);
    CHECK(m.cycles.mul == 0);
    CHECK(m.flash_size == 64 * 1024);
    CHECK(m.memories[0].executable);
    CHECK(m.memories[0].writable);
    CHECK(m.timing_ps.empty());
    CHECK(m.params.empty());
  }

  TEST_CASE("missing and mistyped required keys are named") {
    CHECK(error_of(edit("name = \"mine\"\n", "")) ==
          "mine.toml: name: missing (required)");
    CHECK(error_of(edit("clock_hz = 1_000_000", "clock_hz = 0")) ==
          "mine.toml:3: [core] clock_hz: must be an integer from 1000 to "
          "1000000000000 (got integer 0)");
    CHECK(contains(error_of(edit("1_000_000", "\"33 MHz\"")),
                   "[core] clock_hz: must be an integer from 1000 to "
                   "1000000000000 (got string"));
    CHECK(contains(error_of(edit("name = \"mine\"", "name = \"my card\"")),
                   "mine.toml:1: name: must be letters, digits"));
    CHECK(contains(error_of(edit("[flash]\nsize = \"64 KiB\"\n", "")),
                   "mine.toml: missing table [flash] (required)"));
  }

  TEST_CASE("unknown keys are rejected with a suggestion") {
    CHECK(error_of(edit("clock_hz", "clok_hz")) ==
          "mine.toml:3: unknown key [core] clok_hz (did you mean clock_hz?)");
    CHECK(contains(error_of(kMinimal + "[cyles]\nmul = 3\n"),
                   "unknown key cyles (did you mean cycles?)"));
    CHECK(contains(error_of(edit("size = \"64 KiB\"", "sise = \"64 KiB\"")),
                   "unknown key [[memory]] #1 sise (did you mean size?)"));
    CHECK(contains(error_of(kMinimal + "[cycles]\nfrobnicate = 1\n"),
                   "unknown key [cycles] frobnicate (known keys: load_use,"));
  }

  TEST_CASE("TOML syntax errors give line and column") {
    std::string msg = error_of(edit("clock_hz = 1_000_000", "clock_hz = = 1"));
    CHECK(contains(msg, "mine.toml:3:"));
    CHECK(contains(msg, "TOML syntax error"));
  }

  TEST_CASE("non-ASCII text outside strings and comments is refused by "
            "line, before toml++ (whose whitespace table has gaps: found by "
            "fuzz_model)") {
    std::string msg =
        error_of(edit("clock_hz = 1_000_000", "clock_hz = 1_000_000\xC2\xA1"));
    CHECK(contains(msg, "mine.toml:3: a non-ASCII character outside a "
                        "string or a comment"));
    // In comments and strings it is fine ("\xC2\xB5" is a micro sign).
    Model m = parse_model(kMinimal + "# 1 \xC2\xB5s\n[timing.dma]\ngap = "
                                     "\"0.5 us\" # \xC2\xB5\n",
                          "mine.toml");
    CHECK(m.timing("dma.gap") == 500'000);
    CHECK(contains(error_of(kMinimal + "a = \"\xC2\xB5\"\n\xC2\xA1 = 1\n"),
                   "mine.toml:"));
  }

  TEST_CASE("toml++ is given ASCII only, whatever the text (regression: "
            "fuzz_model, two long runs)") {
    // Each of these made toml++ reach __builtin_unreachable on a
    // non-ASCII character: after `0"`, which toml++ takes for part of a
    // bare token, and after `"""` at the start of a line. Now a clear
    // TOML syntax error.
    for (const std::string &text :
         {edit("clock_hz = 1_000_000",
               "clock_hz = 0\".5s!One\xEF\xBA\xBF PIO\""),
          kMinimal + "    \"\"\" dels it \xC3\xAF as\n",
          kMinimal + "x = \"a\" \"\xC2\xB5\"\n"}) {
      CAPTURE(text);
      CHECK(contains(error_of(text), "TOML syntax error"));
    }
    // In "basic" strings, quoted keys and comments it is fine, and a
    // string keeps it.
    Model m = parse_model(edit("name = \"mine\"",
                               "name = \"mine\"\ndescription = "
                               "\"1 \xC2\xB5s \xF0\x9F\x9A\x80\" # \xC2\xB5"),
                          "mine.toml");
    CHECK(m.description == "1 \xC2\xB5s \xF0\x9F\x9A\x80");
    // A 'literal' string has no escapes: refused, saying what to use.
    CHECK(contains(error_of(edit("name = \"mine\"", "name = '\xC2\xB5'")),
                   "mine.toml:1: a non-ASCII character in a 'literal' "
                   "string: use a \"basic\" string"));
    CHECK(contains(error_of(edit("name = \"mine\"", "name = \"\xC2\"")),
                   "mine.toml:1: text that is not UTF-8"));
  }

  TEST_CASE("memory layout is validated") {
    std::string second = "[[memory]]\nname = \"llcm\"\nbase = 0x8000\n"
                         "size = \"32 KiB\"\n";
    CHECK(error_of(kMinimal + second) ==
          "mine.toml:10: memory \"llcm\" (0x00008000, 32 KiB) overlaps memory "
          "\"sram\" (0x00000000, 64 KiB)");
    CHECK(contains(error_of(edit("base = 0x00000000", "base = 0x1F000000")),
                   "overlaps the device registers (MMIO"));
    CHECK(contains(error_of(edit("base = 0x00000000", "base = 0x1E000000")),
                   "overlaps the flash window (0x1E000000, 64 KiB)"));
    // Past the end of a small flash the window is free.
    CHECK(error_of(edit("base = 0x00000000", "base = 0x1E010000")) ==
          "(no error)");
    CHECK(contains(
        error_of(edit("base = 0x00000000", "base = 0x00000100")),
        "memory \"sram\" base: must be 4 KiB aligned, got 0x00000100"));
    CHECK(
        contains(error_of(edit("size = \"64 KiB\"", "size = 5000")),
                 "memory \"sram\" size: must be a non-zero multiple of 4 KiB"));
    CHECK(contains(error_of(edit("base = 0x00000000", "base = 0x7FFFF000")),
                   "past 0x80000000"));
    CHECK(error_of(edit("base = 0x00000000", "base = 0x7FFF0000")) ==
          "(no error)");
    CHECK(contains(error_of(kMinimal + "[[memory]]\nname = \"sram\"\nbase = "
                                       "0x100000\nsize = 4096\n"),
                   "memory \"sram\" is defined twice"));
    CHECK(contains(error_of(edit("size = \"64 KiB\"",
                                 "size = \"64 KiB\"\nexecutable = false")),
                   "no memory is executable"));
  }

  TEST_CASE("flash size is bounded by its window") {
    std::string big = kMinimal.substr(0, kMinimal.find("[flash]")) +
                      "[flash]\nsize = \"32 MiB\"\n";
    CHECK(contains(error_of(big), "[flash] size: must be a multiple of 4 KiB "
                                  "from 4 KiB to 16 MiB"));
  }

  TEST_CASE("timing and params sections are free-form but checked") {
    Model m = parse_model(kMinimal + "[timing.dma]\ngap = \"0.5 us\"\n"
                                     "[params.link]\nbandwidth_MBps = 12.5\n"
                                     "bank = \"2 MiB\"\n",
                          "mine.toml");
    CHECK(m.timing("dma.gap") == 500'000);
    CHECK(m.param("link.bandwidth_MBps") == 12.5);
    CHECK(m.param("link.bank") == double(2u << 20));
    CHECK_THROWS_WITH_AS(m.timing("dma.nope"),
                         "mine.toml: model \"mine\" has no timing parameter "
                         "[timing.dma] nope",
                         Error);
    CHECK(contains(error_of(kMinimal + "[timing.dma]\ngap = \"0.5 sec\"\n"),
                   "mine.toml:11: [timing.dma] gap: must be a duration"));
    CHECK(contains(error_of(kMinimal + "[timing.dma]\ngap = 5\n"),
                   "(got integer 5)"));
    CHECK(contains(error_of(kMinimal + "[timing]\ngap = \"1 us\"\n"),
                   "[timing] gap: must be a table [timing.gap]"));
    CHECK(contains(error_of(kMinimal + "[params.link]\nlat = \"1 us\"\n"),
                   "durations belong in [timing.*]"));
  }

  TEST_CASE("unknown model names list the models found") {
    CHECK_THROWS_AS(load_model("nosuch"), Error);
    try {
      load_model("nosuch");
    } catch (const Error &e) {
      std::string msg = e.what();
      CHECK(contains(msg, "unknown model \"nosuch\""));
      CHECK(contains(msg, "available models: "));
      for (const char *name : {"comet", "lanai4", "martini", "uzura"})
        CHECK(contains(msg, name));
    }
    CHECK_THROWS_WITH_AS(load_model("/nonexistent/x.toml"),
                         doctest::Contains("cannot open model file"), Error);
  }

  TEST_CASE("NICEMU_MODEL_PATH adds user models") {
    TempDir dir;
    dir.write("mycard.toml", edit("\"mine\"", "\"mycard\""));
    dir.write("lanai4.toml", edit("\"mine\"", "\"lanai4\""));
    dir.write("misnamed.toml", kMinimal);
    ModelPathGuard guard("/nonexistent:" + dir.path().string());
    CHECK(model_search_path().at(1) == dir.path());
    Model m = load_model("mycard");
    CHECK(m.name == "mycard");
    CHECK(m.source == dir.path() / "mycard.toml");
    // The user's directory comes first, so it can override a shipped model.
    CHECK(load_model("lanai4").clock_hz == 1'000'000);
    auto names = list_models();
    CHECK(std::count(names.begin(), names.end(), "lanai4") == 1);
    CHECK(std::find(names.begin(), names.end(), "mycard") != names.end());
    CHECK_THROWS_WITH_AS(load_model("misnamed"),
                         doctest::Contains("does not match the file name"),
                         Error);
    // A path bypasses the search and the name check.
    CHECK(load_model((dir.path() / "misnamed.toml").string()).name == "mine");
  }

  TEST_CASE("region_at finds the memory holding an address") {
    Model m = load_model("lanai4");
    REQUIRE(m.region_at(0) != nullptr);
    CHECK(m.region_at(0)->name == "sram");
    CHECK(m.region_at(0x3FFFF) == &m.memories[0]);
    CHECK(m.region_at(0x40000) == nullptr);
    CHECK(m.region_at(0xFFFFFFFF) == nullptr);
    Model martini = load_model("martini");
    CHECK(martini.region_at(0x00100010)->name == "dsram");
    CHECK(martini.region_at(0x00180000) == nullptr);
  }

  TEST_CASE("martini's reference set-ups A-F are variants: NAME:VARIANT") {
    Model base = load_model("martini");
    // A-F, E and F without MMX, SR (Send/Receive) and SR-status.
    REQUIRE(base.variants.size() == 10);
    CHECK(base.variant.empty());
    CHECK(base.full_name() == "martini");
    // Set-up A: electrical OIP, Pentium III, DIMM 66 MHz, SWIF 62.5 MHz.
    Model a = load_model("martini:A");
    CHECK(a.name == "martini"); // images built for martini boot on it
    CHECK(a.variant == "A");
    CHECK(a.full_name() == "martini:A");
    CHECK(a.param("clocks.dimm_hz") == 66e6);
    CHECK(a.param("clocks.swif_hz") == 62.5e6);
    CHECK(a.param("swif_pipeline.receive") == 9);
    CHECK(a.param("link.bandwidth_MBps") == 250);
    CHECK(a.param("link.short_packet_pad_bytes") == 0);
    CHECK(a.timing("link.outside_swif") == 108'000);
    CHECK(a.timing("host.uncached_load_8") == 204'000);
    CHECK(a.timing("host.clock_read") == 38'000);
    // Set-up E: optical RHiNET-2, Pentium 4 with MMX.
    Model e = load_model("martini:E");
    CHECK(e.param("link.bandwidth_MBps") == 500);
    CHECK(e.param("link.short_packet_pad_bytes") == 128);
    CHECK(e.timing("link.outside_swif") == 134'000);
    CHECK(e.timing("host.uncached_store_8") == 59'000);
    CHECK(e.timing("host.uncached_load_8") == 276'000);
    // What a variant does not name stays the model's.
    CHECK(e.param("htlb.ways") == base.param("htlb.ways"));
    CHECK(e.memories.size() == base.memories.size());
    // A path takes a variant too.
    CHECK(load_model(base.source.string() + ":D").variant == "D");
  }

  TEST_CASE("an unknown variant names the ones there are") {
    CHECK_THROWS_WITH_AS(load_model("martini:G"),
                         doctest::Contains("has no variant \"G\" (variants: "
                                           "A, B, C, D, E, E-nommx, F, "
                                           "F-nommx, SR, SR-status)"),
                         Error);
    CHECK_THROWS_WITH_AS(load_model("lanai4:A"),
                         doctest::Contains("(it has no variants)"), Error);
    CHECK(contains(error_of(kMinimal + "[variant.bad]\nspeed = 1\n"),
                   "unknown key [variant.bad] speed"));
    CHECK(contains(error_of(kMinimal + "[variant.\"x y\"]\n"),
                   "variant name must be letters"));
  }

  TEST_CASE("regression: a model name from a file or an argument is never "
            "printed raw (issue 23, also)") {
    // An escape sequence in --model, or as the file's name: shown as \xNN.
    std::string unknown = error_of_load("\x1b]0;pwned\a");
    CHECK(contains(unknown, "unknown model \"\\x1B]0;pwned\\x07\""));
    CHECK(unknown.find('\x1b') == std::string::npos);
    std::string named =
        error_of(edit("name = \"mine\"", "name = \"\\u001b[31mred\""));
    CHECK(contains(named, "got \"\\x1B[31mred\""));
    CHECK(named.find('\x1b') == std::string::npos);
    CHECK(printable("lanai4") == "lanai4");
    CHECK(printable("a\\b\xc2\xb5") == "a\\x5Cb\\xC2\\xB5");
  }
} // TEST_SUITE
