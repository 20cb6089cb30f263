// What the main of every bench host program does around its work: the host
// library throws nicemu::host::Error when a call cannot be made (a bad
// argument, or the cluster stopping because another rank failed); say why
// and exit 1, rather than abort.
#pragma once

#include <nicemu/host.hpp>

#include <cstdio>
#include <cstdlib>

template <class Work> int guarded_main(Work work) {
  try {
    return work();
  } catch (const nicemu::host::Error &e) {
    const char *rank = std::getenv("NICEMU_RANK"); // the library may be gone
    std::fprintf(stderr, "rank %s: %s\n", rank ? rank : "?", e.what());
    return 1;
  }
}
