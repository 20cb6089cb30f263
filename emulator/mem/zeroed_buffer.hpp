// A buffer of zeroed memory that costs nothing until it is touched: pages come
// from an anonymous mapping, so a card's 256 KiB of SRAM or a cost table that
// the firmware never reaches stay out of the resident set. Clusters of
// thousands of nodes depend on it.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace nicemu {

template <typename T> class ZeroedBuffer {
  static_assert(std::is_trivially_copyable_v<T>,
                "all-zero bytes must be a valid T");

public:
  ZeroedBuffer() = default;
  explicit ZeroedBuffer(size_t count) : count_(count) {
    if (count == 0)
      return;
    void *p = mmap(nullptr, bytes(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::bad_alloc();
    data_ = static_cast<T *>(p);
  }
  ~ZeroedBuffer() {
    if (data_)
      munmap(data_, bytes());
  }
  ZeroedBuffer(ZeroedBuffer &&o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        count_(std::exchange(o.count_, 0)) {}
  ZeroedBuffer &operator=(ZeroedBuffer &&o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    return *this;
  }

  T *data() { return data_; }
  const T *data() const { return data_; }
  size_t size() const { return count_; }
  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }
  // Back to all zeroes, giving the pages back to the system.
  void clear() {
    if (data_)
      madvise(data_, bytes(), MADV_DONTNEED);
  }

private:
  size_t bytes() const { return count_ * sizeof(T); }
  T *data_ = nullptr;
  size_t count_ = 0;
};

} // namespace nicemu
