#include "core/core_fiber.hpp"

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <cassert>
#include <utility>

// GCC says AddressSanitizer is on with __SANITIZE_ADDRESS__; clang (14)
// only through __has_feature. Without the fiber interface below, ASan
// takes the fibers' stacks for the thread's and reports bogus stack
// overflows in memory mapped later where a fiber's stack was.
#if defined(__SANITIZE_ADDRESS__)
#define NICEMU_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NICEMU_FIBER_ASAN 1
#endif
#endif
#if defined(NICEMU_FIBER_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// ThreadSanitizer (the tsan preset) must be told of every switch too, or
// it takes one stack's calls and returns for another's.
#if defined(__SANITIZE_THREAD__)
#define NICEMU_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NICEMU_FIBER_TSAN 1
#endif
#endif
#if defined(NICEMU_FIBER_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace nicemu {

namespace ctx = boost::context;

namespace {

// AddressSanitizer's fiber interface: announce a switch to the stack
// [bottom, bottom + size), then confirm arrival (and learn where from).
// `fake` keeps the leaving side's fake stack; nullptr when it never returns.
void start_switch(void **fake, const void *bottom, size_t size) {
#if defined(NICEMU_FIBER_ASAN)
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

void finish_switch(void *fake, const void **bottom, size_t *size) {
#if defined(NICEMU_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

// The fiber's stack. Unicorn leaves its run loop by longjmp, past frames
// whose locals AddressSanitizer poisoned; their poison would outlive the
// stack and hit whatever is mapped there next (a card's memory), so the
// stack is cleared of it before it goes.
struct FiberStack {
  ctx::protected_fixedsize_stack inner;
  explicit FiberStack(size_t bytes) : inner(bytes) {}
  ctx::stack_context allocate() { return inner.allocate(); }
  void deallocate(ctx::stack_context &stack) noexcept {
#if defined(NICEMU_FIBER_ASAN)
    __asan_unpoison_memory_region(static_cast<char *>(stack.sp) - stack.size,
                                  stack.size);
#endif
    inner.deallocate(stack);
  }
};

// ThreadSanitizer's fibers: the one to create, switch to, and destroy.
void *tsan_create() {
#if defined(NICEMU_FIBER_TSAN)
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}
void *tsan_current() {
#if defined(NICEMU_FIBER_TSAN)
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}
void tsan_switch(void *fiber) {
#if defined(NICEMU_FIBER_TSAN)
  __tsan_switch_to_fiber(fiber, 0);
#else
  (void)fiber;
#endif
}
void tsan_destroy(void *fiber) {
#if defined(NICEMU_FIBER_TSAN)
  if (fiber)
    __tsan_destroy_fiber(fiber);
#else
  (void)fiber;
#endif
}

} // namespace

struct CoreFiber::Impl {
  std::function<void()> body;
  ctx::fiber fiber;  // outside: the suspended fiber
  ctx::fiber caller; // inside: the suspended resumer
  bool finished = false;
  // The two stacks, for AddressSanitizer.
  const void *fiber_bottom = nullptr, *caller_bottom = nullptr;
  size_t fiber_size = 0, caller_size = 0;
  void *caller_fake = nullptr, *fiber_fake = nullptr;
  // The two sides, for ThreadSanitizer (the caller's is the resuming
  // thread's, which may differ from one resume to the next).
  void *tsan_fiber = nullptr, *tsan_caller = nullptr;
};

CoreFiber::CoreFiber(std::function<void()> body, size_t stack_bytes)
    : impl_(std::make_unique<Impl>()) {
  impl_->body = std::move(body);
  impl_->tsan_fiber = tsan_create();
  FiberStack alloc(stack_bytes);
  ctx::stack_context stack = alloc.allocate();
  impl_->fiber_bottom = static_cast<char *>(stack.sp) - stack.size;
  impl_->fiber_size = stack.size;
  Impl *impl = impl_.get();
  impl_->fiber = ctx::fiber(
      std::allocator_arg, ctx::preallocated(stack.sp, stack.size, stack), alloc,
      [impl](ctx::fiber &&caller) {
        finish_switch(nullptr, &impl->caller_bottom, &impl->caller_size);
        impl->caller = std::move(caller);
        impl->body();
        impl->finished = true;
        tsan_switch(impl->tsan_caller);
        start_switch(nullptr, impl->caller_bottom, impl->caller_size);
        return std::move(impl->caller);
      });
}

CoreFiber::~CoreFiber() {
  assert(!impl_->fiber || impl_->finished);
  tsan_destroy(impl_->tsan_fiber);
}

void CoreFiber::resume() {
  impl_->tsan_caller = tsan_current();
  tsan_switch(impl_->tsan_fiber);
  start_switch(&impl_->caller_fake, impl_->fiber_bottom, impl_->fiber_size);
  impl_->fiber = std::move(impl_->fiber).resume();
  finish_switch(impl_->caller_fake, nullptr, nullptr);
}

void CoreFiber::yield() {
  tsan_switch(impl_->tsan_caller);
  start_switch(&impl_->fiber_fake, impl_->caller_bottom, impl_->caller_size);
  impl_->caller = std::move(impl_->caller).resume();
  finish_switch(impl_->fiber_fake, &impl_->caller_bottom, &impl_->caller_size);
}

bool CoreFiber::finished() const {
  return impl_->finished;
}

} // namespace nicemu
