// Checkpoints of a deterministic run held in memory, as frozen copies of
// the process (fork): for reverse execution under a debugger
// (docs/replay.md, "Reverse debugging").
//
// A run without live host processes (a replay, or firmware alone) is a
// function of its inputs, so any earlier moment of it can be had again by
// starting from an earlier state and running forward. A checkpoint is such
// a state: the process forks between two rounds of slices; one copy goes
// on, the other waits, frozen, with every core, memory, device, packet in
// flight and pending event exactly as they were. Going back resumes a
// checkpoint: it forks again (so it stays available), its new copy runs
// forward to the wanted instruction and becomes the process the debugger
// talks to, and the copy that asked ends. Everything is shared through the
// debugger's connection, standard output and error, which every copy
// inherits.
//
// The process the shell started is the first checkpoint and stays frozen
// until the session ends: it then exits with the run's exit code (end()),
// so that scripts and terminals see one process from start to end. A
// SIGINT or SIGTERM sent to it alone (not by the terminal, which signals
// every copy) is passed on to the running copy; the frozen copies ignore
// both. A copy that dies unexpectedly ends the session with 128 + its
// signal.
#pragma once

#include "sim/time.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nicemu {

class ForkCheckpoints {
public:
  // Most checkpoints kept; then every other one is let go and the interval
  // doubles.
  static constexpr size_t kMaxCheckpoints = 256;
  // Largest request a resumed copy can be given.
  static constexpr size_t kMaxRequest = 256 * 1024;

  // For a run of `nodes` cores, a checkpoint every `interval` of virtual
  // time. Throws nicemu::Error if the shared table cannot be made.
  ForkCheckpoints(size_t nodes, Time interval);
  ~ForkCheckpoints();
  ForkCheckpoints(const ForkCheckpoints &) = delete;
  ForkCheckpoints &operator=(const ForkCheckpoints &) = delete;

  struct Info {
    Time time = 0;                  // the scheduler's
    std::vector<uint64_t> executed; // instructions each core had executed
    uint64_t tag = 0;               // which debugger connection it can serve
  };

  // Whether a checkpoint is due at virtual time `now`: none yet, or
  // `interval` since the latest (a stretch run again after going back has
  // its checkpoints already).
  bool due(Time now) const;
  // Takes one here (the process must have one thread, its output flushed).
  // Returns nothing in the copy that goes on; in a copy resumed later by
  // restore(), returns the request it was resumed with.
  std::optional<std::string> take(const Info &info);
  size_t size() const;
  Info info(size_t index) const;
  // The latest checkpoint (in virtual time, before `before`) at which
  // every core n had executed at most bound[n] instructions; none if none.
  // Only checkpoints taken with `tag` count.
  std::optional<size_t> find(std::span<const uint64_t> bound, uint64_t tag,
                             Time before = kTimeNever) const;
  // The oldest with `tag`.
  std::optional<size_t> earliest(uint64_t tag) const;
  // Resumes checkpoint `index` with `request` (at most kMaxRequest bytes);
  // this process ends. Throws nicemu::Error (and goes on) if it cannot.
  [[noreturn]] void restore(size_t index, const std::string &request);
  // The session ends with `exit_code`: the first process exits with it
  // once this one has (its output flushed), and every checkpoint goes.
  void end(int exit_code);
  // Whether the first process is gone (killed): the run should end.
  bool orphaned() const;

  // What checkpoints cost, for `monitor checkpoints` and nicemu bench
  // replay: wall seconds a take() held the run (the fork), and from a
  // restore() to the resumed copy running.
  struct Costs {
    uint64_t taken = 0;
    double take_seconds = 0; // all takes together
    double last_take = 0, last_restore = 0;
    Time interval = 0;
  };
  Costs costs() const;

private:
  struct Shared;
  struct Slot;
  Slot &slot(size_t index) const;
  uint64_t *executed_of(size_t index) const;
  std::optional<std::string> wait_frozen(size_t index);
  void thin_out();

  size_t nodes_;
  size_t bytes_ = 0;
  Shared *shared_ = nullptr;
};

} // namespace nicemu
