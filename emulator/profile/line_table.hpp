// Source lines of firmware addresses, from the DWARF line table of the
// firmware's ELF file (read with elfutils' libdw).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nicemu {

struct SourceLine {
  std::string file; // as the compiler recorded it
  uint32_t line = 0;
};

class LineTable {
public:
  // Reads `elf_path`'s line table. Throws nicemu::Error if the file cannot
  // be read or has no DWARF line information.
  static LineTable read(const std::string &elf_path);

  // The line of the instruction at `addr`, if the table covers it.
  std::optional<SourceLine> at(uint32_t addr) const;
  size_t rows() const { return rows_.size(); }
  // Where `line` of `file` starts: the first address of each run of rows of
  // that line, in a file whose name is `file` or ends with "/" + `file`. If
  // the line has no code, the next line of that file that has; `found` gets
  // the line used. Empty if the file has no code at or after `line`.
  std::vector<uint32_t> addresses_of(const std::string &file, uint32_t line,
                                     uint32_t *found = nullptr) const;

private:
  struct Row {
    uint32_t addr;
    uint32_t line;
    uint32_t file;    // index into files_
    bool end = false; // end of a sequence: no line from here
  };
  std::vector<Row> rows_; // sorted by address
  std::vector<std::string> files_;
};

// The ELF next to a firmware image that the image was built from: FW.elf
// for FW.img, if its GNU build id matches the image's. Empty if none.
std::string find_elf_for_image(const std::string &image_path,
                               const std::vector<uint8_t> &build_id);

} // namespace nicemu
