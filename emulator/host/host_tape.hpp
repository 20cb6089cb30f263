// What the host processes put into a run, kept so that the run can be
// played again without them (nicemu run --record, nicemu replay;
// docs/replay.md).
//
// A host reaches the simulation in three ways only: the requests it posts
// on its channel (with the posted writes and the polls its library answered
// under a lease before each), the bytes of its own memory that the
// emulator reads (DMA from host memory, the words a poll watches, a burst's
// data), and the end of its process. Recording keeps these per rank, in
// the order the emulator took them, with every reply the emulator gave.
// Playing posts the same requests on the same channels as the host library
// would, and puts the recorded bytes into host memory just before the
// emulator reads them; everything else runs as in the recorded run. A reply
// or a read that differs from the recording is a divergence: the replay
// stops there and says what differed.
#pragma once

#include "nicemu/channel_layout.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nicemu {

class StateReader;
class StateWriter;

namespace tape_io { // the file's fields (host_tape.cpp)
class Reader;
class Writer;
} // namespace tape_io

class HostTape {
public:
  enum class Mode { Record, Play };
  explicit HostTape(Mode mode);
  ~HostTape();
  HostTape(HostTape &&) noexcept;
  HostTape &operator=(HostTape &&) noexcept;
  Mode mode() const { return mode_; }
  bool playing() const { return mode_ == Mode::Play; }

  // Recording. A request the emulator takes in from `rank`, with what the
  // control block holds beside it then (the posted write, if one is
  // pending, and the polls answered under a lease).
  void took_request(uint32_t rank, const channel::ControlBlock &cb,
                    const channel::Request &r);
  // The end of a rank's process (a waitpid status): while the run went on
  // (by itself: an exit, a crash) or when the run's end stopped it, and
  // whether it was waiting for a reply then.
  void process_ended(uint32_t rank, int status, bool during_run, bool busy);

  // Both modes: the emulator reads `len` bytes of rank's host memory at
  // arena offset `offset` into `where`. Recording keeps them (call after
  // reading); playing puts the recorded ones there (call before reading).
  // `now`: the virtual time of the read, for a divergence's message.
  void arena_read(uint32_t rank, uint64_t now, uint64_t offset, uint8_t *where,
                  size_t len);
  // Both modes: the reply the emulator gives rank's call. Playing compares
  // it with the recorded one.
  void replied(uint32_t rank, const channel::Reply &r);

  // The TAP bridge (nicemu run --tap): what Linux put into the run. A
  // frame from Linux entered the network for `node` at `at` (recording).
  struct Frame {
    uint64_t at = 0;
    uint32_t node = 0;          // in: the node it went to
    bool left = false;          // out: whether it left for Linux
    std::vector<uint8_t> bytes; // with its FCS
  };
  void frame_in(uint64_t at, uint32_t node, const std::vector<uint8_t> &bytes);
  // Both modes: the cluster offers a frame to the outside at `at`, and
  // whether it left (recording keeps it; playing compares it with the
  // recorded one and returns whether that one left).
  bool frame_out(uint64_t at, const std::vector<uint8_t> &bytes, bool left);
  // Playing: the frames from Linux, in order, to put into the network.
  const std::vector<Frame> &frames_in() const { return frames_in_; }

  // Playing. Posts rank's next request on its channel, as the host library
  // would, if the host is ready for it (its last call was answered).
  // Returns false when the rank has nothing more to post.
  bool feed(uint32_t rank, channel::ControlBlock &cb);
  // Whether rank's process has ended in the recording by now (its requests
  // are all taken), and its status.
  bool ended(uint32_t rank, int &status) const;
  // Whether it ended by itself while the run went on, and whether in the
  // middle of a call (else after its last reply).
  bool ended_by_itself(uint32_t rank) const { return tapes_[rank].by_itself; }
  bool ended_in_call(uint32_t rank) const { return tapes_[rank].in_call; }
  // The rank's process id in the recorded run (for messages; 0: none).
  void set_pid(uint32_t rank, int pid) { tapes_[rank].pid = pid; }
  int pid(uint32_t rank) const { return tapes_[rank].pid; }
  // The first difference between the replay and the recording, or empty.
  const std::string &divergence() const { return divergence_; }
  // After a replay: the first host whose recording was not played to its
  // end (the replay ended sooner than the recorded run), or empty.
  std::string unplayed() const;

  // Files: the recording is one gzip stream (its CRC refuses a damaged
  // file): a header, a JSON manifest of the run (what the command line said
  // and what it read: the model, the flash, the topology), named blobs (the
  // files' bytes), then what the hosts did, written as it happens (so a
  // long run's recording is never held in memory), and at the end how each
  // host's process ended and a JSON trailer (how the run ended). Throws
  // nicemu::Error naming the file.
  struct Contents {
    std::string manifest; // JSON
    using Blob = std::shared_ptr<const std::vector<uint8_t>>;
    std::map<std::string, Blob> blobs; // never null
    std::string trailer;               // JSON (load fills it in)
  };
  // Recording: opens `path` and writes the run's description, before the
  // run starts; then finish() once every host has ended.
  void begin(const std::string &path, const Contents &contents);
  void finish(const std::string &trailer);
  // A tape ready to play, and the run it came from.
  static HostTape load(const std::string &path, Contents &contents);
  // The same from the stream's uncompressed bytes; `path` names them in
  // messages (fuzz/fuzz_recording.cpp).
  static HostTape parse(const std::string &data, const std::string &path,
                        Contents &contents);

  // Checkpoints of a replay: how far each rank's recording has been
  // played, and which recording it is (a checkpoint resumes only on the
  // recording it was taken from; host/host_state.cpp).
  void save_state(StateWriter &out) const;
  void load_state(StateReader &in);
  // Playing: names the recording's bytes (its size and CRC-32).
  uint64_t identity() const { return identity_; }

  uint32_t ranks() const { return uint32_t(tapes_.size()); }
  // Sets the rank count (recording: the run's; playing: must match).
  // With `per_node` ranks on each node (messages name the node).
  void set_ranks(uint32_t ranks, uint32_t per_node = 1);
  // The format version this build writes, and the oldest it reads
  // (version 3 added the TAP bridge's frames).
  static constexpr uint32_t kVersion = 3;
  static constexpr uint32_t kOldestVersion = 2;

private:
  struct Action {
    std::vector<uint64_t> local_polls; // start times
    bool posted = false;
    channel::Request posted_write;
    channel::Request request;
  };
  struct Read {
    uint64_t offset;
    uint32_t len;
    uint64_t at; // where its bytes start in `bytes`
  };
  struct RankTape {
    std::vector<Action> actions;
    std::vector<channel::Reply> replies;
    std::vector<Read> reads;
    std::vector<uint8_t> bytes;
    int status = -1; // waitpid status; -1: not known
    bool by_itself = false, in_call = false;
    int pid = 0;
    // Playing: how far each list has been played.
    size_t next_action = 0, next_reply = 0, next_read = 0;
  };
  void diverged(uint32_t rank, uint64_t at, const std::string &what);
  void diverged_outside(uint64_t at, const std::string &what);
  // Reads the hosts' records and their ends: a first pass (`into` null)
  // checks them and finds `ranks`, a second fills `into`'s tapes.
  static void read_records(tape_io::Reader &r, HostTape *into, uint32_t &ranks);

  Mode mode_;
  // Recording: the open file and its buffer (host_tape.cpp).
  std::unique_ptr<tape_io::Writer> out_;
  std::string path_;
  uint32_t per_node_ = 1;
  std::vector<RankTape> tapes_;
  std::vector<Frame> frames_in_, frames_out_;
  size_t next_frame_out_ = 0; // playing
  std::string divergence_;
  // Playing: the recording's size and CRC-32 (of its uncompressed bytes).
  uint64_t identity_ = 0;
};

} // namespace nicemu
