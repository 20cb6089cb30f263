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

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace nicemu {

// A fresh mapping may reuse the addresses of the stack a posix_spawn child
// ran on (it shares our memory until it execs), whose shadow
// AddressSanitizer may still mark as a stack's: nothing in a fresh mapping
// is poisoned, so say so.
inline void fresh_mapping(void *p, size_t bytes) {
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

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
    fresh_mapping(p, bytes());
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
