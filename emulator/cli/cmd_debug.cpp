// nicemu debug [run options] [-x SCRIPT]: the run under the built-in
// debugger (debug/debugger_cli.hpp; docs/debugging.md).
#include "cli/commands.hpp"
#include "cli/run_setup.hpp"
#include "cli/run_summary.hpp"
#include "debug/debugger_cli.hpp"
#include "debug/dwarf_variables.hpp"
#include "debug/fault_report.hpp"
#include "debug/gdb_target.hpp"
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
  bool quiet = false;
};

volatile std::sig_atomic_t g_interrupt = 0;

extern "C" void on_sigint(int) {
  g_interrupt = 1;
}

// Lines from the terminal, with editing and history (libedit).
bool read_terminal_line(std::string &line) {
  char *text = readline("(nicemu) ");
  if (!text)
    return false;
  line = text;
  if (!line.empty())
    add_history(text);
  std::free(text);
  return true;
}

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

int debug(const DebugOptions &o) {
  Model model = run_model(o);
  std::vector<uint8_t> flash = boot_flash(o, model);
  Image image = decode_image(flash);
  DebugInfo dwarf = read_dwarf(elf_file(o, image));
  std::ifstream script;
  if (!o.script.empty()) {
    script.open(o.script);
    if (!script)
      throw Error("-x " + o.script + ": cannot read");
  }
  Time max_time = max_run_time(o);
  std::unique_ptr<Cluster> cluster =
      start_run_cluster(o, model, std::move(flash), nullptr);
  Simulation &sim = cluster->sim;
  bool terminal = o.script.empty() && ::isatty(0);
  DebuggerCli::LineReader reader;
  if (terminal)
    reader = read_terminal_line;
  else if (!o.script.empty())
    reader = [&script](std::string &l) {
      return bool(std::getline(script, l));
    };
  else
    reader = [](std::string &l) { return bool(std::getline(std::cin, l)); };
  DebuggerCli::Options options;
  options.image = &image;
  options.lines = dwarf.lines ? &*dwarf.lines : nullptr;
  options.variables = dwarf.variables.get();
  options.echo = !terminal;
  options.interrupt = &g_interrupt;
  GdbTarget target(sim);
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
  if (!o.quiet)
    print_summary(sim, r, model, false);
  if (cli.killed_run())
    code = 0; // the user ended the run: not a failure
  else if (cluster->hosts && code == 0)
    code = cluster->hosts->exit_code();
  if (code == 0 && !o.script.empty() && cli.errors() > 0) {
    std::cerr << "nicemu: " << cli.errors() << " debugger command"
              << (cli.errors() == 1 ? "" : "s") << " failed\n";
    code = 1;
  }
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
  add_program_option(*cmd, *opts);
  cmd->callback([opts, &status] { status.code = debug(*opts); });
}

} // namespace nicemu::cli
