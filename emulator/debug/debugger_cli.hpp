// `nicemu debug`: the built-in debugger's command interpreter. A second
// front-end, besides GDB's stub, to the same gdb::Target (debug/gdb_target):
// it reads command lines, runs them against the target and writes to an
// ostream. docs/debugging.md lists the commands.
//
// The target calls stopped() from inside the run whenever it stops; the
// interpreter then reads commands until one resumes the target. Commands
// made of several stops (`step`, `next`, `until`, `finish`, `stepi N`, the
// step over a watched access) keep a pending operation: at each stop it
// either resumes the target again, silently, or ends and reports the stop.
//
// Going back (rstepi, rstep, rcontinue, goto to an earlier time) resumes a
// checkpoint of the run (debug/fork_checkpoints.hpp): the interpreter's
// session (points, the command under way, where the input is) goes with
// the request to the copy resumed there, which goes on serving the user.
#pragma once

#include "debug/gdb_target.hpp"
#include "gdb/target.hpp"

#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace nicemu {

struct Image;
struct ImageSymbol;
class DwarfVariables;
class LineTable;
struct SourceLine;

class DebuggerCli final : public DebugFrontend {
public:
  // Reads one command line; false at the end of the input.
  using LineReader = std::function<bool(std::string &line)>;

  struct Options {
    const Image *image = nullptr;     // symbols; null: addresses only
    const LineTable *lines = nullptr; // source lines; null: none
    // Variables (print, info locals, info args); null: none.
    const DwarfVariables *variables = nullptr;
    bool echo = false; // print "(nicemu) LINE" for every line read (scripts)
    // Set (by a SIGINT handler) to interrupt the running target.
    volatile std::sig_atomic_t *interrupt = nullptr;
    // Where the input stands (a script's next line, the terminal's
    // history), for the copy of the run that goes on after going back.
    std::function<std::string()> save_input;
    std::function<void(const std::string &)> restore_input;
    // goto TIME (GdbTarget::go_to_time); null: no goto.
    std::function<bool(Time, const gdb::StopEvent &, std::string &)> go_to_time;
    // rstepi N (GdbTarget::back_steps); null: N single steps back.
    std::function<bool(gdb::ThreadId, uint64_t, std::string &)> back_steps;
  };

  DebuggerCli(gdb::Target &target, LineReader read, std::ostream &out,
              Options options);

  // DebugFrontend
  void stopped(const gdb::StopEvent &event) override;
  void poll() override;
  bool attached() const override { return !quit_; }
  void ended(const gdb::StopEvent &event) override;
  bool can_travel() const override { return true; }
  std::string save_session() const override;
  bool restore_session(const std::string &saved) override;
  uint64_t session_tag() const override { return 1; }
  void report_now(const gdb::StopEvent &event) override;

  // Runs one command line while the target is stopped; true if it resumed
  // the target (then wait for the next stopped()).
  bool execute(const std::string &line);
  // Commands that failed: unknown command, bad address, unknown symbol...
  int errors() const { return errors_; }
  // The user ended the run (quit, kill, the end of the input).
  bool killed_run() const { return killed_; }

private:
  enum class OpKind : uint8_t {
    None,
    Insn,
    Line,
    Finish,
    Until,
    WatchStep,
    BackInsn,  // rstepi
    BackLine,  // rstep
    BackPoint, // rcontinue
    ToTime,    // goto
  };
  struct Op {
    OpKind kind = OpKind::None;
    gdb::ThreadId thread = 0;
    unsigned count = 0;             // Insn: steps left
    bool over = false;              // over calls (next, nexti)
    bool no_back = false;           // until: not to smaller lines
    std::optional<uint32_t> line;   // Line: the line it started on
    std::string file;               // ... of this file
    uint32_t func = 0, frame = 0;   // the function and sp it started in
    uint32_t last_pc = 0;           // before the last step
    bool last_call = false;         // the last step was a call
    uint32_t temp = 0, temp_sp = 0; // a temporary breakpoint (0: none)
    uint64_t budget = 0;            // steps left before giving up
    gdb::StopEvent watch;           // WatchStep: the hit
    uint64_t old_value = 0;
    Time until = 0; // ToTime: where to
  };
  struct Point {
    int id = 0;
    bool watch = false;
    gdb::WatchKind kind = gdb::WatchKind::Write;
    uint32_t addr = 0, len = 0;
    std::string what; // as the user wrote it
  };
  struct Frame {
    uint32_t pc, sp;
  };
  using Args = std::vector<std::string>;

  void serve();
  bool dispatch(const std::string &cmd, const Args &args);
  void error(const std::string &message);

  // Execution (debugger_cli_run.cpp).
  bool cmd_continue();
  bool begin_steps(OpKind kind, bool by_line, OpKind insn, const Args &args,
                   uint64_t budget);
  bool cmd_step(OpKind kind, bool over, const Args &args);
  bool cmd_finish();
  bool cmd_until(const Args &args);
  bool advance(const gdb::StopEvent &event);
  bool arrived();
  bool step_again();
  bool start_watch_step(const gdb::StopEvent &event);
  bool end_watch_step(const gdb::StopEvent &event);
  // Going back (debugger_cli_back.cpp).
  bool going_back() const { return op_.kind >= OpKind::BackInsn; }
  bool cmd_back(OpKind kind, const Args &args);
  bool cmd_goto(const Args &args);
  bool back_again();
  bool keep_going_back(const gdb::StopEvent &event);
  bool store_changes(const Point &p);
  void resume_all(gdb::Action self);
  void set_temp(uint32_t addr, uint32_t sp);
  void clear_temp();
  void report(const gdb::StopEvent &event);
  void print_where(gdb::ThreadId thread);

  // Points.
  void cmd_break(const Args &args);
  void cmd_watch(gdb::WatchKind kind, const Args &args);
  void cmd_delete(const Args &args);
  void info_breakpoints();

  // Looking (debugger_cli_show.cpp).
  void cmd_regs(const Args &args);
  void cmd_examine(const std::string &format, const Args &args);
  void cmd_disas(const Args &args);
  void cmd_bt();
  void cmd_node(const Args &args);
  void info_nodes();
  void info_handlers();
  void cmd_status(bool time_only);
  std::vector<Frame> frames(gdb::ThreadId thread);

  // Variables (debugger_cli_vars.cpp).
  void cmd_print(const std::string &format, const Args &args);
  void info_variables(bool arguments);

  // Addresses, symbols and lines.
  std::optional<uint32_t> resolve(const std::string &text);
  const ImageSymbol *symbol_named(const std::string &name) const;
  const ImageSymbol *function_at(uint32_t addr) const;
  std::optional<SourceLine> line_at(uint32_t addr) const;
  std::string describe(uint32_t addr) const;
  std::string location(uint32_t addr) const;
  std::string disassembly(uint32_t addr, uint32_t word) const;
  uint32_t reg(unsigned regno);
  bool read_word(uint32_t addr, uint32_t &word);

  gdb::Target &target_;
  LineReader read_;
  std::ostream &out_;
  Options options_;
  gdb::ThreadId current_ = 1;
  Op op_;
  std::vector<Point> points_;
  int next_point_ = 1;
  int errors_ = 0;
  bool started_ = false, resumed_ = false, ended_ = false;
  bool quit_ = false, killed_ = false;
};

// The MIPS32 instruction `word` links (jal, jalr, bal, bgezal...): a call.
bool mips_is_call(uint32_t word);

} // namespace nicemu
