#include "mem/zeroed_buffer.hpp"

#include <doctest/doctest.h>

#include <cstdint>

using nicemu::ZeroedBuffer;

TEST_CASE("a zeroed buffer reads as zeroes, keeps writes, and clears") {
  ZeroedBuffer<uint32_t> b(1 << 16);
  REQUIRE(b.size() == 1 << 16);
  CHECK(b[0] == 0);
  CHECK(b[12345] == 0);
  b[12345] = 77;
  CHECK(b[12345] == 77);
  ZeroedBuffer<uint32_t> moved = std::move(b);
  CHECK(b.size() == 0);
  CHECK(moved[12345] == 77);
  moved.clear();
  CHECK(moved[12345] == 0);
}
