// The FM 2.x interface (nicemu/fm2/fm.h) on the Comet-FM library of
// fm.cpp: the names FM 2.x programs call, their argument types and void
// returns, handler ids given out by FM_register_handler, and
// FM_extract(maxbytes). That header and nicemu/fm.h both declare FM_handler
// (a 1.x and a 2.x one), so this file declares its own entry points.
#include "nicemu/fm.h"

#include <cstdarg>
#include <cstdio>

// fm.cpp: FM_extract with a byte budget; the bytes extracted, or an error.
extern "C" long nicemu_fm_extract_bytes(unsigned long maxbytes);

namespace {

using ULONG = unsigned int;
constexpr ULONG kAnyId = 0xFFFFFFFFu;

// The void calls have no way to say no: the reason goes to stderr.
void report(const char *call, int code) {
  if (code < 0)
    std::fprintf(stderr, "nicemu: %s: %s\n", call, FM_strerror(code));
}

ULONG next_id = 1; // FM_ANY_ID hands ids out from here, as FM 2.x did

} // namespace

extern "C" {

void nicemu_fm2_set_parameter(int, ...) {} // nothing to set up in nicemu

void nicemu_fm2_initialize(void) {
  report("FM_initialize", FM_initialize());
}

void nicemu_fm2_finalize(void) {
  report("FM_finalize", FM_finalize());
}

ULONG nicemu_fm2_register_handler(ULONG id, FM_stream_handler handler) {
  if (id == kAnyId) {
    id = next_id;
    next_id = id + 1;
  } else if (id >= next_id) {
    next_id = id + 1;
  }
  int code = id < ULONG(FM_MAX_HANDLERS)
                 ? FM_set_stream_handler(int(id), handler)
                 : FM_EBADHANDLER;
  report("FM_register_handler", code);
  return code < 0 ? kAnyId : id;
}

FM_stream *nicemu_fm2_begin_message(ULONG recipient, ULONG length,
                                    ULONG handler) {
  FM_stream *s = handler < ULONG(FM_MAX_HANDLERS)
                     ? FM_begin_message(recipient, length, int(handler))
                     : nullptr;
  if (!s)
    report("FM_begin_message",
           handler < ULONG(FM_MAX_HANDLERS) ? FM_last_error() : FM_EBADHANDLER);
  return s;
}

void nicemu_fm2_send_piece(FM_stream *stream, void *buffer, ULONG length) {
  report("FM_send_piece", FM_send_piece(stream, buffer, length));
}

void nicemu_fm2_end_message(FM_stream *stream) {
  report("FM_end_message", FM_end_message(stream));
}

ULONG nicemu_fm2_receive(void *buffer, FM_stream *stream, ULONG length) {
  return FM_receive(buffer, stream, length);
}

ULONG nicemu_fm2_extract(ULONG maxbytes) {
  long got = nicemu_fm_extract_bytes(maxbytes);
  report("FM_extract", got < 0 ? int(got) : 0);
  return got < 0 ? 0 : ULONG(got);
}

} // extern "C"
