// The checked firmware image: encoding, verification, symbol lookup and the
// `nicemu image --info` text. The byte layout is docs/image-format.md; keep
// the constants below and that table in step.
#include "nicemu/image.hpp"

#include "nicemu/error.hpp"
#include "nicemu/model.hpp"

#include <cxxabi.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

namespace nicemu {
namespace {

constexpr uint8_t kMagic[8] = {'N', 'I', 'C', 'E', 'M', 'U', 'F', 'W'};
constexpr uint8_t kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
constexpr uint32_t kHeaderSize = 100;
constexpr uint32_t kSegmentEntrySize = 24;
constexpr uint32_t kSymbolEntrySize = 16;
constexpr uint32_t kModelNameSize = 16;
constexpr uint32_t kMaxBuildId = 32;
constexpr uint32_t kMaxSegments = 256;
constexpr uint32_t kMaxNameLength = 0xffff;
// Far above any card's flash; only there to call a wild size field wild.
constexpr uint32_t kMaxImageSize = 256u << 20;

// Header field offsets (docs/image-format.md).
constexpr uint32_t kOffVersion = 8, kOffHeaderSize = 12, kOffTotalSize = 16,
                   kOffImageCrc = 20, kOffModel = 24, kOffEntry = 40,
                   kOffSegmentCount = 44, kOffSymbolCount = 48, kOffSymtab = 52,
                   kOffStrtab = 56, kOffStrtabSize = 60, kOffBuildIdLen = 64,
                   kOffBuildId = 68;

using Bytes = std::span<const uint8_t>;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

// Every read goes through here, so no input can make us read past the end.
uint32_t get32(Bytes b, uint64_t off) {
  if (off + 4 > b.size())
    throw Error("firmware image is truncated: field at offset " +
                std::to_string(off) + " lies past the end (" +
                std::to_string(b.size()) + " bytes present)");
  return uint32_t(b[off]) | uint32_t(b[off + 1]) << 8 |
         uint32_t(b[off + 2]) << 16 | uint32_t(b[off + 3]) << 24;
}

void put32(std::vector<uint8_t> &out, uint64_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[off + i] = uint8_t(v >> (8 * i));
}

uint32_t crc_of(Bytes b) {
  return uint32_t(crc32(crc32(0L, Z_NULL, 0), b.data(), uInt(b.size())));
}

// The image CRC covers [0, total) with its own field read as zero.
uint32_t image_crc(Bytes image) {
  static constexpr uint8_t zero[4] = {};
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, image.data(), kOffImageCrc);
  crc = crc32(crc, zero, 4);
  crc = crc32(crc, image.data() + kOffImageCrc + 4,
              uInt(image.size() - kOffImageCrc - 4));
  return uint32_t(crc);
}

std::string segment_name(size_t index, uint32_t address, uint64_t size) {
  return "segment " + std::to_string(index) + " (" + hex32(address) + ", " +
         std::to_string(size) + " bytes)";
}

std::string segment_span(size_t index, uint32_t address, uint32_t mem_size) {
  return "segment " + std::to_string(index) + " (" + hex32(address) + "-" +
         hex32(address + mem_size - 1) + ")";
}

// Shape rules shared by the encoder and the decoder.
void check_segment_shape(const std::string &prefix, size_t index,
                         uint32_t address, uint32_t mem_size,
                         uint64_t file_size, uint32_t flags) {
  const std::string name = segment_name(index, address, mem_size);
  if (flags & ~(ImageSegment::kExec | ImageSegment::kWrite))
    throw Error(prefix + name + " has unknown flags " + hex(flags));
  if (file_size > mem_size)
    throw Error(prefix + name + " holds " + std::to_string(file_size) +
                " file bytes, more than its memory size");
  if (uint64_t(address) + mem_size > (uint64_t(1) << 32))
    throw Error(prefix + name + " runs past the end of the address space");
}

struct Range {
  size_t index;
  uint32_t address, size;
};

void check_no_overlap(const std::string &prefix, std::vector<Range> ranges) {
  std::erase_if(ranges, [](const Range &r) { return r.size == 0; });
  std::stable_sort(
      ranges.begin(), ranges.end(),
      [](const Range &a, const Range &b) { return a.address < b.address; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    const Range &a = ranges[i - 1], &b = ranges[i];
    if (uint64_t(a.address) + a.size > b.address)
      throw Error(prefix + "overlapping segments: " +
                  segment_span(a.index, a.address, a.size) + " and " +
                  segment_span(b.index, b.address, b.size));
  }
}

// ---- encoding ----

constexpr uint64_t align4(uint64_t v) {
  return (v + 3) & ~uint64_t(3);
}

// Computed before writing so that no offset can overflow 32 bits.
uint64_t encoded_size(const Image &image) {
  uint64_t size =
      kHeaderSize + uint64_t(kSegmentEntrySize) * image.segments.size();
  for (const ImageSegment &s : image.segments)
    size = align4(size + s.data.size());
  for (const ImageSymbol &sym : image.symbols)
    size += kSymbolEntrySize + sym.name.size() + 1;
  return align4(size);
}

void check_encodable(const Image &image) {
  const std::string prefix = "cannot encode firmware image: ";
  if (image.model.size() > kModelNameSize ||
      (!image.model.empty() && !is_model_name(image.model)))
    throw Error(prefix + "model name \"" + printable(image.model) +
                "\" is longer than 16 bytes or not a model name (letters, "
                "digits, '_' or '-')");
  if (image.build_id.size() > kMaxBuildId)
    throw Error(prefix + "build id is " +
                std::to_string(image.build_id.size()) + " bytes (at most 32)");
  if (image.segments.size() > kMaxSegments)
    throw Error(prefix + std::to_string(image.segments.size()) +
                " segments (at most 256)");
  std::vector<Range> ranges;
  for (size_t i = 0; i < image.segments.size(); ++i) {
    const ImageSegment &s = image.segments[i];
    check_segment_shape(prefix, i, s.address, s.mem_size, s.data.size(),
                        s.flags);
    ranges.push_back({i, s.address, s.mem_size});
  }
  check_no_overlap(prefix, std::move(ranges));
  if (uint64_t size = encoded_size(image); size > kMaxImageSize)
    throw Error(prefix + std::to_string(size) +
                " bytes is more than the 256 MiB limit");
  for (const ImageSymbol &sym : image.symbols) {
    if (sym.kind != ImageSymbol::kFunction && sym.kind != ImageSymbol::kObject)
      throw Error(prefix + "symbol \"" + sym.name + "\" has unknown kind " +
                  std::to_string(sym.kind));
    if (sym.flags & ~ImageSymbol::kHandler)
      throw Error(prefix + "symbol \"" + sym.name + "\" has unknown flags " +
                  std::to_string(sym.flags));
    if (sym.name.empty() || sym.name.size() > kMaxNameLength)
      throw Error(prefix + "symbol at " + hex32(sym.address) +
                  " has an empty or over-long name");
  }
}

void write_header(std::vector<uint8_t> &out, const Image &image,
                  uint32_t symtab, uint32_t strtab, uint32_t strtab_size) {
  std::copy(std::begin(kMagic), std::end(kMagic), out.begin());
  put32(out, kOffVersion, Image::kFormatVersion);
  put32(out, kOffHeaderSize, kHeaderSize);
  put32(out, kOffTotalSize, uint32_t(out.size()));
  std::copy(image.model.begin(), image.model.end(), out.begin() + kOffModel);
  put32(out, kOffEntry, image.entry);
  put32(out, kOffSegmentCount, uint32_t(image.segments.size()));
  put32(out, kOffSymbolCount, uint32_t(image.symbols.size()));
  put32(out, kOffSymtab, symtab);
  put32(out, kOffStrtab, strtab);
  put32(out, kOffStrtabSize, strtab_size);
  out[kOffBuildIdLen] = uint8_t(image.build_id.size());
  std::copy(image.build_id.begin(), image.build_id.end(),
            out.begin() + kOffBuildId);
}

// Writes segment table and data; returns where the data ends.
uint64_t write_segments(std::vector<uint8_t> &out, const Image &image) {
  uint64_t data =
      kHeaderSize + uint64_t(kSegmentEntrySize) * image.segments.size();
  for (size_t i = 0; i < image.segments.size(); ++i) {
    const ImageSegment &s = image.segments[i];
    const uint64_t entry = kHeaderSize + uint64_t(kSegmentEntrySize) * i;
    if (out.size() < data + s.data.size())
      out.resize(data + s.data.size());
    put32(out, entry + 0, s.address);
    put32(out, entry + 4, s.mem_size);
    put32(out, entry + 8, s.flags);
    put32(out, entry + 12, uint32_t(data));
    put32(out, entry + 16, uint32_t(s.data.size()));
    put32(out, entry + 20, crc_of(s.data));
    std::copy(s.data.begin(), s.data.end(), out.begin() + data);
    data = align4(data + s.data.size());
  }
  return data;
}

// Writes the symbol table at `symtab`, sorted by address; returns the
// string table.
std::string write_symbols(std::vector<uint8_t> &out, uint64_t symtab,
                          std::vector<ImageSymbol> symbols) {
  std::stable_sort(symbols.begin(), symbols.end(),
                   [](const ImageSymbol &a, const ImageSymbol &b) {
                     return a.address < b.address;
                   });
  std::string strings;
  out.resize(symtab + uint64_t(kSymbolEntrySize) * symbols.size());
  for (size_t i = 0; i < symbols.size(); ++i) {
    const uint64_t entry = symtab + uint64_t(kSymbolEntrySize) * i;
    put32(out, entry + 0, symbols[i].address);
    put32(out, entry + 4, symbols[i].size);
    put32(out, entry + 8, uint32_t(strings.size()));
    put32(out, entry + 12,
          uint32_t(symbols[i].name.size()) | uint32_t(symbols[i].kind) << 16 |
              uint32_t(symbols[i].flags) << 24);
    strings += symbols[i].name;
    strings += '\0'; // not needed by the decoder; eases hexdump reading
  }
  return strings;
}

} // namespace

std::vector<uint8_t> encode_image(const Image &image) {
  check_encodable(image);
  std::vector<uint8_t> out(kHeaderSize +
                           kSegmentEntrySize * image.segments.size());
  const uint64_t symtab = write_segments(out, image);
  const std::string strings = write_symbols(out, symtab, image.symbols);
  const uint64_t strtab = out.size();
  out.resize(align4(strtab + strings.size()));
  std::copy(strings.begin(), strings.end(), out.begin() + strtab);
  write_header(out, image, uint32_t(symtab), uint32_t(strtab),
               uint32_t(strings.size()));
  put32(out, kOffImageCrc, image_crc(out));
  return out;
}

// ---- decoding ----

namespace {

struct Header {
  uint32_t total, entry, segment_count, symbol_count;
  uint32_t symtab, strtab, strtab_size;
};

bool all_erased(Bytes b) {
  return std::all_of(b.begin(), b.end(), [](uint8_t v) { return v == 0xff; });
}

std::string hex_bytes(Bytes b, const char *separator) {
  std::string s;
  for (uint8_t v : b) {
    char buf[4];
    std::snprintf(buf, sizeof buf, "%02x", v);
    s += (s.empty() ? "" : separator) + std::string(buf);
  }
  return s;
}

void check_magic(Bytes bytes) {
  const Bytes head = bytes.first(std::min<size_t>(bytes.size(), 8));
  if (std::equal(head.begin(), head.end(), kMagic))
    return;
  std::string why =
      "the first bytes are " + hex_bytes(head, " ") + ", expected \"NICEMUFW\"";
  if (all_erased(head))
    why = "the flash is erased (all 0xFF)";
  else if (head.size() >= 4 &&
           std::equal(kElfMagic, kElfMagic + 4, head.data()))
    why = "this is an ELF file: pack it with `nicemu image` first";
  throw Error("not a nicemu firmware image: " + why);
}

// Fixed header: magic, version, sizes and table offsets in range.
Header read_header(Bytes bytes) {
  check_magic(bytes);
  if (bytes.size() < kHeaderSize)
    throw Error("firmware image is truncated: " + std::to_string(bytes.size()) +
                " bytes present, the header alone needs " +
                std::to_string(kHeaderSize));
  const std::string bad = "bad firmware image header: ";
  if (uint32_t v = get32(bytes, kOffVersion); v != Image::kFormatVersion)
    throw Error("unsupported firmware image format version " +
                std::to_string(v) + " (this nicemu reads version " +
                std::to_string(Image::kFormatVersion) + ")");
  if (uint32_t hs = get32(bytes, kOffHeaderSize); hs != kHeaderSize)
    throw Error(bad + "header size is " + std::to_string(hs) +
                " bytes, format version 1 uses " + std::to_string(kHeaderSize));
  Header h{};
  h.total = get32(bytes, kOffTotalSize);
  if (h.total > kMaxImageSize || h.total < kHeaderSize)
    throw Error(bad + "total size " + std::to_string(h.total) +
                " bytes is out of range (" + std::to_string(kHeaderSize) +
                " to 256 MiB)");
  if (h.total > bytes.size())
    throw Error("firmware image is truncated: the header says " +
                std::to_string(h.total) + " bytes, only " +
                std::to_string(bytes.size()) + " present");
  h.entry = get32(bytes, kOffEntry);
  h.segment_count = get32(bytes, kOffSegmentCount);
  h.symbol_count = get32(bytes, kOffSymbolCount);
  h.symtab = get32(bytes, kOffSymtab);
  h.strtab = get32(bytes, kOffStrtab);
  h.strtab_size = get32(bytes, kOffStrtabSize);
  return h;
}

void check_tables_in_range(const Header &h, uint8_t build_id_len) {
  const std::string bad = "bad firmware image header: ";
  const std::string end =
      " (the image is " + std::to_string(h.total) + " bytes)";
  if (build_id_len > kMaxBuildId)
    throw Error(bad + "build id length " + std::to_string(build_id_len) +
                " (at most 32)");
  if (h.segment_count > kMaxSegments)
    throw Error(bad + std::to_string(h.segment_count) +
                " segments (at most 256)");
  const uint64_t seg_end =
      kHeaderSize + uint64_t(kSegmentEntrySize) * h.segment_count;
  if (seg_end > h.total)
    throw Error(bad + "segment table of " + std::to_string(h.segment_count) +
                " entries ends at offset " + std::to_string(seg_end) +
                ", past the end" + end);
  const uint64_t sym_end =
      uint64_t(h.symtab) + uint64_t(kSymbolEntrySize) * h.symbol_count;
  if (h.symtab < seg_end || sym_end > h.total)
    throw Error(bad + "symbol table of " + std::to_string(h.symbol_count) +
                " entries at offset " + std::to_string(h.symtab) +
                " lies outside offsets " + std::to_string(seg_end) + "-" +
                std::to_string(h.total) + end);
  if (h.strtab < sym_end || uint64_t(h.strtab) + h.strtab_size > h.total)
    throw Error(bad + "string table (" + std::to_string(h.strtab_size) +
                " bytes at offset " + std::to_string(h.strtab) +
                ") lies outside offsets " + std::to_string(sym_end) + "-" +
                std::to_string(h.total) + end);
}

struct SegmentEntry {
  uint32_t address, mem_size, flags, offset, size, crc;
};

std::vector<SegmentEntry> read_segment_table(Bytes image, const Header &h) {
  const std::string prefix = "bad segment table: ";
  const uint64_t data_start =
      kHeaderSize + uint64_t(kSegmentEntrySize) * h.segment_count;
  std::vector<SegmentEntry> entries;
  std::vector<Range> ranges;
  for (uint32_t i = 0; i < h.segment_count; ++i) {
    const uint64_t at = kHeaderSize + uint64_t(kSegmentEntrySize) * i;
    SegmentEntry e{get32(image, at),      get32(image, at + 4),
                   get32(image, at + 8),  get32(image, at + 12),
                   get32(image, at + 16), get32(image, at + 20)};
    check_segment_shape(prefix, i, e.address, e.mem_size, e.size, e.flags);
    if (e.offset < data_start || uint64_t(e.offset) + e.size > h.total)
      throw Error(prefix + segment_name(i, e.address, e.size) +
                  " has its data at offset " + std::to_string(e.offset) +
                  ", outside offsets " + std::to_string(data_start) + "-" +
                  std::to_string(h.total) + " of the image");
    entries.push_back(e);
    ranges.push_back({i, e.address, e.mem_size});
  }
  check_no_overlap("", std::move(ranges));
  return entries;
}

std::vector<ImageSegment> read_segments(Bytes image, const Header &h) {
  std::vector<ImageSegment> segments;
  const std::vector<SegmentEntry> entries = read_segment_table(image, h);
  for (size_t i = 0; i < entries.size(); ++i) {
    const SegmentEntry &e = entries[i];
    const Bytes data = image.subspan(e.offset, e.size);
    if (uint32_t crc = crc_of(data); crc != e.crc)
      throw Error(segment_name(i, e.address, e.size) +
                  " is corrupted: CRC-32 is " + hex32(crc) + ", expected " +
                  hex32(e.crc));
    segments.push_back(
        {e.address, e.mem_size, e.flags, {data.begin(), data.end()}});
  }
  return segments;
}

std::vector<ImageSymbol> read_symbols(Bytes image, const Header &h) {
  const std::string prefix = "bad symbol table: symbol ";
  const Bytes strings = image.subspan(h.strtab, h.strtab_size);
  std::vector<ImageSymbol> symbols;
  for (uint32_t i = 0; i < h.symbol_count; ++i) {
    const uint64_t at = h.symtab + uint64_t(kSymbolEntrySize) * i;
    const uint32_t name_at = get32(image, at + 8),
                   packed = get32(image, at + 12);
    ImageSymbol s{get32(image, at),
                  get32(image, at + 4),
                  uint8_t(packed >> 16),
                  {},
                  uint8_t(packed >> 24)};
    const uint32_t name_len = packed & 0xffff;
    auto which = [&] {
      return prefix + std::to_string(i) + " (" + hex32(s.address) + ")";
    };
    if (s.kind != ImageSymbol::kFunction && s.kind != ImageSymbol::kObject)
      throw Error(which() + " has unknown kind " + std::to_string(s.kind));
    if (s.flags & ~ImageSymbol::kHandler)
      throw Error(which() + " has unknown flags " + std::to_string(s.flags));
    if (name_len == 0 || uint64_t(name_at) + name_len > strings.size())
      throw Error(which() + " has its name (" + std::to_string(name_len) +
                  " bytes at " + std::to_string(name_at) +
                  ") outside the string table of " +
                  std::to_string(strings.size()) + " bytes");
    if (!symbols.empty() && s.address < symbols.back().address)
      throw Error(which() +
                  " is out of order: symbols must be sorted by address");
    const Bytes name = strings.subspan(name_at, name_len);
    s.name.assign(name.begin(), name.end());
    symbols.push_back(std::move(s));
  }
  return symbols;
}

// The fields whose bytes the format fixes: the reserved bytes are 0, the
// target model is a model name padded with NULs, the build id is padded
// with zeros. (Checked after the CRC: a damaged image is reported as such.)
void check_fixed_bytes(Bytes image) {
  const std::string bad = "bad firmware image header: ";
  const Bytes reserved = image.subspan(kOffBuildIdLen + 1, 3);
  if (!std::all_of(reserved.begin(), reserved.end(),
                   [](uint8_t b) { return b == 0; }))
    throw Error(bad + "reserved bytes 65-67 are " + hex_bytes(reserved, " ") +
                ", not 0");
  const Bytes model = image.subspan(kOffModel, kModelNameSize);
  const auto end = std::find(model.begin(), model.end(), 0);
  const std::string name(model.begin(), end);
  if (!std::all_of(end, model.end(), [](uint8_t b) { return b == 0; }) ||
      (!name.empty() && !is_model_name(name)))
    throw Error(bad + "the target model (bytes " + hex_bytes(model, " ") +
                ") is not a model name padded with NULs");
  const Bytes id = image.subspan(kOffBuildId, kMaxBuildId);
  if (!std::all_of(id.begin() + image[kOffBuildIdLen], id.end(),
                   [](uint8_t b) { return b == 0; }))
    throw Error(bad + "the build id's padding (past its " +
                std::to_string(image[kOffBuildIdLen]) + " bytes) is not 0");
}

} // namespace

Image decode_image(Bytes bytes) {
  const Header h = read_header(bytes);
  const Bytes image = bytes.first(h.total); // the rest is erased flash
  check_tables_in_range(h, image[kOffBuildIdLen]);
  Image out;
  out.segments = read_segments(image, h);
  // Checked after the segments so that a damaged segment is named; anything
  // else that is damaged (header, tables, padding) shows up here.
  const uint32_t stored = get32(image, kOffImageCrc);
  if (uint32_t crc = image_crc(image); crc != stored)
    throw Error("firmware image is corrupted: image CRC-32 is " + hex32(crc) +
                ", expected " + hex32(stored) +
                " (the header or a table is damaged)");
  check_fixed_bytes(image);
  const Bytes model = image.subspan(kOffModel, kModelNameSize);
  out.model.assign(model.begin(), std::find(model.begin(), model.end(), 0));
  out.entry = h.entry;
  const Bytes id = image.subspan(kOffBuildId, image[kOffBuildIdLen]);
  out.build_id.assign(id.begin(), id.end());
  out.symbols = read_symbols(image, h);
  return out;
}

// ---- symbols ----

std::string demangle_symbol(const std::string &raw) {
  // Only mangled names: __cxa_demangle would turn "f" into "float".
  if (raw.rfind("_Z", 0) != 0)
    return raw;
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  int status = 0;
  std::unique_ptr<char, Free> out(
      abi::__cxa_demangle(raw.c_str(), nullptr, nullptr, &status));
  return status == 0 && out ? std::string(out.get()) : raw;
}

namespace {

// Of the symbols of `kind` at the highest address <= addr, the one covering
// addr (aliases may differ in size), else the first of them.
const ImageSymbol *nearest_below(const std::vector<ImageSymbol> &symbols,
                                 uint32_t addr, uint8_t kind) {
  auto it = std::upper_bound(
      symbols.begin(), symbols.end(), addr,
      [](uint32_t a, const ImageSymbol &s) { return a < s.address; });
  const ImageSymbol *best = nullptr;
  while (it != symbols.begin()) {
    const ImageSymbol &s = *--it;
    if (s.kind != kind)
      continue;
    if (best && s.address != best->address)
      break;
    const bool best_covers = best && addr - best->address < best->size;
    if (!best || (!best_covers && addr - s.address < s.size))
      best = &s;
  }
  return best;
}

// A sized symbol covers its bytes; a size-0 label, up to the next symbol.
bool covers(const std::vector<ImageSymbol> &symbols, const ImageSymbol &s,
            uint32_t addr) {
  if (s.size != 0)
    return addr - s.address < s.size;
  auto next = std::upper_bound(
      symbols.begin(), symbols.end(), s.address,
      [](uint32_t a, const ImageSymbol &t) { return a < t.address; });
  return addr == s.address || (next != symbols.end() && addr < next->address);
}

} // namespace

const ImageSymbol *Image::symbol_at(uint32_t addr) const {
  return nearest_below(symbols, addr, ImageSymbol::kFunction);
}

std::string short_function_name(const std::string &raw) {
  std::string name = demangle_symbol(raw);
  const std::string anon = "(anonymous namespace)::";
  for (size_t at; (at = name.find(anon)) != std::string::npos;)
    name.erase(at, anon.size());
  // The parameter list is the last balanced (...) group, so that function
  // pointer parameters and "operator()" keep their parentheses.
  if (size_t close = name.rfind(')');
      close != std::string::npos && name.find('(') != std::string::npos) {
    int depth = 0;
    for (size_t i = close + 1; i-- > 0;) {
      if (name[i] == ')')
        ++depth;
      else if (name[i] == '(' && --depth == 0) {
        if (i > 0)
          name.erase(i);
        break;
      }
    }
  }
  return name;
}

const ImageSymbol *Image::find_symbol(const std::string &name) const {
  for (const ImageSymbol &s : symbols)
    if (s.name == name)
      return &s;
  for (const ImageSymbol &s : symbols) {
    const std::string d = demangle_symbol(s.name);
    if (d == name || short_function_name(s.name) == name)
      return &s;
  }
  return nullptr;
}

std::string Image::describe_address(uint32_t addr) const {
  const ImageSymbol *s = symbol_at(addr);
  if (!s || !covers(symbols, *s, addr))
    s = nearest_below(symbols, addr, ImageSymbol::kObject);
  if (!s || !covers(symbols, *s, addr))
    return hex32(addr);
  const std::string name = demangle_symbol(s->name);
  return addr == s->address ? name : name + "+" + hex(addr - s->address);
}

// ---- checks against a model ----

namespace {

std::string memory_list(const Model &model) {
  std::string list;
  for (const MemoryRegion &m : model.memories)
    list += (list.empty() ? "" : ", ") + m.name + " " + hex32(m.base) + "-" +
            hex32(m.base + m.size - 1);
  return list.empty() ? "no memories" : list;
}

void check_segment_fits(const ImageSegment &s, size_t index,
                        const Model &model) {
  const std::string name = segment_span(index, s.address, s.mem_size);
  const MemoryRegion *r = model.region_at(s.address);
  if (!r || uint64_t(s.address) + s.mem_size > uint64_t(r->base) + r->size)
    throw Error(name + " does not fit in any memory of model " + model.name +
                " (" + memory_list(model) + ")");
  if ((s.flags & ImageSegment::kWrite) && !r->writable)
    throw Error(name + " is writable but memory " + r->name + " of model " +
                model.name + " is not");
  if ((s.flags & ImageSegment::kExec) && !r->executable)
    throw Error(name + " is code but memory " + r->name + " of model " +
                model.name + " is not executable");
}

void check_entry(const Image &image, const Model &model) {
  const std::string entry = "entry point " + hex32(image.entry);
  if (image.entry % 4 != 0)
    throw Error(entry + " is not 4-byte aligned");
  const MemoryRegion *r = model.region_at(image.entry);
  if (!r || !r->executable)
    throw Error(entry + " is not in executable memory of model " + model.name +
                (r ? " (" + r->name + " is data memory)" : ""));
  const bool loaded = std::any_of(image.segments.begin(), image.segments.end(),
                                  [&](const auto &s) {
                                    return (s.flags & ImageSegment::kExec) &&
                                           image.entry - s.address < s.mem_size;
                                  });
  if (!loaded)
    throw Error(entry + " is not inside an executable segment of the image");
}

} // namespace

void check_image_against_model(const Image &image, const Model &model) {
  if (!image.model.empty() && image.model != model.name)
    throw Error("image is built for model " + image.model + ", not for model " +
                model.name);
  for (size_t i = 0; i < image.segments.size(); ++i)
    if (image.segments[i].mem_size != 0)
      check_segment_fits(image.segments[i], i, model);
  check_entry(image, model);
}

// ---- description ----

namespace {

std::string flags_text(uint32_t flags) {
  return std::string("r") + (flags & ImageSegment::kWrite ? "w" : "-") +
         (flags & ImageSegment::kExec ? "x" : "-");
}

void describe_segments(std::ostream &os, const Image &image) {
  os << "segments:     " << image.segments.size() << "\n";
  if (image.segments.empty())
    return;
  os << "  #  address     file size  mem size  flags  CRC-32\n";
  char line[128];
  for (size_t i = 0; i < image.segments.size(); ++i) {
    const ImageSegment &s = image.segments[i];
    std::snprintf(line, sizeof line,
                  "  %-2zu 0x%08x  %9zu  %8u  %-5s  0x%08x\n", i, s.address,
                  s.data.size(), s.mem_size, flags_text(s.flags).c_str(),
                  crc_of(s.data));
    os << line;
  }
}

void describe_symbols(std::ostream &os, const Image &image) {
  const auto functions = std::count_if(
      image.symbols.begin(), image.symbols.end(),
      [](const auto &s) { return s.kind == ImageSymbol::kFunction; });
  const auto objects = image.symbols.size() - size_t(functions);
  os << "symbols:      " << image.symbols.size() << " (" << functions
     << (functions == 1 ? " function, " : " functions, ") << objects
     << (objects == 1 ? " object)\n" : " objects)\n");
  if (functions == 0)
    return;
  os << "functions:\n  address     size  name\n";
  char line[32];
  for (const ImageSymbol &s : image.symbols) {
    if (s.kind != ImageSymbol::kFunction)
      continue;
    std::snprintf(line, sizeof line, "  0x%08x %6u  ", s.address, s.size);
    os << line << demangle_symbol(s.name) << (s.handler() ? "  [handler]" : "")
       << "\n";
  }
}

} // namespace

std::string describe_image(const Image &image, Bytes bytes) {
  // Size and CRC come from the bytes as stored; re-encode if not given.
  std::vector<uint8_t> encoded;
  if (bytes.size() < kHeaderSize) {
    encoded = encode_image(image);
    bytes = encoded;
  }
  std::ostringstream os;
  os << "nicemu firmware image, format version " << get32(bytes, kOffVersion)
     << "\n";
  os << "model:        " << (image.model.empty() ? "(any)" : image.model)
     << "\n";
  const std::string where = image.describe_address(image.entry);
  os << "entry:        " << hex32(image.entry)
     << (where != hex32(image.entry) ? " (" + where + ")" : "") << "\n";
  os << "build id:     "
     << (image.build_id.empty() ? "(none)" : hex_bytes(image.build_id, ""))
     << "\n";
  os << "total size:   " << get32(bytes, kOffTotalSize) << " bytes\n";
  os << "image CRC-32: " << hex32(get32(bytes, kOffImageCrc)) << "\n";
  describe_segments(os, image);
  describe_symbols(os, image);
  return os.str();
}

// ---- files ----

namespace {
struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;
} // namespace

std::vector<uint8_t> read_file_bytes(const std::string &path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f)
    throw Error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t buf[65536];
  while (size_t n = std::fread(buf, 1, sizeof buf, f.get())) {
    bytes.insert(bytes.end(), buf, buf + n);
    if (bytes.size() > kMaxFlashBytes)
      throw Error(path + ": more than 16 MiB, too large for an image or a "
                         "flash file (the largest flash a model may have)");
  }
  if (std::ferror(f.get()))
    throw Error("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

void write_file_bytes(const std::string &path, Bytes bytes) {
  File f(std::fopen(path.c_str(), "wb"));
  if (!f)
    throw Error("cannot create " + path + ": " + std::strerror(errno));
  if (std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size() ||
      std::fclose(f.release()) != 0)
    throw Error("cannot write " + path + ": " + std::strerror(errno));
}

} // namespace nicemu
