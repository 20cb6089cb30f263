// A model (hardware profile): clocks, memories, cycle costs and timing
// parameters of one NIC design. Models are TOML data files, not code paths.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nicemu {

// One memory of the card as the core sees it.
struct MemoryRegion {
  std::string name;       // "sram", "isram", "dsram", "llcm", ...
  uint32_t base = 0;      // physical address, 4 KB aligned
  uint32_t size = 0;      // bytes, multiple of 4 KB
  bool executable = true; // may hold code (linker puts .text here)
  bool writable = true;   // may hold data
};

// Extra cycles per instruction class, on top of one cycle per instruction.
struct CycleTable {
  uint32_t load_use = 0;     // load followed by an instruction using its result
  uint32_t mul = 0;          // mult, multu, mul, madd, msub...
  uint32_t div = 0;          // div, divu
  uint32_t taken_branch = 0; // branch or jump that changes the PC flow
  uint32_t mmio_read = 0;    // wait states of a device register read
  uint32_t mmio_write = 0;   // wait states of a device register write
  uint32_t interrupt_entry = 0; // cycles to vector into the interrupt stub
  uint32_t wake = 0; // cycles to resume from sleep (one poll-loop turn)
};

// A named variant of a model: a reference set-up that changes some of its
// figures (DIMMnet-1's set-ups A-F: link, host CPU, DIMM and SWIF clocks).
// Selected as "NAME:VARIANT" (`--model martini:D`).
struct ModelVariant {
  std::string name;        // "D"
  std::string description; // one line
  // Keys and values that replace (or add to) the model's, as in Model.
  std::map<std::string, uint64_t> timing_ps;
  std::map<std::string, double> params;
  std::map<std::string, uint32_t> key_lines;
};

struct Model {
  std::string name;                   // "lanai4"
  std::string variant;                // "D" when a variant was selected
  std::string description;            // one line
  std::string board;                  // the card family that builds it
  std::filesystem::path source;       // file it was loaded from
  uint32_t id = 0;                    // value of SYS_MODEL
  uint64_t clock_hz = 0;              // core clock
  std::vector<MemoryRegion> memories; // card memories, non-overlapping
  uint32_t flash_size = 0;            // bytes of the flash device
  uint64_t watchdog_cycles = 0;       // default watchdog period (0 = off)
  CycleTable cycles;
  // Timing parameters for devices of later stages (DMA, links, host bus),
  // in picoseconds, keyed "section.name" (e.g. "host_dma.gap_to_sram").
  std::map<std::string, uint64_t> timing_ps;
  // Other numeric parameters, keyed "section.name".
  std::map<std::string, double> params;
  // The line of each [timing.*] and [params.*] key in the file, keyed
  // "timing.section.name" / "params.section.name", for messages.
  std::map<std::string, uint32_t> key_lines;
  // The variants the file defines ([variant.NAME] tables), by name.
  std::vector<ModelVariant> variants;

  // "martini:D", or "lanai4" without a variant.
  std::string full_name() const {
    return variant.empty() ? name : name + ":" + variant;
  }
  // The region holding `addr`, or nullptr.
  const MemoryRegion *region_at(uint32_t addr) const;
  // The first executable region (code) and the first writable one (data).
  const MemoryRegion &code_region() const;
  const MemoryRegion &data_region() const;
  // The host mailbox: the last 4 KiB page of the data memory, where host
  // programs write requests by PIO (the linker script keeps the stack below
  // it, as `nicemu_mailbox`).
  uint32_t host_mailbox() const {
    return data_region().base + data_region().size - 4096;
  }
  // timing_ps / params lookups that throw nicemu::Error naming the model and
  // its file when the key is missing (a model too old for the device).
  uint64_t timing(const std::string &key) const;
  double param(const std::string &key) const;
};

// What a model's [timing.*] and [params.*] keys mean to the card built from
// it. A board lists every key its devices read (docs/models.md, "Keys"):
// a key in the file that no board device reads is refused, and so is a
// required key that is missing.
enum class KeyUse : uint8_t {
  Required,  // the device cannot work without it
  Optional,  // read when present; the device has a documented fallback
  Reference, // a published figure kept beside the ones that are read (a
             // check value, or a block the board does not model yet)
};

// The values a [timing.*] or [params.*] key may take, checked with the
// keys (check_model_keys), so that no figure overflows the arithmetic of
// the device that reads it. Unless a key says otherwise: a duration from
// 0 ps to 1 s (kMaxDurationPs); a parameter, a whole number from 0 to
// 2^32 - 1 (kMaxParam).
inline constexpr uint64_t kMaxDurationPs = 1'000'000'000'000;
inline constexpr double kMaxParam = 4294967295.0;
struct KeyRange {
  double min = 0;
  double max = -1;   // below min: the default of the key's kind (above)
  bool whole = true; // [params.*]: a whole number
};
// A [params.*] key that is a whole number from `min` to `max`, or any
// number (a bandwidth, a rate) from `min` to `max`.
constexpr KeyRange whole_number(double min, double max) {
  return {min, max, true};
}
constexpr KeyRange any_number(double min, double max) {
  return {min, max, false};
}
// Bandwidths in MB/s: the links' per-byte time (1e6 / MBps picoseconds)
// stays from 1 ps to 1 ms.
inline constexpr KeyRange kBandwidthMBps = any_number(0.001, 1e6);
// Clocks a device counts cycles of: one cycle lasts 1 ps to 1 ms.
inline constexpr KeyRange kClockHz = whole_number(1e3, 1e12);

struct ModelKey {
  const char *key; // "timing.tx_dma.gap", "params.doorbell.fifos"
  KeyUse use;
  const char *reader; // who reads it, for messages: "the Tx engine"
  KeyRange range = {};
};

// Throws nicemu::Error naming the model's file and line when one of its
// [timing.*]/[params.*] keys is not in `keys` (with "did you mean ...?"),
// when its value is outside the key's range (naming the range), or when a
// Required key of `keys` is missing (naming its reader). `board` names the
// board in the messages.
void check_model_keys(const Model &model, const std::vector<ModelKey> &keys,
                      const std::string &board);

// Loads a model by name (searched in the model path) or by file path,
// optionally with ":VARIANT" (`martini:D`, `./card.toml:B`): the variant's
// figures replace the model's. Throws nicemu::Error naming the file, the
// key and what is wrong (an unknown variant: the ones there are).
Model load_model(const std::string &name_or_path);

// `model` with its variant `variant` applied. Throws nicemu::Error listing
// the model's variants when it has no such one.
Model with_variant(const Model &model, const std::string &variant);

// A model file's text (at most 1 MiB), as load_model reads it.
std::string read_model_text(const std::string &path);

// Parses model text; `origin` names it in error messages.
Model parse_model(const std::string &toml_text, const std::string &origin);

// Directories searched for NAME.toml, in order: $NICEMU_MODEL_PATH (colon
// separated), the installed share dir (<exe>/../share/nicemu/models), and,
// for an executable inside the build tree only (NICEMU_BUILD_TREE), the
// source tree's model directory (NICEMU_SOURCE_MODEL_DIR).
std::vector<std::filesystem::path> model_search_path();

// Names of all models found on the search path.
std::vector<std::string> list_models();

// Parses "1.35us", "30.1 ns", "0.48 us", "2ms", "5s", "120ps" into picoseconds.
std::optional<uint64_t> parse_duration_ps(const std::string &text);

// Parses a byte count: "4096", "512 B", "256 KiB", "4 MiB", "1 GiB".
std::optional<uint64_t> parse_size(const std::string &text);

// Formats a byte count the way parse_size reads it: "256 KiB", "100 B".
std::string format_size(uint64_t bytes);

// Whether `name` may name a model or a variant: letters, digits, '_' and
// '-', starting with a letter or digit (it is a file name and what --model
// takes).
bool is_model_name(const std::string &name);

// `text` as a message may show it: control characters, backslashes and
// bytes beyond ASCII as \xNN, so that a name from a file or an
// argument cannot send escape sequences to the terminal.
std::string printable(const std::string &text);

} // namespace nicemu
