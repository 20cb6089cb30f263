// Berkeley Generic Active Messages (nicemu/am.h) on the host messages of
// host_messages.cpp: requests and replies are small messages; stores, gets
// and transfers are bulk messages that carry a header of their own, copied
// into place by the receiving host's library before the handler runs.
// docs/gam.md.
#include "am_internal.hpp"
#define NICEMU_GAM_NO_AM_NAMES // host::am_poll is not gam_poll here
#include "nicemu/am.h"
#include "nicemu/host.hpp"

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace host = nicemu::host;
namespace detail = nicemu::host::detail;

namespace {

constexpr int kMaxSize = 8192;

std::string last_error;

// Runs `body`, turning the library's exceptions into AM_ERROR.
template <typename Body> int guarded(Body body) {
  try {
    body();
    return AM_OK;
  } catch (const std::exception &e) {
    last_error = e.what();
    return AM_ERROR;
  }
}

[[noreturn]] void refuse(const char *what, const std::string &why) {
  throw host::Error(std::string("gam: ") + what + ": " + why,
                    host::ErrorCode::BadArgument);
}

using ReqHandler = void (*)(vnn_t, int, int, int, int);
using XferHandler = void (*)(vnn_t, void *, int, void *);
using EndHandler = void (*)(vnn_t, void *, int, void *);

// ---- Remote addresses -----------------------------------------------------

// An address in another process: a global of the program travels as its
// place in the program (ASLR moves it); anything else as it is.
struct Remote {
  uint32_t is_image, object;
  uint64_t address; // the offset in the object, or the address
};

Remote remote_of(const void *p, size_t bytes) {
  detail::Token t;
  if (detail::to_image_token(p, bytes, t))
    return {1, t.object, t.offset};
  return {0, 0, reinterpret_cast<uintptr_t>(p)};
}

void *local_of(const Remote &r, size_t bytes) {
  if (r.is_image)
    return detail::from_image_token({r.object, uint32_t(r.address)}, bytes);
  return reinterpret_cast<void *>(r.address);
}

// ---- Bulk messages ----------------------------------------------------------

enum class Kind : uint32_t { Store = 1, GetRequest, GetReply };

// In front of the data of every GAM bulk message.
struct Head {
  Kind kind;
  uint32_t nbytes;
  detail::Token fun;
  Remote where; // Store, GetReply: destination; GetRequest: source
  uint64_t arg;
  uint64_t lva; // GetRequest: where the reply goes (in the requester)
};

uint32_t dropped_transfers;

void drop(vnn_t src, const char *what, const void *at, uint32_t nbytes) {
  ++dropped_transfers;
  std::fprintf(stderr,
               "gam: %s of %u bytes from node %d to %p dropped: not %s memory "
               "of this process\n",
               what, nbytes, src, at, "mapped writable");
}

void send_head(vnn_t dest, const Head &h, const void *data, size_t bytes);

void bulk_arrived(uint32_t src, void *msg, size_t bytes, uint64_t, uint64_t) {
  Head h;
  if (bytes < sizeof h)
    return;
  std::memcpy(&h, msg, sizeof h);
  auto *data = static_cast<uint8_t *>(msg) + sizeof h;
  size_t data_bytes = bytes - sizeof h;
  void *fun = detail::from_token(h.fun);
  if (h.kind == Kind::GetRequest) {
    void *from = local_of(h.where, h.nbytes);
    // A get of 0 bytes needs no memory (gam_get lets its addresses be
    // null): it must not be dropped, its handler runs.
    if (h.nbytes && (!from || !detail::mapped(from, h.nbytes, false))) {
      drop(vnn_t(src), "get", from, h.nbytes);
      return;
    }
    Head reply{Kind::GetReply, h.nbytes, h.fun, {0, 0, h.lva}, h.arg, 0};
    send_head(vnn_t(src), reply, from, h.nbytes);
    return;
  }
  void *to = local_of(h.where, h.nbytes);
  // Likewise a store (or get reply) of 0 bytes, whose address may be null.
  if (data_bytes != h.nbytes ||
      (h.nbytes && (!to || !detail::mapped(to, h.nbytes, true)))) {
    drop(vnn_t(src), h.kind == Kind::Store ? "store" : "get reply", to,
         h.nbytes);
    return;
  }
  if (h.nbytes)
    std::memcpy(to, data, h.nbytes);
  if (fun)
    reinterpret_cast<XferHandler>(fun)(vnn_t(src), to, int(h.nbytes),
                                       reinterpret_cast<void *>(h.arg));
}

void send_head(vnn_t dest, const Head &h, const void *data, size_t bytes) {
  std::vector<uint8_t> msg(sizeof h + bytes);
  std::memcpy(msg.data(), &h, sizeof h);
  if (bytes)
    std::memcpy(msg.data() + sizeof h, data, bytes);
  host::am_send_bulk(uint32_t(dest), bulk_arrived, msg.data(), msg.size());
}

void check_dest(vnn_t dest, const char *what) {
  if (dest < 0 || uint32_t(dest) >= host::size())
    refuse(what, "node " + std::to_string(dest) + " of " +
                     std::to_string(host::size()));
}

void check_size(int nbytes, const char *what) {
  if (nbytes < 0 || nbytes > kMaxSize)
    refuse(what, std::to_string(nbytes) + " bytes (at most " +
                     std::to_string(kMaxSize) + ", gam_max_size())");
}

detail::Token token(handler_t fun, const char *what) {
  detail::Token t{0, 0};
  if (fun && !detail::to_token(reinterpret_cast<const void *>(fun), t))
    refuse(what, "the handler is not a function of this program");
  return t;
}

void store(vnn_t dest, void *lva, void *rva, int nbytes, handler_t fun,
           void *arg, const char *what) {
  check_dest(dest, what);
  check_size(nbytes, what);
  if (nbytes && (!lva || !rva))
    refuse(what, "null address");
  if (nbytes && !detail::mapped(lva, size_t(nbytes), false))
    refuse(what, "the local address is not readable");
  Head h{Kind::Store,
         uint32_t(nbytes),
         token(fun, what),
         remote_of(rva, size_t(nbytes)),
         reinterpret_cast<uintptr_t>(arg),
         0};
  send_head(dest, h, lva, size_t(nbytes));
}

// Completions of gam_store_async, run at the next poll.
struct Ended {
  EndHandler fun;
  vnn_t dest;
  void *lva;
  int nbytes;
  void *earg;
};
std::vector<Ended> ended;

void run_ended() {
  std::vector<Ended> now;
  now.swap(ended);
  for (const Ended &e : now)
    e.fun(e.dest, e.lva, e.nbytes, e.earg);
}

// The four words after the handler, whatever the caller passed: each an
// int or a pointer, read as a full machine word (a word the caller did not
// pass reads as whatever its register held; the handler ignores it, as it
// did in the original).
void words_of(va_list ap, uint64_t (&w)[4]) {
  for (uint64_t &word : w)
    word = va_arg(ap, uintptr_t);
}

int request(vnn_t dest, handler_t fun, const uint64_t (&w)[4],
            const char *what) {
  return guarded([&] {
    check_dest(dest, what);
    if (!fun)
      refuse(what, "null handler");
    detail::am_send_words(uint32_t(dest),
                          reinterpret_cast<host::AmHandler>(fun), w);
  });
}

int short_message(vnn_t dest, handler_t fun, va_list ap, const char *what) {
  uint64_t w[4];
  words_of(ap, w);
  return request(dest, fun, w, what);
}

int medium(vnn_t dest, handler_t fun, void *lva, int nbytes, va_list ap,
           const char *what) {
  uint64_t a0 = va_arg(ap, uintptr_t), a1 = va_arg(ap, uintptr_t);
  return guarded([&] {
    check_dest(dest, what);
    check_size(nbytes, what);
    if (!fun)
      refuse(what, "null handler");
    if (nbytes && (!lva || !detail::mapped(lva, size_t(nbytes), false)))
      refuse(what, "the local address is not readable");
    token(fun, what);
    host::am_send_bulk(uint32_t(dest),
                       reinterpret_cast<host::AmBulkHandler>(fun), lva,
                       size_t(nbytes), a0, a1);
  });
}

int wait_flag(volatile int *flag, int value, bool poll_first) {
  return guarded([&] {
    run_ended();
    if (!flag) { // nicemu's gam_wait(void): one message
      host::am_wait();
      return;
    }
    if (poll_first)
      host::am_poll();
    while (*flag < value) {
      host::am_wait();
      run_ended();
    }
    *flag = *flag - value;
  });
}

} // namespace

// ---- Memory checks (detail, also for the library's own use) ---------------

bool detail::mapped(const void *p, size_t bytes, bool write) {
  if (bytes == 0)
    return true;
  auto a = reinterpret_cast<uintptr_t>(p);
  if (a + bytes < a)
    return false;
  // Ranges from /proc/self/maps; adjacent mappings with the access join.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  uintptr_t covered = a;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) != 3)
      continue;
    bool ok = perms[0] == 'r' && (!write || perms[1] == 'w');
    if (ok && lo <= covered && covered < hi)
      covered = hi;
    if (covered >= a + bytes)
      return true;
  }
  return false;
}

// ---- The API
// ------------------------------------------------------------------

extern "C" {

int gam_enable(...) {
  // Sets up the NIC side (request block, receive ring) on every rank alike.
  return guarded([] { (void)host::am_dropped_messages(); });
}

int gam_disable(void) {
  return guarded([] {
    run_ended();
    host::sync();
  });
}

vnn_t gam_my_proc(void) {
  return vnn_t(host::rank());
}

int gam_procs(void) {
  return int(host::size());
}

int gam_max_size(void) {
  return kMaxSize;
}

int gam_poll(void) {
  return guarded([] {
    run_ended();
    host::am_poll();
  });
}

int gam_wait(volatile int *flag, int value) {
  return wait_flag(flag, value, true);
}

int gam_poll_wait(volatile int *flag, int value) {
  return wait_flag(flag, value, false);
}

int gam_sleep(void) {
  return wait_flag(nullptr, 0, false);
}

int gam_barrier(void) {
  return guarded([] { host::barrier(); });
}

int gam_request_4(vnn_t dest, handler_t fun, ...) {
  va_list ap;
  va_start(ap, fun);
  int status = short_message(dest, fun, ap, "gam_request_4");
  va_end(ap);
  return status;
}

// Replies travel like requests: the network never drops, so no credits.
int gam_reply_4(vnn_t dest, handler_t fun, ...) {
  va_list ap;
  va_start(ap, fun);
  int status = short_message(dest, fun, ap, "gam_reply_4");
  va_end(ap);
  return status;
}

int gam_request(vnn_t dest, handler_t fun, void *lva, int nbytes, ...) {
  va_list ap;
  va_start(ap, nbytes);
  int status = medium(dest, fun, lva, nbytes, ap, "gam_request");
  va_end(ap);
  return status;
}

int gam_reply(vnn_t dest, handler_t fun, void *lva, int nbytes, ...) {
  va_list ap;
  va_start(ap, nbytes);
  int status = medium(dest, fun, lva, nbytes, ap, "gam_reply");
  va_end(ap);
  return status;
}

int gam_store(vnn_t dest, void *lva, void *rva, int nbytes, handler_t fun,
              void *arg) {
  return guarded([&] { store(dest, lva, rva, nbytes, fun, arg, "gam_store"); });
}

int gam_store_async(vnn_t dest, void *lva, void *rva, int nbytes, handler_t fun,
                    void *arg, handler_t endfunc, void *earg) {
  return guarded([&] {
    // endfunc is called here at the next poll: refuse one that is not a
    // function of the program (docs/gam.md) before anything is sent, rather
    // than jump to it later.
    token(endfunc, "gam_store_async");
    store(dest, lva, rva, nbytes, fun, arg, "gam_store_async");
    // The data was copied out: lva is free already; say so at the next poll.
    if (endfunc)
      ended.push_back(
          {reinterpret_cast<EndHandler>(endfunc), dest, lva, nbytes, earg});
  });
}

int gam_get(vnn_t dest, void *rva, void *lva, int nbytes, handler_t fun,
            void *arg) {
  return guarded([&] {
    check_dest(dest, "gam_get");
    check_size(nbytes, "gam_get");
    if (nbytes && (!lva || !rva))
      refuse("gam_get", "null address");
    if (nbytes && !detail::mapped(lva, size_t(nbytes), true))
      refuse("gam_get", "the local address is not writable");
    Head h{Kind::GetRequest,
           uint32_t(nbytes),
           token(fun, "gam_get"),
           remote_of(rva, size_t(nbytes)),
           reinterpret_cast<uintptr_t>(arg),
           reinterpret_cast<uintptr_t>(lva)};
    send_head(dest, h, nullptr, 0);
  });
}

int gam_reply_xfer(vnn_t dest, void *lva, void *rva, int nbytes, handler_t fun,
                   void *arg) {
  return guarded(
      [&] { store(dest, lva, rva, nbytes, fun, arg, "gam_reply_xfer"); });
}

const char *gam_error(void) {
  return last_error.c_str();
}

} // extern "C"
