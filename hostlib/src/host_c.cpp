// The C API (nicemu/host.h) on top of the C++ one: every call runs the C++
// call inside a guard that turns exceptions into a status code and a
// message, so nothing is ever thrown across the C boundary.
#include "nicemu/host.h"
#include "nicemu/host.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

namespace host = nicemu::host;

namespace {

// A fixed buffer, not a std::string: recording a failure must not itself
// allocate (and possibly throw) while the library is already failing.
thread_local char last_error[512];

int fail(const char *function, int status, const char *message) noexcept {
  // The C++ messages start with "nicemu: "; the C function's name says it.
  if (std::strncmp(message, "nicemu: ", 8) == 0)
    message += 8;
  std::snprintf(last_error, sizeof last_error, "%s: %s", function, message);
  // Hints name C++ calls ("use nicemu::host::alloc"): give the C names.
  static constexpr char cxx[] = "nicemu::host::";
  while (char *at = std::strstr(last_error, cxx)) {
    char *rest = at + sizeof cxx - 1;
    at[6] = '_'; // "nicemu::host::alloc" -> "nicemu_alloc"
    std::memmove(at + 7, rest, std::strlen(rest) + 1);
  }
  return status;
}

bool has(const char *text, const char *part) {
  return std::strstr(text, part) != nullptr;
}

// host::Error carries only a message, so the status code is read from it.
// The phrases come from host.cpp, am.cpp and the channel
// (host_end.cpp); tests/e2e/programs/c_api.c checks each code
// it can provoke, so a reworded message shows up there. A message with none
// of them gets the call's `fallback`: the transfers, for instance, throw
// only for bad arguments.
int classify(const char *message, int fallback) {
  if (has(message, "the emulator stopped") ||
      has(message, "the cluster is stopping") || has(message, "(status -4)"))
    return NICEMU_ESTOPPED;
  // Opening the channel: the environment `nicemu run` sets is missing or
  // does not lead to a channel.
  if (has(message, "nicemu run") || has(message, "host channel"))
    return NICEMU_ENOTRUN;
  if (has(message, "out of registered memory") || has(message, "(status -3)"))
    return NICEMU_ENOMEM;
  if (has(message, "not registered memory") || has(message, "(status -1)") ||
      has(message, "(status -2)"))
    return NICEMU_EINVAL;
  if (has(message, "still pending") || has(message, "without barrier_post"))
    return NICEMU_ESTATE;
  return fallback;
}

template <class F>
int guard(const char *function, F &&f, int fallback = NICEMU_EFAIL) noexcept {
  try {
    f();
    return NICEMU_OK;
  } catch (const host::Error &e) {
    return fail(function, classify(e.what(), fallback), e.what());
  } catch (const std::bad_alloc &) {
    return fail(function, NICEMU_EFAIL, "out of host memory");
  } catch (const std::exception &e) {
    return fail(function, NICEMU_EFAIL, e.what());
  } catch (...) {
    return fail(function, NICEMU_EFAIL, "unknown failure");
  }
}

int null_out(const char *function) noexcept {
  return fail(function, NICEMU_EINVAL, "the result pointer is NULL");
}

// For calls whose only result is a value: stores it through `out`.
template <class T, class F>
int get(const char *function, T *out, F &&f,
        int fallback = NICEMU_EFAIL) noexcept {
  if (!out)
    return null_out(function);
  return guard(
      function, [&] { *out = f(); }, fallback);
}

} // namespace

extern "C" {

const char *nicemu_last_error(void) noexcept {
  return last_error;
}

const char *nicemu_strerror(int status) noexcept {
  switch (status) {
  case NICEMU_OK:
    return "success";
  case NICEMU_EINVAL:
    return "bad argument";
  case NICEMU_ENOMEM:
    return "out of registered memory";
  case NICEMU_ENOTRUN:
    return "not started by nicemu run";
  case NICEMU_ESTOPPED:
    return "the cluster is stopping";
  case NICEMU_ESTATE:
    return "call out of order";
  case NICEMU_EFAIL:
    return "failure";
  default:
    return "unknown status";
  }
}

const char *nicemu_version(void) noexcept {
  return host::version();
}

int nicemu_rank(uint32_t *out) noexcept {
  return get(__func__, out, [] { return host::rank(); });
}
int nicemu_size(uint32_t *out) noexcept {
  return get(__func__, out, [] { return host::size(); });
}
int nicemu_now_ps(uint64_t *out) noexcept {
  return get(__func__, out, [] { return host::now_ps(); });
}
int nicemu_now_us(double *out) noexcept {
  return get(__func__, out, [] { return host::now_us(); });
}
int nicemu_compute(uint64_t ps) noexcept {
  return guard(__func__, [&] { host::compute(ps); });
}

int nicemu_alloc(size_t bytes, void **out) noexcept {
  // The C++ call reports a zero size as running out of memory; in C it is
  // the caller's mistake, and says so.
  if (bytes == 0)
    return fail(__func__, NICEMU_EINVAL, "zero bytes asked");
  return get(__func__, out, [&] { return host::alloc(bytes); });
}

int nicemu_bus_address(const void *p, uint32_t *out) noexcept {
  if (!p)
    return fail(__func__, NICEMU_EINVAL, "the buffer pointer is NULL");
  return get(__func__, out, [&] { return host::bus_address(p); });
}

int nicemu_pio_write(uint32_t card_addr, uint32_t value) noexcept {
  return guard(__func__, [&] { host::pio_write(card_addr, value); });
}
int nicemu_pio_read(uint32_t card_addr, uint32_t *out) noexcept {
  return get(__func__, out, [&] { return host::pio_read(card_addr); });
}
int nicemu_mailbox(uint32_t *out) noexcept {
  return get(__func__, out, [] { return host::mailbox(); });
}

int nicemu_wait_word(const volatile uint32_t *word, uint32_t mask,
                     uint32_t expected, uint32_t *out) noexcept {
  if (!word)
    return fail(__func__, NICEMU_EINVAL, "the word pointer is NULL");
  return guard(__func__, [&] {
    uint32_t seen = host::wait_word(word, mask, expected);
    if (out)
      *out = seen;
  });
}

int nicemu_wait_word_until(const volatile uint32_t *word, uint32_t mask,
                           uint32_t expected, uint64_t deadline_ps,
                           uint32_t *value_out, int *matched) noexcept {
  if (!word)
    return fail(__func__, NICEMU_EINVAL, "the word pointer is NULL");
  if (!matched)
    return null_out(__func__);
  return guard(__func__, [&] {
    uint32_t seen = 0;
    bool hit = host::wait_word_until(word, mask, expected, deadline_ps, &seen);
    if (value_out)
      *value_out = seen;
    *matched = hit ? 1 : 0;
  });
}

int nicemu_doorbell(uint32_t fifo, uint32_t value) noexcept {
  return guard(__func__, [&] { host::doorbell(fifo, value); });
}

int nicemu_barrier(void) noexcept {
  return guard(__func__, [] { host::barrier(); });
}
int nicemu_barrier_post(void) noexcept {
  return guard(__func__, [] { host::barrier_post(); });
}
int nicemu_barrier_wait(void) noexcept {
  return guard(__func__, [] { host::barrier_wait(); });
}

int nicemu_allreduce_sum(int32_t value, int32_t *out) noexcept {
  return get(__func__, out, [&] { return host::allreduce_sum(value); });
}
int nicemu_allreduce_min(int32_t value, int32_t *out) noexcept {
  return get(__func__, out, [&] { return host::allreduce_min(value); });
}
int nicemu_allreduce_max(int32_t value, int32_t *out) noexcept {
  return get(__func__, out, [&] { return host::allreduce_max(value); });
}

int nicemu_am_request(uint32_t handler, const uint32_t args[6]) noexcept {
  if (!args)
    return fail(__func__, NICEMU_EINVAL, "the argument array is NULL");
  return guard(__func__, [&] {
    uint32_t copy[6];
    std::memcpy(copy, args, sizeof copy);
    host::am_request(handler, copy);
  });
}

int nicemu_am_unknown_handlers(uint32_t *out) noexcept {
  return get(__func__, out, [] { return host::am_unknown_handlers(); });
}
int nicemu_am_bad_packets(uint32_t *out) noexcept {
  return get(__func__, out, [] { return host::am_bad_packets(); });
}

int nicemu_am_alloc(size_t bytes, void **out) noexcept {
  if (bytes == 0)
    return fail(__func__, NICEMU_EINVAL, "zero bytes asked");
  // What am_alloc refuses of a non-zero size is a size too large.
  return get(
      __func__, out, [&] { return host::am_alloc(bytes); }, NICEMU_ENOMEM);
}

int nicemu_bcopy(uint32_t src_node, const void *src, uint32_t dst_node,
                 void *dst, size_t bytes) noexcept {
  if (!src || !dst)
    return fail(__func__, NICEMU_EINVAL, "a buffer pointer is NULL");
  return guard(
      __func__, [&] { host::bcopy(src_node, src, dst_node, dst, bytes); },
      NICEMU_EINVAL);
}

int nicemu_bcopy_notify(uint32_t src_node, const void *src, uint32_t dst_node,
                        void *dst, size_t bytes, volatile uint32_t *flag,
                        uint32_t value) noexcept {
  if (!src || !dst || !flag)
    return fail(__func__, NICEMU_EINVAL, "a buffer pointer is NULL");
  return guard(
      __func__,
      [&] {
        host::bcopy_notify(src_node, src, dst_node, dst, bytes, flag, value);
      },
      NICEMU_EINVAL);
}

int nicemu_sync(uint32_t *refused) noexcept {
  return guard(__func__, [&] {
    uint32_t n = host::sync();
    if (refused)
      *refused = n;
  });
}

int nicemu_am_protection_errors(uint32_t *out) noexcept {
  return get(__func__, out, [] { return host::am_protection_errors(); });
}

int nicemu_am_address(const void *p, uint32_t *out) noexcept {
  if (!p)
    return fail(__func__, NICEMU_EINVAL, "the buffer pointer is NULL");
  return get(__func__, out, [&] { return host::am_address(p); });
}

} // extern "C"
