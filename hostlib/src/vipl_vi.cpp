// VIPL on the via firmware: VIs, posting descriptors, Done and Wait, and
// completion queues. docs/via.md, "Library".
#include "vipl_vi.hpp"

#include "vipl_connect.hpp"

#include "nicemu/host.hpp"

#include <algorithm>
#include <atomic>
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
VIP_RETURN check_attributes(Handle nic, const VIP_VI_ATTRIBUTES &a,
                            uint32_t &reliability, Ptag *&ptag) {
  ptag = ptag_of(nic, a.Ptag);
  if (!ptag)
    return VIP_INVALID_PTAG;
  if (!reliability_code(a.ReliabilityLevel, reliability))
    return VIP_INVALID_RELIABILITY_LEVEL;
  if (a.MaxTransferSize > VIAFW_MAX_TRANSFER)
    return VIP_INVALID_MTU;
  if (a.EnableRdmaRead && reliability == VIAFW_UNRELIABLE)
    return VIP_INVALID_RDMAREAD;
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

VIP_RETURN create_vi(VIP_NIC_HANDLE nic_handle, VIP_VI_ATTRIBUTES *attrs,
                     VIP_VI_KIND kind, VIP_CQ_HANDLE send_cq,
                     VIP_CQ_HANDLE recv_cq, VIP_VI_HANDLE *out) {
  Library &l = lib();
  Handle nic = reinterpret_cast<Handle>(nic_handle);
  if (!nic_of(nic_handle) || !attrs || !out ||
      (kind != VIP_VI_KIND_CONNECTED && kind != VIP_VI_KIND_FM_IP))
    return VIP_INVALID_PARAMETER;
  Cq *scq = send_cq ? cq_of(send_cq) : nullptr;
  Cq *rcq = recv_cq ? cq_of(recv_cq) : nullptr;
  if ((send_cq && (!scq || scq->nic != nic)) ||
      (recv_cq && (!rcq || rcq->nic != nic)))
    return VIP_INVALID_PARAMETER;
  uint32_t reliability;
  Ptag *ptag;
  if (VIP_RETURN r = check_attributes(nic, *attrs, reliability, ptag))
    return r;
  // The card serves lib().card_vis VIs (two doorbell FIFOs each): 3 on comet.
  uint32_t number = 0;
  while (number < lib().card_vis && vi_by_number(number))
    ++number;
  if (number == lib().card_vis) {
    say("VipCreateVi",
        "all %u VIs of the card are in use (two doorbell FIFOs each; the "
        "model variant comet:many-vis has 15)",
        lib().card_vis);
    return VIP_ERROR_RESOURCE;
  }
  Vi vi;
  vi.nic = nic;
  vi.number = number;
  vi.kind = kind;
  vi.attrs = *attrs;
  vi.ptag_number = ptag->number;
  vi.send_cq = reinterpret_cast<Handle>(send_cq);
  vi.recv_cq = reinterpret_cast<Handle>(recv_cq);
  // An FM VI sends to any node: it is usable at once, like a connected VI.
  vi.state = kind == VIP_VI_KIND_FM_IP ? VIP_STATE_CONNECTED : VIP_STATE_IDLE;
  uint32_t r = create_on_card(vi, reliability);
  if (r != VIAFW_R_OK)
    return from_result(r);
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
  if (!vi || !d || reinterpret_cast<uintptr_t>(d) % VIAFW_DESC_ALIGN) {
    say(function,
        !vi  ? "not a VI of this process"
        : !d ? "no descriptor"
             : "descriptor %p is not %u-byte aligned",
        static_cast<void *>(d), unsigned(VIAFW_DESC_ALIGN));
    return VIP_INVALID_PARAMETER;
  }
  Region *r = region_of(vi->nic, mem, d, VIAFW_CS_BYTES);
  if (!r) {
    say(function,
        "descriptor %p is not inside memory handle %u (VipRegisterMem)",
        static_cast<void *>(d), mem);
    return VIP_INVALID_PARAMETER;
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
    return VIP_INVALID_STATE;
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
  if (!bus)
    return VIP_INVALID_PARAMETER; // registered, so never
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

VIP_RETURN done(VIP_VI_HANDLE handle, VIP_DESCRIPTOR **out, bool recv) {
  Vi *vi = vi_of(handle);
  if (!vi || !out)
    return VIP_INVALID_PARAMETER;
  poll(); // one read of host memory, also when nothing is posted
  return take_done(recv ? vi->recvs : vi->sends, out) ? VIP_SUCCESS
                                                      : VIP_NOT_DONE;
}

VIP_RETURN wait(VIP_VI_HANDLE handle, VIP_ULONG timeout, VIP_DESCRIPTOR **out,
                bool recv, const char *function) {
  Vi *vi = vi_of(handle);
  if (!vi || !out)
    return VIP_INVALID_PARAMETER;
  uint64_t deadline = deadline_after(timeout);
  std::deque<VIP_DESCRIPTOR *> &queue = recv ? vi->recvs : vi->sends;
  if (queue.empty()) {
    // Nothing posted: nothing can complete.
    if (deadline == kForever) {
      say(function, "waiting forever on an empty %s queue",
          recv ? "receive" : "send");
      return VIP_INVALID_STATE;
    }
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
    return create_vi(NicHandle, ViAttribs, VIP_VI_KIND_CONNECTED, SendCQHandle,
                     RecvCQHandle, ViHandle);
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
      return VIP_INVALID_PARAMETER;
    return create_vi(NicHandle, ViAttribs, VIP_VI_KIND(raw), SendCQ, RecvCQ,
                     ViHandle);
  });
}

VIP_RETURN VipDestroyVi(VIP_VI_HANDLE ViHandle) noexcept {
  return guarded("VipDestroyVi", [&] {
    Vi *vi = vi_of(ViHandle);
    if (!vi)
      return VIP_INVALID_PARAMETER;
    // A connection (made or being made) is ended first: VipDisconnect.
    if (vi->kind == VIP_VI_KIND_CONNECTED &&
        (vi->state == VIP_STATE_CONNECTED ||
         vi->state == VIP_STATE_CONNECT_PENDING))
      return VIP_INVALID_STATE;
    uint32_t r = command(VIAFW_CMD_DESTROY_VI, {vi->number});
    forget_vi(reinterpret_cast<Handle>(ViHandle));
    return from_result(r);
  });
}

VIP_RETURN VipQueryVi(VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State,
                      VIP_VI_ATTRIBUTES *ViAttribs, VIP_BOOLEAN *ViSendQEmpty,
                      VIP_BOOLEAN *ViRecvQEmpty) noexcept {
  return guarded("VipQueryVi", [&] {
    if (!vi_of(ViHandle) || !State || !ViAttribs || !ViSendQEmpty ||
        !ViRecvQEmpty)
      return VIP_INVALID_PARAMETER;
    poll(); // state changes come as events
    Vi *vi = vi_of(ViHandle);
    if (!vi)
      return VIP_INVALID_PARAMETER;
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
    if (!vi || !ViAttribs)
      return VIP_INVALID_PARAMETER;
    uint32_t reliability;
    Ptag *ptag;
    if (VIP_RETURN r = check_attributes(vi->nic, *ViAttribs, reliability, ptag))
      return r;
    VIP_VI_ATTRIBUTES old = vi->attrs;
    if (ViAttribs->ReliabilityLevel != old.ReliabilityLevel ||
        ViAttribs->MaxTransferSize != old.MaxTransferSize) {
      // The card sets these when it creates the VI: an idle VI with empty
      // queues is created again.
      if (vi->kind != VIP_VI_KIND_CONNECTED || vi->state != VIP_STATE_IDLE ||
          vi->connecting != Connecting::None || !vi->sends.empty() ||
          !vi->recvs.empty())
        return VIP_INVALID_STATE;
      if (uint32_t r = command(VIAFW_CMD_DESTROY_VI, {vi->number}))
        return from_result(r);
      vi->attrs = *ViAttribs;
      vi->ptag_number = ptag->number;
      if (uint32_t r = create_on_card(*vi, reliability)) {
        say("VipSetViAttributes", "the card refused the VI again (result %u)",
            r);
        forget_vi(reinterpret_cast<Handle>(ViHandle));
        return from_result(r);
      }
      return VIP_SUCCESS;
    }
    uint32_t r = command(VIAFW_CMD_SET_VI,
                         {vi->number, ptag->number, vi_bits(*ViAttribs)});
    if (r != VIAFW_R_OK)
      return from_result(r);
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
  return guarded("VipSendDone",
                 [&] { return done(ViHandle, DescriptorPtr, false); });
}

VIP_RETURN VipRecvDone(VIP_VI_HANDLE ViHandle,
                       VIP_DESCRIPTOR **DescriptorPtr) noexcept {
  return guarded("VipRecvDone",
                 [&] { return done(ViHandle, DescriptorPtr, true); });
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
  return guarded("VipSendNotify", [&] {
    return vi_of(ViHandle) ? VIP_ERROR_NOT_SUPPORTED : VIP_INVALID_PARAMETER;
  });
}

VIP_RETURN VipRecvNotify(VIP_VI_HANDLE ViHandle, VIP_PVOID Context,
                         VIP_VI_CALLBACK Handler) noexcept {
  (void)Context;
  (void)Handler;
  return guarded("VipRecvNotify", [&] {
    return vi_of(ViHandle) ? VIP_ERROR_NOT_SUPPORTED : VIP_INVALID_PARAMETER;
  });
}

// ---- Completion queues
// --------------------------------------------------------------------

VIP_RETURN VipCreateCQ(VIP_NIC_HANDLE NicHandle, VIP_ULONG EntryCount,
                       VIP_CQ_HANDLE *CQHandle) noexcept {
  return guarded("VipCreateCQ", [&] {
    Library &l = lib();
    if (!nic_of(NicHandle) || !CQHandle || EntryCount == 0)
      return VIP_INVALID_PARAMETER;
    if (EntryCount > kMaxCqEntries)
      return VIP_ERROR_RESOURCE;
    uint32_t entries = 1;
    while (entries < EntryCount)
      entries <<= 1;
    uint32_t number = 0;
    for (; number < VIAFW_MAX_CQS; ++number) {
      bool used = false;
      for (auto &[h, cq] : l.cqs)
        used |= cq.number == number;
      if (!used)
        break;
    }
    if (number == VIAFW_MAX_CQS)
      return VIP_ERROR_RESOURCE;
    size_t bytes = size_t(entries) * VIAFW_CQ_ENTRY_BYTES;
    uint8_t *ring = take_ring(bytes);
    std::memset(ring, 0, bytes);
    Cq cq;
    cq.nic = reinterpret_cast<Handle>(NicHandle);
    cq.number = number;
    cq.ring = reinterpret_cast<volatile uint32_t *>(ring);
    cq.entries = entries;
    uint32_t r = command(VIAFW_CMD_CREATE_CQ,
                         {number, host::bus_address(ring), entries});
    if (r != VIAFW_R_OK) {
      give_ring(cq);
      return from_result(r);
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
      return VIP_INVALID_PARAMETER;
    if (cq->users)
      return VIP_INVALID_STATE; // VIs still report to it
    uint32_t r = command(VIAFW_CMD_DESTROY_CQ, {cq->number});
    if (r != VIAFW_R_OK)
      return from_result(r);
    give_ring(*cq);
    lib().cqs.erase(reinterpret_cast<Handle>(CQHandle));
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipResizeCQ(VIP_CQ_HANDLE CQHandle, VIP_ULONG EntryCount) noexcept {
  (void)EntryCount;
  return guarded("VipResizeCQ", [&] {
    return cq_of(CQHandle) ? VIP_ERROR_NOT_SUPPORTED : VIP_INVALID_PARAMETER;
  });
}

VIP_RETURN VipCQDone(VIP_CQ_HANDLE CQHandle, VIP_VI_HANDLE *ViHandle,
                     VIP_BOOLEAN *RecvQueue) noexcept {
  return guarded("VipCQDone", [&] {
    if (!cq_of(CQHandle) || !ViHandle || !RecvQueue)
      return VIP_INVALID_PARAMETER;
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
    if (!cq_of(CQHandle) || !ViHandle || !RecvQueue)
      return VIP_INVALID_PARAMETER;
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
    return cq_of(CQHandle) ? VIP_ERROR_NOT_SUPPORTED : VIP_INVALID_PARAMETER;
  });
}
