// VIPL on the via firmware: the card's event ring and connection
// management. The card only relays control messages between hosts (8 words,
// VIAFW_CMD_CONTROL out, VIAFW_EV_CONTROL in) and binds a VI to its peer
// (VIAFW_CMD_CONNECT_VI); the protocol below is the library's. docs/via.md,
// "Connection management", says the same.
//
// Word 0 is the VIAFW_CTL_* type. "attrs" is 4 bits of VI attributes: the
// card reliability code (VIAFW_UNRELIABLE..) in bits 0-1, EnableRdmaWrite in
// bit 2, EnableRdmaRead in bit 3. Discriminators travel as up to 16 bytes in
// words 4-7 (zero padded); a hash is FNV-1a (32 bits) over the length byte
// and the bytes.
//
//   CONNECT_REQUEST  client -> server (VipConnectRequest)
//     w1 = request id (bits 0-15) | client VI (16-23) | attrs (24-27)
//     w2 = the client VI's MaxTransferSize
//     w3 = length of the server's discriminator (the one the client names)
//     w4-7 = that discriminator
//   CONNECT_ACCEPT   server -> client (VipConnectAccept)
//     w1 = request id | server VI (16-23) | attrs of the server VI (24-27)
//     w2 = the server VI's MaxTransferSize
//     w3 = client VI
//   CONNECT_REJECT, three uses told apart by w1's top bits:
//     server -> client (VipConnectReject): w1 = request id, w3 = client VI
//     client -> server, bit 30 ("withdraw": the request timed out):
//       w1 = request id | 1 << 30, w3 = client VI
//     peer -> peer, bit 31 ("cancel": the sender no longer waits on VI w2,
//       the receiver's VI w3 must not stay bound to it):
//       w1 = 1 << 31, w2 = sender's VI, w3 = receiver's VI
//   PEER_REQUEST     either side (VipConnectPeerRequest)
//     w1 = sender VI (bits 0-7) | attrs (8-11) | matched (12) |
//          the receiver's VI it bound to, when matched (16-23) |
//          length of the sender's own discriminator (24-31)
//     w2 = the sender VI's MaxTransferSize
//     w3 = hash of the discriminator the sender names for the receiver
//     w4-7 = the sender's own discriminator
//   DISCONNECT       the card's (VIAFW_CTL_DISCONNECT): w1 = sender's VI,
//     w2 = receiver's VI; the receiving card ends the receiver's VI if it
//     is bound to exactly that VI, and tells its host.
//
// Client-server: the server's library queues requests until a
// VipConnectWait on the same discriminator takes one; VipConnectAccept
// binds the server VI (CONNECT_VI) and only then sends ACCEPT, so the
// client, binding on ACCEPT, is never bound alone. A client that timed out
// sends a withdraw (the server drops the queued request; an accept of it
// returns VIP_TIMEOUT); an ACCEPT that finds no waiting request (timed out,
// VI gone) is answered with DISCONNECT, which ends the server's VI.
//
// Peer-to-peer: each side sends a PEER_REQUEST. A side whose own request is
// pending and unbound, on meeting the other side's request (arriving, or
// queued before its own call), binds its VI and sends a matched request
// naming the VI it bound to. A matched request that reaches a side bound to
// its sender confirms the connection there; one that reaches a pending side
// binds it and is confirmed at once (that side answers with its own matched
// request). A call reports success only once confirmed. A side that gives up
// (timeout, VipDisconnect, VI destroyed) unbinds and sends a cancel; so does
// a side that receives a matched request nobody waits for. On a cancel the
// other side unbinds, goes on waiting and sends its request again. An
// unmatched request that finds nobody waiting is queued (after a cancel if
// it names a request given up here: its sender may have bound to that one).
#include "vipl_connect.hpp"

#include "nicemu/host.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

namespace host = nicemu::host;

namespace nicemu::vipl {

namespace {

constexpr uint32_t kMaxDisc = 16;
constexpr size_t kMaxQueued = 64; // unclaimed requests kept
constexpr size_t kMaxAbandoned = 16;
constexpr uint32_t kWithdraw = 1u << 30;
constexpr uint32_t kCancel = 1u << 31;

using Bytes = std::vector<uint8_t>;

Bytes discriminator(const VIP_NET_ADDRESS *a) {
  const uint8_t *p = a->HostAddress + a->HostAddressLen;
  return Bytes(p, p + a->DiscriminatorLen);
}

uint32_t hash(const Bytes &b) {
  uint32_t h = 2166136261u;
  auto mix = [&](uint8_t byte) { h = (h ^ byte) * 16777619u; };
  mix(uint8_t(b.size()));
  for (uint8_t byte : b)
    mix(byte);
  return h;
}

void put_disc(uint32_t (&w)[8], const Bytes &b) {
  uint8_t bytes[kMaxDisc] = {};
  std::memcpy(bytes, b.data(), b.size());
  std::memcpy(&w[4], bytes, kMaxDisc);
}

Bytes get_disc(const uint32_t *w, uint32_t length) {
  uint8_t bytes[kMaxDisc];
  std::memcpy(bytes, &w[4], kMaxDisc);
  return Bytes(bytes, bytes + std::min(length, kMaxDisc));
}

uint32_t attr_bits(const VIP_VI_ATTRIBUTES &a) {
  uint32_t code = 0;
  reliability_code(a.ReliabilityLevel, code);
  return code | (a.EnableRdmaWrite ? 4u : 0u) | (a.EnableRdmaRead ? 8u : 0u);
}

VIP_VI_ATTRIBUTES remote_attrs(uint32_t bits, uint32_t max_transfer) {
  VIP_VI_ATTRIBUTES a{};
  a.ReliabilityLevel = reliability_level(bits & 3);
  a.MaxTransferSize = max_transfer;
  a.QoS = nullptr;
  a.Ptag = nullptr;
  a.EnableRdmaWrite = (bits & 4) ? VIP_TRUE : VIP_FALSE;
  a.EnableRdmaRead = (bits & 8) ? VIP_TRUE : VIP_FALSE;
  return a;
}

void set_address(VIP_NET_ADDRESS *a, uint32_t node) {
  uint8_t mac[6];
  node_mac(node, mac);
  a->HostAddressLen = 6;
  a->DiscriminatorLen = 0;
  std::memcpy(a->HostAddress, mac, 6);
}

Vi *vi_of(VIP_VI_HANDLE handle) {
  Library &l = lib();
  return l.ready ? find(l.vis, handle) : nullptr;
}

Vi *vi_numbered(uint32_t number) {
  Handle h = vi_by_number(number);
  return h ? &lib().vis.at(h) : nullptr;
}

// Binds `vi` to VI `peer_vi` of `node` on the card; the card's result
// (VIAFW_R_OK, 0, when bound).
uint32_t bind(Vi &vi, uint32_t node, uint32_t peer_vi, uint32_t bits,
              uint32_t max_transfer) {
  if (uint32_t r = command(VIAFW_CMD_CONNECT_VI, {vi.number, node, peer_vi})) {
    vi.outcome = Outcome::Failed;
    return r;
  }
  vi.state = VIP_STATE_CONNECTED;
  vi.peer_node = node;
  vi.peer_vi = peer_vi;
  vi.remote = remote_attrs(bits, max_transfer);
  vi.outcome = Outcome::Connected;
  return VIAFW_R_OK;
}

void unbind(Vi &vi) {
  command(VIAFW_CMD_DISCONNECT_VI, {vi.number, 0});
  vi.state = VIP_STATE_IDLE;
}

void tell_disconnect(uint32_t node, uint32_t my_vi, uint32_t their_vi) {
  uint32_t w[8] = {VIAFW_CTL_DISCONNECT, my_vi, their_vi};
  send_control(node, w);
}

void tell_cancel(uint32_t node, uint32_t my_vi, uint32_t their_vi) {
  uint32_t w[8] = {VIAFW_CTL_CONNECT_REJECT, kCancel, my_vi, their_vi};
  send_control(node, w);
}

void send_peer_request(const Vi &vi, bool matched, uint32_t bound) {
  uint32_t w[8] = {VIAFW_CTL_PEER_REQUEST,
                   vi.number | attr_bits(vi.attrs) << 8 |
                       (matched ? 1u << 12 : 0u) | bound << 16 |
                       uint32_t(vi.local_disc.size()) << 24,
                   uint32_t(vi.attrs.MaxTransferSize), hash(vi.remote_disc)};
  put_disc(w, vi.local_disc);
  send_control(vi.target_node, w);
}

// ---- Incoming control messages
// ---------------------------------------------------

void on_accept(uint32_t node, const uint32_t *w) {
  uint32_t id = w[1] & 0xFFFF, server_vi = (w[1] >> 16) & 0xFF;
  Vi *vi = vi_numbered(w[3]);
  if (vi && vi->connecting == Connecting::Request &&
      vi->outcome == Outcome::Pending && vi->request_id == id &&
      vi->target_node == node) {
    if (bind(*vi, node, server_vi, (w[1] >> 24) & 0xF, w[2]) == VIAFW_R_OK)
      return;
  }
  // Nobody waits for this answer any more: end the server's VI.
  tell_disconnect(node, w[3], server_vi);
}

void on_reject(uint32_t node, const uint32_t *w) {
  Library &l = lib();
  if (w[1] & kCancel) {
    // The peer gave up its request on VI w[2].
    auto &q = l.peer_requests;
    q.erase(std::remove_if(q.begin(), q.end(),
                           [&](const Message &m) {
                             return m.node == node && (m.w[1] & 0xFF) == w[2];
                           }),
            q.end());
    Vi *vi = vi_numbered(w[3]);
    if (!vi || vi->state != VIP_STATE_CONNECTED || vi->peer_node != node ||
        vi->peer_vi != w[2])
      return;
    unbind(*vi);
    if (vi->connecting == Connecting::Peer) {
      // Not reported yet: wait on, and ask again (the request this side
      // sent was taken by the binding just undone).
      vi->outcome = Outcome::Pending;
      vi->state = VIP_STATE_CONNECT_PENDING;
      send_peer_request(*vi, false, 0);
    }
    return;
  }
  uint32_t id = w[1] & 0xFFFF;
  if (w[1] & kWithdraw) {
    auto &q = l.connect_requests;
    q.erase(std::remove_if(q.begin(), q.end(),
                           [&](const Message &m) {
                             return m.node == node && (m.w[1] & 0xFFFF) == id &&
                                    ((m.w[1] >> 16) & 0xFF) == w[3];
                           }),
            q.end());
    for (auto &[h, c] : l.conns)
      if (c.request.node == node && (c.request.w[1] & 0xFFFF) == id &&
          ((c.request.w[1] >> 16) & 0xFF) == w[3])
        c.withdrawn = true;
    return;
  }
  Vi *vi = vi_numbered(w[3]);
  if (vi && vi->connecting == Connecting::Request &&
      vi->outcome == Outcome::Pending && vi->request_id == id &&
      vi->target_node == node)
    vi->outcome = Outcome::Rejected;
}

// Whether a peer request (from `node`, words `w`) names the pending peer
// request of `vi`: the same two nodes and discriminators.
bool names(const Vi &vi, uint32_t node, const uint32_t *w) {
  return vi.connecting == Connecting::Peer && vi.target_node == node &&
         vi.remote_disc == get_disc(w, w[1] >> 24) &&
         w[3] == hash(vi.local_disc);
}

// Whether an unbound pending peer request of `vi` takes it.
bool answers(const Vi &vi, uint32_t node, const uint32_t *w) {
  uint32_t matched = (w[1] >> 12) & 1, bound = (w[1] >> 16) & 0xFF;
  return names(vi, node, w) && vi.outcome == Outcome::Pending &&
         (!matched || bound == vi.number);
}

bool same_reliability(const Vi &vi, const uint32_t *bits) {
  uint32_t code = 0;
  reliability_code(vi.attrs.ReliabilityLevel, code);
  return (*bits & 3) == code;
}

// A pending, unbound peer request of `vi` meets the other side's request
// (words `w` from `node`): bind, and say so with a matched request. When
// the other side had bound already (its request was matched), this is the
// confirmation; otherwise it confirms later. `sent` tells whether this
// side's own request went out already.
void meet(Vi &vi, uint32_t node, const uint32_t *w, bool sent) {
  uint32_t src_vi = w[1] & 0xFF, bits = (w[1] >> 8) & 0xF;
  bool matched = (w[1] >> 12) & 1;
  if (!same_reliability(vi, &bits)) {
    vi.outcome = Outcome::Mismatch;
    if (matched) // it is bound to us
      tell_cancel(node, vi.number, src_vi);
    else if (!sent) // it finds out from our request
      send_peer_request(vi, false, 0);
    return;
  }
  if (bind(vi, node, src_vi, bits, w[2]) != VIAFW_R_OK)
    return;
  vi.outcome = matched ? Outcome::Connected : Outcome::Bound;
  send_peer_request(vi, true, src_vi);
}

void on_peer_request(uint32_t node, const uint32_t *w) {
  Library &l = lib();
  uint32_t src_vi = w[1] & 0xFF;
  bool matched = (w[1] >> 12) & 1;
  uint32_t bound = (w[1] >> 16) & 0xFF;
  for (auto &[h, vi] : l.vis) {
    if (answers(vi, node, w))
      return meet(vi, node, w, true);
    if (names(vi, node, w) && vi.outcome == Outcome::Bound &&
        vi.peer_node == node && vi.peer_vi == src_vi) {
      if (matched && bound == vi.number)
        vi.outcome = Outcome::Connected; // confirmed
      return;
    }
  }
  if (matched) { // bound to a VI of ours that no longer waits for it
    tell_cancel(node, bound, src_vi);
    return;
  }
  // It may have bound to a request of ours given up since: unbind it. It
  // is kept all the same, for a new request of ours.
  Bytes disc = get_disc(w, w[1] >> 24);
  for (auto it = l.abandoned.begin(); it != l.abandoned.end(); ++it)
    if (it->node == node && it->remote_disc == disc &&
        w[3] == hash(it->local_disc)) {
      tell_cancel(node, it->vi, src_vi);
      l.abandoned.erase(it);
      break;
    }
  if (l.peer_requests.size() == kMaxQueued)
    l.peer_requests.pop_front();
  l.peer_requests.push_back(Message{node, {}});
  std::memcpy(l.peer_requests.back().w, w, sizeof(uint32_t) * 8);
}

void on_control(uint32_t node, const uint32_t *w) {
  Library &l = lib();
  switch (w[0]) {
  case VIAFW_CTL_CONNECT_REQUEST:
    if (l.connect_requests.size() == kMaxQueued)
      l.connect_requests.pop_front();
    l.connect_requests.push_back(Message{node, {}});
    std::memcpy(l.connect_requests.back().w, w, sizeof(uint32_t) * 8);
    return;
  case VIAFW_CTL_CONNECT_ACCEPT:
    return on_accept(node, w);
  case VIAFW_CTL_CONNECT_REJECT:
    return on_reject(node, w);
  case VIAFW_CTL_PEER_REQUEST:
    return on_peer_request(node, w);
  default:
    return; // DISCONNECT is the card's; anything else is not ours
  }
}

// Gives up the pending peer request of `vi`; its VI is idle again. A VI
// bound meanwhile is unbound, and the other side told.
void give_up_peer(Vi &vi) {
  Library &l = lib();
  if ((vi.outcome == Outcome::Bound || vi.outcome == Outcome::Connected) &&
      vi.state == VIP_STATE_CONNECTED) {
    unbind(vi);
    tell_cancel(vi.peer_node, vi.number, vi.peer_vi);
  }
  if (l.abandoned.size() == kMaxAbandoned)
    l.abandoned.pop_front();
  l.abandoned.push_back(
      {vi.number, vi.target_node, vi.local_disc, vi.remote_disc});
  vi.connecting = Connecting::None;
  vi.outcome = Outcome::Pending;
  vi.state = VIP_STATE_IDLE;
}

// The result of a peer request whose outcome is known (or VIP_NOT_DONE).
VIP_RETURN peer_result(const char *function, Vi &vi,
                       VIP_VI_ATTRIBUTES *remote) {
  switch (vi.outcome) {
  case Outcome::Pending:
  case Outcome::Bound:
    return VIP_NOT_DONE;
  case Outcome::Connected:
    vi.connecting = Connecting::None;
    if (remote)
      *remote = vi.remote;
    return VIP_SUCCESS;
  case Outcome::Mismatch:
    give_up_peer(vi);
    return refuse(function, VIP_INVALID_RELIABILITY_LEVEL,
                  "the peer's VI on node %u has another reliability level",
                  vi.target_node);
  default:
    give_up_peer(vi);
    return refuse(function, VIP_ERROR_RESOURCE,
                  "the card refused to bind the VI to its peer on node %u "
                  "(CONNECT_VI)",
                  vi.target_node);
  }
}

// The checks the connection calls make of a VI.
VIP_RETURN idle_connected_kind(const char *function, const Vi &vi) {
  if (vi.kind != VIP_VI_KIND_CONNECTED)
    return refuse(function, VIP_INVALID_STATE,
                  "an FM VI (VIP_VI_KIND_FM_IP) makes no connections");
  if (vi.state != VIP_STATE_IDLE || vi.connecting != Connecting::None)
    return refuse(function, VIP_INVALID_STATE,
                  "the VI is not idle (%s%s): only an idle VI connects "
                  "(VipDisconnect ends a connection)",
                  state_name(vi.state),
                  vi.connecting == Connecting::Peer
                      ? ", its peer request not done"
                  : vi.connecting == Connecting::Request
                      ? ", its connection request not done"
                      : "");
  return VIP_SUCCESS;
}

VIP_RETURN refuse_discriminator(const char *function, const char *argument,
                                const VIP_NET_ADDRESS *a) {
  return refuse(function, VIP_INVALID_PARAMETER,
                "%s->DiscriminatorLen %u is over %u (MaxDiscriminatorLen)",
                argument, unsigned(a->DiscriminatorLen), kMaxDisc);
}

// VipConnectPeerDone and VipConnectPeerWait on a VI without a peer request.
VIP_RETURN refuse_no_peer_request(const char *function, const Vi &vi) {
  return refuse(function, VIP_INVALID_STATE,
                "no peer request is pending on the VI (%s): "
                "VipConnectPeerRequest starts one; one that connected or "
                "timed out is over",
                state_name(vi.state));
}

// ---- Events
// -------------------------------------------------------------------------
// The card's event ring: VI errors and disconnections for VIs, and the
// control messages of the connection protocol above.

void on_event(const uint32_t *e) {
  Library &l = lib();
  uint32_t type = e[1], node = e[2], number = e[3];
  const uint32_t *data = e + 4;
  switch (type) {
  case VIAFW_EV_CONTROL:
    return on_control(node, data);
  case VIAFW_EV_VI_ERROR: {
    Handle h = vi_by_number(number);
    if (!h)
      return;
    Vi &vi = l.vis.at(h);
    vi.state = VIP_STATE_ERROR;
    report_vi_error(vi, h, data[0]);
    return;
  }
  case VIAFW_EV_DISCONNECTED: {
    Vi *vi = vi_numbered(number);
    if (!vi ||
        (vi->state != VIP_STATE_CONNECTED && vi->state != VIP_STATE_ERROR))
      return;
    vi->state = VIP_STATE_IDLE;
    if (vi->connecting == Connecting::Peer) { // not reported: wait on
      vi->outcome = Outcome::Pending;
      vi->state = VIP_STATE_CONNECT_PENDING;
    }
    return;
  }
  default:
    return;
  }
}

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
    host::pio_write(host::mailbox() +
                        4 * VIAFW_BOX_EVENTS_FREED_BY(host::node_process()),
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

void abandon_connecting(Vi &vi) {
  if (vi.connecting == Connecting::Peer)
    give_up_peer(vi);
  vi.connecting = Connecting::None;
}

void close_connections(Handle nic) {
  Library &l = lib();
  for (auto it = l.conns.begin(); it != l.conns.end();) {
    if (it->second.nic != nic) {
      ++it;
      continue;
    }
    const Message &m = it->second.request;
    uint32_t w[8] = {VIAFW_CTL_CONNECT_REJECT, m.w[1] & 0xFFFF, 0,
                     (m.w[1] >> 16) & 0xFF};
    send_control(m.node, w);
    it = l.conns.erase(it);
  }
}

} // namespace nicemu::vipl

using namespace nicemu::vipl;

// ---- Client-server connections
// -----------------------------------------------------

VIP_RETURN VipConnectWait(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr,
                          VIP_ULONG Timeout, VIP_NET_ADDRESS *RemoteAddr,
                          VIP_VI_ATTRIBUTES *RemoteViAttribs,
                          VIP_CONN_HANDLE *ConnHandle) noexcept {
  return guarded("VipConnectWait", [&] {
    Library &l = lib();
    if (!nic_of(NicHandle))
      return refuse_handle("VipConnectWait", Kind::Nic, NicHandle);
    if (const char *null =
            null_among({{"LocalAddr", LocalAddr}, {"ConnHandle", ConnHandle}}))
      return refuse("VipConnectWait", VIP_INVALID_PARAMETER, "%s is NULL",
                    null);
    if (LocalAddr->DiscriminatorLen > kMaxDisc)
      return refuse_discriminator("VipConnectWait", "LocalAddr", LocalAddr);
    if (LocalAddr->HostAddressLen != 0 &&
        (LocalAddr->HostAddressLen != 6 ||
         std::memcmp(LocalAddr->HostAddress, l.mac, 6) != 0)) {
      say("VipConnectWait", "the local address is not this node's");
      return VIP_INVALID_PARAMETER;
    }
    Bytes disc = discriminator(LocalAddr);
    uint64_t deadline = deadline_after(Timeout);
    poll();
    auto take = [&](Message &out) {
      auto &q = l.connect_requests;
      for (auto it = q.begin(); it != q.end(); ++it)
        if (get_disc(it->w, it->w[3] & 0xFF) == disc &&
            (it->w[3] & 0xFF) == disc.size()) {
          out = *it;
          q.erase(it);
          return true;
        }
      return false;
    };
    Message m;
    for (;;) {
      if (take(m))
        break;
      if (!l.ready || !wait_event(deadline)) {
        if (l.ready && take(m))
          break;
        return VIP_TIMEOUT;
      }
    }
    Handle h = new_handle(Kind::Conn);
    l.conns[h] = Conn{reinterpret_cast<Handle>(NicHandle), m};
    if (RemoteAddr)
      set_address(RemoteAddr, m.node);
    if (RemoteViAttribs)
      *RemoteViAttribs = remote_attrs((m.w[1] >> 24) & 0xF, m.w[2]);
    *ConnHandle = as_pointer(h);
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipConnectAccept(VIP_CONN_HANDLE ConnHandle,
                            VIP_VI_HANDLE ViHandle) noexcept {
  return guarded("VipConnectAccept", [&] {
    Library &l = lib();
    Conn *c = find(l.conns, ConnHandle);
    Vi *vi = vi_of(ViHandle);
    if (!c)
      return refuse_handle("VipConnectAccept", Kind::Conn, ConnHandle);
    if (!vi)
      return refuse_handle("VipConnectAccept", Kind::Vi, ViHandle);
    if (vi->nic != c->nic)
      return refuse_handle("VipConnectAccept", Kind::Vi, ViHandle, c->nic);
    poll(); // a withdraw may have come
    c = find(l.conns, ConnHandle);
    if (!c)
      return refuse_handle("VipConnectAccept", Kind::Conn, ConnHandle);
    if (VIP_RETURN r = idle_connected_kind("VipConnectAccept", *vi))
      return r;
    const Message m = c->request;
    if (c->withdrawn) { // the requester timed out
      l.conns.erase(reinterpret_cast<Handle>(ConnHandle));
      // Not a poll running out: the other side stopped waiting.
      return refuse("VipConnectAccept", VIP_TIMEOUT,
                    "the requester on node %u gave up waiting (its timeout) "
                    "before this accept",
                    m.node);
    }
    uint32_t bits = (m.w[1] >> 24) & 0xF;
    if (!same_reliability(*vi, &bits))
      return refuse("VipConnectAccept", VIP_INVALID_RELIABILITY_LEVEL,
                    "the requesting VI on node %u has another reliability "
                    "level",
                    m.node);
    uint32_t client_vi = (m.w[1] >> 16) & 0xFF;
    if (uint32_t r = bind(*vi, m.node, client_vi, bits, m.w[2])) {
      vi->outcome = Outcome::Pending;
      return refuse("VipConnectAccept", VIP_INVALID_STATE,
                    "the card refused to bind the VI to VI %u of node %u "
                    "(CONNECT_VI, result %u)",
                    client_vi, m.node, r);
    }
    vi->outcome = Outcome::Pending;
    uint32_t w[8] = {VIAFW_CTL_CONNECT_ACCEPT,
                     (m.w[1] & 0xFFFF) | vi->number << 16 |
                         attr_bits(vi->attrs) << 24,
                     uint32_t(vi->attrs.MaxTransferSize), client_vi};
    if (uint32_t r = send_control(m.node, w)) {
      unbind(*vi);
      return card_refused("VipConnectAccept", "to send the accept (CONTROL)",
                          r);
    }
    l.conns.erase(reinterpret_cast<Handle>(ConnHandle));
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipConnectReject(VIP_CONN_HANDLE ConnHandle) noexcept {
  return guarded("VipConnectReject", [&] {
    Library &l = lib();
    Conn *c = find(l.conns, ConnHandle);
    if (!c)
      return refuse_handle("VipConnectReject", Kind::Conn, ConnHandle);
    const Message m = c->request;
    l.conns.erase(reinterpret_cast<Handle>(ConnHandle));
    uint32_t w[8] = {VIAFW_CTL_CONNECT_REJECT, m.w[1] & 0xFFFF, 0,
                     (m.w[1] >> 16) & 0xFF};
    if (uint32_t r = send_control(m.node, w))
      return card_refused("VipConnectReject", "to send the reject (CONTROL)",
                          r);
    return VIP_SUCCESS;
  });
}

namespace {

// What both kinds of connection request check first: the arguments, the
// remote node, and (after taking the events in) an idle connected-kind VI.
VIP_RETURN connect_start(const char *call, VIP_VI_HANDLE handle,
                         VIP_NET_ADDRESS *local, VIP_NET_ADDRESS *remote,
                         Vi *&vi, uint32_t &node) {
  vi = vi_of(handle);
  if (!vi)
    return refuse_handle(call, Kind::Vi, handle);
  if (const char *null =
          null_among({{"LocalAddr", local}, {"RemoteAddr", remote}}))
    return refuse(call, VIP_INVALID_PARAMETER, "%s is NULL", null);
  if (local->DiscriminatorLen > kMaxDisc)
    return refuse_discriminator(call, "LocalAddr", local);
  if (remote->DiscriminatorLen > kMaxDisc)
    return refuse_discriminator(call, "RemoteAddr", remote);
  if (!address_node(remote, node)) {
    say(call, "the remote address names no node of this cluster (use "
              "VipNSGetHostByName)");
    return VIP_INVALID_PARAMETER;
  }
  poll();
  vi = vi_of(handle);
  return idle_connected_kind(call, *vi);
}

} // namespace

VIP_RETURN VipConnectRequest(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr,
                             VIP_NET_ADDRESS *RemoteAddr, VIP_ULONG Timeout,
                             VIP_VI_ATTRIBUTES *RemoteViAttribs) noexcept {
  return guarded("VipConnectRequest", [&] {
    Library &l = lib();
    Vi *vi;
    uint32_t node;
    if (VIP_RETURN r = connect_start("VipConnectRequest", ViHandle, LocalAddr,
                                     RemoteAddr, vi, node))
      return r;
    Handle h = reinterpret_cast<Handle>(ViHandle);
    uint32_t id = l.next_request;
    l.next_request = l.next_request % 0xFFFF + 1;
    vi->connecting = Connecting::Request;
    vi->outcome = Outcome::Pending;
    vi->request_id = id;
    vi->target_node = node;
    vi->state = VIP_STATE_CONNECT_PENDING;
    Bytes disc = discriminator(RemoteAddr);
    uint32_t w[8] = {VIAFW_CTL_CONNECT_REQUEST,
                     id | vi->number << 16 | attr_bits(vi->attrs) << 24,
                     uint32_t(vi->attrs.MaxTransferSize),
                     uint32_t(disc.size())};
    put_disc(w, disc);
    uint64_t deadline = deadline_after(Timeout);
    if (uint32_t r = send_control(node, w)) {
      vi->connecting = Connecting::None;
      vi->state = VIP_STATE_IDLE;
      return card_refused("VipConnectRequest", "to send the request (CONTROL)",
                          r);
    }
    while (l.ready && l.vis.at(h).outcome == Outcome::Pending &&
           wait_event(deadline)) {
    }
    vi = vi_of(ViHandle);
    if (!vi)
      return refuse("VipConnectRequest", VIP_ERROR_RESOURCE,
                    "the VI was gone when the wait ended");
    vi->connecting = Connecting::None;
    switch (vi->outcome) {
    case Outcome::Connected:
      vi->outcome = Outcome::Pending;
      if (RemoteViAttribs)
        *RemoteViAttribs = vi->remote;
      return VIP_SUCCESS;
    case Outcome::Rejected:
      vi->state = VIP_STATE_IDLE;
      return refuse("VipConnectRequest", VIP_REJECT,
                    "node %u rejected the request (VipConnectReject)", node);
    case Outcome::Pending: {
      // Timed out: the server drops the request; a late accept finds no
      // request waiting and is told to disconnect.
      vi->state = VIP_STATE_IDLE;
      uint32_t withdraw[8] = {VIAFW_CTL_CONNECT_REJECT, id | kWithdraw, 0,
                              vi->number};
      send_control(node, withdraw);
      return VIP_TIMEOUT;
    }
    default:
      vi->outcome = Outcome::Pending;
      vi->state = VIP_STATE_IDLE;
      return refuse("VipConnectRequest", VIP_ERROR_RESOURCE,
                    "node %u accepted, but the card refused to bind the VI "
                    "to its VI (CONNECT_VI)",
                    node);
    }
  });
}

VIP_RETURN VipDisconnect(VIP_VI_HANDLE ViHandle) noexcept {
  return guarded("VipDisconnect", [&] {
    Vi *vi = vi_of(ViHandle);
    if (!vi)
      return refuse_handle("VipDisconnect", Kind::Vi, ViHandle);
    if (vi->kind != VIP_VI_KIND_CONNECTED)
      return refuse("VipDisconnect", VIP_INVALID_STATE,
                    "an FM VI (VIP_VI_KIND_FM_IP) has no connection to end");
    poll();
    vi = vi_of(ViHandle);
    if (vi->connecting == Connecting::Peer) // stops a peer request
      give_up_peer(*vi);
    if (vi->state == VIP_STATE_CONNECTED || vi->state == VIP_STATE_ERROR) {
      // The card tells the peer, whose VI goes idle; what is still posted
      // here completes as flushed.
      uint32_t r = command(VIAFW_CMD_DISCONNECT_VI, {vi->number, 1});
      vi->state = VIP_STATE_IDLE;
      if (r != VIAFW_R_OK)
        return card_refused("VipDisconnect", "DISCONNECT_VI", r);
      return VIP_SUCCESS;
    }
    return VIP_SUCCESS;
  });
}

// ---- Peer-to-peer connections
// --------------------------------------------------------

VIP_RETURN VipConnectPeerRequest(VIP_VI_HANDLE ViHandle,
                                 VIP_NET_ADDRESS *LocalAddr,
                                 VIP_NET_ADDRESS *RemoteAddr,
                                 VIP_ULONG Timeout) noexcept {
  return guarded("VipConnectPeerRequest", [&] {
    Library &l = lib();
    Vi *vi;
    uint32_t node;
    if (VIP_RETURN r = connect_start("VipConnectPeerRequest", ViHandle,
                                     LocalAddr, RemoteAddr, vi, node))
      return r;
    vi->connecting = Connecting::Peer;
    vi->outcome = Outcome::Pending;
    vi->target_node = node;
    vi->local_disc = discriminator(LocalAddr);
    vi->remote_disc = discriminator(RemoteAddr);
    vi->deadline = deadline_after(Timeout);
    vi->state = VIP_STATE_CONNECT_PENDING;
    // Requests of an earlier attempt on this VI are not answered for it.
    auto &ab = l.abandoned;
    ab.erase(
        std::remove_if(ab.begin(), ab.end(),
                       [&](const Abandoned &a) { return a.vi == vi->number; }),
        ab.end());
    // The other side's request may be here already.
    auto &q = l.peer_requests;
    for (auto it = q.begin(); it != q.end(); ++it) {
      if (!answers(*vi, it->node, it->w))
        continue;
      Message m = *it;
      q.erase(it);
      meet(*vi, m.node, m.w, false);
      return VIP_SUCCESS;
    }
    send_peer_request(*vi, false, 0);
    return VIP_SUCCESS;
  });
}

VIP_RETURN VipConnectPeerDone(VIP_VI_HANDLE ViHandle,
                              VIP_VI_ATTRIBUTES *RemoteViAttribs) noexcept {
  return guarded("VipConnectPeerDone", [&] {
    Vi *vi = vi_of(ViHandle);
    if (!vi)
      return refuse_handle("VipConnectPeerDone", Kind::Vi, ViHandle);
    if (vi->connecting != Connecting::Peer)
      return refuse_no_peer_request("VipConnectPeerDone", *vi);
    poll();
    vi = vi_of(ViHandle);
    VIP_RETURN r = peer_result("VipConnectPeerDone", *vi, RemoteViAttribs);
    if (r == VIP_NOT_DONE && vi->deadline != kForever &&
        host::now_ps() >= vi->deadline) {
      give_up_peer(*vi);
      return VIP_TIMEOUT;
    }
    return r;
  });
}

VIP_RETURN VipConnectPeerWait(VIP_VI_HANDLE ViHandle,
                              VIP_VI_ATTRIBUTES *RemoteViAttribs) noexcept {
  return guarded("VipConnectPeerWait", [&] {
    Library &l = lib();
    Vi *vi = vi_of(ViHandle);
    if (!vi)
      return refuse_handle("VipConnectPeerWait", Kind::Vi, ViHandle);
    if (vi->connecting != Connecting::Peer)
      return refuse_no_peer_request("VipConnectPeerWait", *vi);
    Handle h = reinterpret_cast<Handle>(ViHandle);
    uint64_t deadline = vi->deadline;
    poll();
    auto waiting = [&] {
      Outcome o = l.vis.at(h).outcome;
      return o == Outcome::Pending || o == Outcome::Bound;
    };
    while (l.ready && waiting() && wait_event(deadline)) {
    }
    vi = vi_of(ViHandle);
    if (!vi)
      return refuse("VipConnectPeerWait", VIP_ERROR_RESOURCE,
                    "the VI was gone when the wait ended");
    VIP_RETURN r = peer_result("VipConnectPeerWait", *vi, RemoteViAttribs);
    if (r == VIP_NOT_DONE) {
      give_up_peer(*vi);
      return VIP_TIMEOUT;
    }
    return r;
  });
}
