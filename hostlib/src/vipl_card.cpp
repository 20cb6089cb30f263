// VIPL on the via firmware, the card: the library's state and how every
// call runs (guarded), handles, refusals (each says why), commands, waits on
// host memory, the objects the card knows, addresses and reliability levels,
// asynchronous errors.
// The bottom of the library: it uses no other vipl*.cpp (vipl_card.hpp).
#include "vipl_card.hpp"

#include "nicemu/host.hpp"
#include "nicemu/regs.h"

#include "host_end.hpp"
#include "pinned.hpp"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace host = nicemu::host;

namespace nicemu::vipl {

// The descriptor layout and the status and control bits are the card's.
// The card's view of processes sharing it is the emulator's.
static_assert(VIAFW_WINDOW_BASE == nicemu::channel::kArenaBusBase);
static_assert(VIAFW_WINDOW_BYTES == nicemu::channel::kArenaBusStride);
static_assert(VIAFW_BOX_EVENTS_FREED_BY(0) == NICEMU_MAILBOX_PROCESS_WORDS);
static_assert(sizeof(VIP_CONTROL_SEGMENT) == VIAFW_CS_BYTES);
static_assert(offsetof(VIP_CONTROL_SEGMENT, SegCount) == VIAFW_CS_SEGCOUNT);
static_assert(offsetof(VIP_CONTROL_SEGMENT, Control) == VIAFW_CS_CONTROL);
static_assert(offsetof(VIP_CONTROL_SEGMENT, ImmediateData) ==
              VIAFW_CS_IMMEDIATE);
static_assert(offsetof(VIP_CONTROL_SEGMENT, Length) == VIAFW_CS_LENGTH);
static_assert(offsetof(VIP_CONTROL_SEGMENT, Status) == VIAFW_CS_STATUS);
static_assert(sizeof(VIP_DATA_SEGMENT) == VIAFW_SEG_BYTES);
static_assert(sizeof(VIP_ADDRESS_SEGMENT) == VIAFW_SEG_BYTES);
static_assert(VIP_DESCRIPTOR_ALIGNMENT == VIAFW_DESC_ALIGN);
static_assert(VIP_CONTROL_OP_SENDRECV == VIAFW_CONTROL_OP_SENDRECV &&
              VIP_CONTROL_OP_RDMAWRITE == VIAFW_CONTROL_OP_RDMAWRITE &&
              VIP_CONTROL_OP_RDMAREAD == VIAFW_CONTROL_OP_RDMAREAD &&
              VIP_CONTROL_OP_MASK == VIAFW_CONTROL_OP_MASK &&
              VIP_CONTROL_IMMEDIATE == VIAFW_CONTROL_IMMEDIATE &&
              VIP_CONTROL_QFENCE == VIAFW_CONTROL_QFENCE &&
              VIP_CONTROL_RESERVED == VIAFW_CONTROL_RESERVED);
static_assert(VIP_STATUS_DONE == VIAFW_STATUS_DONE &&
              VIP_STATUS_FORMAT_ERROR == VIAFW_STATUS_FORMAT_ERROR &&
              VIP_STATUS_PROTECTION_ERROR == VIAFW_STATUS_PROTECTION_ERROR &&
              VIP_STATUS_LENGTH_ERROR == VIAFW_STATUS_LENGTH_ERROR &&
              VIP_STATUS_PARTIAL_ERROR == VIAFW_STATUS_PARTIAL_ERROR &&
              VIP_STATUS_DESC_FLUSHED_ERROR ==
                  VIAFW_STATUS_DESC_FLUSHED_ERROR &&
              VIP_STATUS_TRANSPORT_ERROR == VIAFW_STATUS_TRANSPORT_ERROR &&
              VIP_STATUS_RDMA_PROT_ERROR == VIAFW_STATUS_RDMA_PROT_ERROR &&
              VIP_STATUS_REMOTE_DESC_ERROR == VIAFW_STATUS_REMOTE_DESC_ERROR &&
              VIP_STATUS_ERROR_MASK == VIAFW_STATUS_ERROR_MASK);
static_assert(VIP_STATUS_OP_SEND == VIAFW_STATUS_OP_SEND &&
              VIP_STATUS_OP_RECEIVE == VIAFW_STATUS_OP_RECEIVE &&
              VIP_STATUS_OP_RDMA_WRITE == VIAFW_STATUS_OP_RDMA_WRITE &&
              VIP_STATUS_OP_REMOTE_RDMA_WRITE ==
                  VIAFW_STATUS_OP_REMOTE_RDMA_WRITE &&
              VIP_STATUS_OP_RDMA_READ == VIAFW_STATUS_OP_RDMA_READ &&
              VIP_STATUS_IMMEDIATE == VIAFW_STATUS_IMMEDIATE);
static_assert(sizeof(viafw_command) == VIAFW_COMMAND_BYTES &&
              offsetof(viafw_command, result) == VIAFW_COMMAND_RESULT);

Library &lib() {
  static Library *l = new Library; // never destroyed: atexit may still call
  return *l;
}

void say(const char *function, const char *format, ...) {
  // NICEMU_VIPL_DIAGNOSTICS=0 keeps them quiet (docs/via.md, "Library").
  static const bool quiet = [] {
    const char *env = std::getenv("NICEMU_VIPL_DIAGNOSTICS");
    return env && std::string(env) == "0";
  }();
  if (quiet)
    return;
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  std::fprintf(stderr, "nicemu: %s: %s\n", function, text);
}

VIP_RETURN refuse(const char *function, VIP_RETURN code, const char *format,
                  ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  say(function, "%s", text);
  return code;
}

namespace {

const char *kind_name(uint32_t kind) {
  switch (Kind(kind)) {
  case Kind::Nic:
    return "NIC";
  case Kind::Ptag:
    return "protection tag";
  case Kind::Vi:
    return "VI";
  case Kind::Cq:
    return "CQ";
  case Kind::Conn:
    return "connection";
  }
  return nullptr;
}

// Whether `h` is open now, and the NIC handle it was made through.
bool open_handle(Kind kind, Handle h, Handle &nic) {
  Library &l = lib();
  auto owner = [&](auto &table) {
    auto it = table.find(h);
    if (it == table.end())
      return false;
    nic = it->second.nic;
    return true;
  };
  switch (kind) {
  case Kind::Nic:
    nic = h;
    return l.ready && l.nics.count(h);
  case Kind::Ptag:
    return owner(l.ptags);
  case Kind::Vi:
    return l.ready && owner(l.vis);
  case Kind::Cq:
    return l.ready && owner(l.cqs);
  case Kind::Conn:
    return owner(l.conns);
  }
  return false;
}

} // namespace

void say_bad_handle(const char *function, Kind kind, const void *handle,
                    Handle nic, const char *argument) {
  const char *name = kind_name(uint32_t(kind));
  Handle h = reinterpret_cast<Handle>(handle);
  std::string head = argument ? std::string(argument) + ": " : std::string();
  const char *a = head.c_str();
  // Handles are a kind in bits 24..31 and a serial (see new_handle).
  Handle top = h >> 24;
  const char *other = top <= 0xFF ? kind_name(uint32_t(top)) : nullptr;
  Handle owner = 0;
  if (!h)
    say(function, "%sthe %s handle is NULL", a, name);
  else if (top != uint32_t(kind) && other)
    say(function, "%s%p is a %s handle, not a %s handle", a, handle, other,
        name);
  else if (top != uint32_t(kind))
    say(function, "%s%p is not a %s handle this library gave out", a, handle,
        name);
  else if (!open_handle(kind, h, owner))
    say(function, "%s%s handle %p names no %s open in this process (%s)", a,
        name, handle, name,
        kind == Kind::Nic    ? "closed, or never opened"
        : kind == Kind::Conn ? "accepted, rejected, its NIC handle closed, or "
                               "never given out"
                             : "destroyed, its NIC handle closed, or never "
                               "made");
  else if (nic && owner != nic)
    say(function, "%s%s handle %p belongs to another NIC handle (%p, not %p)",
        a, name, handle, as_pointer(owner), as_pointer(nic));
  else
    say(function, "%s%s handle %p cannot be used here", a, name, handle);
}

VIP_RETURN refuse_handle(const char *function, Kind kind, const void *handle,
                         Handle nic, const char *argument) {
  say_bad_handle(function, kind, handle, nic, argument);
  return VIP_INVALID_PARAMETER;
}

const char *state_name(VIP_VI_STATE state) {
  switch (state) {
  case VIP_STATE_IDLE:
    return "VIP_STATE_IDLE";
  case VIP_STATE_CONNECTED:
    return "VIP_STATE_CONNECTED";
  case VIP_STATE_CONNECT_PENDING:
    return "VIP_STATE_CONNECT_PENDING";
  case VIP_STATE_ERROR:
    return "VIP_STATE_ERROR";
  }
  return "an unknown state";
}

VIP_RETURN refuse_region(const char *function, Handle nic,
                         VIP_MEM_HANDLE handle, const void *va,
                         uint64_t bytes) {
  Library &l = lib();
  auto it = l.regions.find(handle);
  if (it == l.regions.end())
    return refuse(function, VIP_INVALID_PARAMETER,
                  "memory handle %u is not registered (VipRegisterMem)",
                  handle);
  const Region &r = it->second;
  if (r.nic != nic)
    return refuse(function, VIP_INVALID_PARAMETER,
                  "memory handle %u was registered through another NIC "
                  "handle",
                  handle);
  if (bytes == 1)
    return refuse(function, VIP_INVALID_PARAMETER,
                  "%p is not inside memory handle %u (%llu bytes at %p)", va,
                  handle, static_cast<unsigned long long>(r.length),
                  reinterpret_cast<void *>(r.va));
  return refuse(function, VIP_INVALID_PARAMETER,
                "%llu bytes at %p are not inside memory handle %u (%llu "
                "bytes at %p)",
                static_cast<unsigned long long>(bytes), va, handle,
                static_cast<unsigned long long>(r.length),
                reinterpret_cast<void *>(r.va));
}

const char *null_among(
    std::initializer_list<std::pair<const char *, const void *>> pointers) {
  for (const auto &[name, value] : pointers)
    if (!value)
      return name;
  return nullptr;
}

VIP_RETURN guard_failed(const char *function, const char *what) {
  // Host-library messages start with "nicemu: " already.
  if (std::strncmp(what, "nicemu: ", 8) == 0)
    what += 8;
  say(function, "%s", what);
  return VIP_ERROR_RESOURCE;
}

void run_callbacks(std::vector<Callback> &callbacks) {
  for (Callback &c : callbacks) {
    if (c.handler) {
      c.handler(c.context, &c.error);
      continue;
    }
    std::fprintf(stderr,
                 "nicemu: VIPL asynchronous error (no VipErrorCallback "
                 "handler): resource %d, error %d, VI %p, status 0x%lx\n",
                 int(c.error.ResourceCode), int(c.error.ErrorCode),
                 c.error.ViHandle, static_cast<unsigned long>(c.error.OpCode));
  }
}

Handle new_handle(Kind kind) {
  Library &l = lib();
  l.serial = (l.serial + 1) & 0xFFFFFF;
  if (l.serial == 0)
    l.serial = 1;
  return Handle(kind) << 24 | l.serial;
}

// ---- The card ---------------------------------------------------------------

uint32_t command(uint32_t op, std::initializer_list<uint32_t> args) {
  Library &l = lib();
  viafw_command *c = l.command;
  std::memset(c, 0, sizeof *c);
  c->op = op;
  if (++l.command_seq == 0)
    ++l.command_seq;
  c->seq = l.command_seq;
  uint32_t i = 0;
  for (uint32_t a : args)
    c->arg[i++] = a;
  std::atomic_thread_fence(std::memory_order_release);
  host::doorbell(VIAFW_FIFO_COMMAND, host::bus_address(c));
  host::wait_word(&c->done, ~0u, c->seq);
  std::atomic_thread_fence(std::memory_order_acquire);
  return c->result;
}

VIP_RETURN from_result(uint32_t result) {
  switch (result) {
  case VIAFW_R_OK:
    return VIP_SUCCESS;
  case VIAFW_R_BAD_ARGUMENT:
    return VIP_INVALID_PARAMETER;
  case VIAFW_R_STATE:
    return VIP_INVALID_STATE;
  default:
    return VIP_ERROR_RESOURCE;
  }
}

VIP_RETURN card_refused(const char *function, const char *what,
                        uint32_t result) {
  const char *meaning;
  switch (result) {
  case VIAFW_R_BAD_COMMAND:
    meaning = "VIAFW_R_BAD_COMMAND, a command it does not know or one "
              "before HELLO";
    break;
  case VIAFW_R_BAD_ARGUMENT:
    meaning = "VIAFW_R_BAD_ARGUMENT, an argument out of range or naming "
              "nothing it has";
    break;
  case VIAFW_R_RESOURCE:
    meaning = "VIAFW_R_RESOURCE, no free slot or the slot in use";
    break;
  case VIAFW_R_STATE:
    meaning = "VIAFW_R_STATE, the VI is not in a state that allows it";
    break;
  default:
    meaning = "a result the library does not know";
    break;
  }
  return refuse(function, from_result(result),
                "the card refused %s (result %u: %s)", what, result, meaning);
}

// The VI on the receiving node whose process must see control message `w`
// (vipl_connect.cpp gives the words), or VIAFW_ANY_VI when the message
// names none there: then every process of that node sees it.
uint32_t control_target(const uint32_t (&w)[8]) {
  switch (w[0]) {
  case VIAFW_CTL_CONNECT_ACCEPT:
    return w[3] & 0xFF;          // the client's VI
  case VIAFW_CTL_CONNECT_REJECT: // a withdraw names the server's request
    return w[1] & (1u << 30) ? VIAFW_ANY_VI : w[3] & 0xFF;
  case VIAFW_CTL_PEER_REQUEST: // a matched one names the VI it bound to
    return w[1] & (1u << 12) ? (w[1] >> 16) & 0xFF : VIAFW_ANY_VI;
  case VIAFW_CTL_DISCONNECT:
    return w[2] & 0xFF;
  default:
    return VIAFW_ANY_VI;
  }
}

uint32_t send_control(uint32_t node, const uint32_t (&w)[8]) {
  // The card queues a few small frames; when they are full, it needs a
  // moment to send them.
  for (int attempt = 0;; ++attempt) {
    uint32_t r =
        command(VIAFW_CMD_CONTROL, {node, w[0], w[1], w[2], w[3], w[4], w[5],
                                    w[6], w[7], control_target(w)});
    if (r != VIAFW_R_RESOURCE || attempt == 100)
      return r;
    host::compute(10'000'000); // 10 us
  }
}

uint64_t deadline_after(VIP_ULONG ms) {
  if (ms == VIP_INFINITE)
    return kForever;
  return host::now_ps() + uint64_t(ms) * 1'000'000'000ull;
}

bool wait_until(const volatile uint32_t *word, uint32_t mask, uint32_t expected,
                uint64_t deadline) {
  // The emulator watches arena memory: a word of pinned memory is watched
  // at its arena address (the same bytes).
  if (uint32_t bus = bus_of(const_cast<const uint32_t *>(word), 4)) {
    auto &end = channel::HostEnd::from_environment();
    word = reinterpret_cast<const volatile uint32_t *>(end.arena() +
                                                       (bus - end.bus_base()));
  }
  if (deadline == kForever) {
    host::wait_word(word, mask, expected);
    return true;
  }
  return host::wait_word_until(word, mask, expected, deadline);
}

// ---- Addresses and levels
// ------------------------------------------------------

void node_mac(uint32_t node, uint8_t (&mac)[6]) {
  const uint8_t m[6] = {0x02,         0x4E, 0x4D, 0x00, uint8_t(node >> 8),
                        uint8_t(node)};
  std::memcpy(mac, m, 6);
}

bool address_node(const VIP_NET_ADDRESS *address, uint32_t &node) {
  if (!address || address->HostAddressLen != 6)
    return false;
  const uint8_t *a = address->HostAddress;
  if (a[0] != 0x02 || a[1] != 0x4E || a[2] != 0x4D || a[3] != 0x00)
    return false;
  uint32_t n = uint32_t(a[4]) << 8 | a[5];
  if (n >= lib().nodes)
    return false;
  node = n;
  return true;
}

bool reliability_code(VIP_RELIABILITY_LEVEL level, uint32_t &code) {
  switch (level) {
  case VIP_SERVICE_UNRELIABLE:
    code = VIAFW_UNRELIABLE;
    return true;
  case VIP_SERVICE_RELIABLE_DELIVERY:
    code = VIAFW_RELIABLE_DELIVERY;
    return true;
  case VIP_SERVICE_RELIABLE_RECEPTION:
    code = VIAFW_RELIABLE_RECEPTION;
    return true;
  default:
    return false;
  }
}

VIP_RELIABILITY_LEVEL reliability_level(uint32_t code) {
  switch (code) {
  case VIAFW_RELIABLE_DELIVERY:
    return VIP_SERVICE_RELIABLE_DELIVERY;
  case VIAFW_RELIABLE_RECEPTION:
    return VIP_SERVICE_RELIABLE_RECEPTION;
  default:
    return VIP_SERVICE_UNRELIABLE;
  }
}

// ---- Asynchronous errors
// ----------------------------------------------------------

void report_vi_error(Vi &vi, Handle handle, uint32_t status) {
  Library &l = lib();
  Callback c{};
  if (Nic *nic = find(l.nics, as_pointer(vi.nic))) {
    c.handler = nic->error_handler;
    c.context = nic->error_context;
  }
  c.error.NicHandle = as_pointer(vi.nic);
  c.error.ViHandle = as_pointer(handle);
  c.error.CQHandle = nullptr;
  c.error.DescriptorPtr = nullptr;
  c.error.OpCode = status;
  c.error.ResourceCode = VIP_RESOURCE_VI;
  if (status & VIAFW_STATUS_REMOTE_DESC_ERROR)
    c.error.ErrorCode = VIP_ERROR_RECVQ_EMPTY;
  else if (status & VIAFW_STATUS_RDMA_PROT_ERROR)
    c.error.ErrorCode = VIP_ERROR_RDMAW_PROT;
  else if (status & (VIAFW_STATUS_FORMAT_ERROR | VIAFW_STATUS_PROTECTION_ERROR |
                     VIAFW_STATUS_LENGTH_ERROR))
    c.error.ErrorCode = VIP_ERROR_POST_DESC;
  else
    c.error.ErrorCode = VIP_ERROR_CONN_LOST;
  l.callbacks.push_back(c);
}

// ---- Objects
// -----------------------------------------------------------------------

Nic *nic_of(VIP_NIC_HANDLE handle) {
  Library &l = lib();
  return l.ready ? find(l.nics, handle) : nullptr;
}

Ptag *ptag_of(Handle nic, VIP_PROTECTION_HANDLE handle) {
  Ptag *p = find(lib().ptags, handle);
  return p && p->nic == nic ? p : nullptr;
}

uint32_t bus_of(const void *p, size_t bytes) {
  return host::pinned::lookup(p, bytes);
}

void follow_pinned_pages() {
  Library &l = lib();
  uint64_t epoch = host::pinned::epoch();
  if (epoch == l.pinned_epoch)
    return;
  l.pinned_epoch = epoch;
  for (auto &[handle, r] : l.regions) {
    uint32_t bus = bus_of(reinterpret_cast<void *>(r.va), r.length);
    if (bus == r.bus || bus == 0)
      continue;
    // The card has no "move": the region is entered again.
    command(VIAFW_CMD_DEREGISTER, {handle});
    command(VIAFW_CMD_REGISTER,
            {handle, uint32_t(r.va), uint32_t(r.va >> 32), uint32_t(r.length),
             bus, r.ptag_number, r.attrs});
    r.bus = bus;
  }
}

Region *region_of(Handle nic, VIP_MEM_HANDLE handle, const void *va,
                  uint64_t bytes) {
  Library &l = lib();
  auto it = l.regions.find(handle);
  if (it == l.regions.end() || it->second.nic != nic)
    return nullptr;
  uint64_t a = reinterpret_cast<uintptr_t>(va);
  Region &r = it->second;
  if (a < r.va || a - r.va >= r.length || bytes > r.length - (a - r.va))
    return nullptr;
  return &r;
}

Handle vi_by_number(uint32_t number) {
  for (auto &[h, vi] : lib().vis)
    if (vi.number == number)
      return h;
  return 0;
}

} // namespace nicemu::vipl
