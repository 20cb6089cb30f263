// How the ranks of a spread run reach each other: over MPI in a real job,
// through memory between threads in the tests (tests/support/
// local_ranks.hpp). Messages between two ranks arrive in the order they
// were sent.
#pragma once

#include <cstdint>
#include <vector>

namespace nicemu {

class RankLink {
public:
  virtual ~RankLink() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t ranks() const = 0;
  // To every other rank.
  virtual void tell_others(const std::vector<uint8_t> &bytes) = 0;
  // The next message from rank `from`; waits for it. A rank that waits too
  // long (the ranks went different ways) stops the job with a message.
  virtual std::vector<uint8_t> receive(uint32_t from) = 0;
  // A collective: every rank's bytes, by rank.
  virtual std::vector<std::vector<uint8_t>>
  exchange(const std::vector<uint8_t> &mine) = 0;
};

} // namespace nicemu
