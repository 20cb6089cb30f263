// The ranks of a spread run over MPI (Open MPI from Debian): the one
// RankLink of a real job. Starts MPI when made and ends it when gone; a
// rank that has had no word for two minutes, or that fails, ends the whole
// job (MPI_Abort) after saying why, so that no rank hangs.
#pragma once

#include "dist/rank_link.hpp"

#include <string>

namespace nicemu {

class MpiLink final : public RankLink {
public:
  MpiLink();
  ~MpiLink() override;
  MpiLink(const MpiLink &) = delete;
  MpiLink &operator=(const MpiLink &) = delete;

  uint32_t rank() const override { return rank_; }
  uint32_t ranks() const override { return ranks_; }
  void tell_others(const std::vector<uint8_t> &bytes) override;
  std::vector<uint8_t> receive(uint32_t from) override;
  std::vector<std::vector<uint8_t>>
  exchange(const std::vector<uint8_t> &mine) override;

  // Prints `why` (prefixed with the rank) and ends every rank with `code`.
  [[noreturn]] void abort(const std::string &why, int code = 1);

private:
  uint32_t rank_ = 0, ranks_ = 1;
};

} // namespace nicemu
