// Model files: unit parsing, TOML reading and validation, the search path.
// The schema is documented in docs/models.md.
#include "nicemu/model.hpp"

#include "nicemu/error.hpp"
#include "nicemu/regs.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>

namespace nicemu {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMemoryTop = 0x80000000; // kseg0 and up are not card memory
constexpr uint64_t kMaxFlash = 16ull << 20;
constexpr uint64_t kMmioEnd = uint64_t{NICEMU_MMIO_BASE} + 0x01000000;
constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr const char *kSizeHint =
    "an integer number of bytes or a string like \"256 KiB\" "
    "(units B, KiB, MiB, GiB)";
constexpr const char *kDurationHint =
    "a string with a unit like \"0.48 us\" (units ps, ns, us, ms, s)";

// ---- small text helpers ----

std::string hex32(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%08llX",
                static_cast<unsigned long long>(v));
  return buf;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

// A non-negative decimal "12", "30.1" as mantissa * 10^exp10. Consumes the
// number from the front of `s`; nullopt when there is none or it overflows.
struct Decimal {
  uint64_t mantissa = 0;
  int exp10 = 0;
};

std::optional<Decimal> take_decimal(std::string_view &s) {
  size_t i = 0, int_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
    ++i, ++int_digits;
  if (int_digits == 0)
    return std::nullopt;
  std::string_view frac;
  if (i < s.size() && s[i] == '.') {
    size_t start = ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      ++i;
    frac = s.substr(start, i - start);
    if (frac.empty())
      return std::nullopt;
    while (!frac.empty() && frac.back() == '0') // "1.50" == "1.5"
      frac.remove_suffix(1);
  }
  Decimal d;
  std::string digits = std::string(s.substr(0, int_digits)) + std::string(frac);
  for (char c : digits) {
    if (mul_overflows(d.mantissa, 10, d.mantissa) ||
        __builtin_add_overflow(d.mantissa, uint64_t(c - '0'), &d.mantissa))
      return std::nullopt;
  }
  d.exp10 = -static_cast<int>(frac.size());
  s.remove_prefix(i);
  return d;
}

// mantissa * 10^exp10 rounded to the nearest integer (halves up).
std::optional<uint64_t> scale_decimal(Decimal d) {
  uint64_t v = d.mantissa;
  for (int e = d.exp10; e > 0; --e)
    if (mul_overflows(v, 10, v))
      return std::nullopt;
  if (d.exp10 >= 0)
    return v;
  if (d.exp10 < -19) // 10^20 > 2^64 > mantissa: rounds to zero
    return 0;
  uint64_t div = 1;
  for (int e = d.exp10; e < 0; ++e)
    div *= 10;
  uint64_t q = v / div, r = v % div;
  return r >= div - r ? q + 1 : q;
}

// ---- did-you-mean ----

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min(
          {row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string join(const std::vector<std::string> &items, const char *sep) {
  std::string out;
  for (const auto &item : items)
    out += (out.empty() ? "" : sep) + item;
  return out;
}

// " (did you mean X?)" for a near miss, else the list of known keys.
std::string suggestion(std::string_view key,
                       const std::vector<std::string> &known) {
  const std::string *best = nullptr;
  size_t best_distance = 3; // more than two edits is not a typo
  for (const auto &k : known) {
    size_t d = edit_distance(key, k);
    if (d < best_distance && d < k.size())
      best = &k, best_distance = d;
  }
  if (best)
    return " (did you mean " + *best + "?)";
  return " (known keys: " + join(known, ", ") + ")";
}

// ---- TOML reading with located errors ----

uint32_t line_of(const toml::source_region &r) {
  return r.begin.line;
}

[[noreturn]] void fail(const std::string &origin, uint32_t line,
                       const std::string &msg) {
  std::string where = origin;
  if (line != 0)
    where += ":" + std::to_string(line);
  throw Error(where + ": " + msg);
}

std::string describe(const toml::node &n) {
  if (auto s = n.as_string())
    return "string \"" + s->get() + "\"";
  if (auto i = n.as_integer())
    return "integer " + std::to_string(i->get());
  if (auto f = n.as_floating_point())
    return "float " + std::to_string(f->get());
  if (auto b = n.as_boolean())
    return b->get() ? "true" : "false";
  if (n.is_table())
    return "a table";
  if (n.is_array())
    return "an array";
  return "a date/time";
}

// One TOML table being read; `label` prefixes its keys in messages
// ("[core] ", "memory \"sram\" ", or "" at top level).
struct Section {
  const std::string &origin;
  const toml::table &table;
  std::string label;

  [[noreturn]] void fail_at(const toml::node *n, const std::string &key,
                            const std::string &msg) const {
    // A missing key points at its table's header; the root has none.
    uint32_t line = n               ? line_of(n->source())
                    : label.empty() ? 0
                                    : line_of(table.source());
    fail(origin, line, label + key + ": " + msg);
  }

  [[noreturn]] void fail_type(const toml::node &n, const std::string &key,
                              const std::string &want) const {
    fail_at(&n, key, "must be " + want + " (got " + describe(n) + ")");
  }

  const toml::node *find(std::string_view key) const { return table.get(key); }

  const toml::node &need(const std::string &key) const {
    const toml::node *n = find(key);
    if (!n)
      fail_at(nullptr, key, "missing (required)");
    return *n;
  }

  void check_keys(const std::vector<std::string> &known) const {
    for (const auto &[key, node] : table) {
      if (std::find(known.begin(), known.end(), key.str()) != known.end())
        continue;
      fail(origin, line_of(key.source()),
           "unknown key " + label + std::string(key.str()) +
               suggestion(key.str(), known));
    }
  }

  uint64_t uint(const std::string &key, uint64_t min, uint64_t max,
                std::optional<uint64_t> fallback) const {
    const toml::node *n = find(key);
    if (!n && fallback)
      return *fallback;
    const toml::node &v = n ? *n : need(key);
    auto i = v.as_integer();
    if (i && i->get() >= 0 && uint64_t(i->get()) >= min &&
        uint64_t(i->get()) <= max)
      return uint64_t(i->get());
    std::string want =
        min == 0 ? "a non-negative integer" : "a positive integer";
    if (max != kU64Max)
      want = "an integer from " + std::to_string(min) + " to " +
             std::to_string(max);
    fail_type(v, key, want);
  }

  std::string string(const std::string &key, bool required) const {
    const toml::node *n = required ? &need(key) : find(key);
    if (!n)
      return "";
    if (!n->is_string())
      fail_type(*n, key, "a string");
    return n->as_string()->get();
  }

  bool boolean(const std::string &key, bool fallback) const {
    const toml::node *n = find(key);
    if (!n)
      return fallback;
    if (!n->is_boolean())
      fail_type(*n, key, "true or false");
    return n->as_boolean()->get();
  }

  uint64_t size(const std::string &key) const {
    const toml::node &n = need(key);
    if (auto i = n.as_integer(); i && i->get() >= 0)
      return uint64_t(i->get());
    if (auto s = n.as_string())
      if (auto bytes = parse_size(s->get()))
        return *bytes;
    fail_type(n, key, std::string("a size: ") + kSizeHint);
  }

  // A sub-table; a missing optional one reads as empty.
  Section sub(const std::string &key, bool required) const {
    static const toml::table empty;
    const toml::node *n = find(key);
    if (!n && required)
      fail(origin, 0, "missing table [" + key + "] (required)");
    if (n && !n->is_table())
      fail_type(*n, key, "a table [" + key + "]");
    return Section{origin, n ? *n->as_table() : empty, "[" + key + "] "};
  }
};

// ---- the model sections ----

bool is_name(const std::string &name) {
  bool ok = !name.empty() && std::isalnum(static_cast<unsigned char>(name[0]));
  for (char c : name)
    ok = ok &&
         (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return ok;
}

void check_name(const Section &top, const std::string &name) {
  if (!is_name(name))
    top.fail_at(top.find("name"), "name",
                "must be letters, digits, '_' or '-' (it is the file name "
                "and what --model takes), got \"" +
                    printable(name) + "\"");
}

void check_name(const Section &variant, const std::string &name,
                const char *what) {
  if (!is_name(name))
    fail(variant.origin, line_of(variant.table.source()),
         std::string(what) +
             " must be letters, digits, '_' or '-' (it is "
             "what --model NAME:VARIANT takes), got \"" +
             printable(name) + "\"");
}

// A core clock of 1 kHz to 1 THz: a cycle lasts 1 ps to 1 ms (a faster
// clock's cycles would take 0 ps). The watchdog's period is what
// SYS_WDT_PERIOD, a 32-bit register, holds.
constexpr uint64_t kMinClockHz = 1'000, kMaxClockHz = 1'000'000'000'000;
// A cycle table entry: at most 10000 cycles, so that a block's cost and a
// taken branch's penalty fit their counters.
constexpr uint64_t kMaxCycleCost = 10'000;

void read_core(const Section &core, Model &m) {
  core.check_keys({"clock_hz", "watchdog_cycles"});
  m.clock_hz = core.uint("clock_hz", kMinClockHz, kMaxClockHz, std::nullopt);
  m.watchdog_cycles = core.uint("watchdog_cycles", 0, kU32Max, 0);
}

void read_cycles(const Section &cycles, CycleTable &t) {
  const std::vector<std::string> keys = {
      "load_use",        "mul",       "div",
      "taken_branch",    "mmio_read", "mmio_write",
      "interrupt_entry", "wake"};
  uint32_t *fields[] = {&t.load_use,        &t.mul,       &t.div,
                        &t.taken_branch,    &t.mmio_read, &t.mmio_write,
                        &t.interrupt_entry, &t.wake};
  cycles.check_keys(keys);
  for (size_t i = 0; i < keys.size(); ++i)
    *fields[i] = uint32_t(cycles.uint(keys[i], 0, kMaxCycleCost, 0));
}

uint32_t read_flash(const Section &flash) {
  flash.check_keys({"size"});
  uint64_t size = flash.size("size");
  if (size == 0 || size > kMaxFlash || size % kPage != 0)
    flash.fail_at(flash.find("size"), "size",
                  "must be a multiple of 4 KiB from 4 KiB to 16 MiB (the flash "
                  "window), got " +
                      format_size(size));
  return uint32_t(size);
}

struct PlacedMemory {
  MemoryRegion region;
  uint32_t line = 0;
};

std::string describe(const MemoryRegion &r) {
  return "memory \"" + r.name + "\" (" + hex32(r.base) + ", " +
         format_size(r.size) + ")";
}

PlacedMemory read_memory(const std::string &origin, const toml::table &t,
                         size_t index) {
  Section s{origin, t, "[[memory]] #" + std::to_string(index + 1) + " "};
  s.check_keys({"name", "base", "size", "executable", "writable"});
  PlacedMemory p;
  p.line = line_of(t.source());
  p.region.name = s.string("name", true);
  s.label = "memory \"" + p.region.name + "\" ";
  uint64_t base = s.uint("base", 0, kU32Max, std::nullopt);
  uint64_t size = s.size("size");
  if (base % kPage != 0)
    s.fail_at(s.find("base"), "base",
              "must be 4 KiB aligned, got " + hex32(base));
  if (size == 0 || size % kPage != 0)
    s.fail_at(s.find("size"), "size",
              "must be a non-zero multiple of 4 KiB, got " + format_size(size));
  if (base + size > kMemoryTop)
    s.fail_at(s.find("size"), "size",
              "ends at " + hex32(base + size) +
                  ", past 0x80000000 (card memories live below 2 GiB)");
  p.region.base = uint32_t(base);
  p.region.size = uint32_t(size);
  p.region.executable = s.boolean("executable", true);
  p.region.writable = s.boolean("writable", true);
  return p;
}

bool overlaps(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size) {
  return a < b + b_size && b < a + a_size;
}

// Memories must not cover the fixed windows of regs.h nor each other.
void check_layout(const std::string &origin,
                  const std::vector<PlacedMemory> &ms, uint32_t flash_size) {
  for (size_t i = 0; i < ms.size(); ++i) {
    const MemoryRegion &r = ms[i].region;
    auto clash = [&](const std::string &what) {
      fail(origin, ms[i].line, describe(r) + " overlaps " + what);
    };
    if (overlaps(r.base, r.size, NICEMU_MMIO_BASE, kMmioEnd - NICEMU_MMIO_BASE))
      clash("the device registers (MMIO, 0x1F000000-0x1FFFFFFF)");
    if (overlaps(r.base, r.size, NICEMU_FLASH_WINDOW, flash_size))
      clash("the flash window (" + hex32(NICEMU_FLASH_WINDOW) + ", " +
            format_size(flash_size) + ")");
    for (size_t j = 0; j < i; ++j) {
      const MemoryRegion &o = ms[j].region;
      if (o.name == r.name)
        fail(origin, ms[i].line, "memory \"" + r.name + "\" is defined twice");
      if (overlaps(r.base, r.size, o.base, o.size))
        clash(describe(o));
    }
  }
}

std::vector<MemoryRegion> read_memories(const Section &top,
                                        uint32_t flash_size) {
  const toml::node &n = top.need("memory");
  if (!n.is_array_of_tables() || n.as_array()->empty())
    top.fail_type(n, "memory", "one or more [[memory]] tables");
  std::vector<PlacedMemory> placed;
  for (const toml::node &t : *n.as_array())
    placed.push_back(read_memory(top.origin, *t.as_table(), placed.size()));
  check_layout(top.origin, placed, flash_size);
  std::vector<MemoryRegion> out;
  out.reserve(placed.size());
  for (const auto &p : placed)
    out.push_back(p.region);
  auto has = [&](bool MemoryRegion::*flag) {
    return std::any_of(out.begin(), out.end(),
                       [&](const MemoryRegion &r) { return r.*flag; });
  };
  if (!has(&MemoryRegion::executable))
    top.fail_at(&n, "memory", "no memory is executable (code needs one)");
  if (!has(&MemoryRegion::writable))
    top.fail_at(&n, "memory", "no memory is writable (data needs one)");
  return out;
}

// [timing.SECTION] and [params.SECTION]: free-form keys, checked values.
template <typename Value>
void read_free_form(const Section &top, const std::string &kind,
                    std::map<std::string, Value> &out,
                    std::map<std::string, uint32_t> &lines,
                    Value (*convert)(const Section &, const std::string &,
                                     const toml::node &)) {
  Section outer = top.sub(kind, false);
  for (const auto &[name, node] : outer.table) {
    std::string section(name.str());
    std::string header = "[" + kind + "." + section + "]";
    if (!node.is_table())
      outer.fail_type(node, section, "a table " + header + " of values");
    Section inner{top.origin, *node.as_table(), header + " "};
    for (const auto &[key, value] : inner.table) {
      std::string name = section + "." + std::string(key.str());
      out[name] = convert(inner, std::string(key.str()), value);
      lines[kind + "." + name] = line_of(key.source());
    }
  }
}

uint64_t to_duration(const Section &s, const std::string &key,
                     const toml::node &v) {
  if (auto str = v.as_string())
    if (auto ps = parse_duration_ps(str->get()))
      return *ps;
  s.fail_type(v, key, std::string("a duration: ") + kDurationHint);
}

double to_param(const Section &s, const std::string &key, const toml::node &v) {
  if (auto i = v.as_integer())
    return double(i->get());
  if (auto f = v.as_floating_point(); f && std::isfinite(f->get()))
    return f->get();
  if (auto str = v.as_string()) {
    if (auto bytes = parse_size(str->get()))
      return double(*bytes);
    if (parse_duration_ps(str->get()))
      s.fail_at(&v, key, "durations belong in [timing.*], not [params.*]");
  }
  s.fail_type(v, key, "a number or a size like \"256 MiB\"");
}

// [variant.NAME] tables: a description and [variant.NAME.timing.S] /
// [variant.NAME.params.S] tables of figures that replace the model's.
std::vector<ModelVariant> read_variants(const Section &top) {
  std::vector<ModelVariant> variants;
  Section all = top.sub("variant", false);
  for (const auto &[name, node] : all.table) {
    ModelVariant v;
    v.name = std::string(name.str());
    std::string header = "[variant." + v.name + "]";
    if (!node.is_table())
      all.fail_type(node, v.name, "a table " + header);
    Section s{top.origin, *node.as_table(), header + " "};
    check_name(Section{top.origin, *node.as_table(), header + " "}, v.name,
               "variant name");
    s.check_keys({"description", "timing", "params"});
    v.description = s.string("description", false);
    read_free_form(s, "timing", v.timing_ps, v.key_lines, &to_duration);
    read_free_form(s, "params", v.params, v.key_lines, &to_param);
    variants.push_back(std::move(v));
  }
  return variants;
}

Model read_model(const toml::table &root, const std::string &origin) {
  Section top{origin, root, ""};
  top.check_keys({"name", "description", "board", "id", "core", "cycles",
                  "memory", "flash", "timing", "params", "variant"});
  Model m;
  m.source = origin;
  m.name = top.string("name", true);
  check_name(top, m.name);
  m.description = top.string("description", false);
  m.board = top.string("board", false); // checked by the board registry
  m.id = uint32_t(top.uint("id", 0, kU32Max, 0));
  read_core(top.sub("core", true), m);
  read_cycles(top.sub("cycles", false), m.cycles);
  m.flash_size = read_flash(top.sub("flash", true));
  m.memories = read_memories(top, m.flash_size);
  read_free_form(top, "timing", m.timing_ps, m.key_lines, &to_duration);
  read_free_form(top, "params", m.params, m.key_lines, &to_param);
  m.variants = read_variants(top);
  return m;
}

// ---- files and the search path ----

// A model file is at most 1 MiB (the shipped ones are under 16 KiB).
constexpr size_t kMaxModelBytes = size_t(1) << 20;

std::string read_file(const fs::path &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw Error("cannot open model file " + path.string() + ": " +
                std::strerror(errno));
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) {
    text.append(buf, n);
    if (text.size() > kMaxModelBytes) {
      std::fclose(f);
      throw Error(path.string() +
                  ": more than 1 MiB, too large for a model file");
    }
  }
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed)
    throw Error("cannot read model file " + path.string());
  return text;
}

Model load_file(const fs::path &path) {
  Model m = parse_model(read_file(path), path.string());
  m.source = path;
  return m;
}

// "tx_dma.gap" -> "[timing.tx_dma] gap", the way the file spells it.
std::string table_key(const std::string &kind, const std::string &key) {
  size_t dot = key.find('.');
  if (dot == key.npos)
    return "[" + kind + "] " + key;
  return "[" + kind + "." + key.substr(0, dot) + "] " + key.substr(dot + 1);
}

bool is_regular(const fs::path &p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

} // namespace

// ---- public API ----

std::optional<uint64_t> parse_duration_ps(const std::string &text) {
  std::string_view s = trim(text);
  auto number = take_decimal(s);
  if (!number)
    return std::nullopt;
  static const std::pair<std::string_view, int> units[] = {
      {"ps", 0},        {"ns", 3}, {"us", 6}, {"\xC2\xB5s", 6},
      {"\xCE\xBCs", 6}, {"ms", 9}, {"s", 12}};
  s = trim(s);
  for (const auto &[unit, exp10] : units)
    if (s == unit)
      return scale_decimal({number->mantissa, number->exp10 + exp10});
  return std::nullopt;
}

std::optional<uint64_t> parse_size(const std::string &text) {
  std::string_view s = trim(text);
  auto number = take_decimal(s);
  if (!number || number->exp10 != 0) // whole numbers only
    return std::nullopt;
  static const std::pair<std::string_view, uint64_t> units[] = {
      {"", 1},
      {"B", 1},
      {"KiB", 1ull << 10},
      {"MiB", 1ull << 20},
      {"GiB", 1ull << 30}};
  s = trim(s);
  uint64_t bytes = 0;
  for (const auto &[unit, scale] : units)
    if (s == unit)
      return mul_overflows(number->mantissa, scale, bytes)
                 ? std::nullopt
                 : std::optional<uint64_t>(bytes);
  return std::nullopt;
}

bool is_model_name(const std::string &name) {
  return is_name(name);
}

std::string printable(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += char(c);
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
    out += escaped;
  }
  return out;
}

std::string format_size(uint64_t bytes) {
  static const std::pair<uint64_t, const char *> units[] = {
      {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
  for (const auto &[scale, unit] : units)
    if (bytes != 0 && bytes % scale == 0)
      return std::to_string(bytes / scale) + " " + unit;
  return std::to_string(bytes) + " B";
}

namespace {

// The UTF-8 character at the start of `s` (its first byte >= 0x80), with
// its length in `n`; n = 0 if it is not one (truncated, overlong, a
// surrogate, past U+10FFFF).
char32_t decode_utf8(std::string_view s, size_t &n) {
  n = 0;
  uint8_t b = uint8_t(s[0]);
  size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
  if (len == 0 || len > s.size() || b >= 0xF8)
    return 0;
  char32_t cp = b & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    uint8_t cont = uint8_t(s[k]);
    if ((cont & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (cont & 0x3F);
  }
  static constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kSmallest[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  n = len;
  return cp;
}

// toml++ 3.3 (Debian 12) reaches __builtin_unreachable on some non-ASCII
// characters (gaps in its Unicode tables): undefined behaviour, found by
// fuzz/fuzz_model, twice. Guessing where toml++ will look at such a
// character proved fragile (a quote it takes for part of a bare token), so
// toml++ is given ASCII only: a non-ASCII character in a comment becomes
// '?', one in a "double-quoted" string its \u escape (toml++ decodes it
// back), and one anywhere else, or in a 'literal' string (which has no
// escapes), is refused with its line. Where this scan and toml++ disagree
// on what is a string, toml++ still sees only ASCII.
std::string ascii_for_toml(std::string_view text, const std::string &origin) {
  enum {
    Plain,
    Comment,
    Basic,
    Literal,
    MultiBasic,
    MultiLiteral
  } state = Plain;
  std::string out;
  out.reserve(text.size());
  uint32_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto starts = [&](std::string_view s) {
      return text.substr(i).starts_with(s);
    };
    if (uint8_t(c) >= 0x80) {
      if (state == Plain)
        fail(origin, line,
             "a non-ASCII character outside a string or a comment");
      if (state == Literal || state == MultiLiteral)
        fail(origin, line,
             "a non-ASCII character in a 'literal' string: use a "
             "\"basic\" string");
      size_t n = 0;
      char32_t cp = decode_utf8(text.substr(i), n);
      if (!n)
        fail(origin, line, "text that is not UTF-8");
      i += n - 1;
      if (state == Comment) {
        out += '?';
      } else {
        char escape[12];
        std::snprintf(escape, sizeof escape,
                      cp > 0xFFFF ? "\\U%08X" : "\\u%04X", unsigned(cp));
        out += escape;
      }
      continue;
    }
    out += c;
    if (c == '\n') {
      ++line;
      if (state == Comment || state == Basic || state == Literal)
        state = Plain;
      continue;
    }
    switch (state) {
    case Plain:
      if (c == '#')
        state = Comment;
      else if (starts("\"\"\"") || starts("'''")) {
        state = c == '"' ? MultiBasic : MultiLiteral;
        out.append(text.substr(i + 1, 2));
        i += 2;
      } else if (c == '"')
        state = Basic;
      else if (c == '\'')
        state = Literal;
      break;
    case Comment:
      break;
    case Basic:
    case MultiBasic:
      if (c == '\\' && i + 1 < text.size() && uint8_t(text[i + 1]) < 0x80 &&
          text[i + 1] != '\n') {
        out += text[++i]; // an escaped character
      } else if (state == Basic && c == '"') {
        state = Plain;
      } else if (state == MultiBasic && starts("\"\"\"")) {
        state = Plain;
        out.append(text.substr(i + 1, 2));
        i += 2;
      }
      break;
    case Literal:
      if (c == '\'')
        state = Plain;
      break;
    case MultiLiteral:
      if (starts("'''")) {
        state = Plain;
        out.append(text.substr(i + 1, 2));
        i += 2;
      }
      break;
    }
  }
  return out;
}

} // namespace

Model parse_model(const std::string &toml_text, const std::string &origin) {
  const std::string ascii = ascii_for_toml(toml_text, origin);
  toml::table root;
  try {
    root = toml::parse(std::string_view(ascii), std::string_view(origin));
  } catch (const toml::parse_error &e) {
    const auto &at = e.source().begin;
    throw Error(origin + ":" + std::to_string(at.line) + ":" +
                std::to_string(at.column) +
                ": TOML syntax error: " + std::string(e.description()));
  }
  return read_model(root, origin);
}

std::vector<fs::path> model_search_path() {
  std::vector<fs::path> dirs;
  if (const char *env = std::getenv("NICEMU_MODEL_PATH")) {
    std::string_view rest = env;
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      if (!dir.empty())
        dirs.emplace_back(dir);
      rest = colon == rest.npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    dirs.push_back((exe.parent_path() / ".." / "share" / "nicemu" / "models")
                       .lexically_normal());
#if defined(NICEMU_SOURCE_MODEL_DIR) && defined(NICEMU_BUILD_TREE)
  // Only an executable of the build tree (nicemu, the tests) looks into the
  // source tree: an installed copy finds its models relative to itself alone,
  // wherever the source tree is or was.
  if (!ec) {
    fs::path build = fs::weakly_canonical(NICEMU_BUILD_TREE, ec);
    fs::path rel = exe.lexically_normal().lexically_relative(build);
    if (!rel.empty() && *rel.begin() != "..")
      dirs.emplace_back(NICEMU_SOURCE_MODEL_DIR);
  }
#endif
  return dirs;
}

std::vector<std::string> list_models() {
  std::set<std::string> names;
  for (const auto &dir : model_search_path()) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec))
      if (it->path().extension() == ".toml" && is_regular(it->path()))
        names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

Model with_variant(const Model &model, const std::string &variant) {
  auto v = std::find_if(
      model.variants.begin(), model.variants.end(),
      [&](const ModelVariant &candidate) { return candidate.name == variant; });
  if (v == model.variants.end()) {
    std::vector<std::string> names;
    for (const ModelVariant &known : model.variants)
      names.push_back(known.name);
    throw Error(model.source.string() + ": model \"" + model.name +
                "\" has no variant \"" + printable(variant) + "\" (" +
                (names.empty() ? std::string("it has no variants")
                               : "variants: " + join(names, ", ")) +
                ")");
  }
  Model m = model;
  m.variant = v->name;
  for (const auto &[key, value] : v->timing_ps)
    m.timing_ps[key] = value;
  for (const auto &[key, value] : v->params)
    m.params[key] = value;
  for (const auto &[key, line] : v->key_lines)
    m.key_lines[key] = line;
  return m;
}

std::string read_model_text(const std::string &path) {
  return read_file(path);
}

Model load_model(const std::string &name_or_path) {
  // NAME:VARIANT or PATH:VARIANT; a variant name holds no '/' or '.'.
  if (size_t colon = name_or_path.rfind(':'); colon != std::string::npos) {
    std::string variant = name_or_path.substr(colon + 1);
    if (is_name(variant))
      return with_variant(load_model(name_or_path.substr(0, colon)), variant);
  }
  const std::string &x = name_or_path;
  if (x.find('/') != x.npos || x.ends_with(".toml"))
    return load_file(x);
  std::vector<std::string> searched;
  for (const auto &dir : model_search_path()) {
    fs::path file = dir / (x + ".toml");
    searched.push_back(dir.string());
    if (!is_regular(file))
      continue;
    Model m = load_file(file);
    if (m.name != x) // the file name is the lookup key: keep them in step
      throw Error(file.string() + ": name = \"" + m.name +
                  "\" does not match the file name (" + x + ".toml)");
    return m;
  }
  std::vector<std::string> known = list_models();
  throw Error("unknown model \"" + printable(x) + "\"; available models: " +
              (known.empty() ? "none" : join(known, ", ")) + " (searched " +
              join(searched, ", ") +
              "; set NICEMU_MODEL_PATH or pass a path to a .toml file)");
}

const MemoryRegion *Model::region_at(uint32_t addr) const {
  for (const auto &r : memories)
    if (addr >= r.base && uint64_t(addr) < uint64_t(r.base) + r.size)
      return &r;
  return nullptr;
}

const MemoryRegion &Model::code_region() const {
  for (const auto &r : memories)
    if (r.executable)
      return r;
  throw Error("model \"" + name + "\" has no executable memory");
}

const MemoryRegion &Model::data_region() const {
  for (const auto &r : memories)
    if (r.writable)
      return r;
  throw Error("model \"" + name + "\" has no writable memory");
}

uint64_t Model::timing(const std::string &key) const {
  auto it = timing_ps.find(key);
  if (it == timing_ps.end())
    throw Error(source.string() + ": model \"" + name +
                "\" has no timing parameter " + table_key("timing", key));
  return it->second;
}

double Model::param(const std::string &key) const {
  auto it = params.find(key);
  if (it == params.end())
    throw Error(source.string() + ": model \"" + name + "\" has no parameter " +
                table_key("params", key));
  return it->second;
}

} // namespace nicemu

namespace nicemu {

namespace {

// "timing.tx_dma.gap" -> "[timing.tx_dma] gap".
std::string file_spelling(const std::string &full_key) {
  size_t dot = full_key.find('.');
  return table_key(full_key.substr(0, dot), full_key.substr(dot + 1));
}

// The key of `keys` one or two edits away from `full_key` (a misspelled
// name in its table, or a misspelled table), if any.
const ModelKey *near_miss(const std::string &full_key,
                          const std::vector<ModelKey> &keys) {
  const ModelKey *best = nullptr;
  size_t best_distance = 3; // more than two edits is not a typo
  for (const ModelKey &k : keys) {
    size_t d = edit_distance(full_key, k.key);
    if (d < best_distance)
      best = &k, best_distance = d;
  }
  return best;
}

// " (did you mean X? the Tx engine reads it)" for a near miss; else the
// keys the board reads in that table, or the tables it reads.
std::string key_hint(const std::string &full_key,
                     const std::vector<ModelKey> &keys) {
  std::string table = full_key.substr(0, full_key.rfind('.') + 1);
  if (const ModelKey *k = near_miss(full_key, keys)) {
    std::string_view key(k->key);
    std::string name = key.starts_with(table)
                           ? std::string(key.substr(table.size()))
                           : file_spelling(k->key);
    return " (did you mean " + name + "? " +
           (k->use == KeyUse::Reference
                ? std::string("a reference figure of the ") + k->reader
                : std::string("the ") + k->reader + " reads it") +
           ")";
  }
  std::vector<std::string> names;
  std::set<std::string> tables;
  for (const ModelKey &k : keys) {
    std::string_view key(k.key);
    if (key.starts_with(table))
      names.emplace_back(key.substr(table.size()));
    tables.insert("[" + std::string(key.substr(0, key.rfind('.'))) + "]");
  }
  if (!names.empty())
    return " (it reads " + join(names, ", ") + ")";
  return tables.empty()
             ? " (it reads no [timing.*] or [params.*] keys)"
             : " (its tables: " + join({tables.begin(), tables.end()}, ", ") +
                   ")";
}

// "30.1 ns", "1 s", "0 ps": picoseconds in the largest unit they fill.
std::string duration_text(double ps) {
  static const std::pair<double, const char *> units[] = {
      {1e12, "s"}, {1e9, "ms"}, {1e6, "us"}, {1e3, "ns"}};
  char text[48];
  for (const auto &[scale, unit] : units)
    if (ps >= scale) {
      std::snprintf(text, sizeof text, "%.15g %s", ps / scale, unit);
      return text;
    }
  std::snprintf(text, sizeof text, "%.15g ps", ps);
  return text;
}

std::string number_text(double v) {
  char text[48];
  std::snprintf(text, sizeof text, "%.15g", v);
  return text;
}

// The key's value is outside its range: the message, or "" if it is not.
std::string range_problem(const Model &model, const std::string &full_key,
                          const KeyRange &declared) {
  const bool timing = full_key.starts_with("timing.");
  const std::string key = full_key.substr(full_key.find('.') + 1);
  KeyRange r = declared;
  if (r.max < r.min)
    r = timing ? KeyRange{0, double(kMaxDurationPs), true}
               : KeyRange{0, kMaxParam, true};
  double v = timing ? double(model.timing_ps.at(key)) : model.params.at(key);
  bool whole = timing || !r.whole || v == std::floor(v);
  if (v >= r.min && v <= r.max && whole)
    return "";
  if (timing)
    return " = " + duration_text(v) + ": must be a duration from " +
           duration_text(r.min) + " to " + duration_text(r.max);
  if (r.min == r.max)
    return " = " + number_text(v) + ": must be " + number_text(r.min);
  return " = " + number_text(v) + ": must be " +
         (r.whole ? "a whole number" : "a number") + " from " +
         number_text(r.min) + " to " + number_text(r.max);
}

// "the Tx engine reads it", "a reference figure of the host side".
std::string who_reads(const ModelKey &k) {
  std::string reader = k.reader;
  if (!reader.starts_with("the "))
    reader = "the " + reader;
  return k.use == KeyUse::Reference ? "a reference figure of " + reader
                                    : reader + " reads it";
}

} // namespace

void check_model_keys(const Model &model, const std::vector<ModelKey> &keys,
                      const std::string &board) {
  const std::string file = model.source.string();
  for (const auto &[full_key, line] : model.key_lines) {
    const std::string &key = full_key; // (clang 14 captures no bindings)
    auto known = std::find_if(keys.begin(), keys.end(),
                              [&](const ModelKey &k) { return key == k.key; });
    if (known != keys.end()) {
      if (std::string problem = range_problem(model, full_key, known->range);
          !problem.empty())
        fail(file, line,
             "model \"" + model.name + "\": " + file_spelling(full_key) +
                 problem + " (" + who_reads(*known) + ")");
      continue;
    }
    fail(file, line,
         "model \"" + model.name + "\": " + file_spelling(full_key) +
             ": no device of the " + board + " board reads this key" +
             key_hint(full_key, keys));
  }
  for (const ModelKey &k : keys) {
    if (k.use != KeyUse::Required || model.key_lines.count(k.key))
      continue;
    fail(file, 0,
         "model \"" + model.name + "\": " + file_spelling(k.key) +
             " is missing; the " + board + " board's " + k.reader +
             " needs it");
  }
}

} // namespace nicemu
