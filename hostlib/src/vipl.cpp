// VIPL on the via firmware: the NIC (opening the card), protection tags,
// memory registration, error callbacks and management. The top of the
// library (the parts are listed in vipl_card.hpp). docs/via.md, "Library".
#include "vipl_card.hpp"
#include "vipl_connect.hpp"
#include "vipl_vi.hpp"

#include "nicemu/host.hpp"

#include "am_internal.hpp"
#include "host_end.hpp"
#include "pinned.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace host = nicemu::host;

namespace nicemu::vipl {

namespace {

constexpr uint32_t kMaxPtags = 256;
// How long VipOpenNic waits for the card to say it runs the via firmware.
constexpr uint64_t kBootWaitPs = 50'000'000'000ull; // 50 ms
constexpr uint64_t kBootPollPs = 20'000'000ull;     // 20 us

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
  // The card's node (several processes may share it: nicemu run
  // --procs-per-node).
  l.node = host::node();
  l.nodes = host::size() / host::processes_per_node();
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
  l.card_vis = host::pio_read(host::mailbox() + 4 * VIAFW_BOX_VIS);
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

} // namespace nicemu::vipl

using namespace nicemu::vipl;

// ---- The NIC
// ---------------------------------------------------------------------

VIP_RETURN VipOpenNic(const VIP_CHAR *DeviceName,
                      VIP_NIC_HANDLE *NicHandle) noexcept {
  return guarded("VipOpenNic", [&] {
    if (!NicHandle)
      return refuse("VipOpenNic", VIP_INVALID_PARAMETER,
                    "NicHandle (where the handle goes) is NULL");
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
      return refuse_handle("VipCloseNic", Kind::Nic, NicHandle);
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
      // The next VipOpenNic starts afresh (HELLO forgets all the card
      // held for this process).
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
    if (!nic_of(NicHandle))
      return refuse_handle("VipQueryNic", Kind::Nic, NicHandle);
    if (!NicAttribs)
      return refuse("VipQueryNic", VIP_INVALID_PARAMETER, "NicAttribs is NULL");
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
    a.MaxVI = l.card_vis;
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
    if (!nic_of(NicHandle))
      return refuse_handle("VipCreatePtag", Kind::Nic, NicHandle);
    if (!Ptag)
      return refuse("VipCreatePtag", VIP_INVALID_PARAMETER,
                    "Ptag (where the handle goes) is NULL");
    if (l.ptags.size() >= kMaxPtags)
      return refuse("VipCreatePtag", VIP_ERROR_RESOURCE,
                    "all %u protection tags are in use (MaxPtags)", kMaxPtags);
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
    if (!nic_of(NicHandle))
      return refuse_handle("VipDestroyPtag", Kind::Nic, NicHandle);
    if (!ptag_of(nic, Ptag))
      return refuse_handle("VipDestroyPtag", Kind::Ptag, Ptag, nic);
    Handle h = reinterpret_cast<Handle>(Ptag);
    for (auto &[handle, r] : l.regions)
      if (r.ptag == h)
        return refuse("VipDestroyPtag", VIP_ERROR_RESOURCE,
                      "the protection tag still guards memory handle %u "
                      "(VipDeregisterMem it first)",
                      handle);
    for (auto &[handle, vi] : l.vis)
      if (reinterpret_cast<Handle>(vi.attrs.Ptag) == h)
        return refuse("VipDestroyPtag", VIP_ERROR_RESOURCE,
                      "the protection tag is still VI %p's (VipDestroyVi "
                      "it first)",
                      as_pointer(handle));
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
    if (!nic_of(NicHandle))
      return refuse_handle("VipRegisterMem", Kind::Nic, NicHandle);
    if (const char *null = null_among({{"VirtualAddress", VirtualAddress},
                                       {"MemAttribs", MemAttribs},
                                       {"MemHandle", MemHandle}}))
      return refuse("VipRegisterMem", VIP_INVALID_PARAMETER, "%s is NULL",
                    null);
    if (Length == 0)
      return refuse("VipRegisterMem", VIP_INVALID_PARAMETER,
                    "Length is 0: there is nothing to register");
    Ptag *ptag = ptag_of(nic, MemAttribs->Ptag);
    if (!ptag) {
      say_bad_handle("VipRegisterMem", Kind::Ptag, MemAttribs->Ptag, nic,
                     "MemAttribs->Ptag");
      return VIP_INVALID_PTAG;
    }
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
      return refuse("VipRegisterMem", VIP_ERROR_RESOURCE,
                    "all %u memory handles are in use (MaxRegisterRegions)",
                    unsigned(VIAFW_MAX_REGIONS - 1));
    uint32_t handle = l.next_region;
    while (l.regions.count(handle))
      handle = handle % (VIAFW_MAX_REGIONS - 1) + 1;
    uint64_t va = reinterpret_cast<uintptr_t>(VirtualAddress);
    uint32_t bus = host::pinned::pin(VirtualAddress, Length);
    follow_pinned_pages(); // pinning may have moved earlier regions
    uint32_t attrs = mem_bits(*MemAttribs);
    // A handle this library does not use may be another process's (the
    // card says VIAFW_R_RESOURCE): the next free one is tried.
    uint32_t r = VIAFW_R_RESOURCE;
    for (uint32_t tries = 0; tries < VIAFW_MAX_REGIONS - 1; ++tries) {
      r = command(VIAFW_CMD_REGISTER,
                  {handle, uint32_t(va), uint32_t(va >> 32), uint32_t(Length),
                   bus, ptag->number, attrs});
      if (r != VIAFW_R_RESOURCE)
        break;
      do
        handle = handle % (VIAFW_MAX_REGIONS - 1) + 1;
      while (l.regions.count(handle));
    }
    if (r != VIAFW_R_OK)
      return card_refused("VipRegisterMem", "REGISTER", r);
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
      return refuse_handle("VipDeregisterMem", Kind::Nic, NicHandle);
    Region *r = region_of(nic, MemHandle, VirtualAddress);
    if (!r)
      return refuse_region("VipDeregisterMem", nic, MemHandle, VirtualAddress);
    if (r->va != reinterpret_cast<uintptr_t>(VirtualAddress))
      return refuse("VipDeregisterMem", VIP_INVALID_PARAMETER,
                    "%p is inside memory handle %u but not its start (%p): "
                    "a region is named by its start",
                    VirtualAddress, MemHandle, reinterpret_cast<void *>(r->va));
    uint32_t result = command(VIAFW_CMD_DEREGISTER, {MemHandle});
    l.regions.erase(MemHandle);
    if (result != VIAFW_R_OK)
      return card_refused("VipDeregisterMem", "DEREGISTER", result);
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipQueryMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID VirtualAddress,
                       VIP_MEM_HANDLE MemHandle,
                       VIP_MEM_ATTRIBUTES *MemAttribs) noexcept {
  return guarded("VipQueryMem", [&] {
    Handle nic = reinterpret_cast<Handle>(NicHandle);
    if (!nic_of(NicHandle))
      return refuse_handle("VipQueryMem", Kind::Nic, NicHandle);
    if (!MemAttribs)
      return refuse("VipQueryMem", VIP_INVALID_PARAMETER, "MemAttribs is NULL");
    Region *r = region_of(nic, MemHandle, VirtualAddress);
    if (!r)
      return refuse_region("VipQueryMem", nic, MemHandle, VirtualAddress);
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
    if (!nic_of(NicHandle))
      return refuse_handle("VipSetMemAttributes", Kind::Nic, NicHandle);
    if (!MemAttribs)
      return refuse("VipSetMemAttributes", VIP_INVALID_PARAMETER,
                    "MemAttribs is NULL");
    Region *r = region_of(nic, MemHandle, VirtualAddress);
    if (!r)
      return refuse_region("VipSetMemAttributes", nic, MemHandle,
                           VirtualAddress);
    Ptag *ptag = ptag_of(nic, MemAttribs->Ptag);
    if (!ptag) {
      say_bad_handle("VipSetMemAttributes", Kind::Ptag, MemAttribs->Ptag, nic,
                     "MemAttribs->Ptag");
      return VIP_INVALID_PTAG;
    }
    uint32_t result = command(VIAFW_CMD_SET_MEM,
                              {MemHandle, ptag->number, mem_bits(*MemAttribs)});
    if (result != VIAFW_R_OK)
      return card_refused("VipSetMemAttributes", "SET_MEM", result);
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
      return refuse_handle("VipErrorCallback", Kind::Nic, NicHandle);
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
    if (!nic_of(NicHandle))
      return refuse_handle("VipQuerySystemManagementInfo", Kind::Nic,
                           NicHandle);
    return refuse("VipQuerySystemManagementInfo", VIP_ERROR_NOT_SUPPORTED,
                  "not provided: nicemu keeps no management information");
  });
}
