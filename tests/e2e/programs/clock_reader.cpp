// Reads the clocks a third-party benchmark would read; under `nicemu run`
// they must show virtual time (50 ns per read on lanai4), outside it the
// real clocks.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sys/time.h>

int main() {
  timespec first{}, last{};
  clock_gettime(CLOCK_MONOTONIC, &first);
  for (int i = 0; i < 999; ++i)
    clock_gettime(CLOCK_MONOTONIC, &last);
  auto steady = std::chrono::steady_clock::now().time_since_epoch();
  timeval tv{};
  gettimeofday(&tv, nullptr);
  std::printf("monotonic first %ld ns, after 1000 reads %ld ns\n",
              long(first.tv_sec * 1'000'000'000L + first.tv_nsec),
              long(last.tv_sec * 1'000'000'000L + last.tv_nsec));
  std::printf(
      "steady_clock %lld ns\n",
      (long long)std::chrono::duration_cast<std::chrono::nanoseconds>(steady)
          .count());
  std::printf("gettimeofday %ld s %ld us\n", long(tv.tv_sec), long(tv.tv_usec));
  return 0;
}
