// nicemu's MPI: the transport over the UZURA card (nicemu/uzura.h), the
// only part of the library that talks to the card (docs/mpi.md,
// "Protocols").
//
// - Messages to another rank, in order per destination: each is one
//   uz_send of at most UZ_SEND_MAX bytes, its kind, MPI tag and context
//   carried in the card's tag and immediate words; an Eager message longer
//   than that goes as fragments and is reassembled here.
// - Flow control: every rank may have `quota` unconsumed messages in each
//   other rank's arrival ring; the receiver reports what it consumed in
//   the immediate word of its own messages, or in a Credit message when it
//   has nothing else to send. A message beyond the quota waits here, so the
//   card never refuses one for a full ring.
// - RDMA write and read, with a completion handler per owner.
// - Progress: completions and arrivals are taken in poll(); wait() blocks
//   on the card's next completion or arrival, whichever comes first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace nicemu::mpi::transport {

enum class Msg : uint8_t {
  Eager = 1,      // a message's data (point to point, collectives)
  EagerFirst = 2, // fragments of a longer one (internal)
  EagerMore = 3,
  Rts = 4,         // rendezvous: the data is ready at an address
  Fin = 5,         // rendezvous: the receiver has read it
  LockRequest = 6, // one-sided synchronisation
  LockGrant = 7,
  Unlock = 8,
  Post = 9,
  Complete = 10,
  Credit = 16, // flow control only (outside the quota)
  Hello = 17,  // start-up (outside the quota)
  HelloAck = 18,
};

struct Arrival {
  uint32_t src; // world rank
  Msg kind;
  uint32_t tag; // 24 bits
  uint16_t ctx;
  const uint8_t *data; // valid during the handler only
  size_t len;
};

constexpr uint32_t kMaxTag = 0xFFFFFF;

using ArrivalHandler = void (*)(const Arrival &);
void set_handler(Msg kind, ArrivalHandler handler);

// Who an RDMA operation belongs to; its handler gets the id given.
enum class Owner : uint8_t { Read = 1, Rma = 2 };
using CompletionHandler = void (*)(uint64_t id, uint32_t status);
void set_completion_handler(Owner owner, CompletionHandler handler);

// Opens the card's endpoint and waits until every rank has opened its own.
void open();
// Sends what waits, waits for every operation, closes the endpoint.
void close();
uint32_t rank();
uint32_t size();
size_t eager_limit();

// Sends `len` bytes to `node` (not this rank); copies them before it
// returns. Only Eager messages may be longer than UZ_SEND_MAX.
void send(uint32_t node, Msg kind, uint32_t tag, uint16_t ctx, const void *data,
          size_t len);
// RDMA between registered memory here and `remote` at `node`.
void write(uint32_t node, const void *local, uint64_t remote, size_t len,
           Owner owner, uint64_t id);
void read(uint32_t node, void *local, uint64_t remote, size_t len, Owner owner,
          uint64_t id);

// uz_register, once every operation of ours has completed (uz_register
// takes the completions of its own commands from the shared ring). Not
// from a handler: use defer(). memory::ensure_registered keeps the cache.
void register_now(const void *p, size_t len, unsigned access);

// One pass: takes completions and arrivals, runs deferred work, sends
// what waits. True if anything happened.
bool poll();
// Blocks until the card completes an operation or a message arrives
// (returns at once if one has).
void wait();
// poll(), and if nothing happened, the cost of one poll of host memory
// (MPI_Test, MPI_Iprobe: a program that tests in a loop moves on).
bool poll_once_charged();
template <class Done> void until(Done done) {
  while (!done())
    if (!poll())
      wait();
}
// Work that must not run inside a handler (it may register memory): run
// by the next poll() outside the handlers.
void defer(std::function<void()> work);

} // namespace nicemu::mpi::transport
