// nicemu's MPI: the transport over the UZURA card (mpi_transport.hpp).
#include "mpi_transport.hpp"

#include "mpi_base.hpp"
#include "nicemu/host.hpp"
#include "nicemu/uzura.h"
#include "nicemu/uzura_card.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace host = nicemu::host;

namespace nicemu::mpi::transport {

namespace {

// Card resources (uz_options) and the library's own.
constexpr unsigned kCommands = 64;
constexpr unsigned kCompletions = 1024;
constexpr unsigned kDefaultArrivals = 1024;
constexpr unsigned kOverflow = 16384;
constexpr unsigned kBounceSlots = 256;  // send buffers of UZ_SEND_MAX bytes
constexpr uint32_t kReservePerPeer = 6; // 2 credit messages, 4 hellos
constexpr size_t kDefaultEagerLimit = 8192;
constexpr uint64_t kPollPs = 180'000;          // uzura: poll_own_memory
constexpr uint64_t kHelloRetryPs = 50'000'000; // 50 us
constexpr size_t kFirstHeader = 8;             // EagerFirst: the total length

// The card's tag word: the MPI tag and the message's kind; its immediate
// word: the context and the credits returned.
uint32_t tag_word(Msg kind, uint32_t tag) {
  return (uint32_t(kind) << 24) | (tag & kMaxTag);
}
uint32_t imm_word(uint16_t ctx, uint32_t credits) {
  return uint32_t(ctx) | (credits << 16);
}
bool counted(Msg kind) {
  return kind != Msg::Credit && kind != Msg::Hello && kind != Msg::HelloAck;
}

// Cookies: the owner in the top byte (0 is never used: uz_register's own
// commands have cookie 0), an id below.
constexpr uint8_t kMessageOwner = 3;
uint64_t cookie(uint8_t owner, uint64_t id) {
  return (uint64_t(owner) << 56) | id;
}

// A message's id: enough to free its send buffer and, should the card
// refuse it, to send it again or take back the credits it carried.
struct SentMessage {
  uint16_t slot; // send buffer + 1 (0: none)
  Msg kind;
  uint16_t credits;
  uint16_t node;
};
uint64_t message_id(const SentMessage &m) {
  return uint64_t(m.slot) | uint64_t(m.kind) << 16 | uint64_t(m.credits) << 24 |
         uint64_t(m.node) << 40;
}
SentMessage sent_message(uint64_t id) {
  return {uint16_t(id), Msg(uint8_t(id >> 16)), uint16_t(id >> 24),
          uint16_t(id >> 40)};
}

struct Queued {
  Msg kind;
  uint32_t tag;
  uint16_t ctx;
  std::vector<uint8_t> bytes;
};

struct Assembly {
  bool active = false;
  uint32_t tag = 0;
  uint16_t ctx = 0;
  uint64_t total = 0;
  std::vector<uint8_t> data;
};

struct Peer {
  std::deque<Queued> queue;
  uint32_t sent = 0;                 // counted messages sent to it
  uint32_t known_consumed = 0;       // of those, what it said it consumed
  uint32_t consumed = 0;             // counted messages from it, consumed here
  uint32_t reported = 0;             // of those, what it has been told
  bool credit_pending = false;       // a Credit message waits for the card
  bool ack_pending = false;          // a HelloAck too
  bool hello = false, acked = false; // its Hello came; its HelloAck came
  bool hello_out = false;            // our Hello is on its way or was taken
  bool hello_refused = false;        // its card refused our Hello: again later
  Assembly assembly;
};

struct RdmaOp {
  bool write;
  uint32_t node;
  uint64_t local, remote;
  size_t len;
  uint64_t cookie;
};

struct State {
  uint32_t me = 0, n = 1;
  size_t eager = kDefaultEagerLimit;
  uint32_t quota = 0, threshold = 1;
  uint32_t arrivals = kDefaultArrivals; // slots of the card's arrival ring
  std::vector<Peer> peers;
  ArrivalHandler handlers[32] = {};
  CompletionHandler owners[4] = {};
  uint8_t *bounce = nullptr;
  std::vector<uint16_t> bounce_free;
  std::deque<RdmaOp> rdma;
  std::deque<std::function<void()>> deferred;
  uint32_t in_flight = 0; // operations whose completion is not taken
  bool in_deferred = false;
  bool in_handler = false; // taking arrivals: registering would break them
  bool open = false;
};

State st;

[[noreturn]] void card_failure(const char *what, int code) {
  throw std::runtime_error(std::string(what) + ": " + uz_strerror(code) + " (" +
                           uz_last_error() + ")");
}

unsigned env_unsigned(const char *name, unsigned fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  unsigned long n = std::strtoul(v, &end, 0);
  if (*end)
    fail(MPI_ERR_OTHER, std::string(name) + " is not a number: " + v);
  return unsigned(n);
}

// ---- Sending ----------------------------------------------------------------

// Operations outstanding at once: as many as the completion ring holds.
bool card_has_room() {
  return st.in_flight < kCompletions;
}

uint32_t credits_for(Peer &p) {
  uint32_t delta = std::min<uint32_t>(p.consumed - p.reported, 0xFFFF);
  p.reported += delta;
  return delta;
}

bool within_quota(const Peer &p) {
  return p.sent - p.known_consumed < st.quota;
}

// Posts one message now, if the card, the bounce buffers and the quota
// allow; false if it must wait.
bool post_message(uint32_t node, Msg kind, uint32_t tag, uint16_t ctx,
                  const uint8_t *head, size_t head_len, const uint8_t *data,
                  size_t len) {
  Peer &p = st.peers[node];
  size_t total = head_len + len;
  if (!card_has_room() || (total && st.bounce_free.empty()) ||
      (counted(kind) && !within_quota(p)))
    return false;
  SentMessage m{0, kind, 0, uint16_t(node)};
  uint8_t *buf = nullptr;
  if (total) {
    uint16_t slot = st.bounce_free.back();
    st.bounce_free.pop_back();
    buf = st.bounce + size_t(slot) * UZ_SEND_MAX;
    if (head_len)
      std::memcpy(buf, head, head_len);
    if (len)
      std::memcpy(buf + head_len, data, len);
    m.slot = uint16_t(slot + 1);
  }
  // Start-up messages carry no credits (they may be refused).
  if (kind != Msg::Hello && kind != Msg::HelloAck)
    m.credits = uint16_t(credits_for(p));
  if (int r = uz_send(node, buf, total, tag_word(kind, tag),
                      imm_word(ctx, m.credits),
                      cookie(kMessageOwner, message_id(m))))
    card_failure("uz_send", r);
  ++st.in_flight;
  if (counted(kind))
    ++p.sent;
  return true;
}

void enqueue(uint32_t node, Msg kind, uint32_t tag, uint16_t ctx,
             const uint8_t *head, size_t head_len, const uint8_t *data,
             size_t len) {
  Peer &p = st.peers[node];
  if (p.queue.empty() &&
      post_message(node, kind, tag, ctx, head, head_len, data, len))
    return;
  Queued q{kind, tag, ctx, {}};
  q.bytes.reserve(head_len + len);
  q.bytes.insert(q.bytes.end(), head, head + head_len);
  q.bytes.insert(q.bytes.end(), data, data + len);
  p.queue.push_back(std::move(q));
}

bool post_control(uint32_t node, Msg kind) {
  return post_message(node, kind, 0, 0, nullptr, 0, nullptr, 0);
}

bool post_rdma(const RdmaOp &op) {
  if (!card_has_room())
    return false;
  int r = op.write ? uz_write(op.node, reinterpret_cast<const void *>(op.local),
                              op.remote, op.len, op.cookie)
                   : uz_read(op.node, reinterpret_cast<void *>(op.local),
                             op.remote, op.len, op.cookie);
  if (r)
    card_failure(op.write ? "uz_write" : "uz_read", r);
  ++st.in_flight;
  return true;
}

// Sends what waits, in order, as far as the card and quotas allow.
bool pump() {
  bool any = false;
  for (uint32_t node = 0; node < st.n; ++node) {
    Peer &p = st.peers[node];
    if (p.ack_pending && post_control(node, Msg::HelloAck)) {
      p.ack_pending = false;
      any = true;
    }
    if (p.credit_pending && p.consumed - p.reported >= st.threshold) {
      if (!post_control(node, Msg::Credit))
        continue;
      any = true;
    }
    p.credit_pending = false;
    while (!p.queue.empty()) {
      Queued &q = p.queue.front();
      if (!post_message(node, q.kind, q.tag, q.ctx, nullptr, 0, q.bytes.data(),
                        q.bytes.size()))
        break;
      p.queue.pop_front();
      any = true;
    }
  }
  while (!st.rdma.empty() && post_rdma(st.rdma.front())) {
    st.rdma.pop_front();
    any = true;
  }
  return any;
}

// ---- Receiving
// -----------------------------------------------------------------

void dispatch(const Arrival &a) {
  ArrivalHandler h = st.handlers[uint8_t(a.kind) & 31];
  if (!h)
    throw std::runtime_error("a message of unknown kind " +
                             std::to_string(int(a.kind)) + " from rank " +
                             std::to_string(a.src));
  h(a);
}

// Fragments of a long Eager message: collected, delivered whole.
void assemble(const Arrival &a) {
  Assembly &as = st.peers[a.src].assembly;
  if (a.kind == Msg::EagerFirst) {
    if (a.len < kFirstHeader)
      throw std::runtime_error("a short first fragment");
    as.active = true;
    as.tag = a.tag;
    as.ctx = a.ctx;
    std::memcpy(&as.total, a.data, kFirstHeader);
    as.data.assign(a.data + kFirstHeader, a.data + a.len);
    as.data.reserve(as.total);
  } else {
    if (!as.active)
      throw std::runtime_error("a fragment without its first one");
    as.data.insert(as.data.end(), a.data, a.data + a.len);
  }
  if (as.data.size() < as.total)
    return;
  as.active = false;
  dispatch({a.src, Msg::Eager, as.tag, as.ctx, as.data.data(), as.data.size()});
  as.data = {};
}

void on_arrival(const uz_arrival &u) {
  Arrival a{u.src,
            Msg(u.tag >> 24),
            u.tag & kMaxTag,
            uint16_t(u.imm & 0xFFFF),
            static_cast<const uint8_t *>(u.data),
            u.len};
  if (a.src >= st.n || a.src == st.me)
    throw std::runtime_error("a message from no other rank");
  Peer &p = st.peers[a.src];
  p.known_consumed += u.imm >> 16;
  switch (a.kind) {
  case Msg::Hello:
    p.hello = true;
    if (!post_control(a.src, Msg::HelloAck))
      p.ack_pending = true;
    break;
  case Msg::HelloAck:
    p.acked = true;
    break;
  case Msg::Credit:
    break;
  case Msg::EagerFirst:
  case Msg::EagerMore:
    assemble(a);
    break;
  default:
    dispatch(a);
  }
  if (counted(a.kind))
    ++p.consumed;
}

bool take_arrivals() {
  bool any = false;
  uz_arrival u;
  while (int got = uz_poll_arrival(&u)) {
    if (got < 0)
      card_failure("uz_poll_arrival", got);
    st.in_handler = true;
    on_arrival(u);
    st.in_handler = false;
    if (int r = uz_release(&u))
      card_failure("uz_release", r);
    any = true;
  }
  // Credits owed: with the next message, or alone.
  for (uint32_t node = 0; node < st.n; ++node) {
    Peer &p = st.peers[node];
    if (node != st.me && p.consumed - p.reported >= st.threshold)
      p.credit_pending = true;
  }
  return any;
}

// A message was placed in the receiver's ring, or refused: the card
// refuses one when the receiver's ring is full or its endpoint not open
// yet (UZ_STATUS_NO_ROOM). The credits keep counted messages from that,
// so only start-up and Credit messages can meet it: they are sent again
// (a Hello after a pause), and a Credit message's credits are owed again.
void message_done(const SentMessage &m, uint32_t status) {
  if (m.slot)
    st.bounce_free.push_back(uint16_t(m.slot - 1));
  if (status == UZ_STATUS_OK || m.node >= st.n)
    return;
  Peer &p = st.peers[m.node];
  if (status == UZ_STATUS_NO_ROOM && !counted(m.kind)) {
    if (m.kind == Msg::HelloAck)
      p.ack_pending = true;
    if (m.kind == Msg::Hello)
      p.hello_refused = true;
    p.reported -= m.credits;
    return;
  }
  throw std::runtime_error("the card refused a message to rank " +
                           std::to_string(m.node) + " (status " +
                           std::to_string(status) + ")");
}

void on_completion(const uz_completion &c) {
  --st.in_flight;
  uint8_t owner = uint8_t(c.cookie >> 56);
  uint64_t id = c.cookie & ((uint64_t(1) << 56) - 1);
  if (owner == kMessageOwner) {
    message_done(sent_message(id), c.status);
    return;
  }
  if (owner >= 4 || !st.owners[owner])
    throw std::runtime_error("a completion nobody asked for");
  st.owners[owner](id, c.status);
}

bool take_completions() {
  bool any = false;
  uz_completion c;
  while (int got = uz_poll(&c)) {
    if (got < 0)
      card_failure("uz_poll", got);
    on_completion(c);
    any = true;
  }
  return any;
}

bool run_deferred() {
  if (st.in_deferred || st.deferred.empty())
    return false;
  st.in_deferred = true;
  while (!st.deferred.empty()) {
    std::function<void()> work = std::move(st.deferred.front());
    st.deferred.pop_front();
    work();
  }
  st.in_deferred = false;
  return true;
}

// ---- Start-up
// ---------------------------------------------------------------------

bool everyone_open() {
  for (uint32_t node = 0; node < st.n; ++node)
    if (node != st.me && !(st.peers[node].hello && st.peers[node].acked))
      return false;
  return true;
}

void say_hello() {
  for (uint32_t node = 0; node < st.n; ++node) {
    Peer &p = st.peers[node];
    if (node != st.me && !p.acked && !p.hello_out)
      p.hello_out = post_control(node, Msg::Hello);
  }
}

// Every rank says hello to each other rank and answers every hello. A
// Hello to a card whose endpoint is not open yet is refused: it is sent
// again after a pause.
void handshake() {
  say_hello();
  while (!everyone_open()) {
    bool any = take_completions();
    any |= take_arrivals();
    any |= pump();
    if (any)
      continue;
    bool again = false;
    for (Peer &p : st.peers)
      if (p.hello_refused) {
        p.hello_refused = p.hello_out = false;
        again = true;
      }
    if (again) {
      host::compute(kHelloRetryPs);
      say_hello();
      continue;
    }
    say_hello(); // (one the card had no room for)
    wait();
  }
}

void set_quota() {
  if (st.n < 2)
    return;
  uint32_t per_peer = st.arrivals / (st.n - 1);
  if (per_peer < kReservePerPeer + 4)
    fail(MPI_ERR_NO_MEM, "the arrival ring is too small for " +
                             std::to_string(st.n) +
                             " ranks: raise NICEMU_MPI_ARRIVALS");
  st.quota = per_peer - kReservePerPeer;
  st.threshold = std::max<uint32_t>(1, st.quota / 2);
}

unsigned power_of_two_at_least(unsigned n) {
  unsigned p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

} // namespace

void set_handler(Msg kind, ArrivalHandler handler) {
  st.handlers[uint8_t(kind) & 31] = handler;
}

void set_completion_handler(Owner owner, CompletionHandler handler) {
  st.owners[uint8_t(owner)] = handler;
}

void open() {
  st.me = host::rank();
  st.n = host::size();
  st.eager = env_unsigned("NICEMU_MPI_EAGER_LIMIT", kDefaultEagerLimit);
  // The card's defaults (NICEMU_UZURA_IN and NICEMU_UZURA_OUT choose the
  // notification modes) with larger rings.
  uz_options o;
  uz_default_options(&o);
  o.commands = kCommands;
  o.completions = kCompletions;
  o.arrivals = power_of_two_at_least(
      env_unsigned("NICEMU_MPI_ARRIVALS", kDefaultArrivals));
  o.overflow = kOverflow;
  if (uz_open(&o) != UZ_OK)
    fail(MPI_ERR_OTHER,
         std::string("cannot open the UZURA card: ") + uz_last_error());
  st.arrivals = o.arrivals;
  st.peers.assign(st.n, Peer{});
  st.bounce =
      static_cast<uint8_t *>(host::alloc(size_t(kBounceSlots) * UZ_SEND_MAX));
  for (unsigned i = kBounceSlots; i-- > 0;)
    st.bounce_free.push_back(uint16_t(i));
  if (int r = uz_register(st.bounce, size_t(kBounceSlots) * UZ_SEND_MAX, 0))
    card_failure("uz_register", r);
  set_quota();
  st.open = true;
  handshake();
}

void close() {
  if (!st.open)
    return;
  until([] {
    if (st.in_flight || !st.rdma.empty() || !st.deferred.empty())
      return false;
    for (const Peer &p : st.peers)
      if (!p.queue.empty() || p.ack_pending)
        return false;
    return true;
  });
  uz_close();
  st.open = false;
}

uint32_t rank() {
  return st.me;
}

uint32_t size() {
  return st.n;
}

size_t eager_limit() {
  return st.eager;
}

void send(uint32_t node, Msg kind, uint32_t tag, uint16_t ctx, const void *data,
          size_t len) {
  auto *bytes = static_cast<const uint8_t *>(data);
  if (len <= UZ_SEND_MAX) {
    enqueue(node, kind, tag, ctx, nullptr, 0, bytes, len);
    return;
  }
  if (kind != Msg::Eager)
    throw std::logic_error("only Eager messages are fragmented");
  uint64_t total = len;
  size_t first = UZ_SEND_MAX - kFirstHeader;
  enqueue(node, Msg::EagerFirst, tag, ctx,
          reinterpret_cast<const uint8_t *>(&total), kFirstHeader, bytes,
          first);
  for (size_t at = first; at < len; at += UZ_SEND_MAX)
    enqueue(node, Msg::EagerMore, tag, ctx, nullptr, 0, bytes + at,
            std::min<size_t>(UZ_SEND_MAX, len - at));
}

void write(uint32_t node, const void *local, uint64_t remote, size_t len,
           Owner owner, uint64_t id) {
  RdmaOp op{true,   node, reinterpret_cast<uintptr_t>(local),
            remote, len,  cookie(uint8_t(owner), id)};
  if (!st.rdma.empty() || !post_rdma(op))
    st.rdma.push_back(op);
}

void read(uint32_t node, void *local, uint64_t remote, size_t len, Owner owner,
          uint64_t id) {
  RdmaOp op{false,  node, reinterpret_cast<uintptr_t>(local),
            remote, len,  cookie(uint8_t(owner), id)};
  if (!st.rdma.empty() || !post_rdma(op))
    st.rdma.push_back(op);
}

bool poll() {
  bool any = take_completions();
  any |= take_arrivals();
  any |= run_deferred();
  any |= pump();
  return any;
}

void wait() {
  if (int r = uz_wait_any(); r < 0)
    card_failure("uz_wait_any", r);
}

bool poll_once_charged() {
  if (poll())
    return true;
  host::compute(kPollPs);
  return false;
}

void defer(std::function<void()> work) {
  st.deferred.push_back(std::move(work));
}

void register_now(const void *p, size_t len, unsigned access) {
  if (st.in_handler)
    throw std::logic_error("memory registered from a message handler");
  int r = uz_register(p, len, access);
  if (r == UZ_ENOMEM)
    fail(MPI_ERR_NO_MEM,
         "cannot register " + std::to_string(len) +
             " bytes for the card (the arena of 64 MiB a rank is full?): " +
             uz_last_error());
  if (r)
    card_failure("uz_register", r);
}

} // namespace nicemu::mpi::transport
