#include "dist/mpi_link.hpp"

#include "nicemu/error.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace nicemu {

namespace {

constexpr int kTag = 1;
// Ranks in step answer each other within a round's work; this long without
// a word means they went different ways, or one of them is gone.
constexpr auto kPatience = std::chrono::seconds(120);
constexpr uint32_t kCollective = UINT32_MAX; // Patience: not one rank

// Waiting for another rank: Open MPI's blocking calls spin on the core,
// which the host processes of this machine need (a rank usually waits for
// one of them). So waits poll, yield the core, and after a while of
// yielding also sleep a little between polls.
class Patience {
public:
  explicit Patience(MpiLink &link, uint32_t from)
      : link_(link), from_(from), start_(std::chrono::steady_clock::now()) {}
  void again() {
    if (++turns_ < 16)
      return;
    auto waited = std::chrono::steady_clock::now() - start_;
    if (waited > kPatience)
      link_.abort(from_ == kCollective
                      ? "the other ranks did not all come to a collective "
                        "for two minutes: the ranks went different ways, or "
                        "one is stuck"
                      : "no word from rank " + std::to_string(from_) +
                            " for two minutes: the ranks went different "
                            "ways, or rank " +
                            std::to_string(from_) + " is stuck");
    if (waited < std::chrono::milliseconds(1))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

private:
  MpiLink &link_;
  uint32_t from_;
  std::chrono::steady_clock::time_point start_;
  uint32_t turns_ = 0;
};

void wait_for(MpiLink &link, MPI_Request &request, uint32_t from) {
  Patience patience(link, from);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    patience.again();
  }
}

} // namespace

MpiLink::MpiLink() {
  int provided = 0;
  // Only the run loop's thread calls MPI; the cores' workers never do.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rank_ = uint32_t(rank);
  ranks_ = uint32_t(size);
}

MpiLink::~MpiLink() {
  MPI_Finalize();
}

void MpiLink::abort(const std::string &why, int code) {
  std::fprintf(stderr, "nicemu: rank %u: %s\n", rank_, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return
}

void MpiLink::tell_others(const std::vector<uint8_t> &bytes) {
  for (uint32_t r = 0; r < ranks_; ++r)
    if (r != rank_)
      MPI_Send(bytes.data(), int(bytes.size()), MPI_BYTE, int(r), kTag,
               MPI_COMM_WORLD);
}

std::vector<uint8_t> MpiLink::receive(uint32_t from) {
  MPI_Status status;
  Patience patience(*this, from);
  for (int arrived = 0;;) {
    MPI_Iprobe(int(from), kTag, MPI_COMM_WORLD, &arrived, &status);
    if (arrived)
      break;
    patience.again();
  }
  int size = 0;
  MPI_Get_count(&status, MPI_BYTE, &size);
  std::vector<uint8_t> bytes(size_t(size) + 1); // never a null data()
  MPI_Recv(bytes.data(), size, MPI_BYTE, int(from), kTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  bytes.resize(size_t(size));
  return bytes;
}

// One collective when every rank's bytes fit a slot (nearly every round:
// the figures, a few calls and console lines), a second for the rest of
// those that do not. Each slot starts with its rank's full size, so every
// rank knows alike whether the second is needed.
std::vector<std::vector<uint8_t>>
MpiLink::exchange(const std::vector<uint8_t> &mine) {
  constexpr size_t kSlot = 2048, kHead = sizeof(uint32_t);
  constexpr size_t kFirst = kSlot - kHead; // bytes that go in the slot
  std::vector<uint8_t> slot(kSlot), slots(kSlot * ranks_);
  uint32_t size = uint32_t(mine.size());
  std::memcpy(slot.data(), &size, kHead);
  std::memcpy(slot.data() + kHead, mine.data(), std::min(mine.size(), kFirst));
  MPI_Request request;
  MPI_Iallgather(slot.data(), int(kSlot), MPI_BYTE, slots.data(), int(kSlot),
                 MPI_BYTE, MPI_COMM_WORLD, &request);
  wait_for(*this, request, kCollective);
  std::vector<std::vector<uint8_t>> out(ranks_);
  std::vector<int> rest(ranks_), offsets(ranks_);
  int total = 0;
  for (uint32_t r = 0; r < ranks_; ++r) {
    const uint8_t *theirs = slots.data() + size_t(r) * kSlot;
    uint32_t their_size = 0;
    std::memcpy(&their_size, theirs, kHead);
    out[r].assign(theirs + kHead,
                  theirs + kHead + std::min<size_t>(their_size, kFirst));
    rest[r] = int(their_size - out[r].size());
    offsets[r] = total;
    total += rest[r];
  }
  if (total == 0)
    return out;
  std::vector<uint8_t> all(static_cast<size_t>(total));
  MPI_Iallgatherv(mine.data() + std::min(mine.size(), kFirst), rest[rank_],
                  MPI_BYTE, all.data(), rest.data(), offsets.data(), MPI_BYTE,
                  MPI_COMM_WORLD, &request);
  wait_for(*this, request, kCollective);
  for (uint32_t r = 0; r < ranks_; ++r)
    out[r].insert(out[r].end(), all.begin() + offsets[r],
                  all.begin() + offsets[r] + rest[r]);
  return out;
}

} // namespace nicemu
