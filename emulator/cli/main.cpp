// nicemu: build, flash, run and measure firmware for emulated NICs.
#include "cli/commands.hpp"
#include "cli/parse_errors.hpp"
#include "cli/stop_signals.hpp"
#include "nicemu/error.hpp"
#include "sim/stop_request.hpp"

#include <exception>
#include <iostream>

int main(int argc, char **argv) {
  CLI::App app{"nicemu " NICEMU_VERSION
               " - firmware and bare-metal NIC processor emulator"};
  app.set_version_flag("--version", NICEMU_VERSION);
  app.require_subcommand(1);
  nicemu::cli::ExitStatus status;
  nicemu::cli::add_image_command(app, status);
  nicemu::cli::add_flash_command(app, status);
  nicemu::cli::add_run_command(app, status);
  nicemu::cli::add_replay_command(app, status);
  nicemu::cli::add_debug_command(app, status);
  nicemu::cli::add_bench_command(app, status);
  nicemu::cli::add_models_command(app, status);
  nicemu::cli::add_ldscript_command(app, status);
  nicemu::cli::add_regs_command(app, status);
  nicemu::cli::add_plot_command(app, status);
  nicemu::cli::add_partition_command(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // --help and --version are 0; a bad argument is 1, like every other
    // bad input (CLI11's own codes would be 100 and up), and says so in
    // the same words (cli/parse_errors.hpp).
    if (e.get_exit_code() == 0)
      return app.exit(e);
    std::cerr << nicemu::cli::parse_error_message(app, e) << "\n";
    return 1;
  } catch (const nicemu::Stopped &e) {
    // A benchmark stopped by SIGINT or SIGTERM: its hosts are gone, and it
    // gives no figures.
    std::cerr << "nicemu: stopped by "
              << nicemu::cli::StopSignals::signal_name(e.signal()) << "\n";
    return 128 + e.signal();
  } catch (const nicemu::Error &e) {
    std::cerr << "nicemu: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    // Not expected (a library's own exception, out of memory): still a
    // message and a failure status, not std::terminate.
    std::cerr << "nicemu: error: " << e.what() << "\n";
    return 1;
  }
  return status.code;
}
