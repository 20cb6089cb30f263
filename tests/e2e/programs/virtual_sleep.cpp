// Sleeps pass virtual time (the clock shim; docs/compatibility.md, "Time"):
//   virtual_sleep calls    each sleeping call, and the virtual time it took
//   virtual_sleep wait     rank 1 waits for a word rank 0's NIC writes into
//                          its memory, sleeping between looks (2 nodes,
//                          niam firmware)
#include <nicemu/host.hpp>

#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

double now_us() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) * 1e6 + double(t.tv_nsec) / 1e3;
}

template <typename Fn> void timed(const char *what, Fn fn) {
  double start = now_us();
  int result = fn();
  std::printf("%s: %.3f us, returned %d\n", what, now_us() - start, result);
}

void calls() {
  timed("usleep 250", [] { return usleep(250); });
  timed("nanosleep 1500", [] {
    timespec t{0, 1'500'000};
    return nanosleep(&t, nullptr);
  });
  timed("sleep 2000000", [] { return int(sleep(2)); });
  timed("clock_nanosleep 700", [] {
    timespec t{0, 700'000};
    return clock_nanosleep(CLOCK_MONOTONIC, 0, &t, nullptr);
  });
  timed("clock_nanosleep until +900", [] {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_nsec += 900'000;
    if (t.tv_nsec >= 1'000'000'000) {
      t.tv_nsec -= 1'000'000'000;
      ++t.tv_sec;
    }
    return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr);
  });
  timed("select 300", [] {
    timeval tv{0, 300};
    return select(0, nullptr, nullptr, nullptr, &tv);
  });
  timed("poll 7000", [] { return poll(nullptr, 0, 7); });
  timed("epoll_wait 5000", [] {
    int ep = epoll_create1(0);
    epoll_event ev[1];
    int n = epoll_wait(ep, ev, 1, 5);
    close(ep);
    return n;
  });
  timespec bad{0, 2'000'000'000};
  std::printf("nanosleep of a bad time: %d\n", nanosleep(&bad, nullptr));
}

void wait() {
  using namespace nicemu::host;
  auto *flag = static_cast<volatile uint32_t *>(am_alloc(4096));
  auto *data = static_cast<uint32_t *>(am_alloc(4096));
  barrier();
  double start = now_us();
  if (rank() == 0) {
    compute(50'000'000); // 50 us
    bcopy_notify(0, data, 1, data, 64, flag, 7);
    nicemu::host::sync();
  } else {
    int looks = 0;
    while (*flag != 7) { // the program's own memory, between sleeps
      usleep(5);
      ++looks;
    }
    std::printf("woke %.3f us after the barrier, after %d looks\n",
                now_us() - start, looks);
  }
  barrier();
}

} // namespace

int main(int argc, char **argv) {
  nicemu::host::rank(); // talks to the emulator: sleeps go through it
  if (argc > 1 && std::strcmp(argv[1], "wait") == 0)
    wait();
  else
    calls();
  return 0;
}
