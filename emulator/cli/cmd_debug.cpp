// nicemu debug [run options] [-x SCRIPT]: the run under the built-in
// debugger (debug/debugger_cli.hpp; docs/debugging.md).
#include "cli/commands.hpp"
#include "cli/recorded_run.hpp"
#include "cli/run_setup.hpp"
#include "cli/run_summary.hpp"
#include "debug/debugger_cli.hpp"
#include "debug/dwarf_variables.hpp"
#include "debug/fault_report.hpp"
#include "debug/gdb_target.hpp"
#include "fabric/fabric.hpp"
#include "host/host_tape.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "profile/line_table.hpp"

#include <editline/readline.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace nicemu::cli {

namespace {

struct DebugOptions : ClusterOptions {
  std::string script, elf;
  std::string replay; // --replay REC: the recorded run instead of options
  std::string checkpoint_every = "1ms";
  bool quiet = false;
};

volatile std::sig_atomic_t g_interrupt = 0;

extern "C" void on_sigint(int) {
  g_interrupt = 1;
}

// The debugger's input. Going back hands the session to another copy of
// the process (debug/fork_checkpoints.hpp), which reads on from the same
// terminal, pipe or script: nothing may be read ahead and kept in this
// copy's buffers, and what the copy needs (the script's next line, the
// terminal's history) is handed over with the session.
class DebugInput {
public:
  // A script's lines, read at once.
  explicit DebugInput(const std::string &script) {
    std::ifstream in(script);
    if (!in)
      throw Error("-x " + script + ": cannot read");
    for (std::string l; std::getline(in, l);)
      script_.push_back(l);
    kind_ = Kind::Script;
  }
  // Standard input: a terminal (with editing and history) or not.
  explicit DebugInput(bool terminal)
      : kind_(terminal ? Kind::Terminal : Kind::Stream) {}

  bool read(std::string &line) {
    switch (kind_) {
    case Kind::Script:
      if (next_ >= script_.size())
        return false;
      line = script_[next_++];
      return true;
    case Kind::Terminal: {
      char *text = readline("(nicemu) ");
      if (!text)
        return false;
      line = text;
      std::free(text);
      if (!line.empty()) {
        add_history(line.c_str());
        history_.push_back(line);
        if (history_.size() > kHistory)
          history_.erase(history_.begin());
      }
      return true;
    }
    case Kind::Stream: // a byte at a time: nothing read ahead
      line.clear();
      for (char c; ::read(0, &c, 1) == 1;) {
        if (c == '\n')
          return true;
        line += c;
      }
      return !line.empty();
    }
    return false;
  }

  std::string save() const {
    if (kind_ == Kind::Script)
      return std::to_string(next_);
    std::string out;
    for (const std::string &l : history_)
      out += l + "\n";
    return out;
  }

  void restore(const std::string &saved) {
    if (kind_ == Kind::Script) {
      next_ = std::stoul(saved);
      return;
    }
    history_.clear();
    if (kind_ == Kind::Terminal)
      clear_history();
    for (size_t at = 0, nl; (nl = saved.find('\n', at)) != saved.npos;
         at = nl + 1) {
      history_.push_back(saved.substr(at, nl - at));
      if (kind_ == Kind::Terminal)
        add_history(history_.back().c_str());
    }
  }

private:
  static constexpr size_t kHistory = 500;
  enum class Kind : uint8_t { Script, Terminal, Stream };
  Kind kind_;
  std::vector<std::string> script_;
  size_t next_ = 0;
  std::vector<std::string> history_;
};

// The firmware's ELF file: --elf, or FW.elf beside FW.img when its build
// id is the image's; "" if none.
std::string elf_file(const DebugOptions &o, const Image &image) {
  std::string elf = o.elf;
  if (elf.empty() && !o.firmware.empty())
    elf = find_elf_for_image(o.firmware, image.build_id);
  if (!o.elf.empty() && image_from_elf(elf, "").build_id != image.build_id)
    throw Error("--elf " + elf +
                ": not the ELF file this image was built from (build ids "
                "differ)");
  return elf;
}

// Source lines, and variables, from the ELF's DWARF: without them the
// debugger still works by addresses and symbols.
struct DebugInfo {
  std::optional<LineTable> lines;
  std::unique_ptr<DwarfVariables> variables;
};

DebugInfo read_dwarf(const std::string &elf) {
  DebugInfo d;
  if (elf.empty())
    return d;
  try {
    d.lines = LineTable::read(elf);
    d.variables = std::make_unique<DwarfVariables>(elf);
  } catch (const Error &e) {
    std::cerr << "nicemu: no source lines: " << e.what() << "\n";
  }
  return d;
}

// --replay: the options that describe a run come from the recording.
void refuse_run_options(const CLI::App &cmd) {
  for (const char *name :
       {"--model", "--flash", "--firmware", "--nodes", "--procs-per-node",
        "--topology", "--max-time", "--watchdog", "--no-leases",
        "--no-fast-forward", "--no-core-queue", "--link-corrupt", "--link-loss",
        "--link-dup", "--fault-seed", "program"})
    if (cmd.count(name))
      throw Error(std::string("debug --replay: ") +
                  (std::string(name) == "program" ? "a host program" : name) +
                  " is the recording's: the replay runs as it was recorded");
}

// A replay that did not go as recorded says where (a divergence met on
// the way has stopped it, and said so): true if it did not.
bool replay_diverged(const HostTape &tape, const RunResult &r,
                     const RecordedEnd &recorded) {
  if (!tape.divergence().empty()) {
    if (r.outcome != RunOutcome::HostFailed) // not said yet
      std::cerr << "nicemu: " << tape.divergence() << "\n";
    return true;
  }
  if (r.outcome == RunOutcome::Killed)
    return false;
  const std::string unplayed = tape.unplayed();
  if (!unplayed.empty()) {
    std::cerr << "nicemu: replay diverged from the recording: " << unplayed
              << "\n";
    return true;
  }
  if (!recorded.stopped_by.empty())
    std::cerr << "nicemu: the recorded run was stopped by "
              << recorded.stopped_by << " at " << format_time_us(recorded.end)
              << " of virtual time: its recording ends there\n";
  return false;
}

int debug(DebugOptions o) {
  // A replay (--replay): the recorded run, its hosts played from the
  // recording, so that going back works with host programs too.
  std::optional<HostTape> tape;
  RecordedEnd recorded;
  RunInputs in;
  if (!o.replay.empty()) {
    tape.emplace(HostTape::Mode::Play);
    in = replay_inputs(o.replay, o, recorded, *tape);
    if (!in.node_flash.empty())
      throw Error("debug --replay: " + o.replay +
                  " is a run with --node-firmware: the debugger reads one "
                  "image's symbols");
  } else {
    in.model = run_model(o);
    in.flash = boot_flash(o, in.model);
  }
  const bool replaying = tape.has_value();
  const bool outside = replaying && !recorded.tap.empty(); // of a --tap run
  const Model &model = in.model;
  Image image = decode_image(in.flash);
  DebugInfo dwarf = read_dwarf(elf_file(o, image));
  bool terminal = o.script.empty() && ::isatty(0);
  std::unique_ptr<DebugInput> input =
      o.script.empty() ? std::make_unique<DebugInput>(terminal)
                       : std::make_unique<DebugInput>(o.script);
  Time max_time = max_run_time(o);
  const Time checkpoint_every =
      checkpoint_interval(o.checkpoint_every, "debug");
  GdbTarget *debugger = nullptr;
  std::unique_ptr<Cluster> cluster = start_run_cluster(
      o, in, nullptr,
      [&debugger](uint32_t node) {
        return debugger && debugger->muted(node); // shown the first time
      },
      tape ? &*tape : nullptr, outside);
  Simulation &sim = cluster->sim;
  if (outside)
    play_outside(*tape, *sim.fabric());
  DebuggerCli::LineReader reader = [&input](std::string &l) {
    return input->read(l);
  };
  DebuggerCli::Options options;
  options.image = &image;
  options.lines = dwarf.lines ? &*dwarf.lines : nullptr;
  options.variables = dwarf.variables.get();
  options.echo = !terminal;
  options.interrupt = &g_interrupt;
  options.save_input = [&input] { return input->save(); };
  options.restore_input = [&input](const std::string &s) { input->restore(s); };
  GdbTarget target(sim);
  debugger = &target;
  // Going back needs a run that is a function of its inputs.
  if ((o.program.empty() || replaying) && checkpoint_every)
    target.enable_reverse(checkpoint_every, "");
  options.go_to_time = [&target](Time t, const gdb::StopEvent &e,
                                 std::string &why) {
    return target.go_to_time(t, e, why);
  };
  options.back_steps = [&target](gdb::ThreadId thread, uint64_t steps,
                                 std::string &why) {
    return target.back_steps(thread, steps, why);
  };
  DebuggerCli cli(target, reader, std::cout, options);
  target.set_frontend(cli);
  auto old_handler = std::signal(SIGINT, on_sigint);
  RunResult r = sim.run(max_time);
  int code = outcome_exit_code(sim, r);
  target.run_ended(r, code);
  std::signal(SIGINT, old_handler);
  std::cout << std::flush;
  if (cluster->hosts)
    cluster->hosts->stop();
  for (auto &n : sim.nodes())
    if (n->state() == NodeState::Faulted)
      std::cerr << "nicemu: " << fault_report(*n);
  print_misroutes(sim);
  if (r.outcome == RunOutcome::Deadlock || r.outcome == RunOutcome::HostFailed)
    std::cerr << "nicemu: stopped: " << r.message << "\n";
  if (r.outcome == RunOutcome::MaxTime)
    std::cerr << "nicemu: stopped at --max-time " << o.max_time << "\n";
  if (!o.quiet) {
    print_summary(sim, r, model, false);
    if (cluster->hosts)
      print_host_outcomes(*cluster->hosts, false);
  }
  if (cli.killed_run())
    code = 0; // the user ended the run: not a failure
  else if (cluster->hosts && code == 0)
    code = cluster->hosts->exit_code();
  if (replaying && !cli.killed_run() && replay_diverged(*tape, r, recorded))
    code = code ? code : 1;
  if (code == 0 && !o.script.empty() && cli.errors() > 0) {
    std::cerr << "nicemu: " << cli.errors() << " debugger command"
              << (cli.errors() == 1 ? "" : "s") << " failed\n";
    code = 1;
  }
  target.session_ended(code);
  debugger = nullptr;
  return code;
}

} // namespace

void add_debug_command(CLI::App &app, ExitStatus &status) {
  auto opts = std::make_shared<DebugOptions>();
  CLI::App *cmd = app.add_subcommand(
      "debug", "Run under the built-in debugger (halted at reset)");
  add_cluster_options(*cmd, *opts);
  cmd->add_option("-x,--script", opts->script,
                  "run debugger commands from this file, without a terminal");
  cmd->add_option("--elf", opts->elf,
                  "the firmware's ELF file, for source lines (default: "
                  "FW.elf next to --firmware FW.img, if its build id matches)");
  cmd->add_flag("-q,--quiet", opts->quiet, "no summary");
  cmd->add_option("--checkpoint-every", opts->checkpoint_every,
                  "without host programs, or on a --replay: keep a checkpoint "
                  "in memory every TIME of virtual time, for going back "
                  "(rstepi, rstep, rcontinue, goto; 0: none)")
      ->capture_default_str();
  cmd->add_option("--replay", opts->replay,
                  "debug the run this recording holds (nicemu run --record), "
                  "its host programs played from it: going back works there "
                  "too (docs/replay.md)");
  add_program_option(*cmd, *opts);
  cmd->callback([opts, cmd, &status] {
    if (!opts->replay.empty())
      refuse_run_options(*cmd);
    status.code = debug(*opts);
  });
}

} // namespace nicemu::cli
