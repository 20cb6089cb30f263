// What the NI-AM parts of the host library share: am.cpp (requests,
// collectives, transfers), host_messages.cpp (messages whose handlers run
// on the host) and gam.cpp (Berkeley GAM on top of both).
#pragma once

#include "nicemu/host.hpp"
#include <cstddef>
#include <cstdint>

namespace nicemu::host::detail {

// Posts a request to the local NIC (am.cpp); returns its number.
uint32_t post(uint32_t handler, const uint32_t (&args)[6]);
// The request block the NIC writes results into (NIAM_BLOCK_*).
const uint8_t *request_block();

// The host-message memory every rank sets up at its first NI-AM call.
struct HostMessageMemory {
  uint32_t slots;       // receive ring entries (and landing pages)
  size_t ring_bytes;    // slots x 32
  size_t landing_bytes; // slots x 4 KiB
  size_t staging_bytes; // outgoing staged messages, page-mapped
};
HostMessageMemory host_message_memory();
void host_messages_attach(uint8_t *ring, uint8_t *landing, uint8_t *staging);

// Waits until *a == ea (returns 0) or *b == eb (returns 1), both words in
// registered memory; charged like wait_word (host.cpp), or like
// wait_interrupt when `interrupt`.
uint32_t wait_either(const volatile uint32_t *a, uint32_t ea,
                     const volatile uint32_t *b, uint32_t eb,
                     bool interrupt = false);

// Runs the handlers of the host messages that have arrived; returns how
// many. Charges nothing (the caller's wait is the poll).
int serve_messages();

// Waits until *word reaches `expected` (counting up), running the handlers of
// host messages that arrive meanwhile (a full receive ring would otherwise hold
// back the NIC's other traffic, and with it what this wait needs).
void wait_serving(const volatile uint32_t *word, uint32_t expected);

// Handler pointers in messages: an index into the process's loaded objects
// (0: the executable) and the offset in that object, so that ranks that
// load it at different addresses (ASLR) still agree.
struct Token {
  uint32_t object, offset;
};
// False when `fn` is in no loaded object.
bool to_token(const void *fn, Token &out);
// Null when the token names no executable code here.
void *from_token(Token t);
// The same for [p, p + bytes) in any segment of a loaded object (the
// program's globals), so that `&global` names the same global on any rank.
bool to_image_token(const void *p, size_t bytes, Token &out);
void *from_image_token(Token t, size_t bytes);

// Whether [p, p + bytes) is mapped in this process, and writable when
// `write` (read from /proc/self/maps).
bool mapped(const void *p, size_t bytes, bool write);

// As am_send, with four 64-bit words (an int or a pointer each: GAM's
// handler arguments). Each travels as its lower half; the receiver widens
// it from its own mappings (host_messages.cpp, widen).
void am_send_words(uint32_t node, nicemu::host::AmHandler handler,
                   const uint64_t (&w)[4]);

} // namespace nicemu::host::detail
