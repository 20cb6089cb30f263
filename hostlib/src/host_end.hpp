// The host's end of the channel to the emulator: every call of the host
// library goes through it. The layout both ends share is
// nicemu/channel_layout.hpp; the emulator's end is in emulator/host/.
#pragma once

#include "nicemu/channel_layout.hpp"

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace nicemu::channel {

// The host's end: maps the object named by the environment.
class HostEnd {
public:
  // From NICEMU_CHANNEL_FD and NICEMU_WAKE_FD; throws nicemu::Error with a
  // clear message if the program was not started by `nicemu run`, or is a
  // child forked from the program (ErrorKind::NotRun either way). Created
  // once and never destroyed (atexit handlers may still call it); the
  // descriptors become close-on-exec, so the program's own children do not
  // inherit the channel.
  static HostEnd &from_environment();
  // Works on its own duplicates of the descriptors (close-on-exec); the
  // caller keeps its own.
  HostEnd(int channel_fd, int wake_fd);
  ~HostEnd();
  HostEnd(const HostEnd &) = delete;
  HostEnd &operator=(const HostEnd &) = delete;

  // Posts `r` (stamped with the host's virtual time), wakes the emulator,
  // waits for the reply, and moves the host's clock to reply.time. Throws
  // nicemu::Error "the emulator stopped: ..." if the emulator is gone or
  // the cluster stops (Status::Shutdown). Calls from several threads take
  // turns.
  Reply call(Request r);
  // A PIO write the host does not wait for (PCI writes are posted): the
  // request goes into the control block's posted slot and the host's clock
  // moves on by the model's write cost, with no system call. The emulator
  // takes it in with the next call (which wakes it) and runs it at the
  // host's time, as if the host had waited. False, with nothing done, while
  // the previous posted write has not been taken in (then make the call).
  // The address is not checked: post only writes known to be valid. It
  // ends the lease (poll_locally): the write may wake a sleeping card,
  // which the lease counted on staying asleep.
  bool post_write(uint32_t card_addr, uint32_t value);
  // The same for a store of `size` bytes (1, 2, 4 or 8) at a host bus
  // address (DIMMnet's AOTF stores).
  bool post_write(uint32_t card_addr, uint32_t size, uint64_t value);
  // A poll of the host's own memory (a WaitWord whose word already matches)
  // answered without the emulator, under the lease the last such poll came
  // with (Reply::stable_until): the clock moves on by one poll and the poll
  // is noted for the emulator's observers. False, with nothing done, when
  // no lease covers it (then make the call).
  bool poll_locally();
  // Moves the host's clock on by `ps` with no call: work the library did
  // itself that costs virtual time (a load it answered from what the
  // emulator promised stays unchanged, Reply::stable_until).
  // In a forked child, nothing: the clock is its parent's (the child's
  // next call fails with NotRun).
  void charge(uint64_t ps) {
    if (!foreign())
      control_->host_time.fetch_add(ps);
  }
  // Posts Exit without waiting (quietly, if the emulator is already gone).
  // In a forked child, nothing: the channel is its parent's.
  void exit(int status);

  // Whether this process was forked from the one that owns the channel
  // (the one `nicemu run` started for the rank): a pthread_atfork handler
  // marks forked children, getpid() confirms. One load in the owner.
  bool foreign() const;

  uint32_t rank() const { return control_->rank; }
  uint32_t size() const { return control_->size; }
  // The node this process drives, its index there, processes per node.
  uint32_t node() const { return control_->node; }
  uint32_t local() const { return control_->local; }
  uint32_t per_node() const { return control_->per_node; }
  uint64_t time() const { return control_->host_time.load(); }
  uint8_t *arena() { return base_ + control_->arena_offset; }
  uint64_t arena_size() const { return control_->arena_size; }
  // Where the card sees arena offset 0: this process's bus window.
  uint64_t bus_base() const { return arena_bus_base(control_->local); }
  // The shared object and where the arena starts in it, for mapping arena
  // pages elsewhere in the process (hostlib/src/pinned.cpp).
  int fd() const { return fd_; }
  uint64_t arena_file_offset() const { return control_->arena_offset; }

private:
  void map(int channel_fd);
  void release() noexcept;
  void check_callable() const;
  // Throws ErrorKind::NotRun in a forked child (foreign()).
  void check_owner() const;
  void post(const Request &r);
  void wake_emulator();
  void wait_for_reply(uint32_t seen);
  bool emulator_gone() const;

  int fd_ = -1, wake_fd_ = -1;
  size_t mapped_ = 0;
  uint8_t *base_ = nullptr;
  ControlBlock *control_ = nullptr;
  int32_t parent_ = 0; // getppid() when attached
  int32_t owner_ = 0;  // getpid() when attached
  std::mutex call_mutex_;
  // The lease of the last poll that had one (0: none), and one poll's cost.
  uint64_t lease_until_ = 0, poll_cost_ = 0;
};

} // namespace nicemu::channel
