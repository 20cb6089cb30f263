// VIPL on the via firmware: the card (commands, events, time), the NIC,
// protection tags, memory registration and asynchronous errors. VIs,
// posting and completion queues are in vipl_vi.cpp; connections and the
// name service in vipl_connect.cpp. docs/via.md, "Library".
#include "vipl_internal.hpp"

#include "nicemu/host.hpp"

#include "am_internal.hpp"
#include "host_end.hpp"
#include "pinned.hpp"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

namespace host = nicemu::host;

namespace nicemu::vipl {

// The descriptor layout and the status and control bits are the card's.
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

namespace {

constexpr uint32_t kEventEntries = 64;
constexpr uint32_t kEventWords = VIAFW_EVENT_BYTES / 4;
constexpr uint32_t kMaxPtags = 256;
// How long VipOpenNic waits for the card to say it runs the via firmware.
constexpr uint64_t kBootWaitPs = 50'000'000'000ull; // 50 ms
constexpr uint64_t kBootPollPs = 20'000'000ull;     // 20 us

} // namespace

Library &lib() {
  static Library *l = new Library; // never destroyed: atexit may still call
  return *l;
}

void say(const char *function, const char *format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  std::fprintf(stderr, "nicemu: %s: %s\n", function, text);
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

VIP_RETURN send_control(uint32_t node, const uint32_t (&w)[8]) {
  // The card queues a few small frames; when they are full, it needs a
  // moment to send them.
  for (int attempt = 0;; ++attempt) {
    uint32_t r = command(VIAFW_CMD_CONTROL, {node, w[0], w[1], w[2], w[3], w[4],
                                             w[5], w[6], w[7]});
    if (r != VIAFW_R_RESOURCE || attempt == 100)
      return from_result(r);
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
    word = reinterpret_cast<const volatile uint32_t *>(
        end.arena() + (bus - channel::kArenaBusBase));
  }
  if (deadline == kForever) {
    host::wait_word(word, mask, expected);
    return true;
  }
  return host::wait_word_until(word, mask, expected, deadline);
}

namespace {

const volatile uint32_t *next_event_word() {
  Library &l = lib();
  return l.events + ((l.next_event - 1) % kEventEntries) * kEventWords;
}

} // namespace

void drain_events() {
  Library &l = lib();
  if (!l.ready)
    return;
  uint32_t taken = 0;
  for (;;) {
    const volatile uint32_t *e = next_event_word();
    if (e[0] != l.next_event)
      break;
    std::atomic_thread_fence(std::memory_order_acquire);
    uint32_t entry[kEventWords];
    for (uint32_t i = 0; i < kEventWords; ++i)
      entry[i] = e[i];
    ++l.next_event;
    ++taken;
    on_event(entry);
    if (!l.ready) // a handler closed the card
      return;
  }
  if (taken)
    host::pio_write(host::mailbox() + 4 * VIAFW_BOX_EVENTS_FREED,
                    l.next_event - 1);
}

void poll() {
  Library &l = lib();
  if (!l.ready)
    return;
  host::wait_word(next_event_word(), 0, 0); // a mask of 0 matches at once
  drain_events();
}

bool wait_event(uint64_t deadline) {
  Library &l = lib();
  bool came = wait_until(next_event_word(), ~0u, l.next_event, deadline);
  drain_events();
  return came;
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

namespace {

// ---- Opening the card
// -------------------------------------------------------------

// The device names VipOpenNic accepts (docs/via.md): there is one NIC.
bool device_name_ok(const char *name) {
  if (!name || !*name)
    return true;
  static const char *const names[] = {"via0", "/dev/via0", "nicemu0",
                                      "/dev/nicemu0"};
  for (const char *n : names)
    if (std::strcmp(name, n) == 0)
      return true;
  return std::strncmp(name, "/dev/", 5) == 0 && name[5] != '\0';
}

VIP_RETURN start_card() {
  Library &l = lib();
  if (l.ready)
    return VIP_SUCCESS;
  l.node = host::rank();
  l.nodes = host::size();
  node_mac(l.node, l.mac);
  if (!l.control) {
    l.control = static_cast<uint8_t *>(
        host::alloc(VIAFW_COMMAND_BYTES + kEventEntries * VIAFW_EVENT_BYTES));
    l.command = reinterpret_cast<viafw_command *>(l.control);
    l.events =
        reinterpret_cast<volatile uint32_t *>(l.control + VIAFW_COMMAND_BYTES);
  }
  // The firmware says it is ready in the mailbox.
  const uint64_t give_up = host::now_ps() + kBootWaitPs;
  while (host::pio_read(host::mailbox() + 4 * VIAFW_BOX_MAGIC) != VIAFW_MAGIC) {
    if (host::now_ps() >= give_up) {
      say("VipOpenNic",
          "the card does not run the via firmware (--firmware via.img): no "
          "VIA magic in its mailbox after %llu ms",
          static_cast<unsigned long long>(kBootWaitPs / 1'000'000'000ull));
      return VIP_ERROR_RESOURCE;
    }
    host::compute(kBootPollPs);
  }
  std::memset(l.control, 0,
              VIAFW_COMMAND_BYTES + kEventEntries * VIAFW_EVENT_BYTES);
  l.next_event = 1;
  uint32_t r = command(
      VIAFW_CMD_HELLO,
      {host::bus_address(const_cast<uint32_t *>(l.events)), kEventEntries});
  if (r != VIAFW_R_OK) {
    say("VipOpenNic", "the card refused HELLO (result %u)", r);
    return VIP_ERROR_RESOURCE;
  }
  l.ready = true;
  return VIP_SUCCESS;
}

// Whether `p` is in the host arena.
bool in_arena(const void *p) {
  try {
    host::bus_address(p);
    return true;
  } catch (const host::Error &) {
    return false;
  }
}

uint32_t mem_bits(const VIP_MEM_ATTRIBUTES &a) {
  return (a.EnableRdmaWrite ? VIAFW_MEM_RDMA_WRITE : 0u) |
         (a.EnableRdmaRead ? VIAFW_MEM_RDMA_READ : 0u);
}

} // namespace

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

} // namespace nicemu::vipl

using namespace nicemu::vipl;

// ---- The NIC
// ---------------------------------------------------------------------

VIP_RETURN VipOpenNic(const VIP_CHAR *DeviceName,
                      VIP_NIC_HANDLE *NicHandle) noexcept {
  return guarded("VipOpenNic", [&] {
    if (!NicHandle)
      return VIP_INVALID_PARAMETER;
    if (!device_name_ok(DeviceName)) {
      say("VipOpenNic",
          "no device \"%s\" (nicemu has one NIC: NULL, \"\", \"via0\", "
          "\"nicemu0\" or any \"/dev/...\" name opens it)",
          DeviceName);
      return VIP_INVALID_PARAMETER;
    }
    if (VIP_RETURN r = start_card())
      return r;
    Handle h = new_handle(Kind::Nic);
    lib().nics[h] = Nic{};
    *NicHandle = as_pointer(h);
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipCloseNic(VIP_NIC_HANDLE NicHandle) noexcept {
  return guarded("VipCloseNic", [&] {
    Library &l = lib();
    if (!nic_of(NicHandle))
      return VIP_INVALID_PARAMETER;
    Handle nic = reinterpret_cast<Handle>(NicHandle);
    close_connections(nic);
    close_vis_and_cqs(nic);
    for (auto it = l.regions.begin(); it != l.regions.end();) {
      if (it->second.nic == nic) {
        command(VIAFW_CMD_DEREGISTER, {it->first});
        it = l.regions.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = l.ptags.begin(); it != l.ptags.end();)
      it = it->second.nic == nic ? l.ptags.erase(it) : std::next(it);
    l.nics.erase(nic);
    if (l.nics.empty()) {
      // The next VipOpenNic starts afresh (HELLO forgets everything).
      l.ready = false;
      l.connect_requests.clear();
      l.peer_requests.clear();
      l.abandoned.clear();
    }
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipQueryNic(VIP_NIC_HANDLE NicHandle,
                       VIP_NIC_ATTRIBUTES *NicAttribs) noexcept {
  return guarded("VipQueryNic", [&] {
    Library &l = lib();
    if (!nic_of(NicHandle) || !NicAttribs)
      return VIP_INVALID_PARAMETER;
    uint64_t arena = nicemu::channel::HostEnd::from_environment().arena_size();
    VIP_NIC_ATTRIBUTES a{};
    std::snprintf(a.Name, sizeof a.Name, "nicemu%u (comet, via firmware)",
                  l.node);
    a.HardwareVersion = 1;
    a.ProviderVersion = 1;
    a.NicAddressLen = 6;
    a.LocalNicAddress = l.mac;
    a.ThreadSafe = VIP_TRUE;
    a.MaxDiscriminatorLen = 16;
    a.MaxRegisterBytes = VIP_ULONG(arena);
    a.MaxRegisterRegions = VIAFW_MAX_REGIONS - 1;
    a.MaxRegisterBlockBytes = VIP_ULONG(arena);
    a.MaxVI = VIAFW_MAX_VIS;
    a.MaxDescriptorsPerQueue = VIAFW_QUEUE_DEPTH;
    a.MaxSegmentsPerDesc = VIAFW_MAX_SEGMENTS;
    a.MaxCQ = VIAFW_MAX_CQS;
    a.MaxCQEntries = 65536;
    a.MaxTransferSize = VIAFW_MAX_TRANSFER;
    a.NativeMTU = VIAFW_FRAG_BYTES;
    a.MaxPtags = kMaxPtags;
    a.ReliabilityLevelSupport = VIP_SERVICE_UNRELIABLE |
                                VIP_SERVICE_RELIABLE_DELIVERY |
                                VIP_SERVICE_RELIABLE_RECEPTION;
    a.RDMAReadSupport =
        VIP_SERVICE_RELIABLE_DELIVERY | VIP_SERVICE_RELIABLE_RECEPTION;
    *NicAttribs = a;
    return VIP_SUCCESS;
  });
}

// ---- Protection tags
// ---------------------------------------------------------------

VIP_RETURN VipCreatePtag(VIP_NIC_HANDLE NicHandle,
                         VIP_PROTECTION_HANDLE *Ptag) noexcept {
  return guarded("VipCreatePtag", [&] {
    Library &l = lib();
    if (!nic_of(NicHandle) || !Ptag)
      return VIP_INVALID_PARAMETER;
    if (l.ptags.size() >= kMaxPtags)
      return VIP_ERROR_RESOURCE;
    // Card Ptag numbers 1..65535, not reused while in use.
    uint32_t number = l.next_ptag;
    for (;;) {
      bool used = false;
      for (auto &[h, p] : l.ptags)
        used |= p.number == number;
      if (!used)
        break;
      number = number % 65535 + 1;
    }
    l.next_ptag = number % 65535 + 1;
    Handle h = new_handle(Kind::Ptag);
    l.ptags[h] = {reinterpret_cast<Handle>(NicHandle), number};
    *Ptag = as_pointer(h);
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipDestroyPtag(VIP_NIC_HANDLE NicHandle,
                          VIP_PROTECTION_HANDLE Ptag) noexcept {
  return guarded("VipDestroyPtag", [&] {
    Library &l = lib();
    Handle nic = reinterpret_cast<Handle>(NicHandle);
    if (!nic_of(NicHandle) || !ptag_of(nic, Ptag))
      return VIP_INVALID_PARAMETER;
    Handle h = reinterpret_cast<Handle>(Ptag);
    for (auto &[handle, r] : l.regions)
      if (r.ptag == h)
        return VIP_ERROR_RESOURCE; // still guards memory
    for (auto &[handle, vi] : l.vis)
      if (reinterpret_cast<Handle>(vi.attrs.Ptag) == h)
        return VIP_ERROR_RESOURCE; // still a VI's
    l.ptags.erase(h);
    return VIP_SUCCESS;
  });
}

// ---- Memory registration
// -------------------------------------------------------------

VIP_RETURN VipRegisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                          VIP_ULONG Length, VIP_MEM_ATTRIBUTES *MemAttribs,
                          VIP_MEM_HANDLE *MemHandle) noexcept {
  return guarded("VipRegisterMem", [&] {
    Library &l = lib();
    Handle nic = reinterpret_cast<Handle>(NicHandle);
    if (!nic_of(NicHandle) || !VirtualAddress || Length == 0 || !MemAttribs ||
        !MemHandle)
      return VIP_INVALID_PARAMETER;
    Ptag *ptag = ptag_of(nic, MemAttribs->Ptag);
    if (!ptag)
      return VIP_INVALID_PTAG;
    if (Length > 0xFFFFFFFFul) {
      say("VipRegisterMem", "%lu bytes: more than the card can register",
          static_cast<unsigned long>(Length));
      return VIP_INVALID_PARAMETER;
    }
    // Memory outside the arena (malloc, static, stack) is pinned: its pages
    // become arena pages at the same addresses (pinned.hpp).
    const auto *first = static_cast<const uint8_t *>(VirtualAddress);
    bool whole = bus_of(first, Length) != 0;
    if (!whole && (in_arena(first) || in_arena(first + (Length - 1)))) {
      say("VipRegisterMem",
          "memory at %p (%lu bytes) runs past the end of the arena",
          VirtualAddress, static_cast<unsigned long>(Length));
      return VIP_INVALID_PARAMETER;
    }
    if (!whole && !host::detail::mapped(VirtualAddress, Length, true)) {
      say("VipRegisterMem",
          "memory at %p (%lu bytes) is not mapped writable in this process",
          VirtualAddress, static_cast<unsigned long>(Length));
      return VIP_INVALID_PARAMETER;
    }
    if (l.regions.size() >= VIAFW_MAX_REGIONS - 1)
      return VIP_ERROR_RESOURCE;
    uint32_t handle = l.next_region;
    while (l.regions.count(handle))
      handle = handle % (VIAFW_MAX_REGIONS - 1) + 1;
    uint64_t va = reinterpret_cast<uintptr_t>(VirtualAddress);
    uint32_t bus = host::pinned::pin(VirtualAddress, Length);
    follow_pinned_pages(); // pinning may have moved earlier regions
    uint32_t attrs = mem_bits(*MemAttribs);
    uint32_t r = command(VIAFW_CMD_REGISTER,
                         {handle, uint32_t(va), uint32_t(va >> 32),
                          uint32_t(Length), bus, ptag->number, attrs});
    if (r != VIAFW_R_OK)
      return from_result(r);
    l.next_region = handle % (VIAFW_MAX_REGIONS - 1) + 1;
    l.regions[handle] = Region{nic,
                               va,
                               uint64_t(Length),
                               bus,
                               attrs,
                               reinterpret_cast<Handle>(MemAttribs->Ptag),
                               ptag->number,
                               MemAttribs->EnableRdmaWrite != 0,
                               MemAttribs->EnableRdmaRead != 0};
    *MemHandle = handle;
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipDeregisterMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                            VIP_MEM_HANDLE MemHandle) noexcept {
  return guarded("VipDeregisterMem", [&] {
    Library &l = lib();
    Handle nic = reinterpret_cast<Handle>(NicHandle);
    if (!nic_of(NicHandle))
      return VIP_INVALID_PARAMETER;
    Region *r = region_of(nic, MemHandle, VirtualAddress);
    if (!r || r->va != reinterpret_cast<uintptr_t>(VirtualAddress))
      return VIP_INVALID_PARAMETER;
    uint32_t result = command(VIAFW_CMD_DEREGISTER, {MemHandle});
    l.regions.erase(MemHandle);
    return from_result(result);
  });
}

VIP_RETURN VipQueryMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                       VIP_MEM_HANDLE MemHandle,
                       VIP_MEM_ATTRIBUTES *MemAttribs) noexcept {
  return guarded("VipQueryMem", [&] {
    Handle nic = reinterpret_cast<Handle>(NicHandle);
    if (!nic_of(NicHandle) || !MemAttribs)
      return VIP_INVALID_PARAMETER;
    Region *r = region_of(nic, MemHandle, VirtualAddress);
    if (!r)
      return VIP_INVALID_PARAMETER;
    MemAttribs->Ptag = as_pointer(r->ptag);
    MemAttribs->EnableRdmaWrite = r->rdma_write ? VIP_TRUE : VIP_FALSE;
    MemAttribs->EnableRdmaRead = r->rdma_read ? VIP_TRUE : VIP_FALSE;
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipSetMemAttributes(VIP_NIC_HANDLE NicHandle,
                               VIP_PVOID VirtualAddress,
                               VIP_MEM_HANDLE MemHandle,
                               VIP_MEM_ATTRIBUTES *MemAttribs) noexcept {
  return guarded("VipSetMemAttributes", [&] {
    Handle nic = reinterpret_cast<Handle>(NicHandle);
    if (!nic_of(NicHandle) || !MemAttribs)
      return VIP_INVALID_PARAMETER;
    Region *r = region_of(nic, MemHandle, VirtualAddress);
    if (!r)
      return VIP_INVALID_PARAMETER;
    Ptag *ptag = ptag_of(nic, MemAttribs->Ptag);
    if (!ptag)
      return VIP_INVALID_PTAG;
    uint32_t result = command(VIAFW_CMD_SET_MEM,
                              {MemHandle, ptag->number, mem_bits(*MemAttribs)});
    if (result != VIAFW_R_OK)
      return from_result(result);
    r->ptag = reinterpret_cast<Handle>(MemAttribs->Ptag);
    r->ptag_number = ptag->number;
    r->attrs = mem_bits(*MemAttribs);
    r->rdma_write = MemAttribs->EnableRdmaWrite != 0;
    r->rdma_read = MemAttribs->EnableRdmaRead != 0;
    return VIP_SUCCESS;
  });
}

// ---- Errors and management
// ------------------------------------------------------------

VIP_RETURN VipErrorCallback(VIP_NIC_HANDLE NicHandle, VIP_PVOID Context,
                            VIP_ERROR_HANDLER Handler) noexcept {
  return guarded("VipErrorCallback", [&] {
    Nic *nic = nic_of(NicHandle);
    if (!nic)
      return VIP_INVALID_PARAMETER;
    nic->error_handler = Handler; // null: back to the default handler
    nic->error_context = Context;
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipQuerySystemManagementInfo(VIP_NIC_HANDLE NicHandle,
                                        VIP_ULONG InfoType,
                                        VIP_PVOID SysManInfo) noexcept {
  (void)InfoType;
  (void)SysManInfo;
  return guarded("VipQuerySystemManagementInfo", [&] {
    return nic_of(NicHandle) ? VIP_ERROR_NOT_SUPPORTED : VIP_INVALID_PARAMETER;
  });
}
