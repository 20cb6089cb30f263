// VIPL on the via firmware: VIs, posting descriptors, Done and Wait, and
// completion queues. docs/via.md, "Library".
#include "vipl_vi.hpp"

#include "vipl_connect.hpp"

#include "nicemu/host.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

namespace host = nicemu::host;

namespace nicemu::vipl {

namespace {

constexpr uint32_t kMaxCqEntries = 65536;

Vi *vi_of(VIP_VI_HANDLE handle) {
  Library &l = lib();
  return l.ready ? find(l.vis, handle) : nullptr;
}

Cq *cq_of(VIP_CQ_HANDLE handle) {
  Library &l = lib();
  return l.ready ? find(l.cqs, handle) : nullptr;
}

volatile uint32_t *status_word(VIP_DESCRIPTOR *d) {
  return reinterpret_cast<volatile uint32_t *>(reinterpret_cast<uint8_t *>(d) +
                                               VIAFW_CS_STATUS);
}

uint32_t vi_bits(const VIP_VI_ATTRIBUTES &a) {
  return (a.EnableRdmaWrite ? VIAFW_MEM_RDMA_WRITE : 0u) |
         (a.EnableRdmaRead ? VIAFW_MEM_RDMA_READ : 0u);
}

// The checks VipCreateVi and VipSetViAttributes make of attributes.
VIP_RETURN check_attributes(const char *function, Handle nic,
                            const VIP_VI_ATTRIBUTES &a, uint32_t &reliability,
                            Ptag *&ptag) {
  ptag = ptag_of(nic, a.Ptag);
  if (!ptag) {
    say_bad_handle(function, Kind::Ptag, a.Ptag, nic, "ViAttribs->Ptag");
    return VIP_INVALID_PTAG;
  }
  if (!reliability_code(a.ReliabilityLevel, reliability))
    return refuse(function, VIP_INVALID_RELIABILITY_LEVEL,
                  "ReliabilityLevel %u is not one level "
                  "(VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY or "
                  "VIP_SERVICE_RELIABLE_RECEPTION)",
                  unsigned(a.ReliabilityLevel));
  if (a.MaxTransferSize > VIAFW_MAX_TRANSFER)
    return refuse(function, VIP_INVALID_MTU,
                  "MaxTransferSize %lu is over the card's %u",
                  static_cast<unsigned long>(a.MaxTransferSize),
                  unsigned(VIAFW_MAX_TRANSFER));
  if (a.EnableRdmaRead && reliability == VIAFW_UNRELIABLE)
    return refuse(function, VIP_INVALID_RDMAREAD,
                  "EnableRdmaRead on an unreliable VI: RDMA read needs a "
                  "reliable level");
  return VIP_SUCCESS;
}

uint32_t cq_number(Handle cq) {
  if (!cq)
    return VIAFW_NO_CQ;
  return lib().cqs.at(cq).number;
}

uint32_t create_on_card(const Vi &vi, uint32_t reliability) {
  return command(VIAFW_CMD_CREATE_VI,
                 {vi.number, uint32_t(vi.kind), vi.ptag_number, reliability,
                  vi_bits(vi.attrs), cq_number(vi.send_cq),
                  cq_number(vi.recv_cq), uint32_t(vi.attrs.MaxTransferSize)});
}

VIP_RETURN create_vi(const char *function, VIP_NIC_HANDLE nic_handle,
                     VIP_VI_ATTRIBUTES *attrs, VIP_VI_KIND kind,
                     VIP_CQ_HANDLE send_cq, VIP_CQ_HANDLE recv_cq,
                     VIP_VI_HANDLE *out) {
  Library &l = lib();
  Handle nic = reinterpret_cast<Handle>(nic_handle);
  if (!nic_of(nic_handle))
    return refuse_handle(function, Kind::Nic, nic_handle);
  if (const char *null = null_among({{"ViAttribs", attrs}, {"ViHandle", out}}))
    return refuse(function, VIP_INVALID_PARAMETER, "%s is NULL", null);
  if (kind != VIP_VI_KIND_CONNECTED && kind != VIP_VI_KIND_FM_IP)
    return refuse(function, VIP_INVALID_PARAMETER, "%d is not a kind of VI",
                  int(kind));
  // A CQ is optional (NULL: the queue reports to none).
  Cq *scq = send_cq ? cq_of(send_cq) : nullptr;
  Cq *rcq = recv_cq ? cq_of(recv_cq) : nullptr;
  if (send_cq && (!scq || scq->nic != nic))
    return refuse_handle(function, Kind::Cq, send_cq, nic, "SendCQHandle");
  if (recv_cq && (!rcq || rcq->nic != nic))
    return refuse_handle(function, Kind::Cq, recv_cq, nic, "RecvCQHandle");
  uint32_t reliability;
  Ptag *ptag;
  if (VIP_RETURN r = check_attributes(function, nic, *attrs, reliability, ptag))
    return r;
  Vi vi;
  vi.nic = nic;
  vi.kind = kind;
  vi.attrs = *attrs;
  vi.ptag_number = ptag->number;
  vi.send_cq = reinterpret_cast<Handle>(send_cq);
  vi.recv_cq = reinterpret_cast<Handle>(recv_cq);
  // An FM VI sends to any node: it is usable at once, like a connected VI.
  vi.state = kind == VIP_VI_KIND_FM_IP ? VIP_STATE_CONNECTED : VIP_STATE_IDLE;
  // The card serves lib().card_vis VIs (two doorbell FIFOs each): 3 on
  // comet. A slot this library does not use may still be another
  // process's (nicemu run --procs-per-node): the card says so, and the
  // next one is tried.
  uint32_t r = VIAFW_R_RESOURCE;
  bool tried = false;
  for (uint32_t number = 0; number < lib().card_vis; ++number) {
    if (vi_by_number(number))
      continue;
    vi.number = number;
    tried = true;
    r = create_on_card(vi, reliability);
    if (r != VIAFW_R_RESOURCE)
      break;
  }
  if (!tried)
    return refuse(function, VIP_ERROR_RESOURCE,
                  "all %u VIs of the card are in use (two doorbell FIFOs "
                  "each; the model variant comet:many-vis has 15)",
                  lib().card_vis);
  // The card's refusals the checks above leave: a second FM VI, or every
  // free slot taken by the node's other processes.
  if (r == VIAFW_R_RESOURCE && kind == VIP_VI_KIND_FM_IP)
    return refuse(function, from_result(r),
                  "the card has an FM VI (VIP_VI_KIND_FM_IP) already and "
                  "serves one at a time");
  if (r == VIAFW_R_RESOURCE)
    return refuse(function, VIP_ERROR_RESOURCE,
                  "all %u VIs of the card are in use, some by the node's "
                  "other processes",
                  lib().card_vis);
  if (r != VIAFW_R_OK)
    return card_refused(function, "CREATE_VI", r);
  if (scq)
    ++scq->users;
  if (rcq)
    ++rcq->users;
  Handle h = new_handle(Kind::Vi);
  l.vis[h] = std::move(vi);
  *out = as_pointer(h);
  return VIP_SUCCESS;
}

void forget_vi(Handle h) {
  Library &l = lib();
  Vi &vi = l.vis.at(h);
  abandon_connecting(vi);
  if (vi.send_cq)
    --l.cqs.at(vi.send_cq).users;
  if (vi.recv_cq)
    --l.cqs.at(vi.recv_cq).users;
  l.vis.erase(h);
}

// ---- Posting
// ----------------------------------------------------------------------

VIP_RETURN post(VIP_VI_HANDLE handle, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mem,
                bool recv, const char *function) {
  Vi *vi = vi_of(handle);
  if (!vi)
    return refuse_handle(function, Kind::Vi, handle);
  if (!d)
    return refuse(function, VIP_INVALID_PARAMETER, "DescriptorPtr is NULL");
  if (reinterpret_cast<uintptr_t>(d) % VIAFW_DESC_ALIGN)
    return refuse(function, VIP_INVALID_PARAMETER,
                  "descriptor %p is not %u-byte aligned",
                  static_cast<void *>(d), unsigned(VIAFW_DESC_ALIGN));
  Region *r = region_of(vi->nic, mem, d, VIAFW_CS_BYTES);
  if (!r) {
    auto known = lib().regions.find(mem);
    if (known == lib().regions.end() || known->second.nic != vi->nic)
      return refuse_region(function, vi->nic, mem, d, VIAFW_CS_BYTES);
    return refuse(function, VIP_INVALID_PARAMETER,
                  "descriptor %p is not inside memory handle %u (%llu bytes "
                  "at %p)",
                  static_cast<void *>(d), mem,
                  static_cast<unsigned long long>(known->second.length),
                  reinterpret_cast<void *>(known->second.va));
  }
  uint32_t segments = std::min<uint32_t>(d->CS.SegCount, VIAFW_MAX_SEGMENTS);
  if (!region_of(vi->nic, mem, d,
                 VIAFW_CS_BYTES + segments * VIAFW_SEG_BYTES)) {
    say(function,
        "descriptor %p: its %u segments run past the end of memory handle "
        "%u",
        static_cast<void *>(d), segments, mem);
    return VIP_INVALID_PARAMETER;
  }
  if (r->ptag_number != vi->ptag_number) {
    say(function,
        "descriptor %p: memory handle %u has another protection tag than "
        "the VI",
        static_cast<void *>(d), mem);
    return VIP_INVALID_PARAMETER;
  }
  // Sends need a connection; receives may wait for one. A VI in the error
  // state takes both and the card completes them as flushed.
  if (!recv && vi->state != VIP_STATE_CONNECTED && vi->state != VIP_STATE_ERROR)
    return refuse(function, VIP_INVALID_STATE,
                  "the VI is not connected (%s): receives may be posted "
                  "before connecting, sends may not",
                  state_name(vi->state));
  std::deque<VIP_DESCRIPTOR *> &queue = recv ? vi->recvs : vi->sends;
  if (std::find(queue.begin(), queue.end(), d) != queue.end()) {
    say(function, "descriptor %p is already posted on this queue",
        static_cast<void *>(d));
    return VIP_INVALID_PARAMETER;
  }
  if (queue.size() >= VIAFW_QUEUE_DEPTH) {
    // The card holds VIAFW_QUEUE_DEPTH descriptors per queue: those it has
    // not completed yet.
    poll();
    size_t pending = 0;
    for (VIP_DESCRIPTOR *q : queue)
      pending += !(*status_word(q) & VIAFW_STATUS_DONE);
    if (pending >= VIAFW_QUEUE_DEPTH) {
      say(function,
          "the %s queue holds %u descriptors the card has not completed "
          "(MaxDescriptorsPerQueue)",
          recv ? "receive" : "send", unsigned(VIAFW_QUEUE_DEPTH));
      return VIP_ERROR_RESOURCE;
    }
  }
  follow_pinned_pages();
  uint32_t bus = bus_of(d, VIAFW_CS_BYTES + segments * VIAFW_SEG_BYTES);
  if (!bus) // registered, so never
    return refuse(function, VIP_INVALID_PARAMETER,
                  "the card cannot reach descriptor %p (neither arena nor "
                  "pinned memory)",
                  static_cast<void *>(d));
  *status_word(d) = 0;
  std::atomic_thread_fence(std::memory_order_release);
  queue.push_back(d);
  host::doorbell(
      recv ? VIAFW_FIFO_RECV(vi->number) : VIAFW_FIFO_SEND(vi->number), bus);
  return VIP_SUCCESS;
}

// Hands back the oldest descriptor of the queue if the card completed it.
bool take_done(std::deque<VIP_DESCRIPTOR *> &queue, VIP_DESCRIPTOR **out) {
  if (queue.empty() || !(*status_word(queue.front()) & VIAFW_STATUS_DONE))
    return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  *out = queue.front();
  queue.pop_front();
  return true;
}

VIP_RETURN done(VIP_VI_HANDLE handle, VIP_DESCRIPTOR **out, bool recv,
                const char *function) {
  Vi *vi = vi_of(handle);
  if (!vi)
    return refuse_handle(function, Kind::Vi, handle);
  if (!out)
    return refuse(function, VIP_INVALID_PARAMETER, "DescriptorPtr is NULL");
  poll(); // one read of host memory, also when nothing is posted
  return take_done(recv ? vi->recvs : vi->sends, out) ? VIP_SUCCESS
                                                      : VIP_NOT_DONE;
}

VIP_RETURN wait(VIP_VI_HANDLE handle, VIP_ULONG timeout, VIP_DESCRIPTOR **out,
                bool recv, const char *function) {
  Vi *vi = vi_of(handle);
  if (!vi)
    return refuse_handle(function, Kind::Vi, handle);
  if (!out)
    return refuse(function, VIP_INVALID_PARAMETER, "DescriptorPtr is NULL");
  uint64_t deadline = deadline_after(timeout);
  std::deque<VIP_DESCRIPTOR *> &queue = recv ? vi->recvs : vi->sends;
  if (queue.empty()) {
    // Nothing posted: nothing can complete.
    if (deadline == kForever)
      return refuse(function, VIP_INVALID_STATE,
                    "waiting forever (VIP_INFINITE) on an empty %s queue",
                    recv ? "receive" : "send");
    uint64_t now = host::now_ps();
    if (deadline > now)
      host::compute(deadline - now);
    poll();
    return VIP_TIMEOUT;
  }
  wait_until(status_word(queue.front()), VIAFW_STATUS_DONE, VIAFW_STATUS_DONE,
             deadline);
  drain_events();
  return take_done(queue, out) ? VIP_SUCCESS : VIP_TIMEOUT;
}

// ---- Completion queues
// -----------------------------------------------------------------

uint8_t *take_ring(size_t bytes) {
  Library &l = lib();
  for (auto it = l.free_rings.begin(); it != l.free_rings.end(); ++it)
    if (it->bytes >= bytes) {
      uint8_t *p = it->memory;
      l.free_rings.erase(it);
      return p;
    }
  return static_cast<uint8_t *>(host::alloc(bytes));
}

void give_ring(const Cq &cq) {
  lib().free_rings.push_back(
      {const_cast<uint8_t *>(reinterpret_cast<volatile uint8_t *>(cq.ring)),
       size_t(cq.entries) * VIAFW_CQ_ENTRY_BYTES});
}

void report_cq_overrun(Handle h, const Cq &cq) {
  Callback c{};
  if (Nic *nic = find(lib().nics, as_pointer(cq.nic))) {
    c.handler = nic->error_handler;
    c.context = nic->error_context;
  }
  c.error.NicHandle = as_pointer(cq.nic);
  c.error.CQHandle = as_pointer(h);
  c.error.ResourceCode = VIP_RESOURCE_CQ;
  c.error.ErrorCode = VIP_ERROR_CATASTROPHIC;
  lib().callbacks.push_back(c);
}

// Takes the next entry of the CQ if it has arrived: the VI and its queue.
// Entries of VIs destroyed since are skipped; an overrun (the card wrote
// more entries than the ring holds) is reported and skipped over.
bool take_entry(Handle h, Cq &cq, VIP_VI_HANDLE *vi, VIP_BOOLEAN *recv) {
  for (;;) {
    const volatile uint32_t *slot =
        cq.ring + ((cq.next - 1) & (cq.entries - 1)) * 2;
    uint32_t seq = slot[0];
    if (seq != cq.next) {
      if (seq == 0 || int32_t(seq - cq.next) < 0)
        return false;
      report_cq_overrun(h, cq);
      cq.next = seq;
      continue;
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    uint32_t word = slot[1];
    ++cq.next;
    Handle v = vi_by_number(word & 0xFF);
    if (!v)
      continue;
    *vi = as_pointer(v);
    *recv = (word & VIAFW_CQ_RECV) ? VIP_TRUE : VIP_FALSE;
    return true;
  }
}

// VipSendNotify and VipRecvNotify.
VIP_RETURN not_provided(const char *function, VIP_VI_HANDLE handle) {
  if (!vi_of(handle))
    return refuse_handle(function, Kind::Vi, handle);
  return refuse(function, VIP_ERROR_NOT_SUPPORTED,
                "not provided: a handler would need a thread of the "
                "library's own (poll with Done or Wait)");
}

// What VipCQDone and VipCQWait check first.
VIP_RETURN check_cq_call(const char *function, VIP_CQ_HANDLE cq,
                         VIP_VI_HANDLE *vi, VIP_BOOLEAN *recv) {
  if (!cq_of(cq))
    return refuse_handle(function, Kind::Cq, cq);
  if (const char *null = null_among({{"ViHandle", vi}, {"RecvQueue", recv}}))
    return refuse(function, VIP_INVALID_PARAMETER, "%s is NULL", null);
  return VIP_SUCCESS;
}

} // namespace

void close_vis_and_cqs(Handle nic) {
  Library &l = lib();
  std::vector<Handle> doomed;
  for (auto &[h, vi] : l.vis)
    if (vi.nic == nic)
      doomed.push_back(h);
  for (Handle h : doomed) {
    command(VIAFW_CMD_DESTROY_VI, {l.vis.at(h).number});
    forget_vi(h);
  }
  for (auto it = l.cqs.begin(); it != l.cqs.end();) {
    if (it->second.nic == nic) {
      command(VIAFW_CMD_DESTROY_CQ, {it->second.number});
      give_ring(it->second);
      it = l.cqs.erase(it);
    } else {
      ++it;
    }
  }
}

} // namespace nicemu::vipl

using namespace nicemu::vipl;

// ---- VIs
// ---------------------------------------------------------------------------------

VIP_RETURN VipCreateVi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs,
                       VIP_CQ_HANDLE SendCQHandle, VIP_CQ_HANDLE RecvCQHandle,
                       VIP_VI_HANDLE *ViHandle) noexcept {
  return guarded("VipCreateVi", [&] {
    return create_vi("VipCreateVi", NicHandle, ViAttribs, VIP_VI_KIND_CONNECTED,
                     SendCQHandle, RecvCQHandle, ViHandle);
  });
}

VIP_RETURN VipCreateViKind(VIP_NIC_HANDLE NicHandle,
                           VIP_VI_ATTRIBUTES *ViAttribs, VIP_VI_KIND Kind,
                           VIP_CQ_HANDLE SendCQ, VIP_CQ_HANDLE RecvCQ,
                           VIP_VI_HANDLE *ViHandle) noexcept {
  // A C caller may pass any int: look at the bits before trusting the enum.
  int raw;
  static_assert(sizeof raw == sizeof Kind);
  std::memcpy(&raw, &Kind, sizeof raw);
  return guarded("VipCreateViKind", [&] {
    if (raw != VIP_VI_KIND_CONNECTED && raw != VIP_VI_KIND_FM_IP)
      return refuse("VipCreateViKind", VIP_INVALID_PARAMETER,
                    "Kind %d is neither VIP_VI_KIND_CONNECTED nor "
                    "VIP_VI_KIND_FM_IP",
                    raw);
    return create_vi("VipCreateViKind", NicHandle, ViAttribs, VIP_VI_KIND(raw),
                     SendCQ, RecvCQ, ViHandle);
  });
}

VIP_RETURN VipDestroyVi(VIP_VI_HANDLE ViHandle) noexcept {
  return guarded("VipDestroyVi", [&] {
    Vi *vi = vi_of(ViHandle);
    if (!vi)
      return refuse_handle("VipDestroyVi", Kind::Vi, ViHandle);
    // A connection (made or being made) is ended first: VipDisconnect.
    if (vi->kind == VIP_VI_KIND_CONNECTED &&
        (vi->state == VIP_STATE_CONNECTED ||
         vi->state == VIP_STATE_CONNECT_PENDING))
      return refuse("VipDestroyVi", VIP_INVALID_STATE,
                    "the VI is %s (%s): VipDisconnect it first",
                    vi->state == VIP_STATE_CONNECTED ? "connected"
                                                     : "connecting",
                    state_name(vi->state));
    uint32_t number = vi->number;
    uint32_t r = command(VIAFW_CMD_DESTROY_VI, {number});
    forget_vi(reinterpret_cast<Handle>(ViHandle));
    if (r != VIAFW_R_OK) {
      char what[32];
      std::snprintf(what, sizeof what, "DESTROY_VI for VI %u", number);
      return card_refused("VipDestroyVi", what, r);
    }
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipQueryVi(VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State,
                      VIP_VI_ATTRIBUTES *ViAttribs, VIP_BOOLEAN *ViSendQEmpty,
                      VIP_BOOLEAN *ViRecvQEmpty) noexcept {
  return guarded("VipQueryVi", [&] {
    if (!vi_of(ViHandle))
      return refuse_handle("VipQueryVi", Kind::Vi, ViHandle);
    if (const char *null = null_among({{"State", State},
                                       {"ViAttribs", ViAttribs},
                                       {"ViSendQEmpty", ViSendQEmpty},
                                       {"ViRecvQEmpty", ViRecvQEmpty}}))
      return refuse("VipQueryVi", VIP_INVALID_PARAMETER, "%s is NULL", null);
    poll(); // state changes come as events
    Vi *vi = vi_of(ViHandle);
    if (!vi)
      return refuse_handle("VipQueryVi", Kind::Vi, ViHandle);
    *State = vi->state;
    *ViAttribs = vi->attrs;
    *ViSendQEmpty = vi->sends.empty() ? VIP_TRUE : VIP_FALSE;
    *ViRecvQEmpty = vi->recvs.empty() ? VIP_TRUE : VIP_FALSE;
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipSetViAttributes(VIP_VI_HANDLE ViHandle,
                              VIP_VI_ATTRIBUTES *ViAttribs) noexcept {
  return guarded("VipSetViAttributes", [&] {
    Vi *vi = vi_of(ViHandle);
    if (!vi)
      return refuse_handle("VipSetViAttributes", Kind::Vi, ViHandle);
    if (!ViAttribs)
      return refuse("VipSetViAttributes", VIP_INVALID_PARAMETER,
                    "ViAttribs is NULL");
    uint32_t reliability;
    Ptag *ptag;
    if (VIP_RETURN r = check_attributes("VipSetViAttributes", vi->nic,
                                        *ViAttribs, reliability, ptag))
      return r;
    VIP_VI_ATTRIBUTES old = vi->attrs;
    if (ViAttribs->ReliabilityLevel != old.ReliabilityLevel ||
        ViAttribs->MaxTransferSize != old.MaxTransferSize) {
      // The card sets these when it creates the VI: an idle VI with empty
      // queues is created again.
      const char *why =
          vi->kind != VIP_VI_KIND_CONNECTED ? "an FM VI keeps them"
          : vi->state != VIP_STATE_IDLE || vi->connecting != Connecting::None
              ? "the VI is not idle"
          : !vi->sends.empty() ? "its send queue holds descriptors"
          : !vi->recvs.empty() ? "its receive queue holds descriptors"
                               : nullptr;
      if (why)
        return refuse("VipSetViAttributes", VIP_INVALID_STATE,
                      "the reliability level or MaxTransferSize changes only "
                      "on an idle VI with empty queues: %s (%s)",
                      why, state_name(vi->state));
      if (uint32_t r = command(VIAFW_CMD_DESTROY_VI, {vi->number}))
        return card_refused("VipSetViAttributes", "DESTROY_VI", r);
      vi->attrs = *ViAttribs;
      vi->ptag_number = ptag->number;
      if (uint32_t r = create_on_card(*vi, reliability)) {
        forget_vi(reinterpret_cast<Handle>(ViHandle));
        return card_refused("VipSetViAttributes",
                            "CREATE_VI with the new attributes (the VI is "
                            "gone)",
                            r);
      }
      return VIP_SUCCESS;
    }
    uint32_t r = command(VIAFW_CMD_SET_VI,
                         {vi->number, ptag->number, vi_bits(*ViAttribs)});
    if (r != VIAFW_R_OK)
      return card_refused("VipSetViAttributes", "SET_VI", r);
    vi->attrs = *ViAttribs;
    vi->ptag_number = ptag->number;
    return VIP_SUCCESS;
  });
}

// ---- Data transfer
// ----------------------------------------------------------------------

VIP_RETURN VipPostSend(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
                       VIP_MEM_HANDLE MemoryHandle) noexcept {
  return guarded("VipPostSend", [&] {
    return post(ViHandle, DescriptorPtr, MemoryHandle, false, "VipPostSend");
  });
}

VIP_RETURN VipPostRecv(VIP_VI_HANDLE ViHandle, VIP_DESCRIPTOR *DescriptorPtr,
                       VIP_MEM_HANDLE MemoryHandle) noexcept {
  return guarded("VipPostRecv", [&] {
    return post(ViHandle, DescriptorPtr, MemoryHandle, true, "VipPostRecv");
  });
}

VIP_RETURN VipSendDone(VIP_VI_HANDLE ViHandle,
                       VIP_DESCRIPTOR **DescriptorPtr) noexcept {
  return guarded("VipSendDone", [&] {
    return done(ViHandle, DescriptorPtr, false, "VipSendDone");
  });
}

VIP_RETURN VipRecvDone(VIP_VI_HANDLE ViHandle,
                       VIP_DESCRIPTOR **DescriptorPtr) noexcept {
  return guarded("VipRecvDone", [&] {
    return done(ViHandle, DescriptorPtr, true, "VipRecvDone");
  });
}

VIP_RETURN VipSendWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout,
                       VIP_DESCRIPTOR **DescriptorPtr) noexcept {
  return guarded("VipSendWait", [&] {
    return wait(ViHandle, Timeout, DescriptorPtr, false, "VipSendWait");
  });
}

VIP_RETURN VipRecvWait(VIP_VI_HANDLE ViHandle, VIP_ULONG Timeout,
                       VIP_DESCRIPTOR **DescriptorPtr) noexcept {
  return guarded("VipRecvWait", [&] {
    return wait(ViHandle, Timeout, DescriptorPtr, true, "VipRecvWait");
  });
}

// Notify calls would need a thread of the library's own to run handlers
// while the program computes: not provided (docs/via.md).
VIP_RETURN VipSendNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
                         VIP_VI_CALLBACK Handler) noexcept {
  (void)Context;
  (void)Handler;
  return guarded("VipSendNotify",
                 [&] { return not_provided("VipSendNotify", ViHandle); });
}

VIP_RETURN VipRecvNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
                         VIP_VI_CALLBACK Handler) noexcept {
  (void)Context;
  (void)Handler;
  return guarded("VipRecvNotify",
                 [&] { return not_provided("VipRecvNotify", ViHandle); });
}

// ---- Completion queues
// --------------------------------------------------------------------

VIP_RETURN VipCreateCQ(VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount,
                       VIP_CQ_HANDLE *CQHandle) noexcept {
  return guarded("VipCreateCQ", [&] {
    Library &l = lib();
    if (!nic_of(NicHandle))
      return refuse_handle("VipCreateCQ", Kind::Nic, NicHandle);
    if (!CQHandle)
      return refuse("VipCreateCQ", VIP_INVALID_PARAMETER,
                    "CQHandle (where the handle goes) is NULL");
    if (EntryCount == 0)
      return refuse("VipCreateCQ", VIP_INVALID_PARAMETER,
                    "EntryCount is 0: a CQ holds at least one entry");
    if (EntryCount > kMaxCqEntries)
      return refuse("VipCreateCQ", VIP_ERROR_RESOURCE,
                    "EntryCount %lu is over %u (MaxCQEntries)",
                    static_cast<unsigned long>(EntryCount), kMaxCqEntries);
    uint32_t entries = 1;
    while (entries < EntryCount)
      entries <<= 1;
    size_t bytes = size_t(entries) * VIAFW_CQ_ENTRY_BYTES;
    uint8_t *ring = take_ring(bytes);
    std::memset(ring, 0, bytes);
    Cq cq;
    cq.nic = reinterpret_cast<Handle>(NicHandle);
    cq.ring = reinterpret_cast<volatile uint32_t *>(ring);
    cq.entries = entries;
    // A CQ this library does not use may be another process's: the card
    // says so (VIAFW_R_RESOURCE), and the next is tried.
    uint32_t r = VIAFW_R_RESOURCE;
    for (uint32_t number = 0; number < VIAFW_MAX_CQS && r == VIAFW_R_RESOURCE;
         ++number) {
      bool used = false;
      for (auto &[h, other] : l.cqs)
        used |= other.number == number;
      if (used)
        continue;
      cq.number = number;
      r = command(VIAFW_CMD_CREATE_CQ,
                  {number, host::bus_address(ring), entries});
    }
    if (r == VIAFW_R_RESOURCE) {
      give_ring(cq);
      return refuse("VipCreateCQ", VIP_ERROR_RESOURCE,
                    "all %u CQs of the card are in use (MaxCQ)",
                    unsigned(VIAFW_MAX_CQS));
    }
    if (r != VIAFW_R_OK) {
      give_ring(cq);
      return card_refused("VipCreateCQ", "CREATE_CQ", r);
    }
    Handle h = new_handle(Kind::Cq);
    l.cqs[h] = cq;
    *CQHandle = as_pointer(h);
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipDestroyCQ(VIP_CQ_HANDLE CQHandle) noexcept {
  return guarded("VipDestroyCQ", [&] {
    Cq *cq = cq_of(CQHandle);
    if (!cq)
      return refuse_handle("VipDestroyCQ", Kind::Cq, CQHandle);
    if (cq->users)
      return refuse("VipDestroyCQ", VIP_INVALID_STATE,
                    "%u VI queue%s still report%s to the CQ (VipDestroyVi "
                    "first)",
                    cq->users, cq->users == 1 ? "" : "s",
                    cq->users == 1 ? "s" : "");
    uint32_t r = command(VIAFW_CMD_DESTROY_CQ, {cq->number});
    if (r != VIAFW_R_OK)
      return card_refused("VipDestroyCQ", "DESTROY_CQ", r);
    give_ring(*cq);
    lib().cqs.erase(reinterpret_cast<Handle>(CQHandle));
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipResizeCQ(VIP_CQ_HANDLE CQHandle, VIP_ULONG EntryCount) noexcept {
  (void)EntryCount;
  return guarded("VipResizeCQ", [&] {
    if (!cq_of(CQHandle))
      return refuse_handle("VipResizeCQ", Kind::Cq, CQHandle);
    return refuse("VipResizeCQ", VIP_ERROR_NOT_SUPPORTED,
                  "not provided: the card cannot move a CQ's ring (destroy "
                  "the CQ and create a bigger one)");
  });
}

VIP_RETURN VipCQDone(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle,
                     VIP_BOOLEAN *RecvQueue) noexcept {
  return guarded("VipCQDone", [&] {
    if (VIP_RETURN r =
            check_cq_call("VipCQDone", CQHandle, ViHandle, RecvQueue))
      return r;
    poll();
    Cq *cq = cq_of(CQHandle);
    return take_entry(reinterpret_cast<Handle>(CQHandle), *cq, ViHandle,
                      RecvQueue)
               ? VIP_SUCCESS
               : VIP_NOT_DONE;
  });
}

VIP_RETURN VipCQWait(VIP_CQ_HANDLE CQHandle, VIP_ULONG Timeout,
                     VIP_VI_HANDLE *ViHandle, VIP_BOOLEAN *RecvQueue) noexcept {
  return guarded("VipCQWait", [&] {
    if (VIP_RETURN r =
            check_cq_call("VipCQWait", CQHandle, ViHandle, RecvQueue))
      return r;
    Handle h = reinterpret_cast<Handle>(CQHandle);
    uint64_t deadline = deadline_after(Timeout);
    poll();
    for (;;) {
      Cq *cq = cq_of(CQHandle);
      if (take_entry(h, *cq, ViHandle, RecvQueue))
        return VIP_SUCCESS;
      const volatile uint32_t *slot =
          cq->ring + ((cq->next - 1) & (cq->entries - 1)) * 2;
      bool came = wait_until(slot, ~0u, cq->next, deadline);
      drain_events();
      if (!came) {
        cq = cq_of(CQHandle);
        return take_entry(h, *cq, ViHandle, RecvQueue) ? VIP_SUCCESS
                                                       : VIP_TIMEOUT;
      }
    }
  });
}

VIP_RETURN VipCQNotify(VIP_CQ_HANDLE CQHandle, VIP_PVOID Context,
                       VIP_CQ_CALLBACK Handler) noexcept {
  (void)Context;
  (void)Handler;
  return guarded("VipCQNotify", [&] {
    if (!cq_of(CQHandle))
      return refuse_handle("VipCQNotify", Kind::Cq, CQHandle);
    return refuse("VipCQNotify", VIP_ERROR_NOT_SUPPORTED,
                  "not provided: a handler would need a thread of the "
                  "library's own (poll with VipCQDone or VipCQWait)");
  });
}
