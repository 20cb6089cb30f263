// nicemu run --model M (--flash F | --firmware IMG) [--max-time T]
#include "cli/checkpoint_file.hpp"
#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/recorded_run.hpp"
#include "cli/run_reports.hpp"
#include "cli/run_setup.hpp"
#include "cli/run_spread.hpp"
#include "cli/run_summary.hpp"
#include "cli/stop_signals.hpp"
#include "debug/fault_report.hpp"
#include "debug/gdb_target.hpp"
#include "fabric/fabric.hpp"
#include "fabric/tap_bridge.hpp"
#include "host/cluster_run.hpp"
#include "host/host_tape.hpp"
#include "mem/flash.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "nicemu/model.hpp"
#include "observe/run_observers.hpp"
#include "observe/trace_writer.hpp"
#include "profile/cycle_report.hpp"
#include "sim/state_archive.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

namespace nicemu::cli {

namespace {

struct RunOptions : ClusterOptions, ReportOptions {
  bool quiet = false;
  std::string gdb, gdb_listen; // docs/debugging.md
  // With --gdb on a run without host programs: reverse execution's
  // checkpoints (docs/replay.md, "Reverse debugging"); "0": none.
  std::string checkpoint_every = "1ms";
  // Checkpoint files every checkpoint_every into this folder (docs/replay.md,
  // "Checkpoint files"), and the one a replay starts from.
  std::string checkpoint_dir, from;
  std::string tap; // docs/fm.md, "Bridging to Linux (--tap)"
  std::vector<std::string> node_firmware; // --node-firmware NODE=IMAGE
  std::string record;                     // --record FILE (docs/replay.md)
  RecordedEnd recorded; // a replay: how the recorded run ended
  ProgressMode progress = ProgressMode::Auto;
  std::string partition; // --partition FILE, under mpirun
};

// A run that ended by itself, other than by halting: why, for people.
void say_why_stopped(const RunResult &r, const RunOptions &o) {
  if (r.outcome == RunOutcome::Deadlock || r.outcome == RunOutcome::HostFailed)
    std::cerr << "nicemu: stopped: " << r.message << "\n";
  else if (r.outcome == RunOutcome::MaxTime)
    std::cerr << "nicemu: stopped at --max-time " << o.max_time << "\n";
}

RunInputs read_inputs(const RunOptions &o) {
  RunInputs in;
  in.model = run_model(o);
  in.flash = boot_flash(o, in.model);
  in.node_flash = node_flashes(o.node_firmware, in.model);
  // A model from a file (perhaps "FILE:VARIANT") goes into a recording
  // whole; a model from the search path, by name.
  std::string file = o.model;
  if (!file.empty() && !std::filesystem::is_regular_file(file) &&
      file.find(':') != std::string::npos)
    file.erase(file.rfind(':'));
  if (!file.empty() && std::filesystem::is_regular_file(file)) {
    in.model_text = read_model_text(file);
    in.model_file = file;
  }
  if (!o.topology.empty())
    in.topology_text = read_topology_text(o.topology);
  return in;
}

// --record: the run's inputs and options, for nicemu replay.
HostTape::Contents recording_contents(const RunOptions &o, const RunInputs &in,
                                      HostTape::Contents::Blob flash) {
  HostTape::Contents c;
  nlohmann::json m;
  m["nicemu"] = NICEMU_VERSION;
  m["model"] = in.model.full_name();
  m["variant"] = in.model.variant;
  m["model_file"] = in.model_file;
  m["nodes"] = o.nodes;
  m["procs_per_node"] = o.procs_per_node;
  m["topology"] = o.topology;
  m["max_time"] = o.max_time;
  m["watchdog"] = o.watchdog;
  m["no_leases"] = o.no_leases;
  m["no_fast_forward"] = o.no_fast_forward;
  m["no_core_queue"] = o.no_core_queue;
  m["link_corrupt"] = o.link_faults.corrupt;
  m["link_loss"] = o.link_faults.lose;
  m["link_dup"] = o.link_faults.dup;
  m["fault_seed"] = o.link_faults.seed;
  m["firmware"] = o.firmware;
  m["flash_file"] = o.flash;
  m["program"] = o.program;
  m["tap"] = o.tap;
  // Erased flash (0xFF) past the image is left out: a recording of a short
  // run is then mostly what the hosts did, not a megabyte of erased bytes.
  auto written = [](const std::vector<uint8_t> &f) {
    size_t end = f.size();
    while (end > 0 && f[end - 1] == 0xFF)
      --end;
    return std::make_shared<const std::vector<uint8_t>>(f.begin(),
                                                        f.begin() + end);
  };
  m["flash_bytes"] = flash->size();
  c.manifest = m.dump(1);
  c.blobs["flash"] = written(*flash);
  for (const auto &[node, own] : in.node_flash)
    c.blobs["node-flash/" + std::to_string(node)] = written(*own);
  auto text = [](const std::string &t) {
    return std::make_shared<const std::vector<uint8_t>>(t.begin(), t.end());
  };
  if (in.model_text)
    c.blobs["model"] = text(*in.model_text);
  if (in.topology_text)
    c.blobs["topology"] = text(*in.topology_text);
  return c;
}

// A checkpoint taken in a replay of host programs names the recording it
// resumes with ("replay_of" in its manifest).
std::string replay_of(const std::string &manifest, uint64_t identity) {
  nlohmann::json m = nlohmann::json::parse(manifest);
  m["replay_of"] = identity;
  return m.dump(1);
}

void check_replay_of(const CheckpointFile &c, const std::string &file,
                     const HostTape &tape, const std::string &recording) {
  nlohmann::json m = nlohmann::json::parse(c.run.manifest, nullptr, false);
  if (m.is_discarded() || !m.contains("replay_of"))
    throw Error(file +
                ": not a checkpoint of a replay of host programs "
                "(resume it alone: nicemu replay --from " +
                file + ")");
  if (m["replay_of"] != tape.identity())
    throw Error(file + ": was not taken in a replay of " + recording);
}

// --checkpoint-dir: a file every interval of virtual time, each named by
// the time it was taken at (the first round boundary at or after its due
// time).
class CheckpointWriter final : public RunCheckpoints {
public:
  // `resumed_at`: the run resumed from a checkpoint taken then (0: none),
  // whose successors come next, not that one again.
  CheckpointWriter(std::string dir, Time every, HostTape::Contents run,
                   Time resumed_at)
      : dir_(std::move(dir)), every_(every), next_(every),
        run_(std::move(run)) {
    skip_past(resumed_at);
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      throw Error("--checkpoint-dir " + dir_ + ": " + ec.message());
  }
  Time next_due() const override { return next_; }
  void take(const Simulation &sim) override {
    auto start = std::chrono::steady_clock::now();
    StateWriter out;
    try {
      sim.save_state(out);
    } catch (const Error &e) {
      // A moment that cannot be saved (a host's doorbell write waiting for
      // room): the next round boundary is tried instead.
      if (!postponed_++)
        first_postponed_ = e.what();
      return;
    }
    CheckpointFile c{run_, sim.scheduler().now(), out.take()};
    const std::string path =
        (std::filesystem::path(dir_) / checkpoint_name(c.time)).string();
    write_checkpoint(path, c);
    seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::error_code ec;
    bytes_ += std::filesystem::file_size(path, ec);
    ++taken_;
    skip_past(c.time);
  }
  // For the summary: what they cost (nicemu bench replay reads it).
  void report(std::ostream &os) const {
    char line[256];
    std::snprintf(line, sizeof line,
                  "checkpoints: %zu in %s (%.1f KiB, %.2f ms to take, each "
                  "on average)\n",
                  taken_, dir_.c_str(),
                  taken_ ? double(bytes_) / 1024 / double(taken_) : 0.0,
                  taken_ ? seconds_ * 1e3 / double(taken_) : 0.0);
    os << line;
    if (postponed_)
      os << "checkpoints: put off " << postponed_
         << " time(s) to a later moment, first because " << first_postponed_
         << "\n";
  }

private:
  void skip_past(Time t) {
    while (next_ <= t)
      next_ = next_ > kTimeNever - every_ ? kTimeNever : next_ + every_;
  }

  std::string dir_;
  Time every_, next_;
  HostTape::Contents run_;
  size_t taken_ = 0, postponed_ = 0;
  std::string first_postponed_;
  uint64_t bytes_ = 0;
  double seconds_ = 0;
};

int run(const RunOptions &o, RunInputs in, HostTape *tape,
        const CheckpointFile *from) {
  // SIGINT, SIGTERM: a clean stop from here on (cli/stop_signals.hpp).
  StopSignals signals;
  const Model &model = in.model;
  std::vector<uint8_t> flash = std::move(in.flash);
  auto node_flash = in.node_flash;
  const bool replaying = tape && tape->playing();
  if (replaying && !o.tap.empty())
    throw Error("replay: a replay takes its frames from the recording, not "
                "from --tap");
  // A replay of a run with --tap plays its frames: the same network, with
  // its way out to Linux.
  const bool outside = tape && !o.recorded.tap.empty();
  // Traces and captures: their files are opened before anything starts.
  RunObservers observers(o.observe);
  // Report options are checked before anything starts; handler spans of a
  // trace come from the cycle profiler.
  std::unique_ptr<CycleReports> reports;
  if ((o.profiling() || o.traces_cores() || !o.gdb.empty() ||
       !o.gdb_listen.empty()) &&
      !node_flash.empty())
    throw Error("run: --node-firmware does not combine with profiling, core "
                "traces or --gdb (they read one image's symbols)");
  if (o.profiling() || o.traces_cores())
    reports = std::make_unique<CycleReports>(o, o.firmware, flash, model,
                                             observers.events());
  const Time max_time = max_run_time(o);
  // --tap: the device is opened before anything starts, so that a refusal
  // stops the run here. The host library learns that FM node N (N = -n) is
  // the outside from NICEMU_TAP, which the host processes inherit.
  std::unique_ptr<TapBridge> tap;
  if (!o.tap.empty()) {
    tap = std::make_unique<TapBridge>(o.tap, model);
    ::setenv("NICEMU_TAP", o.tap.c_str(), 1);
  } else {
    ::unsetenv("NICEMU_TAP");
  }
  const Time checkpoint_every = checkpoint_interval(o.checkpoint_every, "run");
  GdbTarget *debugger = nullptr; // --gdb (made once the cluster is)
  ClusterSpec spec;
  spec.nodes = o.nodes;
  spec.topology = o.topology;
  spec.topology_text = in.topology_text;
  spec.tape = tape;
  // A one-node run needs a switch to bridge.
  spec.network = tap != nullptr || outside;
  spec.program = o.program;
  spec.procs_per_node = o.procs_per_node;
  spec.events = observers.events();
  spec.host_options = host_options(o);
  spec.link_faults = o.link_faults;
  if (o.watchdog >= 0)
    spec.watchdog_cycles = uint64_t(o.watchdog);
  spec.fast_forward = !o.no_fast_forward;
  spec.core_queue = !o.no_core_queue;
  spec.threads = run_threads(o);
  spec.adaptive_threads = run_threads_adaptive(o);
  spec.node_flash = std::move(node_flash);
  // The progress line; not by default while a debugger drives the run,
  // nor with --quiet.
  const bool gdb = !o.gdb.empty() || !o.gdb_listen.empty();
  ProgressLine progress(progress_wanted(o.progress) &&
                        (o.progress == ProgressMode::On || !(gdb || o.quiet)));
  RunProgress run_progress(progress, max_time);
  spec.console = [&progress, &debugger](uint32_t node,
                                        const std::string &line) {
    if (debugger && debugger->muted(node))
      return;         // run again to go back: shown the first time
    progress.clear(); // stdout may be the same terminal
    std::cout << "[node" << node << "] " << line << "\n" << std::flush;
  };
  spec.stop = &signals.request();
  spec.monitor = progress.enabled() ? &run_progress : nullptr;
  if (!o.checkpoint_dir.empty()) {
    if (!checkpoint_every)
      throw Error("run: --checkpoint-dir needs --checkpoint-every above 0");
    if (!o.program.empty() && !replaying)
      throw Error("run: a run with host programs cannot be saved in "
                  "checkpoint files (--checkpoint-dir): its processes are not "
                  "the emulator's; record it (--record) and take them from "
                  "its replay (nicemu replay REC --checkpoint-dir DIR)");
    if (tap || outside || gdb)
      throw Error("run: --checkpoint-dir does not combine with --tap or "
                  "--gdb");
  }
  auto shared_flash =
      std::make_shared<const std::vector<uint8_t>>(std::move(flash));
  // The recording starts with the run's description (a file that cannot
  // be written stops the run here); the hosts' records follow as they come.
  if (tape && !replaying)
    tape->begin(o.record, recording_contents(o, in, shared_flash));
  std::unique_ptr<Cluster> cluster = start_cluster(model, shared_flash, spec);
  Simulation &sim = cluster->sim;
  // A checkpoint file's state replaces the booted cluster's.
  if (from) {
    auto start = std::chrono::steady_clock::now();
    StateReader r(from->state, o.from + ": a damaged checkpoint");
    sim.load_state(r);
    if (!o.quiet)
      std::fprintf(stderr,
                   "nicemu: resumed at %s of virtual time from %s (its state "
                   "put in place in %.2f ms)\n",
                   format_time_us(from->time).c_str(), o.from.c_str(),
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                           .count() *
                       1e3);
  }
  std::unique_ptr<CheckpointWriter> checkpoints;
  if (!o.checkpoint_dir.empty()) {
    // A card with a part that cannot be saved is refused now, not at the
    // first checkpoint.
    StateWriter probe;
    sim.save_state(probe);
    HostTape::Contents run = recording_contents(o, in, shared_flash);
    if (replaying && !o.program.empty()) // resumes with this recording only
      run.manifest = replay_of(run.manifest, tape->identity());
    checkpoints = std::make_unique<CheckpointWriter>(
        o.checkpoint_dir, checkpoint_every, std::move(run),
        from ? from->time : 0);
    sim.set_checkpoints(checkpoints.get());
  }
  if (tap) {
    tap->attach(sim.fabric());
    sim.set_wall_clock_input(tap.get());
    if (tape)
      tap->set_recorder(
          {[tape](Time at, uint32_t node, const std::vector<uint8_t> &frame) {
             tape->frame_in(at, node, frame);
           },
           [tape](Time at, const std::vector<uint8_t> &frame, bool left) {
             tape->frame_out(at, frame, left);
           }});
  } else if (outside) {
    play_outside(*tape, *sim.fabric());
  }
  HostGroup *hosts = cluster->hosts.get();
  observers.start(sim.scheduler());
  if (reports)
    reports->profiling().attach(sim);
  std::unique_ptr<gdb::Server> gdb_server; // --gdb: halted at reset
  // The console outlives the debugger: it forgets it when it goes.
  auto forget = [&debugger](GdbTarget *t) {
    debugger = nullptr;
    delete t;
  };
  std::unique_ptr<GdbTarget, decltype(forget)> gdb_target(nullptr, forget);
  if (gdb) {
    gdb_server = std::make_unique<gdb::Server>(
        o.gdb_listen.empty() ? o.gdb : o.gdb_listen);
    std::cerr << "gdb: listening on " << gdb_server->address() << std::endl;
    gdb_target.reset(new GdbTarget(sim, *gdb_server));
    debugger = gdb_target.get();
    // Reverse execution needs a run that is a function of its inputs.
    if ((replaying || o.program.empty()) && !tap && checkpoint_every)
      gdb_target->enable_reverse(
          checkpoint_every,
          o.observe.trace.empty() && o.observe.pcap.empty()
              ? ""
              : "not with --trace or --pcap (their files would hold twice "
                "what runs again)");
  }
  // The exit code, once everything is written: with reverse execution's
  // checkpoints, the process the shell started exits with it.
  auto ended = [&gdb_target](int code) {
    if (gdb_target)
      gdb_target->session_ended(code);
    return code;
  };
  RunResult r = sim.run(max_time);
  progress.clear();
  const bool stopped = signals.requested();
  if (stopped)
    std::cerr << "nicemu: stopped by " << signals.name()
              << " (a second one ends nicemu at once)\n";
  if (gdb_target)
    gdb_target->run_ended(r, stopped ? signals.exit_code()
                                     : outcome_exit_code(sim, r));
  if (reports)
    reports->profiling().finish(sim);
  if (hosts)
    hosts->stop();
  // The recording ends once the hosts have: their ends are in it, and how
  // the run ended.
  if (tape && !replaying) {
    nlohmann::json trailer;
    trailer["stopped_by"] = stopped ? signals.name() : "";
    trailer["end_time_ps"] = r.end_time;
    if (tap) {
      const TapStats &t = tap->stats();
      trailer["tap"] = {{"out", t.frames_out},
                        {"in", t.frames_in},
                        {"ignored", t.frames_ignored},
                        {"lost", t.write_errors}};
    }
    tape->finish(trailer.dump());
  }
  observers.finish([&sim] {
    if (Fabric *fabric = sim.fabric())
      fabric->flush_events();
  });
  for (auto &n : sim.nodes())
    if (n->state() == NodeState::Faulted)
      std::cerr << "nicemu: " << fault_report(*n);
  print_misroutes(sim);
  if (!stopped)
    say_why_stopped(r, o);
  if (!o.quiet)
    print_summary(sim, r, model, o.per_node);
  if (checkpoints && !o.quiet)
    checkpoints->report(std::cerr);
  if ((tap || outside) && !o.quiet) {
    const TapStats &t = tap ? tap->stats() : o.recorded.tap_stats;
    std::fprintf(
        stderr, "tap %s: %llu frames out, %llu in, %llu ignored, %llu lost\n",
        tap ? tap->name().c_str() : o.recorded.tap.c_str(),
        (unsigned long long)t.frames_out, (unsigned long long)t.frames_in,
        (unsigned long long)t.frames_ignored,
        (unsigned long long)t.write_errors);
  }
  const int budget_code = o.profiling() ? reports->print() : 0;
  if (hosts && !o.quiet)
    print_host_outcomes(*hosts, o.per_node);
  // A replay that ended before its recording did went another way (a
  // divergence it met on the way has stopped it already, and said so).
  // A replay the debugger killed was cut short on purpose.
  std::string unplayed = replaying && tape->divergence().empty() && !stopped &&
                                 r.outcome != RunOutcome::Killed
                             ? tape->unplayed()
                             : "";
  if (!unplayed.empty()) {
    std::cerr << "nicemu: replay diverged from the recording: " << unplayed
              << "\n";
    if (!signals.requested())
      return ended(1);
  }
  // Without hosts, a frame to Linux that differs from the recording's
  // does not stop the run (the hosts' checks do): it is told at the end.
  if (replaying && !hosts && !tape->divergence().empty()) {
    std::cerr << "nicemu: " << tape->divergence() << "\n";
    if (!signals.requested())
      return ended(1);
  }
  // The recording of a run stopped from outside ends where that run
  // stopped, which depended on wall time: the replay goes that far.
  if (replaying && !o.recorded.stopped_by.empty() && !stopped)
    std::cerr << "nicemu: the recorded run was stopped by "
              << o.recorded.stopped_by << " at "
              << format_time_us(o.recorded.end)
              << " of virtual time: its recording ends there\n";
  // Asked to stop: 128 + the signal, whatever the run had come to.
  if (signals.requested())
    return ended(signals.exit_code());
  if (hosts) {
    if (r.outcome == RunOutcome::Halted || r.outcome == RunOutcome::HostFailed)
      return ended(
          hosts->exit_code()
              ? hosts->exit_code()
              : (r.outcome == RunOutcome::HostFailed ? 1 : budget_code));
  }
  int code = outcome_exit_code(sim, r);
  return ended(code ? code : budget_code);
}

// What a run shows of itself (the same for a replay): the summary, traces
// and captures, cycle reports, a debugger, the progress line.
void add_observe_options(CLI::App *cmd,
                         const std::shared_ptr<RunOptions> &opts) {
  cmd->add_flag("-q,--quiet", opts->quiet, "no summary");
  cmd->add_option("--trace", opts->observe.trace,
                  "write a Chrome/Perfetto trace (JSON) of the run: handler "
                  "spans, DMA transfers, link packets, host calls");
  cmd->add_option("--trace-filter", opts->observe.trace_filter,
                  "trace only these categories: a comma list of core, dma, "
                  "link, host (default: all)");
  cmd->add_option("--pcap", opts->observe.pcap,
                  "write one pcap file per cable into this directory "
                  "(tools/wireshark/nicemu.lua decodes them)");
  cmd->add_option("--report", opts->report,
                  "print a report at the end: cycles (handler cycle table), "
                  "hotspots (self/inclusive cycles per function, hottest "
                  "source lines)")
      ->delimiter(',');
  cmd->add_flag("--per-node", opts->per_node,
                "every node: a summary row per node and a line per host "
                "(condensed above 16 nodes otherwise), a cycle report table "
                "per node (not aggregated)");
  cmd->add_option("--measure", opts->measure,
                  "also measure every call of this firmware function "
                  "(repeatable)");
  cmd->add_option("--budget", opts->budget,
                  "HANDLER=CYCLES: fail the run (exit 122) if a call of "
                  "HANDLER takes more cycles (repeatable)");
  cmd->add_option("--report-json", opts->report_json,
                  "write the cycle report as JSON "
                  "(docs/schemas/cycle-report.schema.json)");
  cmd->add_option("--elf", opts->elf,
                  "the firmware's ELF file, for source lines (default: "
                  "FW.elf next to --firmware FW.img, if its build id matches)");
  cmd->add_option("--top", opts->top, "rows of the hotspot tables")
      ->capture_default_str();
  cmd->add_option("--gdb", opts->gdb,
                  "start halted and serve GDB on this loopback port (0: any "
                  "free port; the port is printed); docs/debugging.md");
  cmd->add_option("--gdb-listen", opts->gdb_listen,
                  "like --gdb, on ADDR:PORT (e.g. 0.0.0.0:1234)");
  cmd->add_option("--checkpoint-every", opts->checkpoint_every,
                  "with --gdb on a replay or a run without host programs: "
                  "keep a checkpoint in memory every TIME of virtual time, "
                  "for GDB's reverse execution (0: none); with "
                  "--checkpoint-dir: write one there as often")
      ->capture_default_str();
  cmd->add_option("--checkpoint-dir", opts->checkpoint_dir,
                  "write a checkpoint file into this folder every "
                  "--checkpoint-every of virtual time (a run without live "
                  "host programs: firmware alone, or a replay), for nicemu "
                  "replay --from (docs/replay.md)");
  add_progress_options(*cmd, opts->progress);
}

} // namespace

// What a run spread over MPI ranks cannot take yet, as a phrase; empty:
// nothing.
static std::string not_spread_yet(const RunOptions &o) {
  if (!o.gdb.empty() || !o.gdb_listen.empty())
    return "--gdb";
  if (!o.tap.empty())
    return "--tap";
  if (!o.record.empty())
    return "--record";
  if (!o.checkpoint_dir.empty())
    return "--checkpoint-dir";
  if (o.no_core_queue)
    return "--no-core-queue";
  return "";
}

void add_run_command(CLI::App &app, ExitStatus &status) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App *cmd =
      app.add_subcommand("run", "Boot a card from flash and run its firmware");
  add_cluster_options(*cmd, *opts);
  add_observe_options(cmd, opts);
  cmd->add_option("--record", opts->record,
                  "write what the host programs put into the run (and the "
                  "run's options, model, flash and topology) to this file, "
                  "for nicemu replay (docs/replay.md)");
  cmd->add_option("--node-firmware", opts->node_firmware,
                  "NODE=IMAGE: node NODE boots IMAGE instead (repeatable; "
                  "e.g. a hostile card among honest ones)");
  cmd->add_option("--tap", opts->tap,
                  "bridge the Ethernet (comet) to this Linux TAP device "
                  "(created if missing; needs CAP_NET_ADMIN or a device you "
                  "own): FM node N (N = -n) is the outside. Virtual time then "
                  "follows wall time: the run is no longer deterministic");
  cmd->add_option("--partition", opts->partition,
                  "under mpirun: which rank emulates which nodes, a partition "
                  "file (nicemu partition -o writes one); default: by the "
                  "topology (docs/distributed.md)");
  add_program_option(*cmd, *opts);
  cmd->callback([opts, &status] {
    if (std::optional<MpiJob> job = mpi_job_from_environment();
        job && job->size > 1) {
      if (std::string what = not_spread_yet(*opts); !what.empty()) {
        status.code = refuse_spread(*job, what);
        return;
      }
      status.code = run_spread(*opts, *opts, read_inputs(*opts),
                               {opts->quiet, opts->partition}, *job);
      return;
    }
    if (!opts->partition.empty())
      throw Error("run: --partition shares the nodes out among MPI ranks; "
                  "this run is one process (start it with mpirun -n R)");
    std::optional<HostTape> tape;
    if (!opts->record.empty())
      tape.emplace(HostTape::Mode::Record);
    status.code =
        run(*opts, read_inputs(*opts), tape ? &*tape : nullptr, nullptr);
  });
}

void add_replay_command(CLI::App &app, ExitStatus &status) {
  auto opts = std::make_shared<RunOptions>();
  auto path = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand(
      "replay", "Run a recorded run again (nicemu run --record), without its "
                "host programs: the same console, reports, traces and "
                "captures, or the first point where it differs");
  cmd->add_option("recording", *path, "the file nicemu run --record wrote");
  cmd->add_option("--from", opts->from,
                  "start from this checkpoint file (--checkpoint-dir) instead "
                  "of the beginning: it holds the run's description; one "
                  "taken in a replay of host programs needs their recording "
                  "too");
  add_observe_options(cmd, opts);
  cmd->add_option("--threads", opts->threads,
                  "threads for the NIC cores' slices (as nicemu run)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 256u));
  cmd->callback([opts, path, &status] {
    if (!opts->from.empty() && !path->empty()) {
      // A replay of host programs resumed: the recording has what they do
      // after the checkpoint (which checks it is the same recording).
      CheckpointFile from = read_checkpoint(opts->from);
      HostTape tape(HostTape::Mode::Play);
      RunInputs in = replay_inputs(*path, *opts, opts->recorded, tape);
      check_replay_of(from, opts->from, tape, *path);
      status.code = run(*opts, std::move(in), &tape, &from);
      return;
    }
    if (!opts->from.empty()) {
      CheckpointFile from = read_checkpoint(opts->from);
      from.run.trailer = R"({"stopped_by": "", "end_time_ps": 0})";
      RunInputs in =
          recorded_inputs(opts->from, from.run, *opts, opts->recorded);
      if (!opts->program.empty())
        throw Error(opts->from +
                    ": a checkpoint of a replay of host programs resumes "
                    "with their recording: nicemu replay RECORDING --from " +
                    opts->from);
      status.code = run(*opts, std::move(in), nullptr, &from);
      return;
    }
    if (path->empty())
      throw Error("replay: which recording? (or --from CHECKPOINT)");
    HostTape tape(HostTape::Mode::Play);
    RunInputs in = replay_inputs(*path, *opts, opts->recorded, tape);
    status.code = run(*opts, std::move(in), &tape, nullptr);
  });
}

} // namespace nicemu::cli
