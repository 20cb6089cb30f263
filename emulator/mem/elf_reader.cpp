// Turns a linked MIPS32 little-endian firmware ELF file into an Image:
// loadable segments, entry point, GNU build id and the symbol table.
// All ELF parsing is libelf's; we only check what it hands back.
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

namespace nicemu {
namespace {

// One open ELF file; closes libelf's handle and the descriptor on any exit.
class ElfFile {
public:
  explicit ElfFile(const std::string &path) : path_(path) {
    if (elf_version(EV_CURRENT) == EV_NONE)
      throw Error("libelf is too old to read ELF files");
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      throw Error("cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) == 0)
      size_ = uint64_t(st.st_size);
    elf_ = elf_begin(fd_, ELF_C_READ, nullptr);
    if (!elf_) {
      ::close(fd_);
      throw Error(path + ": cannot read it as ELF (libelf: " + elf_errmsg(-1) +
                  ")");
    }
  }
  ~ElfFile() {
    elf_end(elf_);
    ::close(fd_);
  }
  ElfFile(const ElfFile &) = delete;
  ElfFile &operator=(const ElfFile &) = delete;

  Elf *get() const { return elf_; }
  bool starts_with_elf_magic() const {
    char magic[SELFMAG] = {};
    return ::pread(fd_, magic, SELFMAG, 0) == SELFMAG &&
           std::memcmp(magic, ELFMAG, SELFMAG) == 0;
  }
  uint64_t size() const { return size_; }
  // For our own checks.
  [[noreturn]] void fail(const std::string &what) const {
    throw Error(path_ + ": " + what);
  }
  // When libelf refuses: usually a truncated or damaged file.
  [[noreturn]] void libelf_fail(const std::string &what) const {
    fail("truncated or damaged ELF file: cannot read " + what +
         " (libelf: " + elf_errmsg(-1) + ")");
  }

private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  Elf *elf_ = nullptr;
};

std::string machine_name(unsigned machine) {
  switch (machine) {
  case EM_386:
    return "i386";
  case EM_X86_64:
    return "x86-64";
  case EM_ARM:
    return "ARM";
  case EM_AARCH64:
    return "AArch64";
  case EM_RISCV:
    return "RISC-V";
  case EM_PPC:
    return "PowerPC";
  case EM_PPC64:
    return "PowerPC64";
  case EM_SPARC:
    return "SPARC";
  case EM_S390:
    return "S/390";
  case EM_MIPS:
    return "MIPS";
  default:
    return "number " + std::to_string(machine);
  }
}

// Why this is not a MIPS32 LE executable, or "" when it is one.
std::string why_not_firmware(const GElf_Ehdr &eh) {
  if (eh.e_machine != EM_MIPS)
    return "machine is " + machine_name(eh.e_machine);
  if (eh.e_ident[EI_CLASS] != ELFCLASS32)
    return "it is a 64-bit ELF file";
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return "it is big-endian";
  if (eh.e_type == ET_REL)
    return "it is an object file: link it first";
  if (eh.e_type != ET_EXEC)
    return "ELF type " + std::to_string(eh.e_type) + " is not an executable";
  return "";
}

GElf_Ehdr read_ehdr(const ElfFile &f) {
  if (elf_kind(f.get()) != ELF_K_ELF) {
    // libelf does not recognise an ELF file shorter than its header.
    if (f.starts_with_elf_magic())
      f.fail("truncated ELF file: " + std::to_string(f.size()) +
             " bytes, shorter than an ELF header");
    f.fail("not an ELF file");
  }
  GElf_Ehdr eh;
  if (!gelf_getehdr(f.get(), &eh))
    f.libelf_fail("the ELF header");
  if (std::string why = why_not_firmware(eh); !why.empty())
    f.fail("not a MIPS32 little-endian executable (" + why + ")");
  // libelf may hand back a header whose tables lie past a truncated end.
  const uint64_t ph_end = eh.e_phoff + uint64_t(eh.e_phnum) * eh.e_phentsize;
  const uint64_t sh_end = eh.e_shoff + uint64_t(eh.e_shnum) * eh.e_shentsize;
  if (ph_end > f.size() || sh_end > f.size())
    f.fail("truncated or damaged ELF file: its header tables end at byte " +
           std::to_string(std::max(ph_end, sh_end)) + ", the file has " +
           std::to_string(f.size()));
  return eh;
}

uint32_t segment_flags(const GElf_Phdr &ph) {
  return (ph.p_flags & PF_X ? ImageSegment::kExec : 0) |
         (ph.p_flags & PF_W ? ImageSegment::kWrite : 0);
}

using Span = std::pair<uint32_t, uint32_t>; // address, memory size

std::string span_text(Span s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%08x-0x%08x", s.first,
                s.first + s.second - 1);
  return buf;
}

// The image format refuses overlaps; say so here, naming the ELF file.
void check_no_overlap(const ElfFile &f,
                      const std::vector<ImageSegment> &segments) {
  std::vector<Span> spans;
  spans.reserve(segments.size());
  for (const ImageSegment &s : segments)
    spans.emplace_back(s.address, s.mem_size);
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (uint64_t(spans[i - 1].first) + spans[i - 1].second > spans[i].first)
      f.fail("loadable segments " + span_text(spans[i - 1]) + " and " +
             span_text(spans[i]) + " overlap");
}

// PT_LOAD segments at their physical (load) address: there is no MMU.
std::vector<ImageSegment> read_segments(const ElfFile &f) {
  size_t count = 0;
  if (elf_getphdrnum(f.get(), &count) != 0)
    f.libelf_fail("the program headers");
  std::vector<ImageSegment> segments;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(f.get(), int(i), &ph))
      f.libelf_fail("program header " + std::to_string(i));
    if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
      continue;
    if (ph.p_filesz > ph.p_memsz)
      f.fail("program header " + std::to_string(i) +
             " (PT_LOAD) has more file bytes than memory bytes");
    if (ph.p_paddr + ph.p_memsz > (uint64_t(1) << 32))
      f.fail("program header " + std::to_string(i) +
             " (PT_LOAD) runs past the end of the address space");
    ImageSegment s{
        uint32_t(ph.p_paddr), uint32_t(ph.p_memsz), segment_flags(ph), {}};
    if (ph.p_filesz != 0) {
      Elf_Data *d = elf_getdata_rawchunk(f.get(), int64_t(ph.p_offset),
                                         ph.p_filesz, ELF_T_BYTE);
      if (!d || d->d_size != ph.p_filesz)
        f.libelf_fail("the data of loadable segment " + std::to_string(i));
      const auto *p = static_cast<const uint8_t *>(d->d_buf);
      s.data.assign(p, p + d->d_size);
    }
    segments.push_back(std::move(s));
  }
  if (segments.empty())
    f.fail("no loadable segment (PT_LOAD) in this executable");
  check_no_overlap(f, segments);
  return segments;
}

// The NT_GNU_BUILD_ID descriptor in one block of notes, if there.
std::vector<uint8_t> build_id_in(const Elf_Data *notes) {
  GElf_Nhdr nh;
  size_t name_at = 0, desc_at = 0;
  for (size_t off = 0; (off = gelf_getnote(const_cast<Elf_Data *>(notes), off,
                                           &nh, &name_at, &desc_at)) != 0;) {
    const auto *base = static_cast<const uint8_t *>(notes->d_buf);
    if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
        std::memcmp(base + name_at, "GNU", 4) == 0)
      return {base + desc_at, base + desc_at + nh.n_descsz};
  }
  return {};
}

std::vector<uint8_t> read_build_id(const ElfFile &f) {
  for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(f.get(), scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
      continue;
    if (Elf_Data *d = elf_getdata(scn, nullptr))
      if (auto id = build_id_in(d); !id.empty())
        return id;
  }
  // Stripped of section headers: look in the PT_NOTE segments.
  size_t count = 0;
  if (elf_getphdrnum(f.get(), &count) != 0)
    return {};
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(f.get(), int(i), &ph) || ph.p_type != PT_NOTE)
      continue;
    if (Elf_Data *d = elf_getdata_rawchunk(f.get(), int64_t(ph.p_offset),
                                           ph.p_filesz, ELF_T_NHDR))
      if (auto id = build_id_in(d); !id.empty())
        return id;
  }
  return {};
}

void read_symtab(const ElfFile &f, Elf_Scn *scn, const GElf_Shdr &sh,
                 std::vector<ImageSymbol> &out) {
  Elf_Data *d = elf_getdata(scn, nullptr);
  const size_t entry = gelf_fsize(f.get(), ELF_T_SYM, 1, EV_CURRENT);
  if (!d || entry == 0)
    f.libelf_fail("the symbol table");
  for (size_t i = 0; i < d->d_size / entry; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(d, int(i), &sym))
      f.libelf_fail("symbol " + std::to_string(i));
    const unsigned type = GELF_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_OBJECT) || sym.st_shndx == SHN_UNDEF)
      continue;
    const char *name = elf_strptr(f.get(), sh.sh_link, sym.st_name);
    if (!name || !*name)
      continue;
    out.push_back(
        {uint32_t(sym.st_value), uint32_t(sym.st_size),
         type == STT_FUNC ? ImageSymbol::kFunction : ImageSymbol::kObject, name,
         0});
  }
}

// NICEMU_HANDLER puts functions in .text.nicemu.handler sections, which the
// linker script (nicemu ldscript) gathers between these two symbols: that is
// how cycle reports know the handlers (docs/profiling.md).
void mark_handlers(const ElfFile &f, Elf_Scn *scn, const GElf_Shdr &sh,
                   std::vector<ImageSymbol> &symbols) {
  Elf_Data *d = elf_getdata(scn, nullptr);
  const size_t entry = gelf_fsize(f.get(), ELF_T_SYM, 1, EV_CURRENT);
  std::optional<uint32_t> start, end;
  for (size_t i = 0; d && entry && i < d->d_size / entry; ++i) {
    GElf_Sym sym;
    const char *name = gelf_getsym(d, int(i), &sym)
                           ? elf_strptr(f.get(), sh.sh_link, sym.st_name)
                           : nullptr;
    if (name && std::string_view(name) == "__nicemu_handlers_start")
      start = uint32_t(sym.st_value);
    else if (name && std::string_view(name) == "__nicemu_handlers_end")
      end = uint32_t(sym.st_value);
  }
  if (!start || !end)
    return;
  for (ImageSymbol &s : symbols)
    if (s.kind == ImageSymbol::kFunction && s.address >= *start &&
        s.address < *end)
      s.flags |= ImageSymbol::kHandler;
}

std::vector<ImageSymbol> read_symbols(const ElfFile &f) {
  std::vector<ImageSymbol> symbols;
  for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(f.get(), scn));) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
      read_symtab(f, scn, sh, symbols);
      mark_handlers(f, scn, sh, symbols);
    }
  }
  // Sorted by address (the Image contract), by name within one address so
  // that the result does not depend on the symbol table's order.
  std::sort(symbols.begin(), symbols.end(), [](const auto &a, const auto &b) {
    return a.address != b.address ? a.address < b.address : a.name < b.name;
  });
  return symbols;
}

} // namespace

Image image_from_elf(const std::string &elf_path, const std::string &model) {
  const ElfFile f(elf_path);
  const GElf_Ehdr eh = read_ehdr(f);
  Image image;
  image.model = model;
  image.entry = uint32_t(eh.e_entry);
  image.segments = read_segments(f);
  image.build_id = read_build_id(f);
  if (image.build_id.size() > 32)
    f.fail("its build id is " + std::to_string(image.build_id.size()) +
           " bytes long; a firmware image holds at most 32");
  image.symbols = read_symbols(f);
  return image;
}

} // namespace nicemu
