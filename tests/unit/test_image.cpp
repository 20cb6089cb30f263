// Unit tests of the checked firmware image (emulator/mem/image.cpp) and of
// the ELF reader (emulator/mem/elf_reader.cpp). The byte offsets used here
// are those of docs/image-format.md, so these tests also pin the layout.
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

using namespace nicemu;

namespace {

// Layout constants from docs/image-format.md.
constexpr size_t kHeader = 100, kSegEntry = 24, kSymEntry = 16;
constexpr size_t kOffVersion = 8, kOffHeaderSize = 12, kOffTotal = 16,
                 kOffCrc = 20, kOffModel = 24, kOffEntry = 40,
                 kOffSegCount = 44, kOffSymCount = 48, kOffSymtab = 52,
                 kOffStrtab = 56, kOffBuildIdLen = 64, kOffBuildId = 68;

uint32_t get32(const std::vector<uint8_t> &b, size_t off) {
  return uint32_t(b.at(off)) | uint32_t(b.at(off + 1)) << 8 |
         uint32_t(b.at(off + 2)) << 16 | uint32_t(b.at(off + 3)) << 24;
}

void put32(std::vector<uint8_t> &b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b.at(off + i) = uint8_t(v >> (8 * i));
}

// Recomputes the image CRC after a deliberate edit, following the documented
// rule (CRC-32 of [0, total) with the CRC field read as zero), with zlib as
// an independent oracle.
void reseal(std::vector<uint8_t> &b) {
  const uint32_t total = get32(b, kOffTotal);
  put32(b, kOffCrc, 0);
  put32(b, kOffCrc, uint32_t(crc32(0, b.data(), uInt(total))));
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = uint8_t(seed + i * 7);
  return v;
}

Image sample_image() {
  Image im;
  im.model = "lanai4";
  im.entry = 0x100;
  im.build_id = pattern(20, 0xa0);
  im.segments = {
      {0x00000100, 0x200, ImageSegment::kExec, pattern(0x200, 1)},
      {0x00001000, 0x800, ImageSegment::kWrite, pattern(512, 2)},
      {0x00003000, 100, 0, pattern(99, 3)}, // odd size: padding follows
  };
  im.symbols = {
      {0x100, 0x20, ImageSymbol::kFunction, "_start"},
      {0x120, 0x100, ImageSymbol::kFunction, "main"},
      {0x220, 0x40, ImageSymbol::kFunction, "_ZN2fw9handle_amEj"},
      {0x1000, 0x100, ImageSymbol::kObject, "rx_ring"},
      {0x1100, 4, ImageSymbol::kObject, "counter"},
  };
  return im;
}

std::string decode_error(std::span<const uint8_t> bytes) {
  try {
    decode_image(bytes);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

size_t segment_data_offset(const std::vector<uint8_t> &b, size_t index) {
  return get32(b, kHeader + kSegEntry * index + 12);
}

} // namespace

TEST_CASE("image: encode/decode round trip keeps every field") {
  const Image in = sample_image();
  const std::vector<uint8_t> bytes = encode_image(in);
  CHECK(std::equal(bytes.begin(), bytes.begin() + 8, "NICEMUFW"));
  CHECK(get32(bytes, kOffVersion) == Image::kFormatVersion);
  CHECK(get32(bytes, kOffTotal) == bytes.size());
  CHECK(bytes.size() % 4 == 0);

  const Image out = decode_image(bytes);
  CHECK(out.model == in.model);
  CHECK(out.entry == in.entry);
  CHECK(out.build_id == in.build_id);
  REQUIRE(out.segments.size() == in.segments.size());
  for (size_t i = 0; i < in.segments.size(); ++i) {
    CAPTURE(i);
    CHECK(out.segments[i].address == in.segments[i].address);
    CHECK(out.segments[i].mem_size == in.segments[i].mem_size);
    CHECK(out.segments[i].flags == in.segments[i].flags);
    CHECK(out.segments[i].data == in.segments[i].data);
    CHECK(segment_data_offset(bytes, i) % 4 == 0);
  }
  REQUIRE(out.symbols.size() == in.symbols.size());
  for (size_t i = 0; i < in.symbols.size(); ++i) {
    CAPTURE(i);
    CHECK(out.symbols[i].address == in.symbols[i].address);
    CHECK(out.symbols[i].size == in.symbols[i].size);
    CHECK(out.symbols[i].kind == in.symbols[i].kind);
    CHECK(out.symbols[i].name == in.symbols[i].name);
  }
  CHECK(encode_image(out) == bytes); // deterministic
}

TEST_CASE("image: edge cases round trip") {
  SUBCASE("empty image") {
    const Image out = decode_image(encode_image(Image{}));
    CHECK(out.model.empty());
    CHECK(out.segments.empty());
    CHECK(out.symbols.empty());
    CHECK(out.build_id.empty());
  }
  SUBCASE("16-character model, 32-byte build id, bss-only segment") {
    Image in;
    in.model = "abcdefghijklmnop";
    in.build_id = pattern(32, 9);
    in.segments = {{0x2000, 0x1000, ImageSegment::kWrite, {}}};
    const Image out = decode_image(encode_image(in));
    CHECK(out.model == in.model);
    CHECK(out.build_id == in.build_id);
    CHECK(out.segments.at(0).data.empty());
    CHECK(out.segments.at(0).mem_size == 0x1000);
  }
  SUBCASE("unsorted symbols come back sorted") {
    Image in;
    in.symbols = {{0x40, 4, ImageSymbol::kFunction, "b"},
                  {0x10, 4, ImageSymbol::kFunction, "a"}};
    const Image out = decode_image(encode_image(in));
    CHECK(out.symbols.at(0).name == "a");
    CHECK(out.symbols.at(1).name == "b");
  }
}

TEST_CASE("image: the encoder refuses what the decoder would refuse") {
  Image im = sample_image();
  SUBCASE("long model name") {
    im.model = "a-model-name-too-long";
  }
  SUBCASE("long build id") {
    im.build_id = pattern(33, 0);
  }
  SUBCASE("overlap") {
    im.segments[1].address = 0x200;
  }
  SUBCASE("more data than memory") {
    im.segments[0].mem_size = 0x10;
  }
  SUBCASE("unknown flags") {
    im.segments[0].flags = 8;
  }
  SUBCASE("wraps") {
    im.segments[0].address = 0xffffff00;
  }
  SUBCASE("bad symbol kind") {
    im.symbols[0].kind = 9;
  }
  SUBCASE("empty symbol name") {
    im.symbols[0].name.clear();
  }
  CHECK_THROWS_AS(encode_image(im), Error);
}

TEST_CASE("image: trailing erased flash is ignored") {
  std::vector<uint8_t> bytes = encode_image(sample_image());
  const size_t size = bytes.size();
  bytes.resize(size + 4096, 0xff);
  const Image out = decode_image(bytes);
  CHECK(out.segments.size() == 3);
  CHECK(out.symbols.size() == 5);
  bytes.resize(size + 3, 0x00); // any trailing bytes, not just 0xFF
  CHECK_NOTHROW(decode_image(bytes));
}

TEST_CASE("image: truncation says how many bytes were expected") {
  const std::vector<uint8_t> bytes = encode_image(sample_image());
  const std::string total = std::to_string(bytes.size());
  for (size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    const std::string msg =
        decode_error(std::span<const uint8_t>(bytes).first(n));
    if (n < kHeader)
      CHECK(msg == "firmware image is truncated: " + std::to_string(n) +
                       " bytes present, the header alone needs 100");
    else
      CHECK(msg == "firmware image is truncated: the header says " + total +
                       " bytes, only " + std::to_string(n) + " present");
  }
}

TEST_CASE("image: a damaged segment is named") {
  const Image im = sample_image();
  const std::vector<uint8_t> good = encode_image(im);
  for (size_t i = 0; i < im.segments.size(); ++i) {
    CAPTURE(i);
    std::vector<uint8_t> bad = good;
    bad[segment_data_offset(bad, i) + im.segments[i].data.size() / 2] ^= 0x10;
    const std::string msg = decode_error(bad);
    char want[64];
    std::snprintf(want, sizeof want, "segment %zu (0x%08x, %zu bytes)", i,
                  im.segments[i].address, im.segments[i].data.size());
    CHECK(msg.rfind(std::string(want) + " is corrupted: CRC-32 is 0x", 0) == 0);
    char expected[32];
    std::snprintf(expected, sizeof expected, ", expected 0x%08x",
                  uint32_t(crc32(0, im.segments[i].data.data(),
                                 uInt(im.segments[i].data.size()))));
    CHECK(contains(msg, expected));
  }
}

TEST_CASE("image: damage outside the segments fails the image CRC") {
  const std::vector<uint8_t> good = encode_image(sample_image());
  const size_t symtab = get32(good, kOffSymtab);
  const size_t strtab = get32(good, kOffStrtab);
  const size_t seg2_end = segment_data_offset(good, 2) + 99; // in padding
  for (size_t at :
       {kOffModel + 1, kOffEntry, kOffBuildId + 5, kHeader + 0,
        kHeader + kSegEntry + 8, seg2_end, symtab + 1, strtab + 2, kOffCrc}) {
    CAPTURE(at);
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x01;
    CHECK(decode_error(bad).rfind(
              "firmware image is corrupted: image CRC-32 is 0x", 0) == 0);
  }
}

TEST_CASE("image: not an image at all") {
  std::vector<uint8_t> bytes = encode_image(sample_image());
  SUBCASE("bad magic") {
    bytes[0] = 'X';
    CHECK(decode_error(bytes) ==
          "not a nicemu firmware image: the first bytes are 58 49 43 45 4d 55 "
          "46 57, expected \"NICEMUFW\"");
  }
  SUBCASE("erased flash") {
    std::fill(bytes.begin(), bytes.end(), 0xff);
    CHECK(decode_error(bytes) ==
          "not a nicemu firmware image: the flash is erased (all 0xFF)");
  }
  SUBCASE("an ELF file") {
    const uint8_t elf[] = {0x7f, 'E', 'L', 'F', 1, 1, 1, 0};
    std::copy(std::begin(elf), std::end(elf), bytes.begin());
    CHECK(contains(decode_error(bytes), "this is an ELF file"));
  }
  SUBCASE("short garbage") {
    const uint8_t junk[] = {1, 2, 3};
    CHECK(decode_error(junk) == "not a nicemu firmware image: the first "
                                "bytes are 01 02 03, expected \"NICEMUFW\"");
  }
}

TEST_CASE("image: header fields out of range") {
  std::vector<uint8_t> bytes = encode_image(sample_image());
  const std::string total = std::to_string(bytes.size());
  std::string want;
  SUBCASE("future version") {
    put32(bytes, kOffVersion, 2);
    want = "unsupported firmware image format version 2 (this nicemu reads "
           "version 1)";
  }
  SUBCASE("header size") {
    put32(bytes, kOffHeaderSize, 64);
    want = "bad firmware image header: header size is 64 bytes, format "
           "version 1 uses 100";
  }
  SUBCASE("absurd total size") {
    put32(bytes, kOffTotal, 0xfffffff0);
    want = "bad firmware image header: total size 4294967280 bytes is out of "
           "range (100 to 256 MiB)";
  }
  SUBCASE("absurd segment count") {
    put32(bytes, kOffSegCount, 100000);
    want = "bad firmware image header: 100000 segments (at most 256)";
  }
  SUBCASE("segment table past the end") {
    put32(bytes, kOffSegCount, 250);
    want = "bad firmware image header: segment table of 250 entries ends at "
           "offset 6100, past the end (the image is " +
           total + " bytes)";
  }
  SUBCASE("absurd symbol count") {
    put32(bytes, kOffSymCount, 0x40000000);
    want = "bad firmware image header: symbol table of 1073741824 entries at "
           "offset " +
           std::to_string(get32(bytes, kOffSymtab)) +
           " lies outside offsets 172-" + total + " (the image is " + total +
           " bytes)";
  }
  SUBCASE("string table past the end") {
    put32(bytes, kOffStrtab, 0xffffff00);
    want = "bad firmware image header: string table";
  }
  SUBCASE("build id length") {
    bytes[kOffBuildIdLen] = 33;
    want = "bad firmware image header: build id length 33 (at most 32)";
  }
  SUBCASE("segment data past the end") {
    put32(bytes, kHeader + 12, 0x7fffffff);
    want = "bad segment table: segment 0 (0x00000100, 512 bytes) has its "
           "data at offset 2147483647, outside offsets 172-" +
           total + " of the image";
  }
  SUBCASE("segment flags") {
    put32(bytes, kHeader + 8, 0x80);
    want = "bad segment table: segment 0 (0x00000100, 512 bytes) has unknown "
           "flags 0x80";
  }
  const std::string msg = decode_error(bytes);
  CHECK(msg.rfind(want, 0) == 0);
  CHECK(msg.size() >= want.size());
}

TEST_CASE("image: overlapping segments are refused") {
  std::vector<uint8_t> bytes = encode_image(sample_image());
  put32(bytes, kHeader + kSegEntry * 2, 0x17f0); // segment 2 into segment 1
  reseal(bytes);
  CHECK(decode_error(bytes) ==
        "overlapping segments: segment 1 (0x00001000-0x000017ff) and "
        "segment 2 (0x000017f0-0x00001853)");
}

TEST_CASE("image: a bad symbol table is refused") {
  std::vector<uint8_t> bytes = encode_image(sample_image());
  const size_t sym = get32(bytes, kOffSymtab);
  std::string want;
  SUBCASE("unknown kind") {
    bytes[sym + kSymEntry * 3 + 14] = 7;
    want = "bad symbol table: symbol 3 (0x00001000) has unknown kind 7";
  }
  SUBCASE("name outside the string table") {
    put32(bytes, sym + kSymEntry + 8, 5000);
    want = "bad symbol table: symbol 1 (0x00000120) has its name (4 bytes at "
           "5000) outside the string table of ";
  }
  SUBCASE("empty name") {
    bytes[sym + 12] = 0;
    bytes[sym + 13] = 0;
    want = "bad symbol table: symbol 0 (0x00000100) has its name (0 bytes";
  }
  SUBCASE("unsorted") {
    put32(bytes, sym + kSymEntry * 2, 0x10);
    want = "bad symbol table: symbol 2 (0x00000010) is out of order: symbols "
           "must be sorted by address";
  }
  reseal(bytes);
  CHECK(decode_error(bytes).rfind(want, 0) == 0);
}

TEST_CASE("image: random corruption only ever gives nicemu::Error") {
  // Kinds: 0 byte flips, 1 flips and truncation, 2 wild 32-bit fields,
  // 3 flips in the header and tables with the image CRC made valid again,
  // so that the deeper checks (segment and symbol tables) are reached.
  const std::vector<uint8_t> good = encode_image(sample_image());
  const size_t tables = kHeader + 3 * kSegEntry,
               symtab = get32(good, kOffSymtab);
  std::mt19937 rng(20240611);
  int refused = 0, accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> bytes = good;
    const unsigned kind = rng() % 4;
    const unsigned flips = 1 + rng() % 4;
    for (unsigned i = 0; i < flips; ++i) {
      size_t at = rng() % bytes.size();
      if (kind == 3)
        at = rng() % 2 ? rng() % tables
                       : symtab + rng() % (good.size() - symtab);
      if (kind == 2)
        put32(bytes, at & ~size_t(3), uint32_t(rng()));
      else
        bytes[at] ^= uint8_t(1 + rng() % 255);
    }
    if (kind == 1)
      bytes.resize(rng() % (bytes.size() + 1));
    if (kind == 3 && get32(bytes, kOffTotal) <= bytes.size() &&
        get32(bytes, kOffTotal) >= kHeader)
      reseal(bytes);
    try {
      decode_image(bytes);
      ++accepted;
    } catch (const Error &) {
      ++refused;
    }
  }
  CHECK(refused + accepted == 2000);
  CHECK(refused > 1000);
  CHECK(accepted > 0); // some kind-3 edits (entry, model, names) are valid
}

TEST_CASE("image: symbol lookup") {
  const Image im = sample_image();
  REQUIRE(im.symbol_at(0x130) != nullptr);
  CHECK(im.symbol_at(0x130)->name == "main");
  CHECK(im.symbol_at(0x100)->name == "_start");
  CHECK(im.symbol_at(0xff) == nullptr);
  CHECK(im.symbol_at(0x1004)->name == "_ZN2fw9handle_amEj"); // nearest below
  CHECK(im.describe_address(0x130) == "main+0x10");
  CHECK(im.describe_address(0x120) == "main");
  CHECK(im.describe_address(0x224) == "fw::handle_am(unsigned int)+0x4");
  CHECK(im.describe_address(0x1010) == "rx_ring+0x10");
  CHECK(im.describe_address(0x260) == "0x00000260");
  CHECK(im.describe_address(0x0) == "0x00000000");
  CHECK(im.describe_address(0x1104) == "0x00001104");

  CHECK(im.find_symbol("main") == &im.symbols[1]);
  CHECK(im.find_symbol("_ZN2fw9handle_amEj") == &im.symbols[2]);
  CHECK(im.find_symbol("fw::handle_am(unsigned int)") == &im.symbols[2]);
  CHECK(im.find_symbol("fw::handle_am") == &im.symbols[2]);
  CHECK(im.find_symbol("nothing") == nullptr);
  CHECK(demangle_symbol("f") == "f");
  CHECK(demangle_symbol("_Zbroken") == "_Zbroken");
}

TEST_CASE("image: short function names, as people write them") {
  // (anonymous namespace)::h_round(niam_packet const&)
  CHECK(short_function_name("_ZN12_GLOBAL__N_17h_roundERK11niam_packet") ==
        "h_round");
  CHECK(short_function_name("_ZN2fw9handle_amEj") == "fw::handle_am");
  // A function pointer parameter keeps nothing of the parameter list.
  CHECK(short_function_name("_Z3runPFviE") == "run");
  CHECK(short_function_name("main") == "main");
  Image im;
  im.symbols = {{0x100, 8, ImageSymbol::kFunction,
                 "_ZN12_GLOBAL__N_17h_roundERK11niam_packet"}};
  CHECK(im.find_symbol("h_round") == &im.symbols[0]);
}

TEST_CASE("image: labels without a size cover up to the next symbol") {
  Image im;
  im.symbols = {{0x100, 0, ImageSymbol::kFunction, "_start"},
                {0x140, 0x10, ImageSymbol::kFunction, "main"},
                {0x200, 0, ImageSymbol::kFunction, "last"}};
  CHECK(im.describe_address(0x108) == "_start+0x8");
  CHECK(im.describe_address(0x150) == "0x00000150");
  CHECK(im.describe_address(0x200) == "last");
  CHECK(im.describe_address(0x204) == "0x00000204");
}

TEST_CASE("image: --info description") {
  const Image im = sample_image();
  const std::vector<uint8_t> bytes = encode_image(im);
  const std::string text = describe_image(im, bytes);
  char crc[16];
  std::snprintf(crc, sizeof crc, "0x%08x", get32(bytes, kOffCrc));
  CHECK(contains(text, "format version 1"));
  CHECK(contains(text, "model:        lanai4"));
  CHECK(contains(text, "entry:        0x00000100 (_start)"));
  CHECK(contains(text, "build id:     a0a7aeb5"));
  CHECK(contains(text, "total size:   " + std::to_string(bytes.size())));
  CHECK(contains(text, std::string("image CRC-32: ") + crc));
  CHECK(contains(text, "  0  0x00000100        512       512  r-x"));
  CHECK(contains(text, "  1  0x00001000        512      2048  rw-"));
  CHECK(contains(text, "  2  0x00003000         99       100  r--"));
  CHECK(contains(text, "symbols:      5 (3 functions, 2 objects)"));
  CHECK(contains(text, "  0x00000220     64  fw::handle_am(unsigned int)"));
  CHECK(!contains(text, "rx_ring"));
  CHECK(describe_image(im, {}) == text); // re-encodes when not given bytes
}

TEST_CASE("image: checked against a model") {
  Model m;
  m.name = "lanai4";
  m.memories = {{"sram", 0x0, 0x4000, true, true},
                {"dsram", 0x10000, 0x1000, false, true}};
  Image im = sample_image();
  CHECK_NOTHROW(check_image_against_model(im, m));

  auto error = [&] {
    try {
      check_image_against_model(im, m);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  SUBCASE("segment outside every memory") {
    im.segments[2].address = 0x3fc0;
    CHECK(error() == "segment 2 (0x00003fc0-0x00004023) does not fit in any "
                     "memory of model lanai4 (sram 0x00000000-0x00003fff, "
                     "dsram 0x00010000-0x00010fff)");
  }
  SUBCASE("code in data memory") {
    im.segments[1].address = 0x10000;
    im.segments[1].flags = ImageSegment::kExec;
    CHECK(error() == "segment 1 (0x00010000-0x000107ff) is code but memory "
                     "dsram of model lanai4 is not executable");
  }
  SUBCASE("entry in data memory") {
    im.entry = 0x10000;
    CHECK(error() == "entry point 0x00010000 is not in executable memory of "
                     "model lanai4 (dsram is data memory)");
  }
  SUBCASE("entry outside any code segment") {
    im.entry = 0x3000;
    CHECK(error() ==
          "entry point 0x00003000 is not inside an executable segment of the "
          "image");
  }
  SUBCASE("misaligned entry") {
    im.entry = 0x102;
    CHECK(error() == "entry point 0x00000102 is not 4-byte aligned");
  }
  SUBCASE("other model") {
    im.model = "martini";
    CHECK(error() == "image is built for model martini, not for model lanai4");
  }
}

namespace {

// A scratch directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "nicemu-image-XXXXXX")
            .string();
    REQUIRE(mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string &name) const {
    return (path / name).string();
  }
};

std::string elf_error(const std::string &path) {
  try {
    image_from_elf(path, "lanai4");
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

constexpr const char *kFirmwareSource = R"(
volatile int counter = 5;
namespace fw {
__attribute__((noinline)) int handle_am(unsigned x) { return counter + x; }
}
extern "C" __attribute__((noinline)) int nicemu_test_add(int a, int b) {
  return a + b + fw::handle_am(3);
}
extern "C" void _start() {
  counter = nicemu_test_add(1, 2);
  for (;;) {
  }
}
)";

// The first of NAME, NAME-19 ... NAME-14 on PATH (Debian installs LLVM
// with versioned names), or "".
std::string find_tool(const std::string &name) {
  for (const std::string suffix :
       {"", "-19", "-18", "-17", "-16", "-15", "-14"}) {
    std::string cmd = "command -v " + name;
    cmd += suffix + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0)
      return name + suffix;
  }
  return "";
}

// Cross-compiles kFirmwareSource with the firmware toolchain's flags.
// clang and lld are required on build and CI machines, so their absence
// fails the test. ld.lld links directly: for a bare MIPS target the clang
// driver would link through gcc.
std::string build_test_elf(const TempDir &dir) {
  const std::string clang = find_tool("clang++"), lld = find_tool("ld.lld");
  REQUIRE_MESSAGE(!clang.empty(),
                  "clang++ is not on PATH: the ELF tests need clang and lld");
  REQUIRE_MESSAGE(!lld.empty(),
                  "ld.lld is not on PATH: the ELF tests need clang and lld");
  std::ofstream(dir / "fw.cpp") << kFirmwareSource;
  const std::string cmd =
      clang +
      " --target=mipsel-unknown-elf -march=mips32 -EL -msoft-float "
      "-mno-abicalls -fno-pic -G0 -ffreestanding -nostdlib -fno-exceptions "
      "-fno-rtti -O2 -c '" +
      dir / "fw.cpp" + "' -o '" + dir / "fw.o" + "' && " + lld +
      " --build-id=sha1 -e _start '" + dir / "fw.o" + "' -o '" +
      dir / "fw.elf" + "'";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "failed: " << cmd);
  return dir / "fw.elf";
}

} // namespace

TEST_CASE("image: read from a MIPS ELF executable") {
  const TempDir dir;
  const std::string elf = build_test_elf(dir);
  const Image im = image_from_elf(elf, "lanai4");
  CHECK(im.model == "lanai4");
  CHECK(im.build_id.size() == 20);

  const ImageSymbol *start = im.find_symbol("_start");
  REQUIRE(start != nullptr);
  CHECK(start->kind == ImageSymbol::kFunction);
  CHECK(im.entry == start->address);
  const ImageSymbol *add = im.find_symbol("nicemu_test_add");
  REQUIRE(add != nullptr);
  CHECK(add->size > 0);
  CHECK(im.describe_address(add->address + 4) == "nicemu_test_add+0x4");
  const ImageSymbol *am = im.find_symbol("fw::handle_am");
  REQUIRE(am != nullptr);
  CHECK(am->name == "_ZN2fw9handle_amEj");
  const ImageSymbol *counter = im.find_symbol("counter");
  REQUIRE(counter != nullptr);
  CHECK(counter->kind == ImageSymbol::kObject);
  CHECK(std::is_sorted(im.symbols.begin(), im.symbols.end(),
                       [](auto &a, auto &b) { return a.address < b.address; }));

  // The code segment holds the entry point and is executable; data writable.
  bool code = false, data = false;
  for (const ImageSegment &s : im.segments) {
    CHECK(s.data.size() <= s.mem_size);
    if (im.entry - s.address < s.mem_size)
      code = (s.flags & ImageSegment::kExec) && !s.data.empty();
    if (counter->address - s.address < s.mem_size)
      data = (s.flags & ImageSegment::kWrite) != 0;
  }
  CHECK(code);
  CHECK(data);

  // And it survives the image format unchanged.
  const Image back = decode_image(encode_image(im));
  CHECK(back.symbols.size() == im.symbols.size());
  CHECK(back.build_id == im.build_id);
  CHECK(contains(describe_image(back, {}), "fw::handle_am(unsigned int)"));
}

TEST_CASE("image: files that are not MIPS firmware are refused") {
  const TempDir dir;
  SUBCASE("missing file") {
    CHECK(elf_error(dir / "none.elf")
              .rfind("cannot open " + dir / "none.elf", 0) == 0);
  }
  SUBCASE("not an ELF file") {
    std::ofstream(dir / "text.elf") << "hello, this is not ELF\n";
    CHECK(elf_error(dir / "text.elf") ==
          dir / "text.elf" + ": not an ELF file");
  }
  SUBCASE("the host's own executable") {
    const std::string msg = elf_error("/proc/self/exe");
    CHECK(msg.rfind("/proc/self/exe: not a MIPS32 little-endian executable "
                    "(machine is ",
                    0) == 0);
#if defined(__x86_64__)
    CHECK(msg == "/proc/self/exe: not a MIPS32 little-endian executable "
                 "(machine is x86-64)");
#endif
  }
  SUBCASE("an object file") {
    build_test_elf(dir);
    CHECK(elf_error(dir / "fw.o") ==
          dir / "fw.o" + ": not a MIPS32 little-endian executable (it is an "
                         "object file: link it first)");
  }
  SUBCASE("overlapping loadable segments") {
    // Give the second PT_LOAD the load address of the first (offsets from
    // the ELF32 specification).
    std::vector<uint8_t> elf = read_file_bytes(build_test_elf(dir));
    const size_t phoff = get32(elf, 28), phnum = elf.at(44) | elf.at(45) << 8;
    std::vector<size_t> loads;
    for (size_t i = 0; i < phnum; ++i)
      if (get32(elf, phoff + 32 * i) == 1 /* PT_LOAD */)
        loads.push_back(phoff + 32 * i);
    REQUIRE(loads.size() >= 2);
    put32(elf, loads[1] + 12, get32(elf, loads[0] + 12));
    write_file_bytes(dir / "overlap.elf", elf);
    const std::string msg = elf_error(dir / "overlap.elf");
    CHECK(msg.rfind(dir / "overlap.elf" + ": loadable segments 0x", 0) == 0);
    CHECK(contains(msg, " overlap"));
  }
  SUBCASE("random corruption") {
    const std::vector<uint8_t> whole = read_file_bytes(build_test_elf(dir));
    std::mt19937 rng(77);
    for (int round = 0; round < 300; ++round) {
      std::vector<uint8_t> elf = whole;
      for (unsigned i = 0, n = 1 + rng() % 3; i < n; ++i)
        elf[rng() % 2 ? rng() % 400 : rng() % elf.size()] ^=
            uint8_t(1 + rng() % 255);
      write_file_bytes(dir / "bad.elf", elf);
      try {
        encode_image(image_from_elf(dir / "bad.elf", "lanai4"));
      } catch (const Error &) {
      }
    }
  }
  SUBCASE("truncated at every length") {
    const std::vector<uint8_t> whole = read_file_bytes(build_test_elf(dir));
    for (size_t n = 0; n < whole.size(); n += 7) {
      CAPTURE(n);
      write_file_bytes(dir / "cut.elf",
                       std::span<const uint8_t>(whole).first(n));
      CHECK_THROWS_AS(image_from_elf(dir / "cut.elf", "lanai4"), Error);
    }
    write_file_bytes(dir / "cut.elf",
                     std::span<const uint8_t>(whole).first(60));
    CHECK(contains(elf_error(dir / "cut.elf"), "truncated"));
  }
}

TEST_CASE("image: file helpers") {
  const TempDir dir;
  const std::vector<uint8_t> bytes = encode_image(sample_image());
  write_file_bytes(dir / "fw.img", bytes);
  CHECK(read_file_bytes(dir / "fw.img") == bytes);
  CHECK_THROWS_WITH_AS(
      read_file_bytes(dir / "missing"),
      ("cannot open " + dir / "missing" + ": No such file or directory")
          .c_str(),
      Error);
  CHECK_THROWS_AS(write_file_bytes(dir / "no/such/dir", bytes), Error);
}

TEST_CASE("regression: an image's reserved and padding bytes must be 0, "
          "its model a model name (issue 23, also)") {
  const std::vector<uint8_t> good = encode_image(sample_image());
  auto sealed_error = [&](size_t offset, std::vector<uint8_t> bytes) {
    std::vector<uint8_t> b = good;
    std::copy(bytes.begin(), bytes.end(), b.begin() + long(offset));
    reseal(b);
    return decode_error(b);
  };
  CHECK(sealed_error(kOffBuildIdLen + 1, {1}) ==
        "bad firmware image header: reserved bytes 65-67 are 01 00 00, not "
        "0");
  CHECK(sealed_error(kOffBuildIdLen + 3, {0x80}) ==
        "bad firmware image header: reserved bytes 65-67 are 00 00 80, not "
        "0");
  // Past the 20 bytes of the build id.
  CHECK(sealed_error(kOffBuildId + 25, {7}) ==
        "bad firmware image header: the build id's padding (past its 20 "
        "bytes) is not 0");
  // "lanai4\0" then a byte: not NUL-padded.
  CHECK(contains(sealed_error(kOffModel + 8, {'x'}),
                 "the target model (bytes 6c 61 6e 61 69 34 00 00 78"));
  // An escape sequence as the model: refused, and never printed raw.
  std::string escape = sealed_error(kOffModel, {0x1B, '[', '2', 'J', 0, 0});
  CHECK(contains(escape, "the target model (bytes 1b 5b 32 4a 00"));
  CHECK(escape.find('\x1b') == std::string::npos);
  // The encoder refuses such a name, and says it without the escape.
  Image im = sample_image();
  im.model = "\x1b]0;pwned\a";
  std::string encode;
  try {
    encode_image(im);
  } catch (const Error &e) {
    encode = e.what();
  }
  CHECK(contains(encode, "model name \"\\x1B]0;pwned\\x07\" is longer than 16 "
                         "bytes or not a model name"));
  CHECK(decode_error(good) == "(no error)");
}
