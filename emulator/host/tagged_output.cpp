#include "host/tagged_output.hpp"

#include "nicemu/error.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace nicemu {

namespace {

// Four more descriptors per rank (two pipes) than a run has anyway: a
// large run needs more than the usual soft limit of 1024.
void allow_open_files(uint64_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted)
    return;
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, rlim_t(wanted));
  setrlimit(RLIMIT_NOFILE, &limit);
}

void close_fd(int &fd) {
  if (fd >= 0)
    close(fd);
  fd = -1;
}

void write_all(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; // nowhere to write: the lines are lost, the run goes on
    done += size_t(n);
  }
}

} // namespace

TaggedOutput::TaggedOutput(uint32_t ranks) : pipes_(ranks) {
  allow_open_files(4ull * ranks + 4096);
  if (pipe2(stop_, O_CLOEXEC) != 0)
    throw Error(std::string("--tag-output: ") + std::strerror(errno));
  for (Pipes &p : pipes_)
    for (int s = 0; s < 2; ++s) {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0)
        throw Error(std::string("--tag-output: cannot make pipes for ") +
                    std::to_string(ranks) +
                    " host processes: " + std::strerror(errno));
      p.read[s] = fds[0];
      p.write[s] = fds[1];
      fcntl(p.read[s], F_SETFL, O_NONBLOCK);
    }
}

TaggedOutput::~TaggedOutput() {
  finish();
  for (Pipes &p : pipes_)
    for (int s = 0; s < 2; ++s) {
      close_fd(p.read[s]);
      close_fd(p.write[s]);
    }
  close_fd(stop_[0]);
  close_fd(stop_[1]);
}

std::string TaggedOutput::tag(uint32_t rank, int stream) {
  return "[1," + std::to_string(rank) + "]" +
         (stream == 0 ? "<stdout>:" : "<stderr>:");
}

void TaggedOutput::started(uint32_t rank) {
  close_fd(pipes_[rank].write[0]);
  close_fd(pipes_[rank].write[1]);
}

void TaggedOutput::start() {
  thread_ = std::thread([this] { run(); });
}

void TaggedOutput::finish() {
  if (!thread_.joinable())
    return;
  char byte = 1;
  (void)!write(stop_[1], &byte, 1);
  thread_.join();
}

void TaggedOutput::emit(uint32_t rank, int stream, const char *data,
                        size_t size) {
  std::string &partial = pipes_[rank].partial[stream];
  partial.append(data, size);
  size_t start = 0, eol;
  std::string lines;
  while ((eol = partial.find('\n', start)) != std::string::npos) {
    lines += tag(rank, stream);
    lines.append(partial, start, eol + 1 - start);
    start = eol + 1;
  }
  partial.erase(0, start);
  if (size == 0 && !partial.empty()) { // the end: the last line, ended
    lines += tag(rank, stream) + partial + "\n";
    partial.clear();
  }
  if (!lines.empty())
    write_all(stream == 0 ? STDOUT_FILENO : STDERR_FILENO, lines);
}

bool TaggedOutput::drain(uint32_t rank, int stream) {
  int &fd = pipes_[rank].read[stream];
  char buffer[4096];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      emit(rank, stream, buffer, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    emit(rank, stream, nullptr, 0); // end of the pipe (or an error)
    close_fd(fd);
    return false;
  }
}

void TaggedOutput::run() {
  std::vector<pollfd> fds;
  std::vector<std::pair<uint32_t, int>> who;
  for (;;) {
    fds.assign(1, pollfd{stop_[0], POLLIN, 0});
    who.clear();
    for (uint32_t r = 0; r < pipes_.size(); ++r)
      for (int s = 0; s < 2; ++s)
        if (pipes_[r].read[s] >= 0) {
          fds.push_back({pipes_[r].read[s], POLLIN, 0});
          who.push_back({r, s});
        }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      break;
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents)
        drain(who[i - 1].first, who[i - 1].second);
    if (fds[0].revents)
      break;
  }
  // Asked to finish: what the pipes still hold, then every unfinished line.
  for (uint32_t r = 0; r < pipes_.size(); ++r)
    for (int s = 0; s < 2; ++s)
      if (pipes_[r].read[s] >= 0 && drain(r, s))
        emit(r, s, nullptr, 0);
}

} // namespace nicemu
