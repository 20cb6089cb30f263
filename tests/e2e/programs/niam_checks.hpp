// The check the NI-AM test programs (niam_barrier.cpp, niam_bcopy.cpp,
// niam_lossy.cpp) share: a failed expectation prints the rank, what and the
// values, and is counted; the program prints its verdict at the end.
#pragma once

#include <nicemu/host.hpp>

#include <cstdio>

inline int failures = 0;

inline void expect(bool ok, const char *what, long got, long want) {
  if (ok)
    return;
  ++failures;
  std::printf("rank %u: %s: got %ld, want %ld\n", nicemu::host::rank(), what,
              got, want);
  // Seen even if the run then stalls and the cluster kills this process.
  std::fflush(stdout);
}
