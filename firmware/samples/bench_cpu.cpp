// bench_cpu: CPU-bound kernels for measuring the emulator itself. No device
// is touched before the final exit, so the same image can also run on bare
// Unicorn, stopped at the address of nicemu_exit.
//   bench_kernel = 0: bench_checksum, the Internet checksum (RFC 1071) of a
//                     64 KiB buffer, bench_iterations times;
//   bench_kernel = 1: bench_calls, a naive recursive Fibonacci (many small
//                     calls), bench_iterations times;
//   bench_kernel = 2: bench_checksum_words, the same checksum the way NIC
//                     firmware writes it: 32-bit loads, loop unrolled by 8
//                     (long basic blocks). Same result as kernel 0.
// A harness may patch both globals in memory before the run.
// Expect: no output; exit code = the kernel's result & 0x7f, the same on
// every run with the same settings.
#include "nicemu/fw.hpp"

// In .data even when zero: the startup code clears .bss, which would undo
// a harness's patch made before the core starts.
extern "C" {
[[gnu::section(".data.bench")]] volatile uint32_t bench_kernel = 0;
[[gnu::section(".data.bench")]] volatile uint32_t bench_iterations = 4;
}

constexpr size_t kBufferBytes = 64 * 1024;

struct alignas(4) BenchBuffer {
  uint16_t words[kBufferBytes / 2];
};

// Filled by the compiler (a 32-bit LCG), so the image carries the data and
// no start-up time is spent making it.
constexpr BenchBuffer make_buffer() {
  BenchBuffer buffer{};
  uint32_t state = 0x2545F491;
  for (uint16_t &word : buffer.words) {
    state = state * 1664525u + 1013904223u;
    word = static_cast<uint16_t>(state >> 16);
  }
  return buffer;
}

// Not const and not internal: the optimizer must not fold the checksum of
// data it can see.
extern "C" constinit BenchBuffer bench_buffer = make_buffer();

namespace {

// RFC 1071: the ones' complement of the ones' complement sum of 16-bit
// words. The sum is byte-order independent, so the words are summed as the
// core loads them.
__attribute__((noinline)) uint16_t internet_checksum(const uint16_t *words,
                                                     size_t count) {
  uint32_t sum = 0;
  for (size_t i = 0; i < count; ++i)
    sum += words[i];
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// The same sum from 32-bit loads: both halves of each word go into a 32-bit
// accumulator, which cannot overflow for 64 KiB (32 Ki halfwords of at most
// 0xFFFF), and the loop is unrolled as production checksum code is.
__attribute__((noinline)) uint16_t internet_checksum_words(const uint32_t *w,
                                                           size_t count) {
  uint32_t sum = 0;
#pragma clang loop unroll_count(8)
  for (size_t i = 0; i < count; ++i)
    sum += (w[i] & 0xFFFF) + (w[i] >> 16);
  while (sum >> 16)
    sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

__attribute__((noinline)) uint32_t fibonacci(uint32_t n) {
  return n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2);
}

} // namespace

extern "C" __attribute__((noinline)) uint32_t
bench_checksum(uint32_t iterations) {
  uint32_t result = 0;
  for (uint32_t i = 0; i < iterations; ++i) {
    // The buffer "may have changed": every iteration really reads it.
    asm volatile("" ::: "memory");
    result += internet_checksum(bench_buffer.words, kBufferBytes / 2);
  }
  return result;
}

extern "C" __attribute__((noinline)) uint32_t
bench_checksum_words(uint32_t iterations) {
  uint32_t result = 0;
  for (uint32_t i = 0; i < iterations; ++i) {
    asm volatile("" ::: "memory");
    result += internet_checksum_words(
        reinterpret_cast<const uint32_t *>(bench_buffer.words),
        kBufferBytes / 4);
  }
  return result;
}

extern "C" __attribute__((noinline)) uint32_t bench_calls(uint32_t iterations) {
  uint32_t result = 0;
  for (uint32_t i = 0; i < iterations; ++i)
    result += fibonacci(18 + (i & 1)); // 8361 or 13529 calls
  return result;
}

int main() {
  uint32_t iterations = bench_iterations;
  uint32_t result = bench_kernel == 0   ? bench_checksum(iterations)
                    : bench_kernel == 2 ? bench_checksum_words(iterations)
                                        : bench_calls(iterations);
  nicemu::fw::exit(static_cast<int>(result & 0x7F));
}
