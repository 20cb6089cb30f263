// Ranks as threads of one process, for tests of a run spread over ranks
// (dist/rank_link.hpp): messages through memory, in order between each
// pair, and a collective that waits for every rank. A rank that waits 60 s
// for a word throws instead of hanging the test.
#pragma once

#include "dist/rank_link.hpp"
#include "nicemu/error.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace local_ranks {

using Bytes = std::vector<uint8_t>;

class LocalRanks {
public:
  explicit LocalRanks(uint32_t ranks) : ranks_(ranks), slots_(ranks) {
    for (uint32_t r = 0; r < ranks; ++r)
      links_.push_back(std::make_unique<Link>(*this, r));
  }
  nicemu::RankLink &link(uint32_t rank) { return *links_.at(rank); }

private:
  struct Link final : nicemu::RankLink {
    Link(LocalRanks &all, uint32_t rank) : all(all), me(rank) {}
    uint32_t rank() const override { return me; }
    uint32_t ranks() const override { return all.ranks_; }
    void tell_others(const Bytes &bytes) override {
      std::lock_guard lock(all.m_);
      for (uint32_t r = 0; r < all.ranks_; ++r)
        if (r != me)
          all.boxes_[{me, r}].push_back(bytes);
      all.cv_.notify_all();
    }
    Bytes receive(uint32_t from) override {
      std::unique_lock lock(all.m_);
      auto &box = all.boxes_[{from, me}];
      if (!all.cv_.wait_for(lock, std::chrono::seconds(60),
                            [&] { return !box.empty(); }))
        throw nicemu::Error("rank " + std::to_string(me) +
                            ": no word from rank " + std::to_string(from) +
                            " for 60 s");
      Bytes b = std::move(box.front());
      box.pop_front();
      return b;
    }
    std::vector<Bytes> exchange(const Bytes &mine) override {
      std::unique_lock lock(all.m_);
      all.slots_[me] = mine;
      const uint64_t generation = all.generation_;
      if (++all.arrived_ == all.ranks_) {
        all.results_ = all.slots_;
        all.arrived_ = 0;
        ++all.generation_;
        all.cv_.notify_all();
      } else if (!all.cv_.wait_for(lock, std::chrono::seconds(60), [&] {
                   return all.generation_ != generation;
                 })) {
        throw nicemu::Error("rank " + std::to_string(me) +
                            ": the others did not come to the collective "
                            "for 60 s");
      }
      return all.results_;
    }
    LocalRanks &all;
    uint32_t me;
  };

  uint32_t ranks_;
  std::mutex m_;
  std::condition_variable cv_;
  std::map<std::pair<uint32_t, uint32_t>, std::deque<Bytes>> boxes_;
  std::vector<Bytes> slots_, results_;
  uint32_t arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::unique_ptr<Link>> links_;
};

} // namespace local_ranks
