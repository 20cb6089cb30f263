// The peak resident memory of this process (VmHWM), for `nicemu bench niam`.
// Read by the program itself: the emulator cannot ask the kernel for it once
// the process has exited, and a child's ru_maxrss also counts the memory of
// the emulator it was forked from.
#pragma once

#include <cstdio>

inline long peak_rss_kib() {
  std::FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    return 0;
  char line[256];
  long kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1)
      break;
  std::fclose(f);
  return kib;
}
