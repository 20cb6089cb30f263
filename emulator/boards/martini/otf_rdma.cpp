// Martini's RDMA engine (docs/dimmnet.md, "PUSH and PULL"): blocks between
// card memories of two nodes (LLCM and the SO-DIMM banks that face the
// card), in data packets of up to NICEMU_MARTINI_RDMA_PACKET bytes through
// the same SWIF as the on-the-fly sends. A PUSH reads here and writes
// there, and the receiver answers its last packet with an ACK; a PULL asks
// the other node, whose hardware streams the data back. Each side checks
// its range against a receive region, as the OTF receiver does. The source
// is read at its memory's bandwidth, the destination written at its own.
#include "boards/martini/le_bytes.hpp"
#include "boards/martini/otf_engine.hpp"

#include <algorithm>
#include <cstring>

namespace nicemu::martini {

namespace {

constexpr size_t kCrcBytes = 4;
constexpr uint32_t kMaxTransfer = 16u << 20;

uint32_t space_of(uint32_t address) {
  return address >> NICEMU_MARTINI_SPACE_SHIFT;
}
uint32_t offset_in(uint32_t address) {
  return address & (NICEMU_MARTINI_SPACE_BYTES - 1);
}

} // namespace

// ---- Card memory by space --------------------------------------------------

// LLCM always; a bank only while it faces the card.
bool OtfEngine::space_reachable(uint32_t address, uint64_t len) const {
  uint64_t offset = offset_in(address);
  switch (space_of(address)) {
  case NICEMU_MARTINI_SPACE_LLCM:
    return offset + len <= llcm_size_;
  case NICEMU_MARTINI_SPACE_BANK0:
  case NICEMU_MARTINI_SPACE_BANK1: {
    const SodimmBank &b = banks_[space_of(address) - 1];
    return !b.faces_host() && offset + len <= b.bytes();
  }
  default:
    return false;
  }
}

bool OtfEngine::space_read(uint32_t address, void *out, uint32_t len) const {
  if (!space_reachable(address, len))
    return false;
  if (space_of(address) == NICEMU_MARTINI_SPACE_LLCM)
    return card_.card_read(llcm_base_ + offset_in(address), out, len);
  return banks_[space_of(address) - 1].read(offset_in(address), out, len);
}

bool OtfEngine::space_write(uint32_t address, const void *in, uint32_t len) {
  if (!space_reachable(address, len))
    return false;
  if (space_of(address) == NICEMU_MARTINI_SPACE_LLCM)
    return card_.card_write(llcm_base_ + offset_in(address), in, len);
  return banks_[space_of(address) - 1].write(offset_in(address), in, len);
}

// LLCM moves 8 bytes a DIMM cycle; a bank at its bandwidth.
Time OtfEngine::space_ps_per_byte(uint32_t address) const {
  if (space_of(address) == NICEMU_MARTINI_SPACE_LLCM)
    return dimm_.domain().time_of(1) / 8;
  return figures_.bank_ps_per_byte;
}

// ---- The host's page
// ---------------------------------------------------------

std::optional<uint64_t> OtfEngine::rdma_word(uint32_t offset) const {
  switch (offset) {
  case NICEMU_MARTINI_RDMA_LOCAL:
    return rdma_local_;
  case NICEMU_MARTINI_RDMA_REMOTE:
    return rdma_remote_;
  case NICEMU_MARTINI_RDMA_LENGTH:
    return rdma_length_;
  case NICEMU_MARTINI_RDMA_TARGET:
    return rdma_target_;
  case NICEMU_MARTINI_RDMA_OWNER:
    return rdma_owner_;
  case NICEMU_MARTINI_RDMA_STATUS:
    return rdma_status_;
  case NICEMU_MARTINI_RDMA_NOTIFY:
    return rdma_notify_;
  default:
    return std::nullopt;
  }
}

std::string OtfEngine::rdma_store(uint32_t process, uint32_t offset,
                                  uint64_t value, Time at) {
  uint32_t v = uint32_t(value);
  switch (offset) {
  case NICEMU_MARTINI_RDMA_LOCAL:
    rdma_local_ = v;
    return {};
  case NICEMU_MARTINI_RDMA_REMOTE:
    rdma_remote_ = v;
    return {};
  case NICEMU_MARTINI_RDMA_LENGTH:
    rdma_length_ = v;
    return {};
  case NICEMU_MARTINI_RDMA_TARGET:
    rdma_target_ = v;
    return {};
  case NICEMU_MARTINI_RDMA_OWNER:
    rdma_owner_ = v & 0xFFFF;
    return {};
  case NICEMU_MARTINI_RDMA_NOTIFY:
    if (v != 0 && !figures_.status_address)
      return "this card's packets carry no receive-status address (model "
             "option otf.status_address)";
    rdma_notify_ = v;
    return {};
  case NICEMU_MARTINI_RDMA_KICK:
    break;
  default:
    return "no such RDMA word";
  }
  uint32_t op = v, dest = rdma_target_ & 0xFFFF;
  Fabric *fabric = card_.fabric();
  uint32_t nodes = fabric ? fabric->topology().nodes : 1;
  if (rdma_status_ & NICEMU_MARTINI_RDMA_BUSY)
    return "the RDMA engine is busy";
  if ((op != NICEMU_MARTINI_PUSH && op != NICEMU_MARTINI_PULL) ||
      rdma_length_ == 0 || rdma_length_ > kMaxTransfer || dest >= nodes)
    return "a PUSH or PULL of 1 byte to 16 MiB, to a node there is";
  // The card stamps the kicking process's group; OWNER is not trusted.
  const Member *m = member(process);
  if (!m)
    return "the process belongs to no group (dimm_open)";
  rdma_owner_ = m->pgid | m->pid << 8;
  uint32_t local_region = rdma_target_ >> 24;
  uint32_t remote_region = (rdma_target_ >> 16) & 0xFF;
  uint32_t pgid = rdma_owner_ & 0xFF, pid = rdma_owner_ >> 8;
  rdma_status_ = NICEMU_MARTINI_RDMA_BUSY;
  if (!region_holds(local_region, pgid, pid, rdma_local_, rdma_length_) ||
      !space_reachable(rdma_local_, rdma_length_)) {
    rdma_finish(NICEMU_MARTINI_RDMA_ELOCAL);
    return {};
  }
  // The kick goes through the host interface's first stages, as a store.
  Time start = dimm_.after(std::max(at, card_.now()),
                           figures_.to_pins + figures_.host_write +
                               figures_.transaction_queue);
  if (op == NICEMU_MARTINI_PUSH) {
    stream(dest, NICEMU_MARTINI_CMD_PUSH, rdma_owner_, remote_region,
           rdma_remote_, rdma_local_, rdma_length_, start, rdma_notify_);
    return {};
  }
  uint8_t ask[16] = {};
  put32(ask, rdma_local_);
  ask[4] = uint8_t(local_region);
  put32(ask + 8, rdma_length_);
  queue_packet(rdma_packet(dest, NICEMU_MARTINI_CMD_PULL, 0, rdma_owner_,
                           remote_region, rdma_remote_, ask, sizeof ask),
               start);
  return {};
}

void OtfEngine::rdma_finish(uint32_t error) {
  rdma_status_ = NICEMU_MARTINI_RDMA_DONE;
  if (error)
    rdma_status_ |= NICEMU_MARTINI_RDMA_ERROR | error << 8;
}

// ---- Packets
// -----------------------------------------------------------------

Packet OtfEngine::rdma_packet(uint32_t dest, uint8_t command, uint8_t flags,
                              uint32_t owner, uint32_t region, uint32_t address,
                              const uint8_t *data, uint32_t len,
                              uint32_t notify) {
  if (notify & NICEMU_MARTINI_NOTIFY_ON)
    flags |= NICEMU_MARTINI_F_STATUS;
  std::vector<uint8_t> b(flags & NICEMU_MARTINI_F_STATUS
                             ? NICEMU_MARTINI_STATUS_HEADER_BYTES
                             : NICEMU_MARTINI_HEADER_BYTES,
                         0);
  if (flags & NICEMU_MARTINI_F_STATUS)
    put32(b.data() + NICEMU_MARTINI_HDR_STATUS,
          notify & ~NICEMU_MARTINI_NOTIFY_ON);
  b[NICEMU_MARTINI_HDR_FLAGS] = flags;
  b[NICEMU_MARTINI_HDR_COMMAND] = command;
  b[NICEMU_MARTINI_HDR_PGID] = uint8_t(owner);
  b[NICEMU_MARTINI_HDR_PID] = uint8_t(owner >> 8);
  b[NICEMU_MARTINI_HDR_REGION] = uint8_t(region);
  b[NICEMU_MARTINI_HDR_SOURCE] = uint8_t(card_.node_id());
  b[NICEMU_MARTINI_HDR_DEST] = uint8_t(dest);
  b[NICEMU_MARTINI_HDR_DEST + 1] = uint8_t(dest >> 8);
  put32(b.data() + NICEMU_MARTINI_HDR_ADDRESS, address);
  b[NICEMU_MARTINI_HDR_LENGTH] = uint8_t(len);
  b[NICEMU_MARTINI_HDR_LENGTH + 1] = uint8_t(len >> 8);
  b.insert(b.end(), data, data + len);
  uint32_t crc = packet_crc(b.data(), b.size());
  for (size_t i = 0; i < kCrcBytes; ++i)
    b.push_back(uint8_t(crc >> (8 * i)));
  Packet p;
  p.source = card_.node_id();
  p.id = (uint64_t(card_.node_id()) << 40) | sequence_++;
  p.payload = std::move(b);
  return p;
}

void OtfEngine::queue_packet(Packet p, Time ready) {
  Outgoing out;
  out.packet = std::move(p);
  out.ready = ready;
  to_swif(std::move(out));
}

// The source is read (all of it now: the engine owns it until the end)
// and sent a packet at a time, each once its bytes are read at the
// source's bandwidth; the read side takes one transfer after another.
void OtfEngine::stream(uint32_t dest, uint8_t command, uint32_t owner,
                       uint32_t region, uint32_t to, uint32_t from,
                       uint32_t len, Time start, uint32_t notify) {
  std::vector<uint8_t> data(len);
  space_read(from, data.data(), len);
  Time read = std::max(start, rdma_read_free_);
  Time per_byte = space_ps_per_byte(from);
  for (uint32_t at = 0; at < len; at += NICEMU_MARTINI_RDMA_PACKET) {
    uint32_t n = std::min<uint32_t>(NICEMU_MARTINI_RDMA_PACKET, len - at);
    read += Time(n) * per_byte;
    uint8_t flags = at + n == len ? NICEMU_MARTINI_F_LAST : 0;
    queue_packet(rdma_packet(dest, command, flags, owner, region, to + at,
                             data.data() + at, n,
                             flags & NICEMU_MARTINI_F_LAST ? notify : 0),
                 read);
  }
  rdma_read_free_ = read;
}

namespace {

// What an RDMA packet's header says.
struct RdmaHeader {
  uint8_t command = 0;
  bool last = false;
  uint32_t source = 0, owner = 0, region = 0, address = 0, hdr = 0, len = 0;
  std::optional<uint32_t> notify; // the receive-status address, if any
  const uint8_t *data = nullptr;
};

RdmaHeader rdma_header(const Packet &p, uint32_t header_bytes) {
  const uint8_t *h = p.payload.data();
  RdmaHeader r;
  r.command = h[NICEMU_MARTINI_HDR_COMMAND];
  r.last = h[NICEMU_MARTINI_HDR_FLAGS] & NICEMU_MARTINI_F_LAST;
  r.source = h[NICEMU_MARTINI_HDR_SOURCE];
  r.owner = h[NICEMU_MARTINI_HDR_PGID] | h[NICEMU_MARTINI_HDR_PID] << 8;
  r.region = h[NICEMU_MARTINI_HDR_REGION];
  r.address = le32(h + NICEMU_MARTINI_HDR_ADDRESS);
  r.hdr = header_bytes;
  r.len = uint32_t(p.payload.size() - header_bytes - kCrcBytes);
  r.data = h + header_bytes;
  if (header_bytes == NICEMU_MARTINI_STATUS_HEADER_BYTES)
    r.notify = le32(h + NICEMU_MARTINI_HDR_STATUS);
  return r;
}

} // namespace

// PUSH and PULL_DATA are written at the destination's bandwidth once
// through the receive-side SWIF, if their region holds them; the last
// PUSH packet is answered with an ACK, the last PULL_DATA packet ends the
// PULL. An ACK ends a PUSH (or refuses a PULL); a PULL is served at once.
void OtfEngine::rdma_arrived(Packet p, Time through_swif) {
  const RdmaHeader r = rdma_header(p, header_bytes(p.payload.data()));
  switch (r.command) {
  case NICEMU_MARTINI_CMD_PUSH:
  case NICEMU_MARTINI_CMD_PULL_DATA: {
    Time written = receive_write(through_swif, r.len, r.address, false);
    llcm_writes_.insert(written);
    schedule_event(written, kRdmaWrite, park(std::move(p)));
    return;
  }
  case NICEMU_MARTINI_CMD_ACK:
    schedule_event(through_swif, kRdmaAck,
                   r.len >= 4 ? le32(r.data) : NICEMU_MARTINI_RDMA_EREMOTE);
    return;
  case NICEMU_MARTINI_CMD_PULL:
    schedule_event(through_swif, kPullServed, park(std::move(p)));
    return;
  default:
    ++dropped_; // a hardware code nobody serves
    return;
  }
}

void OtfEngine::rdma_write(const Packet &p, Time written) {
  const RdmaHeader r = rdma_header(p, header_bytes(p.payload.data()));
  llcm_writes_.erase(llcm_writes_.find(written));
  bool ok =
      region_holds(r.region, r.owner & 0xFF, r.owner >> 8, r.address, r.len) &&
      space_write(r.address, r.data, r.len);
  if (ok)
    ++received_;
  else
    ++dropped_;
  bool &failed = push_failed_[r.source];
  failed = failed || !ok;
  uint32_t &total = push_bytes_[r.source];
  total += r.len;
  if (!r.last)
    return;
  uint32_t error = failed ? NICEMU_MARTINI_RDMA_EREMOTE : 0;
  push_failed_.erase(r.source);
  uint32_t bytes_in = total;
  push_bytes_.erase(r.source);
  // The receive-status word: written once the whole transfer is in.
  if (r.notify && !error) {
    uint32_t pgid = r.owner & 0xFF, pid = r.owner >> 8;
    uint32_t word = bytes_in | 0x80000000u;
    if (*r.notify % 4 == 0 && llcm_open_to(pgid, pid, *r.notify, 4))
      card_.card_write(llcm_base_ + *r.notify, &word, 4);
    else
      ++dropped_;
  }
  if (r.command == NICEMU_MARTINI_CMD_PULL_DATA) {
    rdma_finish(error ? NICEMU_MARTINI_RDMA_ELOCAL : 0);
    return;
  }
  uint8_t code[8] = {};
  put32(code, error);
  queue_packet(rdma_packet(r.source, NICEMU_MARTINI_CMD_ACK, 0, r.owner, 0, 0,
                           code, sizeof code),
               written);
}

void OtfEngine::serve_pull(const Packet &p) {
  const RdmaHeader r = rdma_header(p, header_bytes(p.payload.data()));
  uint32_t to = r.len >= 16 ? le32(r.data) : 0;
  uint32_t to_region = r.len >= 16 ? r.data[4] : 0;
  uint32_t bytes = r.len >= 16 ? le32(r.data + 8) : 0;
  if (bytes == 0 || bytes > kMaxTransfer ||
      !region_holds(r.region, r.owner & 0xFF, r.owner >> 8, r.address, bytes) ||
      !space_reachable(r.address, bytes)) {
    ++dropped_;
    uint8_t code[8] = {};
    put32(code, NICEMU_MARTINI_RDMA_EREMOTE);
    queue_packet(rdma_packet(r.source, NICEMU_MARTINI_CMD_ACK, 0, r.owner, 0, 0,
                             code, sizeof code),
                 card_.now());
    return;
  }
  stream(r.source, NICEMU_MARTINI_CMD_PULL_DATA, r.owner, to_region, to,
         r.address, bytes, card_.now());
}

} // namespace nicemu::martini
