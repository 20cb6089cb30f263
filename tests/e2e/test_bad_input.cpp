// End-to-end: bad input never crashes nicemu. Damaged images, wrong flash
// files, wrong models and bad arguments end with exit code 1 and one
// "nicemu: error: ..." saying what is wrong.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

using namespace e2e;

namespace {

// A user error: exit 1, a message in the usual form, no summary, no output.
void check_user_error(const CommandResult &r,
                      const std::vector<std::string> &words) {
  CHECK(r.status == 1);
  CHECK(r.err.rfind("nicemu: error: ", 0) == 0);
  CHECK(lines_with(r.err, "nicemu: error: ").size() == 1);
  CHECK(!contains(r.err, "--- nicemu:"));
  CHECK(r.out.empty());
  for (const std::string &w : words)
    CHECK_MESSAGE(contains(r.err, w), "the error does not say \"" << w << "\"");
}

// Both ways a damaged image reaches a card, flashed or booted directly, and
// `image --info`.
void check_refused(const TempDir &dir, const std::vector<uint8_t> &image,
                   const std::vector<std::string> &words) {
  const std::string img = dir.file("damaged.img"),
                    flash = dir.file("node0.flash");
  write_bytes(img, image);
  {
    CommandResult r = nicemu({"image", "--info", img});
    INFO(r);
    check_user_error(r, words);
    CHECK(contains(r.err, img));
  }
  {
    CommandResult r = nicemu({"flash", img, "--flash", flash});
    INFO(r);
    check_user_error(r, words);
    CHECK(!fs::exists(flash)); // nothing is written for a bad image
  }
  {
    CommandResult r = nicemu({"run", "--firmware", img});
    INFO(r);
    check_user_error(r, words);
  }
}

} // namespace

TEST_CASE("truncated images are refused as truncated") {
  TempDir dir;
  const std::vector<uint8_t> good = read_bytes(firmware("hello.img"));
  REQUIRE(good.size() > 200);
  for (size_t length :
       {size_t(0), size_t(5), size_t(50), size_t(99), size_t(100), size_t(150),
        good.size() / 2, good.size() - 1}) {
    CAPTURE(length);
    check_refused(dir, {good.begin(), good.begin() + long(length)},
                  {"truncated"});
  }
}

TEST_CASE("a flipped byte in a segment is refused, naming the segment") {
  TempDir dir;
  std::vector<uint8_t> image = read_bytes(firmware("hello.img"));
  const auto segments = raw_segments(image);
  for (size_t i = 0; i < segments.size(); ++i) {
    const RawSegment &s = segments[i];
    if (s.size == 0)
      continue;
    CAPTURE(i);
    std::vector<uint8_t> damaged = image;
    damaged.at(s.offset + s.size / 2) ^= 0x10;
    check_refused(dir, damaged,
                  {"segment " + std::to_string(i), "corrupted", "CRC-32"});
  }
}

TEST_CASE("a flipped byte in the header is refused as corrupted") {
  TempDir dir;
  std::vector<uint8_t> image = read_bytes(firmware("hello.img"));
  image.at(40) ^= 0x04; // the entry point
  check_refused(dir, image, {"corrupted", "image CRC-32"});
}

TEST_CASE("an image with bad magic is not a nicemu firmware image") {
  TempDir dir;
  std::vector<uint8_t> image = read_bytes(firmware("hello.img"));
  image.at(0) = 'X';
  check_refused(dir, image, {"not a nicemu firmware image", "NICEMUFW"});
  // The ELF file instead of the image: say what to do.
  check_refused(dir, read_bytes(firmware("hello.elf")),
                {"not a nicemu firmware image", "nicemu image"});
}

TEST_CASE("a flash file of the wrong size is refused, naming the sizes") {
  TempDir dir;
  const std::string flash = dir.file("small.flash");
  write_bytes(flash, std::vector<uint8_t>(1000, 0xFF));
  {
    CommandResult r = nicemu({"run", "--flash", flash});
    INFO(r);
    check_user_error(r, {flash, "1000 bytes", "1024 KiB", "lanai4"});
  }
  {
    // Flashing into it must not silently resize someone's file.
    CommandResult r =
        nicemu({"flash", firmware("hello.img"), "--flash", flash});
    INFO(r);
    check_user_error(r, {flash, "1000 bytes", "1024 KiB"});
    CHECK(fs::file_size(flash) == 1000);
  }
}

TEST_CASE("an erased flash does not boot") {
  TempDir dir;
  const std::string flash = dir.file("erased.flash");
  write_bytes(flash, std::vector<uint8_t>(1024 * 1024, 0xFF));
  CommandResult r = nicemu({"run", "--flash", flash});
  INFO(r);
  check_user_error(r, {"erased"});
}

TEST_CASE("a lanai4 image on a martini card is refused, naming both models") {
  TempDir dir;
  const std::string img = firmware("hello.img");
  {
    CommandResult r = nicemu({"run", "--model", "martini", "--firmware", img});
    INFO(r);
    check_user_error(r, {"lanai4", "martini"});
  }
  {
    CommandResult r = nicemu(
        {"flash", img, "--flash", dir.file("m.flash"), "--model", "martini"});
    INFO(r);
    check_user_error(r, {"lanai4", "martini"});
    CHECK(!fs::exists(dir.file("m.flash")));
  }
}

TEST_CASE("bad arguments and missing files are user errors") {
  TempDir dir;
  SUBCASE("missing flash file") {
    const std::string flash = dir.file("absent.flash");
    CommandResult r = nicemu({"run", "--flash", flash});
    INFO(r);
    check_user_error(r, {flash, "no such flash file"});
  }
  SUBCASE("missing image file") {
    const std::string img = dir.file("absent.img");
    CommandResult r = nicemu({"run", "--firmware", img});
    INFO(r);
    check_user_error(r, {img, "No such file"});
  }
  SUBCASE("--max-time that is not a duration") {
    CommandResult r = nicemu(
        {"run", "--max-time", "banana", "--firmware", firmware("hello.img")});
    INFO(r);
    check_user_error(r, {"--max-time", "banana", "not a duration"});
  }
  SUBCASE("--max-time of zero, or past the end of virtual time") {
    for (const char *t : {"0ps", "10000000s"}) {
      CommandResult r =
          nicemu({"run", "--max-time", t, "--firmware", firmware("hello.img")});
      INFO(r);
      check_user_error(r, {"--max-time", t, "out of range", "2^63 ps"});
    }
  }
  SUBCASE("--watchdog below 0 or too large to add to a cycle count") {
    for (const char *w :
         {"-1", "4611686018427387905", "99999999999999999999999"}) {
      CommandResult r =
          nicemu({"run", "--watchdog", w, "--firmware", firmware("hello.img")});
      INFO(r);
      check_user_error(r, {"--watchdog", w, "not in range"});
    }
  }
  SUBCASE("unknown model") {
    CommandResult r = nicemu({"run", "--model", "no-such-card", "--firmware",
                              firmware("hello.img")});
    INFO(r);
    check_user_error(r, {"no-such-card"});
  }
  SUBCASE("neither --flash nor --firmware") {
    CommandResult r = nicemu({"run"});
    INFO(r);
    check_user_error(r, {"--flash", "--firmware"});
  }
}

TEST_CASE("a model with a misspelled or missing key is refused before the "
          "run, naming the key and the device") {
  TempDir dir;
  std::string text =
      read_text(fs::path(NICEMU_SOURCE_DIR) / "emulator/models/lanai4.toml");
  auto model_with = [&](const std::string &from, const std::string &to) {
    std::string edited = text;
    size_t at = edited.find(from);
    REQUIRE(at != std::string::npos);
    edited.replace(at, from.size(), to);
    const std::string path = dir.file("card.toml");
    std::ofstream(path) << edited;
    return path;
  };
  {
    CommandResult r =
        nicemu({"run", "--model", model_with("per_word =", "per_wrod ="),
                "--firmware", firmware("hello.img")});
    INFO(r);
    check_user_error(r, {"card.toml:", "[timing.tx_dma] per_wrod",
                         "did you mean per_word? the Tx engine reads it"});
  }
  {
    CommandResult r =
        nicemu({"run", "--model", model_with("gap_to_sram =", "#"),
                "--firmware", firmware("hello.img")});
    INFO(r);
    check_user_error(r, {"[timing.host_dma] gap_to_sram is missing",
                         "the lanai4 board's host DMA engine needs it"});
  }
}
