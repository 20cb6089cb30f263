// A stackful coroutine (Boost.Context) that a core's Unicorn run lives on,
// so that a slice can end by parking the run instead of leaving
// uc_emu_start (see unicorn_cpu.cpp). Stack switches are announced to
// AddressSanitizer, which otherwise mistakes them for stack corruption.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace nicemu {

class CoreFiber {
public:
  // `body` runs on the fiber's own stack at the first resume().
  CoreFiber(std::function<void()> body, size_t stack_bytes);
  // The body must have returned (destroying a suspended fiber would unwind
  // through Unicorn's C frames).
  ~CoreFiber();
  CoreFiber(const CoreFiber &) = delete;
  CoreFiber &operator=(const CoreFiber &) = delete;

  // From outside: runs the fiber until it yields or its body returns.
  void resume();
  // From inside the body: back to the resume() that entered it.
  void yield();
  bool finished() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace nicemu
