#include "cli/run_setup.hpp"

#include "cli/image_model.hpp"
#include "mem/boot_rom.hpp"
#include "mem/flash.hpp"
#include "nicemu/error.hpp"
#include "nicemu/image.hpp"
#include "node/core_workers.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace nicemu::cli {

namespace {
// The longest --watchdog: far beyond any run (2^62 cycles is 4.4 years at
// 33 GHz), and small enough that adding it to a cycle count cannot wrap.
constexpr int64_t kMaxWatchdogCycles = int64_t(1) << 62;
} // namespace

void add_cluster_options(CLI::App &cmd, ClusterOptions &o) {
  cmd.add_option("--model", o.model,
                 "model (name or .toml file; default: the one the image was "
                 "built for, else lanai4)");
  cmd.add_option("--flash", o.flash, "flash file to boot from");
  cmd.add_option("--firmware", o.firmware,
                 "boot this image directly (as if flashed)");
  cmd.add_option("-n,--nodes", o.nodes,
                 "number of nodes (NICs), all booting the same flash")
      ->capture_default_str();
  cmd.add_option("--procs-per-node", o.procs_per_node,
                 "host processes per node, each running the program (rank r "
                 "drives node r / N); cards several processes share "
                 "(martini, comet)")
      ->capture_default_str();
  cmd.add_flag("--tag-output", o.tag_output,
               "prefix every line a host program prints with its rank, as "
               "mpirun --tag-output does: [1,RANK]<stdout>: or "
               "[1,RANK]<stderr>:");
  cmd.add_option("--topology", o.topology,
                 "network topology file (default: one crossbar up to its "
                 "port count, a generated network beyond)");
  cmd.add_option("--max-time", o.max_time,
                 "stop after this much virtual time (e.g. 10ms)");
  cmd.add_option("--watchdog", o.watchdog,
                 "watchdog period in cycles (0 = off; default: the model's)")
      ->check(CLI::Range(int64_t(0), kMaxWatchdogCycles));
  cmd.add_flag("--no-leases", o.no_leases,
               "answer every poll of a host's own memory in the emulator "
               "(a speed-up's switch: the virtual results are the same)");
  cmd.add_flag("--no-fast-forward", o.no_fast_forward,
               "emulate every iteration of a firmware's polling loops "
               "(a speed-up's switch: the virtual results are the same)");
  cmd.add_flag("--no-core-queue", o.no_core_queue,
               "give every running core a slice in every round, not only "
               "the cores that are due (a speed-up's switch: the virtual "
               "results are the same)");
  cmd.add_option("--threads", o.threads,
                 "threads for the NIC cores' slices (0 = the cores "
                 "available, at most one per 4 nodes, each round on them "
                 "only while that proves faster; $NICEMU_THREADS "
                 "overrides that default; lanai4 and comet cards; the "
                 "virtual results are the same for any number)")
      ->capture_default_str()
      ->check(CLI::Range(0u, 256u));
  cmd.add_option("--host-timeout", o.host_timeout,
                 "stop the run when the host processes it waits for make no "
                 "library call for this many seconds of wall time")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  const char *faults =
      "Fault injection (deterministic: same seed, same faults)";
  cmd.add_option("--link-corrupt", o.link_faults.corrupt,
                 "probability that a packet crossing a cable has one bit "
                 "flipped (the receiver sees a CRC error)")
      ->check(CLI::Range(0.0, 1.0))
      ->group(faults);
  cmd.add_option("--link-loss", o.link_faults.lose,
                 "probability that a packet crossing a cable is lost")
      ->check(CLI::Range(0.0, 1.0))
      ->group(faults);
  cmd.add_option("--link-dup", o.link_faults.dup,
                 "probability that a packet crossing a cable arrives twice "
                 "(the copy follows the original)")
      ->check(CLI::Range(0.0, 1.0))
      ->group(faults);
  cmd.add_option("--fault-seed", o.link_faults.seed,
                 "seed of the injected faults")
      ->capture_default_str()
      ->group(faults);
}

HostOptions host_options(const ClusterOptions &o) {
  HostOptions h;
  h.host_timeout_ms = int(std::min(o.host_timeout, 1e6) * 1000);
  h.tag_output = o.tag_output;
  h.leases = !o.no_leases;
  return h;
}

void add_program_option(CLI::App &cmd, ClusterOptions &o) {
  cmd.add_option("program", o.program,
                 "after --: a host program (and its arguments) to run once "
                 "per node, like mpirun");
}

namespace {

Image decoded(const std::string &path, const std::vector<uint8_t> &bytes) {
  try {
    return decode_image(bytes); // say what is wrong with the file itself
  } catch (const Error &e) {
    throw Error(path + ": " + e.what());
  }
}

// An image file as if flashed into an erased flash.
std::vector<uint8_t> image_as_flash(const std::string &path,
                                    const Model &model) {
  std::vector<uint8_t> image = read_file_bytes(path);
  decoded(path, image);
  if (image.size() > model.flash_size)
    throw Error(path + ": larger than the " + model.name + " flash");
  std::vector<uint8_t> flash(model.flash_size, 0xFF);
  std::copy(image.begin(), image.end(), flash.begin());
  return flash;
}

} // namespace

Model run_model(const ClusterOptions &o) {
  if (!o.firmware.empty() && o.flash.empty())
    return model_for_image(
        o.firmware, decoded(o.firmware, read_file_bytes(o.firmware)), o.model);
  if (!o.flash.empty() && o.firmware.empty() && o.model.empty() &&
      std::filesystem::is_regular_file(o.flash)) {
    // The image at the start of the flash names the model; an erased or
    // damaged flash is reported when the node boots it.
    Image image;
    try {
      image = decode_image(read_file_bytes(o.flash));
    } catch (const Error &) {
    }
    if (!image.model.empty())
      return load_model(image.model);
  }
  return load_model(o.model.empty() ? kDefaultModel : o.model);
}

std::vector<uint8_t> boot_flash(const ClusterOptions &o, const Model &model) {
  if (!o.flash.empty() && !o.firmware.empty())
    throw Error("run: give either --flash or --firmware, not both");
  if (!o.flash.empty()) {
    std::vector<uint8_t> flash = read_flash(o.flash, model);
    // Checked as a card boots it, so that an erased or damaged flash is
    // refused here, naming the file, before anything starts.
    try {
      boot_from_flash(flash, model, [](uint32_t, const uint8_t *, uint32_t) {});
    } catch (const Error &e) {
      throw Error(o.flash + ": " + e.what());
    }
    return flash;
  }
  if (o.firmware.empty())
    throw Error("run: give the node's flash (--flash F) or an image "
                "(--firmware FW.img)");
  return image_as_flash(o.firmware, model);
}

std::map<uint32_t, std::shared_ptr<const std::vector<uint8_t>>>
node_flashes(const std::vector<std::string> &values, const Model &model) {
  std::map<uint32_t, std::shared_ptr<const std::vector<uint8_t>>> out;
  for (const std::string &v : values) {
    size_t eq = v.find('=');
    uint32_t node = 0;
    auto [end, ec] = eq == std::string::npos
                         ? std::from_chars(v.data(), v.data(), node)
                         : std::from_chars(v.data(), v.data() + eq, node);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() ||
        end != v.data() + eq || eq + 1 == v.size())
      throw Error("run: --node-firmware '" + v +
                  "' is not NODE=IMAGE (e.g. 2=rogue.img)");
    if (out.count(node))
      throw Error("run: --node-firmware names node " + std::to_string(node) +
                  " twice");
    const std::string path = v.substr(eq + 1);
    // Built for another model than the run's: refused, as --firmware is.
    model_for_image(path, decoded(path, read_file_bytes(path)), model.name);
    out[node] = std::make_shared<const std::vector<uint8_t>>(
        image_as_flash(path, model));
  }
  return out;
}

Time max_run_time(const ClusterOptions &o) {
  if (o.max_time.empty())
    return kTimeNever;
  auto t = parse_duration_ps(o.max_time);
  if (!t)
    throw Error("run: --max-time '" + o.max_time +
                "' is not a duration (e.g. 10ms, 1.5s, 200us)");
  if (*t == 0 || *t > kTimeEnd)
    throw Error("run: --max-time '" + o.max_time +
                "' is out of range: more than 0 and at most the end of "
                "virtual time (2^63 ps, about 106 days)");
  return *t;
}

unsigned run_threads(const ClusterOptions &o) {
  if (o.threads)
    return o.threads;
  // A default for every run of a test suite or script.
  if (const char *env = std::getenv("NICEMU_THREADS")) {
    char *end = nullptr;
    unsigned long n = std::strtoul(env, &end, 10);
    if (*env && *end == 0 && n >= 1 && n <= 256)
      return unsigned(n);
  }
  return default_threads(o.nodes);
}

bool run_threads_adaptive(const ClusterOptions &o) {
  return o.threads == 0 && !std::getenv("NICEMU_THREADS");
}

std::unique_ptr<Cluster> start_run_cluster(const ClusterOptions &o,
                                           const RunInputs &in,
                                           RunEvents *events,
                                           std::function<bool(uint32_t)> muted,
                                           HostTape *tape, bool network) {
  ClusterSpec spec;
  spec.nodes = o.nodes;
  spec.topology = o.topology;
  spec.topology_text = in.topology_text;
  spec.node_flash = in.node_flash;
  spec.tape = tape;
  spec.network = network;
  spec.program = o.program;
  spec.procs_per_node = o.procs_per_node;
  spec.events = events;
  spec.host_options = host_options(o);
  spec.link_faults = o.link_faults;
  if (o.watchdog >= 0)
    spec.watchdog_cycles = uint64_t(o.watchdog);
  spec.fast_forward = !o.no_fast_forward;
  spec.core_queue = !o.no_core_queue;
  spec.threads = run_threads(o);
  spec.adaptive_threads = run_threads_adaptive(o);
  spec.console = [muted](uint32_t node, const std::string &line) {
    if (muted && muted(node))
      return;
    std::cout << "[node" << node << "] " << line << "\n" << std::flush;
  };
  return start_cluster(
      in.model, std::make_shared<const std::vector<uint8_t>>(in.flash), spec);
}

Time checkpoint_interval(const std::string &text, const std::string &command) {
  if (text == "0")
    return 0;
  auto t = parse_duration_ps(text);
  if (!t || *t == 0 || *t > kTimeEnd)
    throw Error(command + ": --checkpoint-every '" + text +
                "' is not a duration (e.g. 1ms, 100us; 0: no checkpoints)");
  return *t;
}

void print_misroutes(Simulation &sim) {
  const Fabric *fabric = sim.fabric();
  if (!fabric || fabric->misrouted() == 0)
    return;
  const uint64_t n = fabric->misrouted();
  std::fprintf(stderr,
               "nicemu: network: %llu packet%s misrouted and dropped (bad "
               "route bytes from the firmware)%s\n",
               (unsigned long long)n, n == 1 ? "" : "s",
               n > fabric->misroutes().size() ? "; the first:" : ":");
  for (const Misroute &m : fabric->misroutes())
    std::fprintf(stderr, "  at %.6f us, from node %u: %s\n", double(m.at) / 1e6,
                 m.source, m.why.c_str());
}

int outcome_exit_code(Simulation &sim, const RunResult &r) {
  std::vector<uint32_t> codes;
  for (auto &n : sim.nodes())
    codes.push_back(n->exit_code());
  return outcome_exit_code(r, codes);
}

int outcome_exit_code(const RunResult &r,
                      const std::vector<uint32_t> &exit_codes) {
  switch (r.outcome) {
  case RunOutcome::Faulted:
    return kExitFault;
  case RunOutcome::MaxTime:
    return kExitMaxTime;
  case RunOutcome::Deadlock:
    return kExitDeadlock;
  case RunOutcome::HostFailed:
  case RunOutcome::Killed:
  case RunOutcome::Stopped: // the command knows which signal asked
    return 1;
  case RunOutcome::Halted:
    break;
  }
  // A process exit status has 8 bits: a nonzero code whose low byte is 0
  // (256, 512...) would read as success, so it gives 1.
  for (uint32_t code : exit_codes)
    if (code != 0)
      return code & 0xFF ? int(code & 0xFF) : 1;
  return 0;
}

} // namespace nicemu::cli
