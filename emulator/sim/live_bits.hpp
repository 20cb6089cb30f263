// Sets of things (nodes, hosts) kept as bitmaps, one bit per index, and
// visited in index order by a loop that tolerates change: each word is read
// again after every call, so a bit set during the visit above the last
// index visited is visited too, and a bit cleared before its turn is not.
// That is what a scan of every index that skips the unset ones would do,
// at the cost of the set bits only.
#pragma once

#include <cstdint>
#include <vector>

namespace nicemu {

// Calls f(index) for each set bit of `words` (bit i of word w: index
// 64 w + i), in increasing order, as above. `words` must not be resized
// meanwhile.
template <class F>
void for_each_live_bit(const std::vector<uint64_t> &words, F f) {
  for (size_t w = 0; w < words.size(); ++w) {
    uint64_t visited = 0; // this word's bits up to the last index visited
    for (;;) {
      uint64_t bits = words[w] & ~visited;
      if (!bits)
        break;
      unsigned i = unsigned(__builtin_ctzll(bits));
      visited = i == 63 ? ~uint64_t(0) : (uint64_t(2) << i) - 1;
      f(w * 64 + i);
    }
  }
}

} // namespace nicemu
