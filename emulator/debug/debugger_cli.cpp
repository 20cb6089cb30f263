// The interpreter: reading and dispatching commands, points, and turning
// what the user writes into addresses. Execution is in
// debugger_cli_run.cpp, looking at the machine in debugger_cli_show.cpp.
#include "debug/debugger_cli.hpp"

#include "debug/disasm.hpp"
#include "gdb/mips_tdesc.hpp"
#include "nicemu/image.hpp"
#include "profile/line_table.hpp"

#include <cstdio>
#include <sstream>

namespace nicemu {

namespace {

constexpr const char *kHelp =
    "execution:  continue (c), step (s), next (n), stepi (si) [N],\n"
    "            nexti (ni) [N], until (u) [LOC], finish, kill, quit (q)\n"
    "going back: rstepi (rsi) [N], rstep (rs) [N], rcontinue (rc),\n"
    "            goto TIME (virtual time: 120us, 1.5ms; either way)\n"
    "points:     break (b) LOC, watch/rwatch/awatch LOC, delete (d) [N],\n"
    "            info breakpoints\n"
    "looking:    regs [NAME...], x/NFMT ADDR (F: b h w; FMT: x d u i),\n"
    "            mem ADDR [N], disas [LOC [N]], bt, where\n"
    "variables:  print (p) [/x] EXPR, info locals, info args\n"
    "            (EXPR: VAR, VAR.member, VAR->member, VAR[N], *EXPR, &EXPR)\n"
    "nodes:      node N, info nodes, time, cycles, info handlers\n"
    "LOC, ADDR:  0x1c0, *0x1c0, SYMBOL, FILE:LINE, $REG, any of them +N\n";

std::optional<uint64_t> parse_number(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  int base = 10;
  size_t at = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    at = 2;
  }
  uint64_t value = 0;
  for (; at < text.size(); ++at) {
    char c = text[at];
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : 99;
    if (digit >= base)
      return std::nullopt;
    value = value * base + uint64_t(digit);
    if (value > 0xffffffffull)
      return std::nullopt;
  }
  return value;
}

// A demangled name without its parameter list.
std::string without_parameters(const std::string &name) {
  if (name.empty() || name.back() != ')')
    return name;
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')')
      ++depth;
    else if (name[i] == '(' && --depth == 0)
      return name.substr(0, i);
  }
  return name;
}

std::vector<std::string> split_words(const std::string &line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

} // namespace

bool mips_is_call(uint32_t word) {
  uint32_t op = word >> 26;
  if (op == 3) // jal
    return true;
  if (op == 0 && (word & 0x3f) == 9) // jalr
    return true;
  uint32_t rt = (word >> 16) & 0x1f;
  return op == 1 && rt >= 0x10 && rt <= 0x13; // bltzal, bgezal (bal), -l
}

DebuggerCli::DebuggerCli(gdb::Target &target, LineReader read,
                         std::ostream &out, Options options)
    : target_(target), read_(std::move(read)), out_(out), options_(options) {}

void DebuggerCli::error(const std::string &message) {
  out_ << "error: " << message << "\n";
  ++errors_;
}

void DebuggerCli::poll() {
  if (options_.interrupt && *options_.interrupt) {
    *options_.interrupt = 0;
    target_.interrupt();
  }
}

// Reads commands until one resumes the target, or the input ends: that
// ends the run.
void DebuggerCli::serve() {
  std::string line;
  while (!quit_) {
    out_ << std::flush;
    if (!read_(line)) {
      if (!ended_) {
        out_ << "end of commands: killing the run\n";
        target_.kill();
        killed_ = true;
      }
      quit_ = true;
      break;
    }
    if (options_.echo)
      out_ << "(nicemu) " << line << "\n";
    if (execute(line))
      return;
  }
  out_ << std::flush;
}

bool DebuggerCli::execute(const std::string &line) {
  std::string text = line.substr(0, line.find('#'));
  Args words = split_words(text);
  if (words.empty())
    return false;
  std::string cmd = words[0];
  words.erase(words.begin());
  resumed_ = false;
  bool resumed = dispatch(cmd, words);
  out_ << std::flush;
  return resumed;
}

bool DebuggerCli::dispatch(const std::string &cmd, const Args &args) {
  using gdb::WatchKind;
  bool running_command = cmd == "c" || cmd == "continue" || cmd == "s" ||
                         cmd == "step" || cmd == "n" || cmd == "next" ||
                         cmd == "si" || cmd == "stepi" || cmd == "ni" ||
                         cmd == "nexti" || cmd == "u" || cmd == "until" ||
                         cmd == "finish" || cmd == "advance";
  if (running_command && ended_) {
    error("the run has ended");
    return false;
  }
  if (cmd == "c" || cmd == "continue")
    return cmd_continue();
  if (cmd == "s" || cmd == "step")
    return cmd_step(OpKind::Line, false, args);
  if (cmd == "n" || cmd == "next")
    return cmd_step(OpKind::Line, true, args);
  if (cmd == "si" || cmd == "stepi")
    return cmd_step(OpKind::Insn, false, args);
  if (cmd == "ni" || cmd == "nexti")
    return cmd_step(OpKind::Insn, true, args);
  if (cmd == "u" || cmd == "until" || cmd == "advance")
    return cmd_until(args);
  if (cmd == "finish")
    return cmd_finish();
  if (cmd == "rsi" || cmd == "rstepi" || cmd == "reverse-stepi")
    return cmd_back(OpKind::BackInsn, args);
  if (cmd == "rs" || cmd == "rstep" || cmd == "reverse-step")
    return cmd_back(OpKind::BackLine, args);
  if (cmd == "rc" || cmd == "rcontinue" || cmd == "reverse-continue")
    return cmd_back(OpKind::BackPoint, args);
  if (cmd == "goto")
    return cmd_goto(args);
  if (cmd == "kill" || cmd == "q" || cmd == "quit") {
    if (!ended_) {
      target_.kill();
      killed_ = true;
    }
    quit_ = true;
    return true;
  }
  if (cmd == "b" || cmd == "break")
    cmd_break(args);
  else if (cmd == "watch")
    cmd_watch(WatchKind::Write, args);
  else if (cmd == "rwatch")
    cmd_watch(WatchKind::Read, args);
  else if (cmd == "awatch")
    cmd_watch(WatchKind::Access, args);
  else if (cmd == "d" || cmd == "delete")
    cmd_delete(args);
  else if (cmd == "regs" || cmd == "registers")
    cmd_regs(args);
  else if (cmd == "x" || cmd.rfind("x/", 0) == 0)
    cmd_examine(cmd.size() > 2 ? cmd.substr(2) : "", args);
  else if (cmd == "mem") {
    Args rest(args.begin(), args.end());
    std::string count = rest.size() > 1 ? rest[1] : "4";
    if (rest.size() > 1)
      rest.pop_back();
    cmd_examine(count + "wx", rest);
  } else if (cmd == "disas" || cmd == "disassemble")
    cmd_disas(args);
  else if (cmd == "p" || cmd == "print" || cmd.rfind("p/", 0) == 0 ||
           cmd.rfind("print/", 0) == 0)
    cmd_print(
        cmd.find('/') == std::string::npos ? "" : cmd.substr(cmd.find('/') + 1),
        args);
  else if (cmd == "bt" || cmd == "backtrace" || cmd == "where")
    cmd_bt();
  else if (cmd == "node" || cmd == "thread")
    cmd_node(args);
  else if (cmd == "time")
    cmd_status(true);
  else if (cmd == "cycles" || cmd == "status")
    cmd_status(false);
  else if (cmd == "help" || cmd == "h")
    out_ << kHelp;
  else if (cmd == "info" && !args.empty()) {
    const std::string &what = args[0];
    if (what == "b" || what == "breakpoints" || what == "watchpoints")
      info_breakpoints();
    else if (what == "registers" || what == "reg")
      cmd_regs(Args(args.begin() + 1, args.end()));
    else if (what == "nodes" || what == "threads")
      info_nodes();
    else if (what == "handlers")
      info_handlers();
    else if (what == "locals")
      info_variables(false);
    else if (what == "args")
      info_variables(true);
    else
      error("unknown: info " + what + " (help)");
  } else
    error("unknown command '" + cmd + "' (help)");
  return false;
}

// ---- Points -------------------------------------------------------------

void DebuggerCli::cmd_break(const Args &args) {
  if (args.size() != 1) {
    error("break LOCATION");
    return;
  }
  std::optional<uint32_t> addr = resolve(args[0]);
  if (!addr)
    return;
  if (target_.insert_breakpoint(gdb::BreakKind::Software, *addr) !=
      gdb::PointResult::Done) {
    error("cannot set a breakpoint at " + args[0]);
    return;
  }
  Point p;
  p.id = next_point_++;
  p.addr = *addr;
  p.what = args[0];
  points_.push_back(p);
  out_ << "breakpoint " << p.id << " at " << location(*addr) << "\n";
}

void DebuggerCli::cmd_watch(gdb::WatchKind kind, const Args &args) {
  if (args.size() != 1) {
    error("watch ADDRESS|VARIABLE");
    return;
  }
  std::string what = args[0];
  uint32_t len = 4;
  const ImageSymbol *s = what[0] == '*' ? nullptr : symbol_named(what);
  if (s && s->kind == ImageSymbol::kObject && s->size)
    len = s->size;
  std::optional<uint32_t> addr = resolve(what);
  if (!addr)
    return;
  if (target_.insert_watchpoint(kind, *addr, len) != gdb::PointResult::Done) {
    error("cannot watch " + what);
    return;
  }
  Point p;
  p.id = next_point_++;
  p.watch = true;
  p.kind = kind;
  p.addr = *addr;
  p.len = len;
  p.what = what;
  points_.push_back(p);
  static const char *kNames[] = {"watchpoint", "read watchpoint",
                                 "access watchpoint"};
  char range[64];
  std::snprintf(range, sizeof range, "0x%08x, %u bytes", *addr, len);
  out_ << kNames[size_t(kind)] << " " << p.id << ": " << what << " (" << range
       << ")\n";
}

void DebuggerCli::cmd_delete(const Args &args) {
  std::vector<Point> keep;
  bool found = args.empty();
  for (const Point &p : points_) {
    bool drop = args.empty() ||
                (args.size() == 1 && parse_number(args[0]) == uint64_t(p.id));
    if (!drop) {
      keep.push_back(p);
      continue;
    }
    found = true;
    if (p.watch)
      target_.remove_watchpoint(p.kind, p.addr, p.len);
    else // temporary breakpoints are hardware ones: not affected
      target_.remove_breakpoint(gdb::BreakKind::Software, p.addr);
  }
  points_ = keep;
  if (!found)
    error("no breakpoint " + args[0]);
}

void DebuggerCli::info_breakpoints() {
  if (points_.empty()) {
    out_ << "no breakpoints or watchpoints\n";
    return;
  }
  for (const Point &p : points_) {
    static const char *kNames[] = {"watch", "rwatch", "awatch"};
    out_ << p.id << "\t" << (p.watch ? kNames[size_t(p.kind)] : "break") << "\t"
         << location(p.addr) << "\t" << p.what << "\n";
  }
}

// ---- Addresses, symbols, lines ------------------------------------------

const ImageSymbol *DebuggerCli::symbol_named(const std::string &name) const {
  const Image *image = options_.image;
  if (!image)
    return nullptr;
  if (const ImageSymbol *s = image->find_symbol(name))
    return s;
  // "checksum" for "(anonymous namespace)::checksum(unsigned char const*)".
  for (const ImageSymbol &s : image->symbols) {
    std::string base = without_parameters(demangle_symbol(s.name));
    if (base.size() > name.size() + 2 &&
        base.compare(base.size() - name.size(), name.size(), name) == 0 &&
        base.compare(base.size() - name.size() - 2, 2, "::") == 0)
      return &s;
  }
  return nullptr;
}

const ImageSymbol *DebuggerCli::function_at(uint32_t addr) const {
  if (!options_.image)
    return nullptr;
  const ImageSymbol *s = options_.image->symbol_at(addr);
  if (!s || s->kind != ImageSymbol::kFunction || addr < s->address ||
      (s->size && addr - s->address >= s->size))
    return nullptr;
  return s;
}

std::optional<SourceLine> DebuggerCli::line_at(uint32_t addr) const {
  if (!options_.lines)
    return std::nullopt;
  return options_.lines->at(addr);
}

std::string DebuggerCli::describe(uint32_t addr) const {
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%08x", addr);
  std::string out = hex;
  if (options_.image) {
    std::string name = options_.image->describe_address(addr);
    if (name.rfind("0x", 0) != 0)
      out += " <" + name + ">";
  }
  return out;
}

std::string DebuggerCli::location(uint32_t addr) const {
  std::string out = describe(addr);
  if (auto line = line_at(addr)) {
    std::string file = line->file.substr(line->file.rfind('/') + 1);
    out += " at " + file + ":" + std::to_string(line->line);
  }
  return out;
}

uint32_t DebuggerCli::reg(unsigned regno) {
  uint32_t value = 0;
  target_.read_register(current_, regno, value);
  return value;
}

bool DebuggerCli::read_word(uint32_t addr, uint32_t &word) {
  uint8_t b[4];
  if (!target_.read_memory(current_, addr, b))
    return false;
  word = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 |
         uint32_t(b[3]) << 24;
  return true;
}

// 0x1c0, *0x1c0, 448, SYMBOL, FILE:LINE, $REG; each may end in +N or -N.
std::optional<uint32_t> DebuggerCli::resolve(const std::string &input) {
  std::string text = input[0] == '*' ? input.substr(1) : input;
  size_t op = text.find_last_of("+-");
  if (op != std::string::npos && op > 0) {
    auto off = parse_number(text.substr(op + 1));
    if (off) {
      auto base = resolve(text.substr(0, op));
      if (!base)
        return std::nullopt;
      return text[op] == '+' ? *base + uint32_t(*off) : *base - uint32_t(*off);
    }
  }
  if (auto n = parse_number(text))
    return uint32_t(*n);
  if (!text.empty() && text[0] == '$') {
    std::string name = text.substr(1);
    if (name == "pc")
      return reg(gdb::mips::kPc);
    for (unsigned i = 0; i < 32; ++i)
      if (name == mips_register_name(i) || name == "r" + std::to_string(i))
        return reg(i);
    error("no register " + text);
    return std::nullopt;
  }
  size_t colon = text.rfind(':');
  if (colon != std::string::npos && colon > 0) {
    auto line = parse_number(text.substr(colon + 1));
    if (line) {
      if (!options_.lines) {
        error(text + ": no source lines (no ELF file with DWARF; --elf)");
        return std::nullopt;
      }
      std::vector<uint32_t> addrs =
          options_.lines->addresses_of(text.substr(0, colon), uint32_t(*line));
      if (addrs.empty()) {
        error("no code at " + text);
        return std::nullopt;
      }
      return addrs.front();
    }
  }
  if (const ImageSymbol *s = symbol_named(text))
    return s->address;
  error(options_.image ? "no symbol '" + text + "'"
                       : "no symbols (the image has none): '" + text + "'");
  return std::nullopt;
}

} // namespace nicemu
