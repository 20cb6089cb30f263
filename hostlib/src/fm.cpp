// Comet-FM (nicemu/fm.h) on top of VIPL: one FM-over-IP VI (the nicemu
// extension VipCreateViKind), one completion queue for both of its queues,
// and the library's own registered memory for FM headers, streamed messages
// and receive buffers. An FM packet is the 12-byte header of via_protocol.h
// (destination, source, handler, flags, length) followed by the message; the
// card wraps it in UDP/IPv4/Ethernet.
#include "nicemu/fm.h"
#include "nicemu/host.hpp"
#include "nicemu/vipl.h"

#include "nicemu/via_protocol.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

unsigned FM_nodeid = 0;
unsigned FM_numnodes = 0;

struct FM_stream {
  // Sending: a send slot collecting pieces.
  int slot = -1;
  unsigned length = 0, filled = 0;
  // Receiving: the message being read by FM_receive.
  const uint8_t *data = nullptr;
  unsigned available = 0, read = 0;
};

namespace {

constexpr int kSends = 16, kRecvs = 16;
constexpr uint32_t kSlotBytes = 1536; // FM header + FM_MAX_MESSAGE, padded
static_assert(VIAFW_FM_HEADER_BYTES + FM_MAX_MESSAGE <= kSlotBytes);
static_assert(FM_MAX_MESSAGE == VIAFW_FM_MAX_MESSAGE);

struct SendSlot {
  VIP_DESCRIPTOR *desc = nullptr;
  uint8_t *packet = nullptr; // FM header, then a streamed message
  bool busy = false;
  FM_stream stream;
};

struct Fm {
  bool ready = false;
  VIP_NIC_HANDLE nic = nullptr;
  VIP_PROTECTION_HANDLE ptag = nullptr;
  VIP_CQ_HANDLE cq = nullptr;
  VIP_VI_HANDLE vi = nullptr;
  uint8_t *mem = nullptr;
  VIP_MEM_HANDLE mem_handle = 0;
  SendSlot sends[kSends];
  std::deque<int> posted; // send slots in posting order
  VIP_DESCRIPTOR *recv_desc[kRecvs] = {};
  uint8_t *recv_buf[kRecvs] = {};
  std::deque<VIP_DESCRIPTOR *> arrived; // completed receives, not yet run
  // FM packets sent to this node, not yet run: the card cannot deliver
  // them (the switch never sends a frame back out of the port it came in
  // by), so the library does.
  std::deque<std::vector<uint8_t>> loopback;
  struct Region {
    size_t length;
    VIP_MEM_HANDLE handle;
  };
  std::map<uintptr_t, Region> regions; // FM_register'd send buffers
  FM_handler handlers[FM_MAX_HANDLERS] = {};
  FM_stream_handler stream_handlers[FM_MAX_HANDLERS] = {};
  unsigned dropped = 0;
  unsigned sender = 0;
  int in_handler = 0;
};

Fm fm;
std::recursive_mutex fm_mutex;
thread_local int last_error = FM_SUCCESS;
thread_local std::string last_detail;

int fail(int code, std::string detail) {
  last_error = code;
  last_detail = std::move(detail);
  return code;
}

int nic_fail(const char *what, VIP_RETURN r) {
  return fail(FM_ENIC, std::string(what) + " returned VIP_RETURN " +
                           std::to_string(int(r)));
}

int slot_of(const VIP_DESCRIPTOR *d) {
  for (int i = 0; i < kSends; ++i)
    if (fm.sends[i].desc == d)
      return i;
  return -1;
}

VIP_RETURN post_recv(int i) {
  VIP_DESCRIPTOR *d = fm.recv_desc[i];
  std::memset(d, 0, sizeof *d);
  d->CS.SegCount = 1;
  d->CS.Control = VIP_CONTROL_OP_SENDRECV;
  d->CS.Length = kSlotBytes;
  d->DS[0].Local.Data.Address = fm.recv_buf[i];
  d->DS[0].Local.Handle = fm.mem_handle;
  d->DS[0].Local.Length = kSlotBytes;
  return VipPostRecv(fm.vi, d, fm.mem_handle);
}

// Takes every completion the CQ holds (or waits for one, with `block`):
// sends free their slot; receives queue up for their handler.
int drain(bool block) {
  for (;;) {
    VIP_VI_HANDLE vi;
    VIP_BOOLEAN recv;
    VIP_RETURN r = block ? VipCQWait(fm.cq, VIP_INFINITE, &vi, &recv)
                         : VipCQDone(fm.cq, &vi, &recv);
    if (r == VIP_NOT_DONE)
      return FM_SUCCESS;
    if (r != VIP_SUCCESS)
      return nic_fail("VipCQDone", r);
    block = false;
    VIP_DESCRIPTOR *d = nullptr;
    r = recv ? VipRecvDone(fm.vi, &d) : VipSendDone(fm.vi, &d);
    if (r != VIP_SUCCESS)
      return nic_fail(recv ? "VipRecvDone" : "VipSendDone", r);
    if (recv) {
      fm.arrived.push_back(d);
      continue;
    }
    int slot = slot_of(d);
    if (slot >= 0)
      fm.sends[slot].busy = false;
    if (!fm.posted.empty() && fm.posted.front() == slot)
      fm.posted.pop_front();
    if (d->CS.Status & VIP_STATUS_ERROR_MASK)
      return fail(FM_ENIC, "the card failed a send (descriptor status 0x" +
                               std::to_string(d->CS.Status) + ")");
  }
}

// What one extraction did, and how far it may go: until `budget` bytes of
// messages have been extracted (a soft bound: the message that crosses it
// runs whole, as in FM 2.x), or a stream handler returns FM 2.x's FM_QUIT.
// FM 2.x's FM_QUIT (nicemu/fm2/fm.h): a stream handler that returns it
// ends the FM_extract that ran it.
constexpr int kQuit = 1;

struct Extraction {
  size_t budget = SIZE_MAX;
  size_t bytes = 0;
  int ran = 0;
  bool quit = false;
  bool done() const { return quit || bytes >= budget; }
};

// Runs the handler of the FM packet at `p` (`length` bytes with its
// header), counting it in `x`; a message is dropped (no handler, or a
// handler id out of range: the header comes from the wire) and counted.
void run_packet(uint8_t *p, uint32_t length, Extraction &x) {
  viafw_fm_header h;
  std::memcpy(&h, p, sizeof h);
  if (length < VIAFW_FM_HEADER_BYTES ||
      h.length != length - VIAFW_FM_HEADER_BYTES ||
      h.handler >= FM_MAX_HANDLERS) {
    ++fm.dropped;
    return;
  }
  FM_stream_handler sh = fm.stream_handlers[h.handler];
  FM_handler fh = fm.handlers[h.handler];
  if (!sh && !fh) {
    ++fm.dropped;
    return;
  }
  fm.sender = h.src;
  ++fm.in_handler;
  if (sh) {
    FM_stream s;
    s.data = p + VIAFW_FM_HEADER_BYTES;
    s.available = h.length;
    x.quit = sh(&s, h.src) == kQuit;
  } else {
    fh(p + VIAFW_FM_HEADER_BYTES, int(h.length));
  }
  --fm.in_handler;
  ++x.ran;
  x.bytes += h.length;
}

// Runs the handlers of the messages that have arrived, then gives their
// buffers back to the card; then those of the messages this node sent
// itself (the ones there when it began: a handler that sends to its own
// node does not keep the call going for ever).
int run_arrived(Extraction &x) {
  while (!fm.arrived.empty() && !x.done()) {
    VIP_DESCRIPTOR *d = fm.arrived.front();
    fm.arrived.pop_front();
    int i = 0;
    while (i < kRecvs && fm.recv_desc[i] != d)
      ++i;
    if (i == kRecvs)
      continue;
    if (d->CS.Status & VIP_STATUS_ERROR_MASK)
      ++fm.dropped;
    else
      run_packet(fm.recv_buf[i], d->CS.Length, x);
    VIP_RETURN r = post_recv(i);
    if (r != VIP_SUCCESS)
      return nic_fail("VipPostRecv", r);
  }
  for (size_t n = fm.loopback.size();
       n > 0 && !fm.loopback.empty() && !x.done(); --n) {
    std::vector<uint8_t> packet = std::move(fm.loopback.front());
    fm.loopback.pop_front();
    run_packet(packet.data(), uint32_t(packet.size()), x);
  }
  return x.ran;
}

int run_arrived() {
  Extraction all;
  return run_arrived(all);
}

// Waits for a completion, running handlers meanwhile (not from inside a
// handler: the handler that sends waits only for its own sends).
int progress() {
  int e = drain(true);
  if (e == FM_SUCCESS && fm.in_handler == 0) {
    int ran = run_arrived();
    if (ran < 0)
      return ran;
  }
  return e;
}

int take_slot(int &slot) {
  for (;;) {
    for (int i = 0; i < kSends; ++i)
      if (!fm.sends[i].busy) {
        slot = i;
        return FM_SUCCESS;
      }
    // Every slot is busy. With no send in flight they all hold messages
    // begun and not ended, and waiting would never end.
    if (fm.posted.empty())
      return fail(FM_EINVAL, "all " + std::to_string(kSends) +
                                 " send descriptors hold messages begun and "
                                 "not ended (FM_end_message)");
    if (int e = progress())
      return e;
  }
}

int check_send(unsigned dest, int handler, int len) {
  if (!fm.ready)
    return fail(FM_ENOTINIT, "FM_initialize has not been called");
  if (dest >= FM_numnodes)
    return fail(FM_EBADNODE, "node " + std::to_string(dest) + " of " +
                                 std::to_string(FM_numnodes));
  if (handler < 0 || handler >= FM_MAX_HANDLERS)
    return fail(FM_EBADHANDLER,
                "handler id " + std::to_string(handler) + " out of range");
  if (len < 0)
    return fail(FM_EINVAL, "negative length " + std::to_string(len));
  if (len > FM_MAX_MESSAGE)
    return fail(FM_ETOOBIG, std::to_string(len) + " bytes (at most " +
                                std::to_string(FM_MAX_MESSAGE) + ")");
  return FM_SUCCESS;
}

void fill_header(uint8_t *packet, unsigned dest, int handler, unsigned len) {
  viafw_fm_header h{};
  h.dest = uint16_t(dest);
  h.src = uint16_t(FM_nodeid);
  h.handler = uint16_t(handler);
  h.length = len;
  std::memcpy(packet, &h, sizeof h);
}

// Posts slot `slot`'s descriptor (already filled).
int post_send(int slot) {
  SendSlot &s = fm.sends[slot];
  s.busy = true;
  VIP_RETURN r = VipPostSend(fm.vi, s.desc, fm.mem_handle);
  if (r != VIP_SUCCESS) {
    s.busy = false;
    return nic_fail("VipPostSend", r);
  }
  fm.posted.push_back(slot);
  return FM_SUCCESS;
}

int send(unsigned dest, int handler, void *buf, int len, bool wait) {
  std::lock_guard lock(fm_mutex);
  if (int e = check_send(dest, handler, len))
    return e;
  if (len > 0 && !buf)
    return fail(FM_EINVAL, "null buffer");
  VIP_MEM_HANDLE data_handle = 0;
  if (len > 0) {
    auto p = reinterpret_cast<uintptr_t>(buf);
    auto it = fm.regions.upper_bound(p);
    if (it == fm.regions.begin() ||
        p + size_t(len) > std::prev(it)->first + std::prev(it)->second.length)
      return fail(FM_ENOTREG, "the send buffer is not registered with "
                              "FM_register");
    data_handle = std::prev(it)->second.handle;
  }
  if (dest == FM_nodeid) { // delivered by the library: see Fm::loopback
    std::vector<uint8_t> packet(VIAFW_FM_HEADER_BYTES + size_t(len));
    fill_header(packet.data(), dest, handler, unsigned(len));
    if (len > 0)
      std::memcpy(packet.data() + VIAFW_FM_HEADER_BYTES, buf, size_t(len));
    fm.loopback.push_back(std::move(packet));
    return FM_SUCCESS;
  }
  int slot;
  if (int e = take_slot(slot))
    return e;
  SendSlot &s = fm.sends[slot];
  fill_header(s.packet, dest, handler, unsigned(len));
  VIP_DESCRIPTOR *d = s.desc;
  std::memset(d, 0, sizeof *d);
  d->CS.Control = VIP_CONTROL_OP_SENDRECV;
  d->CS.SegCount = len > 0 ? 2 : 1;
  d->CS.Length = VIAFW_FM_HEADER_BYTES + uint32_t(len);
  d->DS[0].Local.Data.Address = s.packet;
  d->DS[0].Local.Handle = fm.mem_handle;
  d->DS[0].Local.Length = VIAFW_FM_HEADER_BYTES;
  if (len > 0) {
    d->DS[1].Local.Data.Address = buf;
    d->DS[1].Local.Handle = data_handle;
    d->DS[1].Local.Length = uint32_t(len);
  }
  if (int e = post_send(slot))
    return e;
  while (wait && s.busy)
    if (int e = progress())
      return e;
  return FM_SUCCESS;
}

} // namespace

extern "C" {

int FM_initialize(void) {
  std::lock_guard lock(fm_mutex);
  if (fm.ready)
    return FM_SUCCESS;
  try {
    // FM numbers nodes; a card serves one FM VI, so one process per node
    // uses FM (nicemu run --procs-per-node gives the others none).
    FM_nodeid = nicemu::host::node();
    FM_numnodes = nicemu::host::size() / nicemu::host::processes_per_node() +
                  (std::getenv("NICEMU_TAP") ? 1 : 0);
  } catch (const std::exception &e) {
    return fail(FM_ENOTINIT, e.what());
  }
  if (FM_numnodes > 64)
    return fail(FM_EBADNODE, "the card's node table holds 64 nodes");
  VIP_RETURN r = VipOpenNic(nullptr, &fm.nic);
  if (r != VIP_SUCCESS)
    return nic_fail("VipOpenNic", r);
  if ((r = VipCreatePtag(fm.nic, &fm.ptag)) != VIP_SUCCESS)
    return nic_fail("VipCreatePtag", r);
  if ((r = VipCreateCQ(fm.nic, 2 * (kSends + kRecvs), &fm.cq)) != VIP_SUCCESS)
    return nic_fail("VipCreateCQ", r);
  VIP_VI_ATTRIBUTES va{};
  va.ReliabilityLevel = VIP_SERVICE_UNRELIABLE;
  va.MaxTransferSize = VIAFW_FM_HEADER_BYTES + FM_MAX_MESSAGE;
  va.Ptag = fm.ptag;
  if ((r = VipCreateViKind(fm.nic, &va, VIP_VI_KIND_FM_IP, fm.cq, fm.cq,
                           &fm.vi)) != VIP_SUCCESS)
    return nic_fail("VipCreateViKind", r);
  // The library's memory: descriptors, then send slots, then receive
  // buffers, all in one registered region.
  size_t descs = size_t(kSends + kRecvs) * sizeof(VIP_DESCRIPTOR);
  size_t bytes = descs + size_t(kSends + kRecvs) * kSlotBytes;
  try {
    fm.mem = static_cast<uint8_t *>(nicemu::host::alloc(bytes));
  } catch (const std::exception &e) {
    return fail(FM_ENIC, e.what());
  }
  VIP_MEM_ATTRIBUTES ma{};
  ma.Ptag = fm.ptag;
  if ((r = VipRegisterMem(fm.nic, fm.mem, VIP_ULONG(bytes), &ma,
                          &fm.mem_handle)) != VIP_SUCCESS)
    return nic_fail("VipRegisterMem", r);
  auto *desc = reinterpret_cast<VIP_DESCRIPTOR *>(fm.mem);
  uint8_t *slots = fm.mem + descs;
  for (int i = 0; i < kSends; ++i) {
    fm.sends[i].desc = desc + i;
    fm.sends[i].packet = slots + size_t(i) * kSlotBytes;
  }
  for (int i = 0; i < kRecvs; ++i) {
    fm.recv_desc[i] = desc + kSends + i;
    fm.recv_buf[i] = slots + size_t(kSends + i) * kSlotBytes;
    if ((r = post_recv(i)) != VIP_SUCCESS)
      return nic_fail("VipPostRecv", r);
  }
  fm.ready = true;
  return FM_SUCCESS;
}

int FM_finalize(void) {
  std::lock_guard lock(fm_mutex);
  if (!fm.ready)
    return FM_SUCCESS;
  int e = FM_wait();
  VipCloseNic(fm.nic);
  fm = Fm{};
  return e;
}

unsigned FM_get_nodeid(void) {
  return FM_nodeid;
}
unsigned FM_get_numnodes(void) {
  return FM_numnodes;
}

int FM_set_handler(int id, FM_handler handler) {
  std::lock_guard lock(fm_mutex);
  if (id < 0 || id >= FM_MAX_HANDLERS)
    return fail(FM_EBADHANDLER, "handler id " + std::to_string(id));
  fm.handlers[id] = handler;
  fm.stream_handlers[id] = nullptr;
  return FM_SUCCESS;
}

int FM_set_stream_handler(int id, FM_stream_handler handler) {
  std::lock_guard lock(fm_mutex);
  if (id < 0 || id >= FM_MAX_HANDLERS)
    return fail(FM_EBADHANDLER, "handler id " + std::to_string(id));
  fm.stream_handlers[id] = handler;
  fm.handlers[id] = nullptr;
  return FM_SUCCESS;
}

unsigned FM_sender(void) {
  return fm.sender;
}

int FM_register(void *buf, size_t len) {
  std::lock_guard lock(fm_mutex);
  if (!fm.ready)
    return fail(FM_ENOTINIT, "FM_initialize has not been called");
  if (!buf || len == 0)
    return fail(FM_EINVAL, "null buffer or zero length");
  auto p = reinterpret_cast<uintptr_t>(buf);
  auto next = fm.regions.lower_bound(p);
  if ((next != fm.regions.end() && next->first < p + len) ||
      (next != fm.regions.begin() &&
       std::prev(next)->first + std::prev(next)->second.length > p))
    return fail(FM_EINVAL, "the buffer overlaps one already registered");
  VIP_MEM_ATTRIBUTES ma{};
  ma.Ptag = fm.ptag;
  VIP_MEM_HANDLE h;
  VIP_RETURN r = VipRegisterMem(fm.nic, buf, VIP_ULONG(len), &ma, &h);
  if (r != VIP_SUCCESS)
    return nic_fail("VipRegisterMem", r);
  fm.regions[p] = {len, h};
  return FM_SUCCESS;
}

int FM_deregister(void *buf) {
  std::lock_guard lock(fm_mutex);
  if (!fm.ready)
    return fail(FM_ENOTINIT, "FM_initialize has not been called");
  auto it = fm.regions.find(reinterpret_cast<uintptr_t>(buf));
  if (it == fm.regions.end())
    return fail(FM_ENOTREG, "the buffer was not registered");
  // Sends from it may still be in flight.
  if (int e = FM_wait())
    return e;
  VIP_RETURN r = VipDeregisterMem(fm.nic, buf, it->second.handle);
  fm.regions.erase(it);
  return r == VIP_SUCCESS ? FM_SUCCESS : nic_fail("VipDeregisterMem", r);
}

int FM_send(unsigned dest, int handler, void *buf, int len) {
  return send(dest, handler, buf, len, true);
}

int FM_send_nw(unsigned dest, int handler, void *buf, int len) {
  return send(dest, handler, buf, len, false);
}

int FM_wait(void) {
  std::lock_guard lock(fm_mutex);
  if (!fm.ready)
    return fail(FM_ENOTINIT, "FM_initialize has not been called");
  while (!fm.posted.empty())
    if (int e = progress())
      return e;
  return FM_SUCCESS;
}

int FM_extract(void) {
  std::lock_guard lock(fm_mutex);
  if (!fm.ready)
    return fail(FM_ENOTINIT, "FM_initialize has not been called");
  if (int e = drain(false))
    return e;
  return run_arrived();
}

long nicemu_fm_extract_bytes(unsigned long maxbytes) {
  std::lock_guard lock(fm_mutex);
  if (!fm.ready)
    return fail(FM_ENOTINIT, "FM_initialize has not been called");
  if (int e = drain(false))
    return e;
  Extraction x;
  x.budget = maxbytes;
  if (int e = run_arrived(x); e < 0)
    return e;
  return long(x.bytes);
}

unsigned FM_dropped(void) {
  return fm.dropped;
}

FM_stream *FM_begin_message(unsigned dest, unsigned length, int handler) {
  std::lock_guard lock(fm_mutex);
  if (length > unsigned(FM_MAX_MESSAGE)) {
    fail(FM_ETOOBIG, std::to_string(length) + " bytes");
    return nullptr;
  }
  if (check_send(dest, handler, int(length)))
    return nullptr;
  int slot;
  if (take_slot(slot))
    return nullptr;
  SendSlot &s = fm.sends[slot];
  s.busy = true; // held while pieces come in
  fill_header(s.packet, dest, handler, length);
  s.stream = FM_stream{};
  s.stream.slot = slot;
  s.stream.length = length;
  return &s.stream;
}

int FM_send_piece(FM_stream *stream, const void *buf, unsigned len) {
  std::lock_guard lock(fm_mutex);
  if (!stream || stream->slot < 0 || (len && !buf))
    return fail(FM_EINVAL, "not a stream from FM_begin_message");
  if (len > stream->length - stream->filled)
    return fail(FM_ETOOBIG, "pieces longer than the message begun");
  SendSlot &s = fm.sends[stream->slot];
  std::memcpy(s.packet + VIAFW_FM_HEADER_BYTES + stream->filled, buf, len);
  stream->filled += len;
  return FM_SUCCESS;
}

int FM_end_message(FM_stream *stream) {
  std::lock_guard lock(fm_mutex);
  if (!stream || stream->slot < 0)
    return fail(FM_EINVAL, "not a stream from FM_begin_message");
  if (stream->filled != stream->length)
    return fail(FM_EINVAL, "the pieces hold " + std::to_string(stream->filled) +
                               " of " + std::to_string(stream->length) +
                               " bytes");
  int slot = stream->slot;
  stream->slot = -1;
  SendSlot &s = fm.sends[slot];
  viafw_fm_header h;
  std::memcpy(&h, s.packet, sizeof h);
  if (h.dest == FM_nodeid) { // delivered by the library: see Fm::loopback
    fm.loopback.emplace_back(s.packet,
                             s.packet + VIAFW_FM_HEADER_BYTES + stream->length);
    s.busy = false;
    return FM_SUCCESS;
  }
  VIP_DESCRIPTOR *d = s.desc;
  std::memset(d, 0, sizeof *d);
  d->CS.Control = VIP_CONTROL_OP_SENDRECV;
  d->CS.SegCount = 1;
  d->CS.Length = VIAFW_FM_HEADER_BYTES + stream->length;
  d->DS[0].Local.Data.Address = s.packet;
  d->DS[0].Local.Handle = fm.mem_handle;
  d->DS[0].Local.Length = d->CS.Length;
  return post_send(slot);
}

unsigned FM_receive(void *buf, FM_stream *stream, unsigned len) {
  if (!stream || !stream->data || (len && !buf))
    return 0;
  unsigned n = stream->available - stream->read;
  if (len < n)
    n = len;
  std::memcpy(buf, stream->data + stream->read, n);
  stream->read += n;
  return n;
}

int FM_last_error(void) {
  return last_error;
}

const char *FM_strerror(int code) {
  static thread_local std::string text;
  switch (code) {
  case FM_SUCCESS:
    return "success";
  case FM_ENOTINIT:
    text = "FM is not initialized";
    break;
  case FM_EBADNODE:
    text = "no such node";
    break;
  case FM_EBADHANDLER:
    text = "bad handler id";
    break;
  case FM_ENOTREG:
    text = "buffer not registered";
    break;
  case FM_ETOOBIG:
    text = "message too long";
    break;
  case FM_EINVAL:
    text = "invalid argument";
    break;
  case FM_ENIC:
    text = "the card failed";
    break;
  default:
    return "unknown FM error";
  }
  if (code == last_error && !last_detail.empty())
    text += ": " + last_detail;
  return text.c_str();
}

} // extern "C"
