// The emulator's end of the channel to one host process (the layout both
// ends share is nicemu/channel_layout.hpp; the host's end is in the host
// library, hostlib/src/host_end.hpp), and the wake pipe the hosts write to.
#pragma once

#include "nicemu/channel_layout.hpp"

#include <cstddef>
#include <cstdint>

namespace nicemu {
class StateReader;
class StateWriter;
} // namespace nicemu

namespace nicemu::channel {

// The emulator's end: creates the object, keeps it mapped.
class EmulatorEnd {
public:
  // Creates a channel for `rank` of `size` with an arena of `arena_bytes`.
  // Throws nicemu::Error on failure.
  // With `per_node` processes on each node, rank r drives node r /
  // per_node.
  EmulatorEnd(uint32_t rank, uint32_t size, uint64_t arena_bytes,
              uint32_t per_node = 1);
  ~EmulatorEnd();
  EmulatorEnd(const EmulatorEnd &) = delete;
  EmulatorEnd &operator=(const EmulatorEnd &) = delete;

  // The descriptor a child inherits (not close-on-exec).
  int fd() const { return fd_; }
  // No process will share this channel (a replay): its memory becomes the
  // emulator's own, so that copies of the emulator's process (checkpoints,
  // debug/fork_checkpoints.hpp) do not share it. Before the first request:
  // the arena must still be untouched.
  void make_private();
  ControlBlock &control() { return *control_; }
  // Arena place and size as the emulator created them: the host can write
  // the control block, so the emulator never trusts the copies in it.
  uint8_t *arena() { return base_ + arena_offset_; }
  uint64_t arena_size() const { return arena_size_; }
  // Where the card's DMA engines see arena offset 0 (arena_bus_base of the
  // process's place on its node).
  uint64_t bus_base() const { return bus_base_; }

  // True and the request if one is posted and not yet answered (Exit
  // included: it stays pending until replied to, and nobody waits for that
  // reply).
  bool pending(Request &out) const;
  // Answers the request pending() returned and wakes the host.
  void reply(const Reply &r);
  // True and the write if the host posted one not taken in yet. A caller
  // that also takes requests must call pending() first: a request the host
  // made after a posted write is then never seen before that write.
  bool take_posted(Request &out);
  // What a posted write costs the host (its clock moves on by this much).
  void set_posted_write_cost(uint64_t ps) { control_->posted_write_ps = ps; }
  // Tells the host whether the emulator sleeps on the wake pipe (it then
  // writes the wake byte after posting a request). seq_cst: see
  // HostGroup::wait.
  void set_emulator_sleeping(bool sleeping) {
    control_->emulator_sleeping.store(sleeping ? 1 : 0);
  }
  // The cluster stops: the host's call in progress and all later ones throw
  // nicemu::Error. Also done by the destructor.
  void shutdown();

  // Checkpoints of a replay (after make_private): what the control block
  // holds that changes, and the arena's pages that are not all zero
  // (host/host_state.cpp).
  void save_state(StateWriter &out) const;
  void load_state(StateReader &in);

  // Registration table, for the NIC's view of host memory (bus addresses).
  bool registered(uint64_t bus_addr, size_t len) const;
  Status add_region(uint64_t offset, uint64_t length);
  Status remove_region(uint64_t offset);

private:
  void release() noexcept;

  int fd_ = -1;
  size_t mapped_ = 0;
  uint8_t *base_ = nullptr;
  ControlBlock *control_ = nullptr;
  uint64_t arena_offset_ = 0, arena_size_ = 0;
  uint64_t bus_base_ = kArenaBusBase;
  uint32_t answered_seq_ = 0; // request_seq of the last request answered
};

// The "wake pipe" every host writes one byte into after posting a request,
// so the emulator can sleep until some host needs it: a Unix socket pair
// (one send() per wake, without SIGPIPE). The write end is inherited by
// children; the emulator reads.
struct WakePipe {
  int read_fd = -1, write_fd = -1;
  WakePipe(); // throws nicemu::Error; both ends non-blocking
  ~WakePipe();
  WakePipe(const WakePipe &) = delete;
  WakePipe &operator=(const WakePipe &) = delete;
  // Blocks until at least one byte is there (or `timeout_ms` passes; -1:
  // forever), then drains it. Returns false on timeout.
  bool wait(int timeout_ms);
  // Writes one byte; a full pipe means a wake is already pending.
  void wake();
};

} // namespace nicemu::channel
