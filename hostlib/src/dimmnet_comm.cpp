// The protocols of nicemu/dimmnet.h (docs/dimmnet.md, "Protocols"), built
// only on the card's calls, as the reference built them on the hardware:
// barrier and global sum up an 8-ary tree of AOTF bytes and down by the
// switches' multicast, ring buffers whose indices each side reads from its
// own LLCM, and the DIMM_Send/DIMM_Recv rendezvous.
//
// Every node keeps one LLCM page for them (DIMM_COMM_LLCM, region 63, open
// to any process of the group). Offsets in it:
#include "dimmnet_card.hpp"
#include "nicemu/dimmnet.h"
#include "nicemu/dimmnet_protocol.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace {

using nicemu::dimmnet::fail;

// The tree: byte c of UP_FLAGS is the phase child c has reached; its value
// for a global sum is at UP_VALUES + 8c. The root multicasts the phase to
// DOWN_PHASE and a result to DOWN_VALUE.
constexpr uint32_t kUpFlags = 0x000;
constexpr uint32_t kDownPhase = 0x008;
constexpr uint32_t kDownValue = 0x010;
constexpr uint32_t kUpValues = 0x040;
// The flag region: the ranks registered at its head, then a line per rank:
// its entry (kind, sequence, buffers, PGID), then a length word.
constexpr uint32_t kFlagHead = 0x080;
// Per rank, 16 bytes: the notices it sends here (DATA_SENT, REPLY, ...),
// then the announcements of a message's length.
constexpr uint32_t kNotices = 0x900;
// Per rank: the receive-status word its data names (the model option).
constexpr uint32_t kStatus = 0xD00;
// Per ring: the consumer's index (in the producer's page), the producer's
// (in the consumer's).
constexpr uint32_t kRings = 0xF00;
constexpr uint32_t kRingCount = 4;

constexpr unsigned kCommRegion = 63;  // the page above
constexpr unsigned kRecvRegion = 62;  // bank 0: the receive area
constexpr unsigned kStageRegion = 61; // bank 1: what a Send stages
constexpr unsigned kRingRegion = DIMM_COMM_FIRST_REGION; // + ring id

// Kick pages: to the parent, to every node (multicast), to each rank's
// page, to each rank's core (REGISTER), and each ring's data pages.
constexpr unsigned kUpPage = DIMM_COMM_FIRST_PAGE;
constexpr unsigned kAllPage = DIMM_COMM_FIRST_PAGE + 1;
constexpr unsigned peer_page(unsigned rank) {
  return DIMM_COMM_FIRST_PAGE + 2 + rank;
}
constexpr unsigned register_page(unsigned rank) {
  return DIMM_COMM_FIRST_PAGE + 2 + DIMM_COMM_MAX_RANKS + rank;
}
constexpr unsigned kRingPages = 16; // 64 KiB
constexpr unsigned ring_page(unsigned ring, unsigned k) {
  return DIMM_COMM_FIRST_PAGE + 2 + 2 * DIMM_COMM_MAX_RANKS +
         kRingPages * ring + k;
}
static_assert(ring_page(kRingCount, 0) <= DIMM_KICK_PAGES);

constexpr uint32_t line(unsigned rank) {
  return kFlagHead + DIMMNET_FLAG_LINE * (1 + rank);
}
static_assert(line(DIMM_COMM_MAX_RANKS) <= kNotices);
static_assert(kNotices + 16 * DIMM_COMM_MAX_RANKS <= kStatus);
static_assert(kStatus + 8 * DIMM_COMM_MAX_RANKS <= kRings);

// An entry: who came first and what it offers.
enum Kind : uint8_t { kRecvFirst = 1, kSendFirst = 2 };
// Notices, in the low word's count, type and argument.
enum Notice : uint8_t {
  kDataSent = 1, // the data of a round is in (argument: its bytes)
  kReply = 2,    // the other side is done with that round
  kPullDone = 3, // a PULL of round (argument) is in
  kAbort = 4,    // the message is larger than the Recv's buffer
};

constexpr uint32_t kJoinResend_ns = 20'000;
constexpr double kJoinTimeout_ns = 100e6;
constexpr uint32_t kBufferBytes = DIMM_RECV_BUFFER;

} // namespace

struct dimm_comm {
  dimm_card *card = nullptr;
  dimm_comm_options options{};
  unsigned rank = 0, size = 0;
  uint8_t phase = 0;   // of the last barrier or global sum
  uint32_t chunk = 0;  // bytes a round moves: the receive area's buffers
  unsigned window = 0; // the BOTF window used next (0 and 1 in turn)
  struct Peer {
    bool seeded = false, registered = false;
    uint32_t sends = 0, recvs = 0;            // operations with it
    uint32_t notices_out = 0, notices_in = 0; // notices each way
    uint32_t lengths_out = 0, lengths_in = 0; // length announcements
  };
  std::vector<Peer> peers;
  dimm_comm_counters counters{};
  dimm_ring *rings[kRingCount] = {};
};

struct dimm_ring {
  dimm_comm *comm = nullptr;
  unsigned id = 0, peer = 0;
  bool producer = false;
  uint32_t llcm_offset = 0, bytes = 0;
  uint64_t head = 0, tail = 0; // bytes taken, bytes put (ever)
  uint64_t published = 0;      // this side's index as the other last saw it
  unsigned stalls = 0;         // waits for room (producer) or data
};

namespace {

// ---- Small helpers ----------------------------------------------------------

int aotf(dimm_comm *c, unsigned page, uint32_t offset, uint64_t value,
         unsigned size) {
  return dimm_aotf_store(c->card, page, offset, &value, size);
}

uint64_t load(dimm_comm *c, uint32_t offset, int *code) {
  uint64_t v = 0;
  *code = dimm_llcm_load(c->card, DIMM_COMM_LLCM + offset, &v, 8);
  return v;
}

int store(dimm_comm *c, uint32_t offset, uint64_t value) {
  return dimm_llcm_store64(c->card, DIMM_COMM_LLCM + offset, value);
}

int seed(dimm_comm *c, unsigned page, unsigned node, unsigned region,
         uint32_t address, unsigned command = DIMM_CMD_WRITE) {
  dimm_header h{};
  h.dest_node = node;
  h.region = region;
  h.address = address;
  h.command = command;
  return dimm_set_seed(c->card, page, &h);
}

// The kick pages that reach `rank`'s page (and its core), set on first use.
int reach(dimm_comm *c, unsigned rank) {
  dimm_comm::Peer &p = c->peers[rank];
  if (p.seeded)
    return DIMM_OK;
  int code = seed(c, peer_page(rank), rank, kCommRegion, 0);
  if (code == DIMM_OK && c->options.dynamic_registration)
    code = seed(c, register_page(rank), rank, kCommRegion, 0,
                DIMMNET_CMD_REGISTER);
  p.seeded = code == DIMM_OK;
  return code;
}

int check_rank(const dimm_comm *c, int rank, const char *what) {
  if (rank < 0 || unsigned(rank) >= c->size)
    return fail(DIMM_EINVAL, std::string(what) + ": no rank " +
                                 std::to_string(rank) + " (there are " +
                                 std::to_string(c->size) + ")");
  if (unsigned(rank) == c->rank)
    return fail(DIMM_EINVAL, std::string(what) + ": rank " +
                                 std::to_string(rank) + " is this one");
  if (rank >= DIMM_COMM_MAX_RANKS || c->rank >= DIMM_COMM_MAX_RANKS)
    return fail(DIMM_EINVAL, std::string(what) + ": Send and Recv reach " +
                                 "ranks below " +
                                 std::to_string(DIMM_COMM_MAX_RANKS));
  return DIMM_OK;
}

// ---- The tree
// -----------------------------------------------------------------

struct Tree {
  unsigned parent = 0, index = 0; // this node's parent and its byte there
  uint64_t mask = 0;              // the bytes of this node's children
  unsigned first = 0, children = 0;
};

Tree tree(const dimm_comm *c) {
  Tree t;
  if (c->rank > 0) {
    t.parent = (c->rank - 1) / 8;
    t.index = (c->rank - 1) % 8;
  }
  t.first = 8 * c->rank + 1;
  t.children = t.first < c->size ? std::min(8u, c->size - t.first) : 0;
  for (unsigned i = 0; i < t.children; ++i)
    t.mask |= 0xFFull << (8 * i);
  return t;
}

uint64_t replicate(uint8_t phase, uint64_t mask) {
  return (0x0101010101010101ull * phase) & mask;
}

uint8_t next_phase(uint8_t phase) {
  return uint8_t(phase % 255 + 1); // 1-255: LLCM starts at 0
}

// Waits until every child has reached `phase`.
int wait_children(dimm_comm *c, const Tree &t, uint8_t phase) {
  if (!t.children)
    return DIMM_OK;
  uint64_t want = replicate(phase, t.mask);
  for (;;) {
    int code = DIMM_OK;
    uint64_t v = load(c, kUpFlags, &code);
    if (code != DIMM_OK)
      return code;
    if ((v & t.mask) == want)
      return DIMM_OK;
  }
}

int wait_down(dimm_comm *c, uint8_t phase) {
  for (;;) {
    int code = DIMM_OK;
    uint64_t v = load(c, kDownPhase, &code);
    if (code != DIMM_OK)
      return code;
    if (uint8_t(v) == phase)
      return DIMM_OK;
  }
}

// The first phase, when not every node may have opened its page yet: a
// child says it has arrived again every kJoinResend_ns until the root's
// answer comes (a packet for a page not open yet is dropped). Gives up
// after kJoinTimeout_ns: a node that never answers is not there, or not in
// this process group.
int join(dimm_comm *c) {
  Tree t = tree(c);
  uint8_t phase = c->phase = next_phase(c->phase);
  uint64_t want = replicate(phase, t.mask);
  double start = dimm_time_ns(c->card), last_sent = -1e300;
  bool children_in = t.children == 0;
  for (;;) {
    int code = DIMM_OK;
    if (!children_in) {
      uint64_t v = load(c, kUpFlags, &code);
      children_in = (v & t.mask) == want;
    }
    double now = dimm_time_ns(c->card);
    if (code == DIMM_OK && children_in) {
      if (c->rank == 0) {
        if (c->size > 1)
          code = aotf(c, kAllPage, kDownPhase, phase, 1);
        return code;
      }
      if (now - last_sent >= kJoinResend_ns) {
        code = aotf(c, kUpPage, kUpFlags + t.index, phase, 1);
        last_sent = now;
      }
      if (code == DIMM_OK) {
        uint64_t v = load(c, kDownPhase, &code);
        if (code == DIMM_OK && uint8_t(v) == phase)
          return DIMM_OK;
      }
    }
    if (code != DIMM_OK)
      return code;
    if (now - start > kJoinTimeout_ns) {
      std::string who =
          children_in
              ? "the root's answer never came"
              : "a child of rank " + std::to_string(c->rank) + " never arrived";
      return fail(DIMM_EREFUSED,
                  "dimm_comm_open: " + who +
                      " within 100 ms: is every node running it, in the "
                      "same process group?");
    }
  }
}

// ---- Global sums
// -------------------------------------------------------------

template <typename T> T as(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

template <typename T> uint64_t bits_of(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  return bits;
}

template <typename T> uint64_t combine_as(uint64_t a, uint64_t b, int op) {
  T x = as<T>(a), y = as<T>(b);
  switch (op) {
  case DIMM_MIN:
    return bits_of<T>(y < x ? y : x);
  case DIMM_MAX:
    return bits_of<T>(x < y ? y : x);
  default:
    return bits_of<T>(T(x + y));
  }
}

uint64_t combine(uint64_t a, uint64_t b, int type, int op) {
  switch (type) {
  case DIMM_UNSIGNED:
    return combine_as<unsigned>(a, b, op);
  case DIMM_ULONGLONG:
    return combine_as<unsigned long long>(a, b, op);
  case DIMM_FLOAT:
    return combine_as<float>(a, b, op);
  default:
    return combine_as<double>(a, b, op);
  }
}

size_t type_size(int type) {
  return type == DIMM_UNSIGNED || type == DIMM_FLOAT ? 4 : 8;
}

// ---- Send and Recv: the pieces
// ------------------------------------------------

// Announces this rank in `rank`'s flag region: the length word, then the
// entry (sequence, buffers, PGID, kind), which the other side polls; with
// dynamic registration the first entry goes to the other card's core.
int announce(dimm_comm *c, unsigned rank, Kind kind, uint32_t seq,
             uint32_t buffers, uint32_t length) {
  dimm_comm::Peer &p = c->peers[rank];
  uint64_t entry = uint64_t(seq) | uint64_t(std::min(buffers, 255u)) << 32 |
                   uint64_t(c->card->pgid) << 40 | uint64_t(kind) << 48;
  int code = aotf(c, peer_page(rank), line(c->rank) + 8, length, 4);
  if (code != DIMM_OK)
    return code;
  if (c->options.dynamic_registration && !p.registered) {
    p.registered = true;
    return aotf(c, register_page(rank), kFlagHead, entry, 8);
  }
  return aotf(c, peer_page(rank), line(c->rank), entry, 8);
}

// Whether `rank`'s entry here announces operation `seq` of `kind`; its
// length word in `length`. A PGID that is not this group's is an error.
int announced(dimm_comm *c, unsigned rank, Kind kind, uint32_t seq, bool *yes,
              uint32_t *length) {
  int code = DIMM_OK;
  uint64_t entry = load(c, line(rank), &code);
  *yes = false;
  if (code != DIMM_OK || uint32_t(entry) != seq || uint8_t(entry >> 48) != kind)
    return code;
  if (uint8_t(entry >> 40) != c->card->pgid)
    return fail(DIMM_EREFUSED, "rank " + std::to_string(rank) +
                                   "'s entry carries process group " +
                                   std::to_string(uint8_t(entry >> 40)) +
                                   ", not this one's (" +
                                   std::to_string(c->card->pgid) + ")");
  *length = uint32_t(load(c, line(rank) + 8, &code));
  *yes = code == DIMM_OK;
  return code;
}

int notify(dimm_comm *c, unsigned rank, Notice type, uint32_t arg) {
  uint32_t count = ++c->peers[rank].notices_out;
  return aotf(c, peer_page(rank), kNotices + 16 * c->rank,
              count | uint64_t(type) << 32 | uint64_t(arg & 0xFFFFFF) << 40, 8);
}

int announce_length(dimm_comm *c, unsigned rank, uint32_t length) {
  uint32_t count = ++c->peers[rank].lengths_out;
  return aotf(c, peer_page(rank), kNotices + 16 * c->rank + 8,
              count | uint64_t(length) << 32, 8);
}

// The next notice from `rank`, if it has come (*type 0 if not).
int poll_notice(dimm_comm *c, unsigned rank, Notice *type, uint32_t *arg) {
  int code = DIMM_OK;
  uint64_t v = load(c, kNotices + 16 * rank, &code);
  *type = Notice(0);
  if (code == DIMM_OK && uint32_t(v) == c->peers[rank].notices_in + 1) {
    ++c->peers[rank].notices_in;
    *type = Notice(uint8_t(v >> 32));
    *arg = uint32_t(v >> 40);
  }
  return code;
}

int wait_notice(dimm_comm *c, unsigned rank, Notice *type, uint32_t *arg) {
  for (;;) {
    int code = poll_notice(c, rank, type, arg);
    if (code != DIMM_OK || *type)
      return code;
  }
}

// A length announcement from `rank`, if one has come.
int poll_length(dimm_comm *c, unsigned rank, bool *got, uint32_t *length) {
  int code = DIMM_OK;
  uint64_t v = load(c, kNotices + 16 * rank + 8, &code);
  *got = code == DIMM_OK && uint32_t(v) == c->peers[rank].lengths_in + 1;
  if (*got) {
    ++c->peers[rank].lengths_in;
    *length = uint32_t(v >> 32);
  }
  return code;
}

// Bank 1 holds what a PUSH sends or a PULL takes: the host writes it while
// the bank faces the host, then hands the bank to the card.
int stage(dimm_comm *c, const uint8_t *data, uint32_t n) {
  if (n == 0)
    return DIMM_OK;
  int code = dimm_bank_switch(c->card, 1, DIMM_SIDE_HOST);
  if (code == DIMM_OK)
    code = dimm_bank_write(c->card, 1, 0, data, n);
  if (code == DIMM_OK)
    code = dimm_bank_switch(c->card, 1, DIMM_SIDE_NIC);
  return code;
}

// A round's data is in the receive area (after its head buffer): the host
// takes the bank, copies it out, and gives the bank back to the card.
int take(dimm_comm *c, uint8_t *out, uint32_t n) {
  if (n == 0)
    return DIMM_OK;
  int code = dimm_bank_switch(c->card, 0, DIMM_SIDE_HOST);
  if (code == DIMM_OK)
    code = dimm_bank_read(c->card, 0, kBufferBytes, out, n);
  if (code == DIMM_OK)
    code = dimm_bank_switch(c->card, 0, DIMM_SIDE_NIC);
  return code;
}

bool by_botf(const dimm_comm *c, size_t message) {
  return c->options.send_mode == DIMM_SEND_BOTF ||
         (c->options.send_mode == DIMM_SEND_AUTO && message <= DIMM_BOTF_MAX);
}

// One round's data into `rank`'s receive area, by BOTF pieces through
// windows 0 and 1 in turn or by one PUSH (waited for: its ACK). With the
// receive status, the last piece names this rank's status word there.
int move(dimm_comm *c, unsigned rank, const uint8_t *data, uint32_t n,
         bool botf) {
  bool status = c->options.receive_status;
  uint32_t status_at = DIMM_COMM_LLCM + kStatus + 8 * c->rank;
  if (!botf) {
    int code = stage(c, data, n);
    dimm_rdma t{};
    t.local = DIMM_ADDR(DIMM_SPACE_BANK1, 0);
    t.local_region = kStageRegion;
    t.node = rank;
    t.remote = DIMM_ADDR(DIMM_SPACE_BANK0, kBufferBytes);
    t.remote_region = kRecvRegion;
    t.bytes = n;
    if (code == DIMM_OK)
      code = status ? dimm_push_status(c->card, &t, status_at)
                    : dimm_push(c->card, &t);
    if (code == DIMM_OK)
      code = dimm_rdma_wait(c->card);
    if (code == DIMM_OK)
      ++c->counters.push_rounds;
    return code;
  }
  for (uint32_t at = 0; at < n; at += DIMM_BOTF_MAX) {
    uint32_t piece = std::min<uint32_t>(DIMM_BOTF_MAX, n - at);
    dimm_header h{};
    h.dest_node = rank;
    h.region = kRecvRegion;
    h.address = kBufferBytes + at;
    h.status_address = status && at + piece == n;
    h.status_offset = status_at;
    int code;
    while ((code = dimm_botf_send(c->card, c->window, &h, data + at, piece)) ==
           DIMM_EBUSY) {
    }
    if (code != DIMM_OK)
      return code;
    c->window ^= 1;
  }
  ++c->counters.botf_rounds;
  return DIMM_OK;
}

uint32_t rounds_of(const dimm_comm *c, uint32_t bytes) {
  return bytes == 0 ? 1 : (bytes + c->chunk - 1) / c->chunk;
}

// The receiver came first: this Send moves the data round by round, each
// followed by a data-sent notice (DIMMnet-1: after the PUSH's ACK) or
// carrying the receive status, and waits for the receiver's reply.
int later_send(dimm_comm *c, unsigned rank, const uint8_t *data, uint32_t bytes,
               uint32_t capacity) {
  if (bytes > capacity) {
    notify(c, rank, kAbort, 0);
    return fail(DIMM_EINVAL,
                "DIMM_Send: the message (" + std::to_string(bytes) +
                    " bytes) is larger than rank " + std::to_string(rank) +
                    "'s buffer (" + std::to_string(capacity) + " bytes)");
  }
  bool status = c->options.receive_status;
  uint32_t rounds = rounds_of(c, bytes);
  int code = DIMM_OK;
  if (rounds > 1 || status)
    code = announce_length(c, rank, bytes);
  if (rounds > 1)
    ++c->counters.multi_round_messages;
  bool botf = by_botf(c, bytes);
  for (uint32_t k = 0; code == DIMM_OK && k < rounds; ++k) {
    uint32_t at = k * c->chunk, n = std::min(c->chunk, bytes - at);
    if (n > 0)
      code = move(c, rank, data + at, n, botf);
    if (code == DIMM_OK && (!status || n == 0))
      code = notify(c, rank, kDataSent, n);
    Notice type;
    uint32_t arg = 0;
    if (code == DIMM_OK)
      code = wait_notice(c, rank, &type, &arg);
    if (code == DIMM_OK && type != kReply)
      return fail(DIMM_EREFUSED, "DIMM_Send: rank " + std::to_string(rank) +
                                     " answered out of turn");
  }
  return code;
}

// This Send came first: it stages the first round, announces itself, and
// answers each PULL-done notice (staging the next round first). If the
// receiver announced itself too (both came at once), its entry wins: the
// data moves as for a later Send.
int first_send(dimm_comm *c, unsigned rank, const uint8_t *data, uint32_t bytes,
               uint32_t seq) {
  uint32_t rounds = rounds_of(c, bytes);
  uint32_t first = std::min(c->chunk, bytes);
  int code = stage(c, data, first);
  if (code == DIMM_OK)
    code = announce(c, rank, kSendFirst, seq,
                    (first + kBufferBytes - 1) / kBufferBytes, bytes);
  if (code != DIMM_OK)
    return code;
  ++c->counters.sends_first;
  for (;;) {
    bool yes = false;
    uint32_t capacity = 0;
    code = announced(c, rank, kRecvFirst, seq, &yes, &capacity);
    if (code != DIMM_OK)
      return code;
    if (yes)
      return later_send(c, rank, data, bytes, capacity);
    Notice type;
    uint32_t k = 0;
    code = poll_notice(c, rank, &type, &k);
    if (code != DIMM_OK)
      return code;
    if (!type)
      continue;
    if (type == kAbort)
      return fail(DIMM_EINVAL, "DIMM_Send: the message (" +
                                   std::to_string(bytes) +
                                   " bytes) is larger than rank " +
                                   std::to_string(rank) + "'s buffer");
    if (type != kPullDone)
      return fail(DIMM_EREFUSED, "DIMM_Send: rank " + std::to_string(rank) +
                                     " answered out of turn");
    bool got = false;
    uint32_t length = 0;
    if (k == 0 && rounds > 1)
      code = poll_length(c, rank, &got, &length); // the receiver's count
    if (code == DIMM_OK && k + 1 < rounds) {
      uint32_t at = (k + 1) * c->chunk;
      code = stage(c, data + at, std::min(c->chunk, bytes - at));
    }
    if (code == DIMM_OK)
      code = notify(c, rank, kReply, k);
    if (code != DIMM_OK || k + 1 >= rounds)
      return code;
  }
}

// The sender came first: this Recv pulls each round from its staging
// area, copies it out, sends a PULL-done notice and waits for the reply.
int later_recv(dimm_comm *c, unsigned rank, uint8_t *out, uint32_t capacity,
               uint32_t bytes) {
  if (bytes > capacity) {
    notify(c, rank, kAbort, 0);
    return fail(DIMM_EINVAL, "DIMM_Recv: the message (" +
                                 std::to_string(bytes) +
                                 " bytes) is larger than the buffer (" +
                                 std::to_string(capacity) + " bytes)");
  }
  uint32_t rounds = rounds_of(c, bytes);
  int code = DIMM_OK;
  if (rounds > 1) {
    code = announce_length(c, rank, bytes);
    ++c->counters.multi_round_messages;
  }
  for (uint32_t k = 0; code == DIMM_OK && k < rounds; ++k) {
    uint32_t at = k * c->chunk, n = std::min(c->chunk, bytes - at);
    if (n > 0) {
      dimm_rdma t{};
      t.local = DIMM_ADDR(DIMM_SPACE_BANK0, kBufferBytes);
      t.local_region = kRecvRegion;
      t.node = rank;
      t.remote = DIMM_ADDR(DIMM_SPACE_BANK1, 0);
      t.remote_region = kStageRegion;
      t.bytes = n;
      code = dimm_pull(c->card, &t);
      if (code == DIMM_OK)
        code = dimm_rdma_wait(c->card);
      if (code == DIMM_OK)
        code = take(c, out + at, n);
      if (code == DIMM_OK)
        ++c->counters.pull_rounds;
    }
    if (code == DIMM_OK)
      code = notify(c, rank, kPullDone, k);
    Notice type;
    uint32_t arg = 0;
    if (code == DIMM_OK)
      code = wait_notice(c, rank, &type, &arg);
    if (code == DIMM_OK && type != kReply)
      return fail(DIMM_EREFUSED, "DIMM_Recv: rank " + std::to_string(rank) +
                                     " answered out of turn");
  }
  return code;
}

int aborted(unsigned rank) {
  return fail(DIMM_EINVAL, "DIMM_Recv: rank " + std::to_string(rank) +
                               "'s message is larger than the buffer");
}

// This Recv came first: it announces its buffer and free receive buffers,
// then answers each round's data (a data-sent notice, or with the receive
// status its status word) once it has copied it out.
int first_recv(dimm_comm *c, unsigned rank, uint8_t *out, uint32_t capacity,
               uint32_t seq, uint32_t *received) {
  int code =
      announce(c, rank, kRecvFirst, seq, c->options.receive_buffers, capacity);
  if (code != DIMM_OK)
    return code;
  ++c->counters.recvs_first;
  bool status = c->options.receive_status;
  bool known = false; // the length, announced before any data
  uint32_t length = 0, got = 0;
  if (status) { // the length comes first, or an abort
    for (;;) {
      code = poll_length(c, rank, &known, &length);
      if (code != DIMM_OK || known)
        break;
      Notice type;
      uint32_t arg = 0;
      code = poll_notice(c, rank, &type, &arg);
      if (code != DIMM_OK)
        return code;
      if (type == kAbort)
        return aborted(rank);
      if (type)
        return fail(DIMM_EREFUSED, "DIMM_Recv: rank " + std::to_string(rank) +
                                       " answered out of turn");
    }
  }
  for (uint32_t k = 0; code == DIMM_OK; ++k) {
    uint32_t n = 0;
    if (status && length > 0) {
      uint32_t at = DIMM_COMM_LLCM + kStatus + 8 * rank;
      uint64_t word = 0;
      while ((code = dimm_llcm_load(c->card, at, &word, 8)) == DIMM_OK &&
             !(word & 0x80000000u)) {
      }
      if (code == DIMM_OK)
        code = dimm_llcm_store64(c->card, at, 0); // for the next round
      n = std::min(c->chunk, length - got);
    } else {
      Notice type;
      code = wait_notice(c, rank, &type, &n);
      if (code != DIMM_OK)
        return code;
      if (type == kAbort)
        return aborted(rank);
      if (type != kDataSent)
        return fail(DIMM_EREFUSED, "DIMM_Recv: rank " + std::to_string(rank) +
                                       " answered out of turn");
      if (k == 0 && !known)
        code = poll_length(c, rank, &known, &length); // several rounds
      if (!known)
        length = n;
    }
    if (code == DIMM_OK && got + n > capacity)
      return fail(DIMM_EREFUSED, "DIMM_Recv: more data than announced");
    if (code == DIMM_OK)
      code = take(c, out + got, n);
    got += n;
    if (code == DIMM_OK)
      code = notify(c, rank, kReply, k);
    if (got >= length)
      break;
  }
  *received = got;
  return code;
}

// ---- Rings
// ---------------------------------------------------------------------

constexpr uint64_t kRingReady = 1ull << 63; // in the consumer's index word

uint32_t own_index_word(const dimm_ring *r) {
  return kRings + 16 * r->id + (r->producer ? 0 : 8);
}
uint32_t peer_index_word(const dimm_ring *r) {
  return kRings + 16 * r->id + (r->producer ? 8 : 0);
}

// Tells the other side how far this one has come.
int publish(dimm_ring *r) {
  uint64_t index = r->producer ? r->tail : r->head;
  if (index == r->published)
    return DIMM_OK;
  int code = aotf(r->comm, peer_page(r->peer), peer_index_word(r),
                  r->producer ? index : index | kRingReady, 8);
  if (code == DIMM_OK)
    r->published = index;
  return code;
}

// Reads the other side's index from this side's own LLCM.
int refresh(dimm_ring *r) {
  int code = DIMM_OK;
  uint64_t v = load(r->comm, own_index_word(r), &code);
  if (code == DIMM_OK) {
    if (r->producer)
      r->head = v & ~kRingReady;
    else
      r->tail = v;
  }
  return code;
}

} // namespace

extern "C" {

int dimm_comm_open(dimm_card *card, const dimm_comm_options *options,
                   dimm_comm **out) {
  if (!card || !out)
    return fail(DIMM_EINVAL, "dimm_comm_open: no card, or no place for the "
                             "communicator");
  *out = nullptr;
  dimm_comm_options o = options ? *options : dimm_comm_options{};
  if (o.receive_buffers == 0)
    o.receive_buffers = DIMM_RECV_BUFFERS;
  if (o.receive_buffers > DIMM_RECV_BUFFERS || o.send_mode < DIMM_SEND_AUTO ||
      o.send_mode > DIMM_SEND_PUSH)
    return fail(DIMM_EINVAL, "dimm_comm_open: 1-255 receive buffers, and a "
                             "DIMM_SEND_* mode");
  if (o.receive_status && !card->status_address)
    return fail(DIMM_EINVAL, "dimm_comm_open: this card's packets carry no "
                             "receive-status address (model option "
                             "otf.status_address)");
  if (card->end->per_node() != 1)
    return fail(DIMM_EINVAL, "dimm_comm_open: the protocols run one process "
                             "per node (nicemu run --procs-per-node 1)");
  if (card->nodes > 256)
    return fail(DIMM_EINVAL, "dimm_comm_open: a packet names 256 nodes at "
                             "most");
  auto *c = new (std::nothrow) dimm_comm;
  if (!c)
    return fail(DIMM_EREFUSED, "out of memory");
  c->card = card;
  c->options = o;
  c->rank = card->node;
  c->size = card->nodes;
  c->chunk = o.receive_buffers * kBufferBytes;
  c->peers.resize(c->size);
  uint32_t area = kBufferBytes * (1 + o.receive_buffers);
  // The page, cleared (a packet that arrives meanwhile is sent again: the
  // join); the receive area with its head; the staging area.
  int code =
      dimm_open_region(card, kCommRegion, DIMM_COMM_LLCM, 4096, DIMM_ANY_PID);
  for (uint32_t at = 0; code == DIMM_OK && at < 4096; at += 8)
    code = store(c, at, 0);
  uint32_t ranks =
      c->size < DIMM_COMM_MAX_RANKS ? c->size : DIMM_COMM_MAX_RANKS;
  if (code == DIMM_OK)
    code = store(c, kFlagHead, o.dynamic_registration ? 0 : ranks);
  if (code == DIMM_OK)
    code = dimm_open_region(card, kRecvRegion, DIMM_ADDR(DIMM_SPACE_BANK0, 0),
                            area, DIMM_ANY_PID);
  if (code == DIMM_OK)
    code = dimm_open_region(card, kStageRegion, DIMM_ADDR(DIMM_SPACE_BANK1, 0),
                            c->chunk, DIMM_ANY_PID);
  if (code == DIMM_OK)
    code = dimm_bank_switch(card, 0, DIMM_SIDE_HOST);
  if (code == DIMM_OK) { // the receive area's head: its group
    uint32_t head[4] = {card->pgid, c->rank, o.receive_buffers, 0};
    code = dimm_bank_write(card, 0, 0, head, sizeof head);
  }
  if (code == DIMM_OK)
    code = dimm_bank_switch(card, 0, DIMM_SIDE_NIC);
  if (code == DIMM_OK)
    code = dimm_bank_switch(card, 1, DIMM_SIDE_NIC);
  Tree t = tree(c);
  if (code == DIMM_OK && c->rank > 0)
    code = seed(c, kUpPage, t.parent, kCommRegion, 0);
  if (code == DIMM_OK && c->rank == 0 && c->size > 1)
    code = seed(c, kAllPage, DIMM_ALL_NODES, kCommRegion, 0);
  if (code == DIMM_OK)
    code = join(c);
  if (code != DIMM_OK) {
    std::string why = dimm_last_error();
    dimm_close_region(card, kCommRegion);
    delete c;
    return fail(code, why);
  }
  *out = c;
  return DIMM_OK;
}

int dimm_comm_close(dimm_comm *c) {
  if (!c)
    return fail(DIMM_EINVAL, "no communicator");
  for (dimm_ring *r : c->rings)
    dimm_ring_close(r);
  for (unsigned region : {kCommRegion, kRecvRegion, kStageRegion})
    dimm_close_region(c->card, region);
  delete c;
  return DIMM_OK;
}

int dimm_comm_rank(const dimm_comm *c) {
  return c ? int(c->rank) : DIMM_EINVAL;
}

int dimm_comm_size(const dimm_comm *c) {
  return c ? int(c->size) : DIMM_EINVAL;
}

int dimm_barrier(dimm_comm *c) {
  if (!c)
    return fail(DIMM_EINVAL, "dimm_barrier: no communicator");
  Tree t = tree(c);
  uint8_t phase = c->phase = next_phase(c->phase);
  int code = wait_children(c, t, phase);
  if (code != DIMM_OK || c->size == 1)
    return code;
  if (c->rank == 0)
    return aotf(c, kAllPage, kDownPhase, phase, 1);
  code = aotf(c, kUpPage, kUpFlags + t.index, phase, 1);
  return code == DIMM_OK ? wait_down(c, phase) : code;
}

int dimm_allreduce(dimm_comm *c, const void *in, void *out, int type, int op) {
  if (!c || !in || !out)
    return fail(DIMM_EINVAL, "dimm_allreduce: no communicator or buffer");
  if (type < DIMM_UNSIGNED || type > DIMM_DOUBLE || op < DIMM_SUM ||
      op > DIMM_MAX)
    return fail(DIMM_EINVAL, "dimm_allreduce: a DIMM_UNSIGNED.. DIMM_DOUBLE "
                             "type and a DIMM_SUM/MIN/MAX operation");
  size_t size = type_size(type);
  uint64_t acc = 0;
  std::memcpy(&acc, in, size);
  Tree t = tree(c);
  uint8_t phase = c->phase = next_phase(c->phase);
  int code = wait_children(c, t, phase);
  for (unsigned i = 0; code == DIMM_OK && i < t.children; ++i)
    acc = combine(acc, load(c, kUpValues + 8 * i, &code), type, op);
  if (code != DIMM_OK)
    return code;
  if (c->rank == 0) {
    if (c->size > 1) {
      code = aotf(c, kAllPage, kDownValue, acc, 8);
      if (code == DIMM_OK)
        code = aotf(c, kAllPage, kDownPhase, phase, 1);
    }
  } else {
    code = aotf(c, kUpPage, kUpValues + 8 * t.index, acc, 8);
    if (code == DIMM_OK)
      code = aotf(c, kUpPage, kUpFlags + t.index, phase, 1);
    if (code == DIMM_OK)
      code = wait_down(c, phase);
    if (code == DIMM_OK)
      acc = load(c, kDownValue, &code);
  }
  if (code == DIMM_OK)
    std::memcpy(out, &acc, size);
  return code;
}

int DIMM_Send(dimm_comm *c, const void *buf, size_t bytes, int dest) {
  if (!c)
    return fail(DIMM_EINVAL, "DIMM_Send: no communicator");
  if (int code = check_rank(c, dest, "DIMM_Send"); code != DIMM_OK)
    return code;
  if (bytes > 0 && !buf)
    return fail(DIMM_EINVAL, "DIMM_Send: no buffer");
  if (bytes > 0xFFFFFFFFu)
    return fail(DIMM_EINVAL, "DIMM_Send: a message is below 4 GiB");
  unsigned rank = unsigned(dest);
  if (int code = reach(c, rank); code != DIMM_OK)
    return code;
  uint32_t seq = ++c->peers[rank].sends;
  const auto *data = static_cast<const uint8_t *>(buf);
  bool yes = false;
  uint32_t capacity = 0;
  int code = announced(c, rank, kRecvFirst, seq, &yes, &capacity);
  if (code != DIMM_OK)
    return code;
  return yes ? later_send(c, rank, data, uint32_t(bytes), capacity)
             : first_send(c, rank, data, uint32_t(bytes), seq);
}

int DIMM_Recv(dimm_comm *c, void *buf, size_t bytes, int source,
              size_t *received) {
  if (!c)
    return fail(DIMM_EINVAL, "DIMM_Recv: no communicator");
  if (int code = check_rank(c, source, "DIMM_Recv"); code != DIMM_OK)
    return code;
  if (bytes > 0 && !buf)
    return fail(DIMM_EINVAL, "DIMM_Recv: no buffer");
  uint32_t capacity = uint32_t(std::min<size_t>(bytes, 0xFFFFFFFFu));
  unsigned rank = unsigned(source);
  if (int code = reach(c, rank); code != DIMM_OK)
    return code;
  uint32_t seq = ++c->peers[rank].recvs;
  auto *out = static_cast<uint8_t *>(buf);
  bool yes = false;
  uint32_t length = 0;
  int code = announced(c, rank, kSendFirst, seq, &yes, &length);
  if (code != DIMM_OK)
    return code;
  uint32_t got = length;
  code = yes ? later_recv(c, rank, out, capacity, length)
             : first_recv(c, rank, out, capacity, seq, &got);
  if (code == DIMM_OK && received)
    *received = got;
  return code;
}

int dimm_comm_counters_get(dimm_comm *c, dimm_comm_counters *counters) {
  if (!c || !counters)
    return fail(DIMM_EINVAL, "no communicator or counters");
  int code = DIMM_OK;
  *counters = c->counters;
  counters->registered = unsigned(uint32_t(load(c, kFlagHead, &code)));
  return code;
}

int dimm_ring_open(dimm_comm *c, unsigned id, int producer, int peer,
                   uint32_t llcm_offset, uint32_t bytes, dimm_ring **out) {
  if (!c || !out)
    return fail(DIMM_EINVAL, "dimm_ring_open: no communicator or no place "
                             "for the ring");
  *out = nullptr;
  if (id >= kRingCount || c->rings[id])
    return fail(DIMM_EINVAL, "dimm_ring_open: rings 0-3, each opened once");
  if (int code = check_rank(c, peer, "dimm_ring_open"); code != DIMM_OK)
    return code;
  if (bytes < 8 || bytes % 8 || bytes > kRingPages * DIMM_PAGE_BYTES ||
      llcm_offset % DIMM_PAGE_BYTES || llcm_offset + bytes > DIMM_COMM_LLCM)
    return fail(DIMM_EINVAL, "dimm_ring_open: 8 bytes to 64 KiB (a multiple "
                             "of 8) at a 4 KiB-aligned LLCM offset below "
                             "DIMM_COMM_LLCM");
  auto *r = new (std::nothrow) dimm_ring;
  if (!r)
    return fail(DIMM_EREFUSED, "out of memory");
  r->comm = c;
  r->id = id;
  r->peer = unsigned(peer);
  r->producer = producer != 0;
  r->llcm_offset = llcm_offset;
  r->bytes = bytes;
  int code = reach(c, r->peer);
  if (r->producer) {
    // Data pages of the consumer's area; then wait until it says the area
    // is open (its first index word).
    for (unsigned k = 0; code == DIMM_OK && k * DIMM_PAGE_BYTES < bytes; ++k)
      code = seed(c, ring_page(id, k), r->peer, kRingRegion + id,
                  k * DIMM_PAGE_BYTES);
    double start = dimm_time_ns(c->card);
    while (code == DIMM_OK) {
      uint64_t v = load(c, own_index_word(r), &code);
      if (v & kRingReady)
        break;
      if (dimm_time_ns(c->card) - start > kJoinTimeout_ns)
        code = fail(DIMM_EREFUSED, "dimm_ring_open: the consumer never "
                                   "opened its side within 100 ms");
    }
  } else { // the producer writes nothing before the ready word below
    if (code == DIMM_OK)
      code = store(c, own_index_word(r), 0);
    if (code == DIMM_OK)
      code = dimm_open_region(c->card, kRingRegion + id, llcm_offset, bytes,
                              DIMM_ANY_PID);
    if (code == DIMM_OK) // ready: the producer may write
      code = aotf(c, peer_page(r->peer), peer_index_word(r), kRingReady, 8);
  }
  if (code != DIMM_OK) {
    delete r;
    return code;
  }
  c->rings[id] = r;
  *out = r;
  return DIMM_OK;
}

int dimm_ring_put(dimm_ring *r, const void *data, uint32_t len) {
  if (!r || !r->producer || (len && !data))
    return fail(DIMM_EINVAL, "dimm_ring_put: a producer's ring and data");
  dimm_comm *c = r->comm;
  const auto *bytes = static_cast<const uint8_t *>(data);
  for (uint32_t done = 0; done < len;) {
    int code = DIMM_OK;
    r->stalls += r->tail - r->head == r->bytes;
    while (code == DIMM_OK && r->tail - r->head == r->bytes) {
      code = publish(r); // the consumer may be waiting for what is in
      if (code == DIMM_OK)
        code = refresh(r);
    }
    if (code != DIMM_OK)
      return code;
    uint32_t at = uint32_t(r->tail % r->bytes);
    uint32_t n = std::min(
        {len - done, uint32_t(r->bytes - (r->tail - r->head)), r->bytes - at});
    if (n >= 8 && at % 8 == 0 && n < 16) { // one aligned word: AOTF
      n = 8;
      uint64_t word = 0;
      std::memcpy(&word, bytes + done, 8);
      code = aotf(c, ring_page(r->id, at / DIMM_PAGE_BYTES),
                  at % DIMM_PAGE_BYTES, word, 8);
    } else {
      n = std::min<uint32_t>(n, DIMM_BOTF_MAX);
      dimm_header h{};
      h.dest_node = r->peer;
      h.region = kRingRegion + r->id;
      h.address = at;
      while ((code = dimm_botf_send(c->card, c->window, &h, bytes + done, n)) ==
             DIMM_EBUSY) {
      }
      c->window ^= 1;
    }
    if (code != DIMM_OK)
      return code;
    r->tail += n;
    done += n;
  }
  return publish(r); // after the data: it lands first
}

int dimm_ring_get(dimm_ring *r, void *out, uint32_t len) {
  if (!r || r->producer || (len && !out))
    return fail(DIMM_EINVAL, "dimm_ring_get: a consumer's ring and a buffer");
  dimm_comm *c = r->comm;
  auto *bytes = static_cast<uint8_t *>(out);
  for (uint32_t done = 0; done < len;) {
    int code = DIMM_OK;
    r->stalls += r->tail == r->head;
    while (code == DIMM_OK && r->tail == r->head) {
      code = publish(r); // the producer may be waiting for room
      if (code == DIMM_OK)
        code = refresh(r);
    }
    if (code != DIMM_OK)
      return code;
    uint32_t at = uint32_t(r->head % r->bytes);
    uint32_t n =
        std::min({len - done, uint32_t(r->tail - r->head), r->bytes - at});
    // Whole words, as the host loads them.
    for (uint32_t i = 0; i < n;) {
      uint32_t word_at = (at + i) & ~7u;
      uint64_t word = 0;
      code = dimm_llcm_load(c->card, r->llcm_offset + word_at, &word, 8);
      if (code != DIMM_OK)
        return code;
      uint32_t from = at + i - word_at;
      uint32_t part = std::min(8 - from, n - i);
      std::memcpy(bytes + done + i, reinterpret_cast<uint8_t *>(&word) + from,
                  part);
      i += part;
    }
    r->head += n;
    done += n;
  }
  return publish(r);
}

unsigned dimm_ring_stalls(const dimm_ring *r) {
  return r ? r->stalls : 0;
}

int dimm_ring_close(dimm_ring *r) {
  if (!r)
    return fail(DIMM_EINVAL, "no ring");
  dimm_comm *c = r->comm;
  store(c, own_index_word(r), 0);
  if (!r->producer)
    dimm_close_region(c->card, kRingRegion + r->id);
  c->rings[r->id] = nullptr;
  delete r;
  return DIMM_OK;
}

} // extern "C"
