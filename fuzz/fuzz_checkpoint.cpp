// Fuzz target: the state part of a checkpoint file (docs/replay.md,
// "Checkpoint files") as `nicemu replay --from` puts it in place. A real
// state is saved once per scenario (a run of shipped firmware stopped at a
// round boundary); each input damages a copy of it, and the copy is loaded
// into a cluster booted afresh. Loading either throws nicemu::Error or
// gives a cluster that runs on for a bounded virtual time without crashing
// the emulator (AddressSanitizer and UBSan watch it).
//
// Damaging a real state instead of reading the input as a state reaches
// the loaders of every part (cores, memories, devices, the fabric's
// flights, pending events) rather than stopping at the first section name.
// An input with no edit must continue exactly as the run it was saved
// from: the same outcome, end time, and every core's instructions and
// cycles (a violation aborts, which libFuzzer reports as a crash).
//
// The input: one byte choosing the scenario, then edits of 13 bytes each
// (offset: 4, what: 1, value: 8). What: 0 flips the bits of `value`'s low
// byte at `offset`; 1 writes the 8-byte `value` there; 2 writes a small
// count (value % 4096); 3 cuts the state at `offset`.
#include "fuzz_support.hpp"
#include "host/cluster_run.hpp"
#include "sim/state_archive.hpp"

#include <array>

using namespace nicemu;
using namespace nicemu::fuzz;

namespace {

struct Scenario {
  const char *model, *image;
  uint32_t nodes;
  Time saved_at, runs_to; // the checkpoint's time; the run goes on to this
};
constexpr Time kUs = 1'000'000;
const Scenario kScenarios[] = {
    {"lanai4", "samples/net_pingpong.img", 2, 60 * kUs, 400 * kUs},
    {"lanai4", "samples/link_check.img", 3, 40 * kUs, 300 * kUs},
    {"lanai4", "samples/timer_irq.img", 1, 30 * kUs, 200 * kUs},
    {"comet", "via/via.img", 2, 200 * kUs, 500 * kUs},
    // The DIMMnet-1 and UZURA engines' state (firmware alone: idle queues).
    {"martini", "dimmnet/dimmnet.img", 2, 100 * kUs, 300 * kUs},
    {"uzura", "uzura/uzura.img", 2, 50 * kUs, 200 * kUs},
};

// How a run ended, as far as the check compares it.
struct Ending {
  RunOutcome outcome;
  Time end_time;
  std::vector<std::array<uint64_t, 2>> cores; // instructions, cycles
  bool operator==(const Ending &) const = default;
};

Ending ending_of(const Simulation &sim, const RunResult &r) {
  Ending e{r.outcome, r.end_time, {}};
  for (const auto &n : sim.nodes())
    e.cores.push_back({n->cpu().instructions(), n->cpu().cycles()});
  return e;
}

// Takes one checkpoint, at the first round boundary at or after `at`.
class SaveOnce final : public RunCheckpoints {
public:
  explicit SaveOnce(Time at) : at_(at) {}
  Time next_due() const override { return saved_ ? kTimeNever : at_; }
  void take(const Simulation &sim) override {
    StateWriter out;
    sim.save_state(out);
    state = out.take();
    saved_ = true;
  }
  std::vector<uint8_t> state;

private:
  Time at_;
  bool saved_ = false;
};

struct Prepared {
  Model model;
  std::shared_ptr<const std::vector<uint8_t>> flash;
  std::vector<uint8_t> state; // saved at the scenario's time
  Ending ending;              // of the run that saved it
};

std::unique_ptr<Cluster> boot(const Scenario &s, const Prepared &p) {
  ClusterSpec spec;
  spec.nodes = s.nodes;
  spec.console = [](uint32_t, const std::string &) {};
  return start_cluster(p.model, p.flash, spec);
}

const Prepared &prepared(size_t which) {
  static std::unique_ptr<Prepared> cache[std::size(kScenarios)];
  if (!cache[which]) {
    const Scenario &s = kScenarios[which];
    auto p = std::make_unique<Prepared>();
    p->model = load_model(s.model);
    p->flash = shipped_flash(p->model, s.image);
    std::unique_ptr<Cluster> c = boot(s, *p);
    SaveOnce saver(s.saved_at);
    c->sim.set_checkpoints(&saver);
    RunResult r = c->sim.run(s.runs_to);
    if (saver.state.empty())
      violated("fuzz_checkpoint", "the scenario ended before its checkpoint");
    p->state = std::move(saver.state);
    p->ending = ending_of(c->sim, r);
    cache[which] = std::move(p);
  }
  return *cache[which];
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzInput in(data, size);
  const size_t which = in.take<uint8_t>() % std::size(kScenarios);
  const Scenario &s = kScenarios[which];
  const Prepared &p = prepared(which);
  std::vector<uint8_t> state = p.state;
  bool edited = false;
  for (int i = 0; i < 16 && in.left() > 0 && !state.empty(); ++i) {
    const size_t at = in.take<uint32_t>() % state.size();
    const uint8_t what = in.take<uint8_t>() % 4;
    uint64_t value = in.take<uint64_t>();
    edited = true;
    if (what == 0) {
      state[at] ^= uint8_t(value);
    } else if (what == 3) {
      state.resize(at);
    } else {
      if (what == 2)
        value %= 4096;
      std::memcpy(state.data() + at, &value,
                  std::min<size_t>(8, state.size() - at));
    }
  }
  std::unique_ptr<Cluster> c = boot(s, p);
  try {
    StateReader r(state, "fuzz checkpoint");
    c->sim.load_state(r);
  } catch (const Error &) {
    return 0; // refused, with a message: what a damaged file must get
  }
  RunResult r;
  try {
    r = c->sim.run(s.runs_to);
  } catch (const Error &) {
    if (!edited)
      violated("fuzz_checkpoint", "a run resumed from an undamaged state "
                                  "stopped with an error");
    return 0; // a damaged state that loads may still stop the run cleanly
  }
  if (!edited && !(ending_of(c->sim, r) == p.ending))
    violated("fuzz_checkpoint",
             "a run resumed from an undamaged state ended otherwise");
  return 0;
}
