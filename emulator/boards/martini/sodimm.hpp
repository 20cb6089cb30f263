// One of Martini's two SO-DIMM banks: memory that FET bus switches connect
// either to the host (its loads and stores reach it) or to the card (PUSH
// and PULL reach it), never both. Backed sparsely: a 4 KiB page exists
// once written, so a 256 MiB bank costs only what is used.
#pragma once

#include "nicemu/martini.h"

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace nicemu {
class StateReader;
class StateWriter;
} // namespace nicemu

namespace nicemu::martini {

class SodimmBank {
public:
  explicit SodimmBank(uint64_t bytes) : bytes_(bytes) {}

  uint64_t bytes() const { return bytes_; }
  uint32_t side() const { return side_; }
  void switch_to(uint32_t side) { side_ = side; }
  bool faces_host() const { return side_ == NICEMU_MARTINI_SIDE_HOST; }

  // False (nothing done) for a range past the bank.
  bool read(uint64_t offset, void *out, uint64_t len) const;
  bool write(uint64_t offset, const void *in, uint64_t len);

  // Checkpoints: the side, and the pages written, in page order.
  void save_state(StateWriter &out) const;
  void load_state(StateReader &in);

private:
  static constexpr uint64_t kPage = 4096;
  uint64_t bytes_;
  uint32_t side_ = NICEMU_MARTINI_SIDE_HOST;
  std::unordered_map<uint64_t, std::unique_ptr<std::array<uint8_t, kPage>>>
      pages_;
};

} // namespace nicemu::martini
