#include "profile/line_table.hpp"

#include "nicemu/error.hpp"
#include "nicemu/image.hpp"

#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace nicemu {

LineTable LineTable::read(const std::string &elf_path) {
  int fd = ::open(elf_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(elf_path + ": cannot open");
  Dwarf *dwarf = dwarf_begin(fd, DWARF_C_READ);
  if (!dwarf) {
    ::close(fd);
    throw Error(elf_path + ": no DWARF debug information (" + dwarf_errmsg(-1) +
                "); build the firmware with -g");
  }
  LineTable table;
  std::map<std::string, uint32_t> file_index;
  Dwarf_Off offset = 0, next = 0;
  size_t header_size = 0;
  while (dwarf_nextcu(dwarf, offset, &next, &header_size, nullptr, nullptr,
                      nullptr) == 0) {
    Dwarf_Die cu;
    Dwarf_Lines *lines = nullptr;
    size_t count = 0;
    if (dwarf_offdie(dwarf, offset + header_size, &cu) &&
        dwarf_getsrclines(&cu, &lines, &count) == 0) {
      // Sequences of code the linker dropped start at its tombstone
      // (0xffffffff: nicemu_add_firmware links with -z
      // dead-reloc-in-nonalloc).
      bool dropped = false, sequence_start = true;
      for (size_t i = 0; i < count; ++i) {
        Dwarf_Line *l = dwarf_onesrcline(lines, i);
        Dwarf_Addr addr = 0;
        int line = 0;
        bool end = false;
        if (!l || dwarf_lineaddr(l, &addr) || dwarf_lineno(l, &line) ||
            dwarf_lineendsequence(l, &end))
          continue;
        if (sequence_start)
          dropped = addr >= 0xffffffffu;
        sequence_start = end;
        if (dropped || addr > 0xffffffffu)
          continue;
        const char *file = dwarf_linesrc(l, nullptr, nullptr);
        auto [it, added] = file_index.try_emplace(
            file ? file : "?", uint32_t(table.files_.size()));
        if (added)
          table.files_.push_back(it->first);
        table.rows_.push_back(
            {uint32_t(addr), uint32_t(std::max(line, 0)), it->second, end});
      }
    }
    offset = next;
  }
  dwarf_end(dwarf);
  ::close(fd);
  if (table.rows_.empty())
    throw Error(elf_path + ": no DWARF line table; build the firmware with -g");
  // Stable: of rows at one address, the last one describes it (the end of
  // one sequence may share its address with the start of the next).
  std::stable_sort(table.rows_.begin(), table.rows_.end(),
                   [](const Row &a, const Row &b) { return a.addr < b.addr; });
  return table;
}

namespace {

bool file_matches(const std::string &recorded, const std::string &file) {
  if (recorded == file)
    return true;
  return recorded.size() > file.size() &&
         recorded.compare(recorded.size() - file.size(), file.size(), file) ==
             0 &&
         recorded[recorded.size() - file.size() - 1] == '/';
}

} // namespace

std::vector<uint32_t> LineTable::addresses_of(const std::string &file,
                                              uint32_t line,
                                              uint32_t *found) const {
  uint32_t best = 0; // the smallest line >= `line` with code
  for (const Row &r : rows_)
    if (!r.end && r.line >= line && (best == 0 || r.line < best) &&
        file_matches(files_[r.file], file))
      best = r.line;
  std::vector<uint32_t> out;
  if (best == 0)
    return out;
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row &r = rows_[i];
    if (r.end || r.line != best || !file_matches(files_[r.file], file))
      continue;
    const Row *prev = i ? &rows_[i - 1] : nullptr;
    bool continues =
        prev && !prev->end && prev->line == r.line && prev->file == r.file;
    if (!continues && (out.empty() || out.back() != r.addr))
      out.push_back(r.addr);
  }
  if (found)
    *found = best;
  return out;
}

std::optional<SourceLine> LineTable::at(uint32_t addr) const {
  auto it =
      std::upper_bound(rows_.begin(), rows_.end(), addr,
                       [](uint32_t a, const Row &r) { return a < r.addr; });
  if (it == rows_.begin())
    return std::nullopt;
  --it;
  if (it->end || it->line == 0)
    return std::nullopt;
  return SourceLine{files_[it->file], it->line};
}

std::string find_elf_for_image(const std::string &image_path,
                               const std::vector<uint8_t> &build_id) {
  namespace fs = std::filesystem;
  fs::path elf = fs::path(image_path).replace_extension(".elf");
  std::error_code ec;
  if (build_id.empty() || !fs::is_regular_file(elf, ec))
    return {};
  try {
    if (image_from_elf(elf.string(), "").build_id == build_id)
      return elf.string();
  } catch (const Error &) {
  }
  return {};
}

} // namespace nicemu
