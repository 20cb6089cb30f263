// The bottom of the VIPL library: what every part of it shares. The parts,
// each using only those before it:
//   vipl_card.cpp     (this header) state, handles, refusals, commands,
//                     waits, the objects the card knows, addresses,
//                     asynchronous errors
//   vipl_names.cpp    the name service
//   vipl_connect.cpp  the event ring and connections (vipl_connect.hpp)
//   vipl_vi.cpp       VIs, posting, completion queues (vipl_vi.hpp)
//   vipl.cpp          the NIC, Ptags, memory registration, error callbacks
// The library drives the via firmware through nicemu/via_protocol.h;
// docs/via.md.
//
// All state is one Library object behind one mutex. Every public call runs
// inside guarded(), which takes the mutex, turns exceptions of the host
// library (the cluster stopping, ...) into VIP_ERROR_RESOURCE with a message
// on stderr, and calls the program's error handlers once the mutex is
// released (a handler may call VIPL).
#pragma once

#include "nicemu/vipl.h"

#include "nicemu/via_protocol.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace nicemu::vipl {

// ---- Handles ----------------------------------------------------------------
// Pointer handles are numbers, never addresses: a kind in bits 24..31 and a
// serial below, so that a stale or made-up handle is recognised (it is in no
// table) instead of being dereferenced.
enum class Kind : uint32_t { Nic = 1, Ptag = 2, Vi = 3, Cq = 4, Conn = 5 };
using Handle = uintptr_t;

struct Nic {
  VIP_PVOID error_context = nullptr;
  VIP_ERROR_HANDLER error_handler = nullptr;
};

struct Ptag {
  Handle nic;
  uint32_t number; // the card's Ptag (1..)
};

struct Region {
  Handle nic;
  uint64_t va, length;
  uint32_t bus;   // where the card finds va (pinned memory may move)
  uint32_t attrs; // VIAFW_MEM_*
  Handle ptag;
  uint32_t ptag_number;
  bool rdma_write, rdma_read;
};

struct Cq {
  Handle nic;
  uint32_t number;         // the card's CQ (0..VIAFW_MAX_CQS-1)
  volatile uint32_t *ring; // entries x 2 words
  uint32_t entries;
  uint32_t next = 1;  // sequence number of the next entry to take
  uint32_t users = 0; // VI queues that report to it
};

// A connection being made on a VI. A peer connection is Bound when this
// side has bound its VI and waits for the other side to confirm.
enum class Connecting { None, Request, Peer };
enum class Outcome { Pending, Bound, Connected, Rejected, Mismatch, Failed };

struct Vi {
  Handle nic;
  uint32_t number; // the card's VI (0..VIAFW_MAX_VIS-1)
  VIP_VI_KIND kind;
  VIP_VI_ATTRIBUTES attrs;
  uint32_t ptag_number;
  VIP_VI_STATE state = VIP_STATE_IDLE;
  Handle send_cq = 0, recv_cq = 0;
  // Posted descriptors not yet handed back, oldest first.
  std::deque<VIP_DESCRIPTOR *> sends, recvs;
  // The other end, once connected.
  uint32_t peer_node = 0, peer_vi = 0;
  VIP_VI_ATTRIBUTES remote{};
  // A connection in progress (VipConnectRequest, VipConnectPeerRequest).
  Connecting connecting = Connecting::None;
  Outcome outcome = Outcome::Pending;
  uint32_t request_id = 0;  // VipConnectRequest: the id of its request
  uint32_t target_node = 0; // the node asked
  std::vector<uint8_t> local_disc, remote_disc; // peer requests
  uint64_t deadline = 0;                        // peer requests
};

// A control message as it arrived: the sending node and its 8 words.
struct Message {
  uint32_t node;
  uint32_t w[8];
};

struct Conn {
  Handle nic;
  Message request;        // the VIAFW_CTL_CONNECT_REQUEST
  bool withdrawn = false; // the requester gave up (its timeout)
};

// A peer request this host gave up (timeout, disconnect): a late answer to
// it is told to disconnect (docs/via.md, "Connection management").
struct Abandoned {
  uint32_t vi, node;
  std::vector<uint8_t> local_disc, remote_disc;
};

struct Callback {
  VIP_ERROR_HANDLER handler;
  VIP_PVOID context;
  VIP_ERROR_DESCRIPTOR error;
};

struct Library {
  std::mutex mutex;
  // The card: set up by the first VipOpenNic, forgotten by the last close.
  bool ready = false;
  uint8_t *control = nullptr;       // command block, then the event ring
  viafw_command *command = nullptr; // in `control`
  volatile uint32_t *events = nullptr;
  uint32_t next_event = 1; // sequence number of the next event
  uint32_t command_seq = 0;
  uint32_t node = 0, nodes = 0;
  uint32_t card_vis = 0; // VIs the card serves (its mailbox says, at open)
  uint8_t mac[6] = {};

  uint32_t serial = 0;
  std::map<Handle, Nic> nics;
  std::map<Handle, Ptag> ptags;
  std::map<uint32_t, Region> regions; // by memory handle (1..255)
  std::map<Handle, Vi> vis;
  std::map<Handle, Cq> cqs;
  std::map<Handle, Conn> conns;
  uint32_t next_region = 1, next_ptag = 1, next_request = 1;
  uint64_t pinned_epoch = 0; // of the pinned pages the regions were set for

  // Control messages that no call has taken yet.
  std::deque<Message> connect_requests, peer_requests;
  std::deque<Abandoned> abandoned;

  // Error handlers to call once the mutex is released.
  std::vector<Callback> callbacks;

  // CQ rings of destroyed CQs, for reuse (host::alloc never frees).
  struct Ring {
    uint8_t *memory;
    size_t bytes;
  };
  std::vector<Ring> free_rings;
};

Library &lib();

// Runs `body` as one VIPL call (see the top of this file).
template <class Body> VIP_RETURN guarded(const char *function, Body &&body);
VIP_RETURN guard_failed(const char *function, const char *what);
void run_callbacks(std::vector<Callback> &callbacks);

template <class Body> VIP_RETURN guarded(const char *function, Body &&body) {
  Library &l = lib();
  std::vector<Callback> callbacks;
  VIP_RETURN result;
  {
    std::lock_guard<std::mutex> lock(l.mutex);
    try {
      result = body();
    } catch (const std::exception &e) {
      result = guard_failed(function, e.what());
    } catch (...) {
      result = guard_failed(function, "unknown exception");
    }
    callbacks.swap(l.callbacks);
  }
  run_callbacks(callbacks);
  return result;
}

// A message on stderr, for failures a return code alone would leave
// puzzling ("nicemu: Vip...: ...").
void say(const char *function, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

// ---- Refusals
// Every error a call returns says why on stderr (say), so that a program
// that gets one can tell which argument or state it was; only the polling
// outcomes (VIP_NOT_DONE, VIP_TIMEOUT of a Done or Wait) stay quiet. A
// refusal returns `code`: the return codes are the VIPL specification's.
VIP_RETURN refuse(const char *function, VIP_RETURN code, const char *format,
                  ...) __attribute__((format(printf, 3, 4)));
// A handle that is not an open object of `kind` (and, with `nic`, of that
// NIC handle): says which of NULL, another kind, nothing open or another
// NIC's (after `argument`, when a call takes two of a kind), and returns
// VIP_INVALID_PARAMETER.
VIP_RETURN refuse_handle(const char *function, Kind kind, const void *handle,
                         Handle nic = 0, const char *argument = nullptr);
// The same words, for a caller that returns another code (VIP_INVALID_PTAG).
void say_bad_handle(const char *function, Kind kind, const void *handle,
                    Handle nic = 0, const char *argument = nullptr);
// "VIP_STATE_IDLE", ... for refusals that name a VI's state.
const char *state_name(VIP_VI_STATE state);
// Memory handle `handle` of `nic` does not hold [va, va + bytes): not
// registered, another NIC handle's, or outside its region. Returns
// VIP_INVALID_PARAMETER.
VIP_RETURN refuse_region(const char *function, Handle nic,
                         VIP_MEM_HANDLE handle, const void *va,
                         uint64_t bytes = 1);
// The first of `pointers` (name, value) that is NULL; null if none.
const char *null_among(
    std::initializer_list<std::pair<const char *, const void *>> pointers);

// ---- Handles
// ------------------------------------------------------------------
Handle new_handle(Kind kind);
inline void *as_pointer(Handle h) {
  return reinterpret_cast<void *>(h);
}
template <class T> T *find(std::map<Handle, T> &table, const void *handle) {
  auto it = table.find(reinterpret_cast<Handle>(handle));
  return it == table.end() ? nullptr : &it->second;
}

// ---- The card
// ----------------------------------------------------------------- Runs a
// command (VIAFW_CMD_*) and returns its VIAFW_R_* result.
uint32_t command(uint32_t op, std::initializer_list<uint32_t> args);
VIP_RETURN from_result(uint32_t result);
// The card refused a command (`result` not VIAFW_R_OK): says what it refused
// (`what`, "CREATE_VI for VI 2") and what the result means, and returns
// from_result(result).
VIP_RETURN card_refused(const char *function, const char *what,
                        uint32_t result);
// Sends a control message to `node` (VIAFW_CMD_CONTROL); the card's result.
uint32_t send_control(uint32_t node, const uint32_t (&w)[8]);

// Virtual time: a deadline `ms` milliseconds from now (kForever for
// VIP_INFINITE), and waits on a word of host memory up to one.
constexpr uint64_t kForever = ~uint64_t(0);
uint64_t deadline_after(VIP_ULONG ms);
bool wait_until(const volatile uint32_t *word, uint32_t mask, uint32_t expected,
                uint64_t deadline);
// The card's event ring (Library::events), read by vipl_connect.cpp.
constexpr uint32_t kEventEntries = 64;
constexpr uint32_t kEventWords = VIAFW_EVENT_BYTES / 4;

// ---- Objects
// -------------------------------------------------------------------- The open
// NIC of a handle, a Ptag of `nic`, the region of memory handle `handle` of
// `nic` that holds [va, va + bytes); null if none.
Nic *nic_of(VIP_NIC_HANDLE handle);
Ptag *ptag_of(Handle nic, VIP_PROTECTION_HANDLE handle);
Region *region_of(Handle nic, VIP_MEM_HANDLE handle, const void *va,
                  uint64_t bytes = 1);
// The bus address of registered memory [p, p + bytes) (arena or pinned);
// 0 if the card cannot reach it.
uint32_t bus_of(const void *p, size_t bytes);
// When pinned pages moved in the arena (a registration grew a pinned span),
// the card's regions over them are set again.
void follow_pinned_pages();
// The VI the card numbers `number` (0 if none).
Handle vi_by_number(uint32_t number);
// The error handler of `nic` (or the default one) is called for `vi`.
void report_vi_error(Vi &vi, Handle handle, uint32_t status);

// Card reliability codes and VIPL levels.
bool reliability_code(VIP_RELIABILITY_LEVEL level, uint32_t &code);
VIP_RELIABILITY_LEVEL reliability_level(uint32_t code);

// This node's host address (its Ethernet MAC) and the node of an address.
void node_mac(uint32_t node, uint8_t (&mac)[6]);
bool address_node(const VIP_NET_ADDRESS *address, uint32_t &node);

} // namespace nicemu::vipl
