// `nicemu run --tag-output`: the host processes' stdout and stderr through
// pipes, every line prefixed by its rank as Open MPI's `mpirun
// --tag-output` does: "[1,RANK]<stdout>:" on nicemu's stdout,
// "[1,RANK]<stderr>:" on its stderr (1 is the job: a run is one job).
// A thread of its own reads the pipes, so a host never waits for the run
// loop to empty them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace nicemu {

class TaggedOutput {
public:
  // Pipes for `ranks` processes. Throws nicemu::Error if they cannot be
  // made (raises the soft limit of open files to the hard one first).
  explicit TaggedOutput(uint32_t ranks);
  ~TaggedOutput();
  TaggedOutput(const TaggedOutput &) = delete;
  TaggedOutput &operator=(const TaggedOutput &) = delete;

  // The ends rank `rank` writes to, to become its fds 1 and 2.
  int stdout_fd(uint32_t rank) const { return pipes_[rank].write[0]; }
  int stderr_fd(uint32_t rank) const { return pipes_[rank].write[1]; }
  // The rank was started (or will not be): closes our copies of its write
  // ends, so that its pipes end when it does.
  void started(uint32_t rank);
  // Starts the reading thread; call once every rank is started.
  void start();
  // The hosts have ended: reads what is left in the pipes, ends each
  // unfinished last line, stops the thread. (A process a host left behind
  // may hold a pipe open: it is not waited for.)
  void finish();

  // "[1,3]<stdout>:" for rank 3's stdout (stream 0) or stderr (1).
  static std::string tag(uint32_t rank, int stream);

private:
  struct Pipes {
    int read[2] = {-1, -1}, write[2] = {-1, -1};
    std::string partial[2]; // a line not ended yet
  };
  void run();
  bool drain(uint32_t rank, int stream); // false at the end of the pipe
  void emit(uint32_t rank, int stream, const char *data, size_t size);

  std::vector<Pipes> pipes_;
  int stop_[2] = {-1, -1}; // finish() writes a byte to stop the thread
  std::thread thread_;
};

} // namespace nicemu
