// Pinning by remapping (pinned.hpp): pages of the program become pages of
// the arena at the same virtual addresses.
#include "pinned.hpp"

#include "host_end.hpp"
#include "nicemu/host.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace nicemu::host::pinned {

namespace {

constexpr uintptr_t kPage = 4096;

struct Span {
  uintptr_t end;      // first virtual address past the span
  uint64_t arena_off; // where its first page is in the arena
};

std::mutex mutex;
std::map<uintptr_t, Span> spans; // by first virtual address; disjoint
uint64_t moves = 0;

channel::HostEnd &end() {
  return channel::HostEnd::from_environment();
}

bool in_arena(uintptr_t a, size_t len) {
  auto base = reinterpret_cast<uintptr_t>(end().arena());
  return a >= base && len <= end().arena_size() &&
         a - base <= end().arena_size() - len;
}

uint32_t bus_of(uint64_t arena_off) {
  return uint32_t(end().bus_base() + arena_off);
}

// The span holding all of [a, b), if one does.
const std::pair<const uintptr_t, Span> *holding(uintptr_t a, uintptr_t b) {
  auto it = spans.upper_bound(a);
  if (it == spans.begin())
    return nullptr;
  --it;
  return b <= it->second.end ? &*it : nullptr;
}

// Copies the pages, then maps the arena's copy over them. Between the two,
// nothing may write the pages; if they hold the running thread's stack (a
// registered stack buffer shares pages with the frames of this very call),
// that only holds when the work runs on another stack: run_on_own_stack.
struct Remap {
  uint8_t *pages;
  uint8_t *copy; // the same pages' new home, in the arena
  size_t bytes;
  int fd;
  off_t file_offset;
  void *result;
};

// A plain word copy: the pages may hold the stack's sanitizer red zones,
// which are memory like any other here.
__attribute__((no_sanitize("address"))) void
copy_words(uint64_t *to, const uint64_t *from, size_t words) {
  for (size_t i = 0; i < words; ++i)
    to[i] = from[i];
}

Remap *current_job;

void remap() {
  Remap &j = *current_job;
  copy_words(reinterpret_cast<uint64_t *>(j.copy),
             reinterpret_cast<const uint64_t *>(j.pages), j.bytes / 8);
  j.result = mmap(j.pages, j.bytes, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_FIXED, j.fd, j.file_offset);
}

// Runs remap() on a stack of its own (swapcontext), so the program's stack
// stays still from the copy to the mapping.
void run_on_own_stack(Remap &job) {
  constexpr size_t kStack = 64 * 1024;
  static ucontext_t caller, worker;
  static std::vector<uint8_t> stack(kStack);
  current_job = &job;
  getcontext(&worker);
  worker.uc_stack.ss_sp = stack.data();
  worker.uc_stack.ss_size = stack.size();
  worker.uc_link = &caller;
  makecontext(&worker, remap, 0);
  if (swapcontext(&caller, &worker) != 0)
    throw Error(std::string("nicemu: cannot pin memory for the card: "
                            "swapcontext: ") +
                std::strerror(errno));
}

} // namespace

uint32_t lookup(const void *p, size_t len) {
  auto a = reinterpret_cast<uintptr_t>(p);
  if (in_arena(a, len))
    return bus_of(a - reinterpret_cast<uintptr_t>(end().arena()));
  std::lock_guard lock(mutex);
  if (auto *s = holding(a, a + len))
    return bus_of(s->second.arena_off + (a - s->first));
  return 0;
}

uint32_t pin(const void *p, size_t len) {
  if (uint32_t bus = lookup(p, len))
    return bus;
  auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(mutex);
  uintptr_t first = a & ~(kPage - 1);
  uintptr_t last = (a + len + kPage - 1) & ~(kPage - 1);
  // Grow the range over every span it touches: they are pinned afresh
  // together, contiguously.
  std::vector<uintptr_t> merged;
  for (auto it = spans.begin(); it != spans.end(); ++it)
    if (it->first < last && it->second.end > first) {
      first = std::min(first, it->first);
      last = std::max(last, it->second.end);
      merged.push_back(it->first);
    }
  size_t bytes = last - first;
  // Page-aligned arena memory (alloc aligns to 64 bytes).
  auto *raw = static_cast<uint8_t *>(alloc(bytes + kPage));
  auto *arena = end().arena();
  uint64_t off = uint64_t(raw - arena);
  off = (off + kPage - 1) & ~uint64_t(kPage - 1);
  Remap job{
      reinterpret_cast<uint8_t *>(first),     arena + off, bytes, end().fd(),
      off_t(end().arena_file_offset() + off), nullptr};
  run_on_own_stack(job);
  if (job.result == MAP_FAILED)
    throw Error(std::string("nicemu: cannot pin memory for the card: mmap: ") +
                std::strerror(errno));
  for (uintptr_t m : merged)
    spans.erase(m);
  spans[first] = Span{last, off};
  if (!merged.empty())
    ++moves;
  return bus_of(off + (a - first));
}

uint64_t epoch() {
  std::lock_guard lock(mutex);
  return moves;
}

} // namespace nicemu::host::pinned
