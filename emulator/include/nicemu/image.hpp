// The checked firmware image: what `nicemu image` packs from an ELF file,
// what `nicemu flash` writes into flash, and what the boot ROM loads.
// Layout: docs/image-format.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nicemu {

struct Model;

struct ImageSegment {
  uint32_t address = 0;      // load address in card memory
  uint32_t mem_size = 0;     // bytes in memory (>= data.size(); rest zeroed)
  uint32_t flags = 0;        // ImageSegment::kExec | kWrite
  std::vector<uint8_t> data; // file bytes
  static constexpr uint32_t kExec = 1, kWrite = 2;
};

struct ImageSymbol {
  uint32_t address = 0;
  uint32_t size = 0;
  uint8_t kind = 0;  // ImageSymbol::kFunction or kObject
  std::string name;  // demangled C++ name is produced on demand, this is raw
  uint8_t flags = 0; // ImageSymbol::kHandler
  static constexpr uint8_t kFunction = 1, kObject = 2;
  // A function the firmware marked as a handler (NICEMU_HANDLER: placed in
  // a .text.nicemu.handler* section), measured by cycle reports.
  static constexpr uint8_t kHandler = 1;
  bool handler() const { return kind == kFunction && (flags & kHandler); }
};

struct Image {
  static constexpr uint32_t kFormatVersion = 1;
  std::string model;             // target model name, e.g. "lanai4"
  uint32_t entry = 0;            // entry point
  std::vector<uint8_t> build_id; // from the ELF's GNU build-id note
  std::vector<ImageSegment> segments;
  std::vector<ImageSymbol> symbols; // sorted by address

  // The function symbol covering addr (or the nearest one below), or nullptr.
  const ImageSymbol *symbol_at(uint32_t addr) const;
  // The symbol named `name`, or nullptr. `name` may be the raw name, the
  // demangled one, or short_function_name's.
  const ImageSymbol *find_symbol(const std::string &name) const;
  // "name+0x1c" or "0x000001c0" when no symbol covers addr. The name is
  // demangled; at a symbol's first byte it is just "name". A symbol of size 0
  // (an assembly label) covers up to the next symbol.
  std::string describe_address(uint32_t addr) const;
};

// Reads a MIPS32 little-endian ELF executable. Throws nicemu::Error when the
// file is not one (wrong class, endianness, machine, or no loadable segment).
Image image_from_elf(const std::string &elf_path, const std::string &model);

// Checks that every segment lies inside one memory of the model (writable
// segments in writable memory, executable ones in executable memory), that
// the entry point is aligned, in executable memory and inside an executable
// segment, and that the image was built for this model (an image with an
// empty model name fits any). Throws nicemu::Error saying which.
void check_image_against_model(const Image &image, const Model &model);

// Serialises with all CRCs filled in.
std::vector<uint8_t> encode_image(const Image &image);

// Parses and verifies (magic, version, sizes, every CRC). Throws nicemu::Error
// naming what is wrong: truncated, corrupted segment N, bad magic, etc.
// Trailing bytes after the image (erased flash) are ignored.
Image decode_image(std::span<const uint8_t> bytes);

// Multi-line human description for `nicemu image --info`.
std::string describe_image(const Image &image, std::span<const uint8_t> bytes);

// The largest image or flash file: the flash window, the most flash a
// model may have (docs/models.md).
inline constexpr size_t kMaxFlashBytes = size_t(16) << 20;

// The bytes of an image or flash file. Throws nicemu::Error naming the file
// when it cannot be read, or holds more than kMaxFlashBytes (a device such
// as /dev/zero is never read to its end).
std::vector<uint8_t> read_file_bytes(const std::string &path);
void write_file_bytes(const std::string &path, std::span<const uint8_t> bytes);

// "fw::handle_am(unsigned int)" for "_ZN2fw9handle_amEj"; other names as is.
std::string demangle_symbol(const std::string &raw);
// "h_round" for "_ZN12_GLOBAL__N_17h_roundERK11niam_packet": demangled,
// without the parameter list and without "(anonymous namespace)::", as
// people write a function's name.
std::string short_function_name(const std::string &raw);

} // namespace nicemu
