#include "boards/martini/otf_engine.hpp"

#include "boards/martini/le_bytes.hpp"
#include "nicemu/martini.h"
#include "sim/state_archive.hpp"

#include <algorithm>
#include <cstring>

namespace nicemu::martini {

namespace {

constexpr size_t kCrcBytes = 4;
// Packets for the core wait in a queue of this many; beyond, the link
// holds them (backpressure), as it would an LLCM write buffer that is full.
constexpr size_t kCommandQueue = 16;

} // namespace

// The catalog's (devices/registers.hpp): traces, the debugger and
// `nicemu regs` name the OTF registers as they do the shared devices'.
const RegisterLayout &OtfEngine::layout() {
  return RegisterLayout::of("OTF");
}

OtfEngine::OtfEngine(DeviceHost &card, const Figures &figures,
                     uint32_t llcm_base, uint32_t llcm_size)
    : Device(layout()), card_(card), figures_(figures),
      dimm_(card, figures.dimm_hz), swif_(card, figures.swif_hz),
      llcm_base_(llcm_base), llcm_size_(llcm_size), credits_(figures.credits),
      windows_(figures.windows), banks_{SodimmBank(figures.bank_bytes),
                                        SodimmBank(figures.bank_bytes)} {
  auto counter = [](uint32_t &c) { return [&c] { return uint64_t(c); }; };
  registers()
      .on_read(NICEMU_OTF_STATUS, [this] { return uint64_t(status_); })
      .on_read(NICEMU_OTF_MISS_PAGE, [this] { return uint64_t(miss_page_); })
      .on_write(NICEMU_OTF_RESOLVE, [this](uint64_t v) { resolve(v); })
      .on_read(NICEMU_OTF_SEED, [this](uint32_t i) { return staged_seed_[i]; })
      .on_write(NICEMU_OTF_SEED,
                [this](uint32_t i, uint64_t v) { staged_seed_[i] = v; })
      .on_read(NICEMU_OTF_CMD_HEADER,
               [this](uint32_t i) -> uint64_t {
                 if (commands_.empty())
                   return 0;
                 uint64_t word = 0;
                 const std::vector<uint8_t> &p = commands_.front().payload;
                 size_t at = size_t(i) * 8;
                 if (at < p.size())
                   std::memcpy(&word, p.data() + at,
                               std::min<size_t>(8, p.size() - at));
                 return word;
               })
      .on_read(NICEMU_OTF_CMD_DATA,
               [this]() -> uint64_t {
                 if (commands_.empty())
                   return 0;
                 const std::vector<uint8_t> &p = commands_.front().payload;
                 uint32_t at = header_bytes(p.data());
                 uint32_t len = le16(p.data() + NICEMU_MARTINI_HDR_LENGTH);
                 uint64_t word = 0;
                 std::memcpy(&word, p.data() + at, std::min<uint32_t>(8, len));
                 return word;
               })
      .on_write(NICEMU_OTF_CMD_DONE,
                [this](uint64_t) {
                  if (commands_.empty())
                    return;
                  commands_.pop_front();
                  set_status(NICEMU_OTF_CMD, !commands_.empty());
                  if (command_refused_ && card_.fabric()) {
                    command_refused_ = false;
                    card_.fabric()->receiver_ready(card_.node_id(),
                                                   card_.now());
                  }
                })
      .on_read(NICEMU_OTF_REGION_SELECT,
               [this] { return uint64_t(region_select_); })
      .on_write(NICEMU_OTF_REGION_SELECT,
                [this](uint64_t v) {
                  region_select_ = uint32_t(v) % NICEMU_OTF_REGIONS;
                })
      .on_read(NICEMU_OTF_REGION_BASE,
               [this] { return uint64_t(regions_[region_select_].base); })
      .on_write(
          NICEMU_OTF_REGION_BASE,
          [this](uint64_t v) { regions_[region_select_].base = uint32_t(v); })
      .on_read(NICEMU_OTF_REGION_SIZE,
               [this] { return uint64_t(regions_[region_select_].size); })
      .on_write(
          NICEMU_OTF_REGION_SIZE,
          [this](uint64_t v) { regions_[region_select_].size = uint32_t(v); })
      .on_read(NICEMU_OTF_REGION_OWNER,
               [this] { return uint64_t(regions_[region_select_].owner); })
      .on_write(NICEMU_OTF_REGION_OWNER,
                [this](uint64_t v) {
                  regions_[region_select_].owner = uint32_t(v) & 0xFFFF;
                })
      .on_write(NICEMU_OTF_HTLB_FLUSH,
                [this](uint64_t page) {
                  if (HtlbEntry *e = find(uint32_t(page)))
                    e->valid = false;
                })
      .on_read(NICEMU_OTF_SENT, counter(sent_))
      .on_read(NICEMU_OTF_RECEIVED, counter(received_))
      .on_read(NICEMU_OTF_DROPPED, counter(dropped_))
      .on_read(NICEMU_OTF_REJECTED, counter(rejected_))
      .on_read(NICEMU_OTF_MISSES, counter(misses_))
      .on_read(NICEMU_OTF_COMMANDS, counter(commands_taken_))
      .on_read(NICEMU_OTF_CREDITS, counter(credits_));
}

// ---- Send path -------------------------------------------------------------

void OtfEngine::join(uint32_t process, uint32_t pgid, uint32_t pid) {
  members_[process] = {pgid & 0xFF, pid & 0xFF};
}

const OtfEngine::Member *OtfEngine::member(uint32_t process) const {
  auto it = members_.find(process);
  return it == members_.end() ? nullptr : &it->second;
}

bool OtfEngine::llcm_allowed(uint32_t process, uint64_t offset,
                             uint64_t len) const {
  const Member *m = member(process);
  if (!m)
    return false;
  for (const Region &r : regions_)
    if (r.size > 0 && (r.owner & 0xFF) == m->pgid && offset >= r.base &&
        offset + len <= uint64_t(r.base) + r.size)
      return true; // an LLCM region: its base is in space 0
  return false;
}

bool OtfEngine::bank_allowed(uint32_t process, uint32_t bank) {
  const Member *m = member(process);
  if (!m || bank > 1)
    return false;
  if (!bank_group_[bank])
    bank_group_[bank] = m->pgid;
  return *bank_group_[bank] == m->pgid;
}

void OtfEngine::aotf_store(uint32_t process, uint32_t page, uint32_t offset,
                           unsigned size, uint64_t value, Time at,
                           HostBusCompletion done) {
  Transaction txn;
  txn.process = process;
  txn.page = page;
  txn.offset = offset;
  txn.size = size;
  txn.value = value;
  take_in(txn, at, std::move(done), figures_.store);
}

void OtfEngine::botf_write(uint32_t process, uint32_t window, uint32_t offset,
                           std::span<const uint8_t> bytes) {
  Window &w = windows_.at(window);
  if (w.busy || offset + bytes.size() > w.bytes.size()) {
    w.error = true; // refused: the packet being sent stays as it was
    return;
  }
  w.error = false;
  w.owner = process;
  std::memcpy(w.bytes.data() + offset, bytes.data(), bytes.size());
}

void OtfEngine::botf_kick(uint32_t process, uint32_t window, Time at,
                          HostBusCompletion done) {
  Window &w = windows_.at(window);
  uint32_t length = le16(w.bytes.data() + NICEMU_MARTINI_HDR_LENGTH);
  // A kick after a refused write would send what the window held before;
  // only the process that wrote the window sends it, as a member.
  if (w.busy || w.error || w.owner != process || !member(process) ||
      length == 0 || length > figures_.botf_max_bytes ||
      header_bytes(w.bytes.data()) + length > w.bytes.size()) {
    w.error = true;
    done({true, 0, at + figures_.store, {}});
    return;
  }
  w.busy = true;
  Transaction txn;
  txn.botf = true;
  txn.window = window;
  txn.process = process;
  take_in(txn, at, std::move(done), figures_.store);
}

uint32_t OtfEngine::botf_status(uint32_t window) const {
  const Window &w = windows_.at(window);
  return (w.busy ? NICEMU_MARTINI_BOTF_BUSY : 0u) |
         (w.error ? NICEMU_MARTINI_BOTF_ERROR : 0u);
}

std::optional<uint64_t> OtfEngine::status_word(uint32_t offset) const {
  switch (offset) {
  case NICEMU_MARTINI_STATUS_CREDITS:
    return credits_;
  case NICEMU_MARTINI_STATUS_REJECTED:
    return rejected_;
  case NICEMU_MARTINI_STATUS_SENT:
    return sent_;
  case NICEMU_MARTINI_STATUS_DROPPED:
    return dropped_;
  case NICEMU_MARTINI_STATUS_FEATURES:
    return figures_.status_address ? NICEMU_MARTINI_FEATURE_STATUS_ADDRESS : 0u;
  default:
    return std::nullopt;
  }
}

// A transaction takes a credit as it reaches the pins; with none left the
// store waits on the bus (the host with it) until a packet's tail leaves.
void OtfEngine::take_in(Transaction txn, Time at, HostBusCompletion done,
                        Time cost) {
  if (credits_ == 0) {
    held_.push_back({txn, at, std::move(done)});
    return;
  }
  --credits_;
  Time now = std::max(at, card_.now());
  txn.store = at;
  txn.pins = dimm_.after(now, figures_.to_pins);
  done({true, 0, std::max(at + cost, now), {}});
  queue_.push_back(txn);
  schedule_lookup();
}

void OtfEngine::give_back_credit() {
  ++credits_;
  if (held_.empty())
    return;
  HeldStore h = std::move(held_.front());
  held_.pop_front();
  Time cost = figures_.store;
  // The held store lands now: the host's access ends no earlier than it
  // would have without the wait.
  take_in(h.txn, h.at, std::move(h.done), cost);
}

// The head of the queue reaches the HTLB stage after the host-write and
// queue stages, and no sooner than one DIMM cycle after the one before it.
void OtfEngine::schedule_lookup() {
  if (lookup_scheduled_ || stalled_ || queue_.empty())
    return;
  const Transaction &head = queue_.front();
  Time at = std::max(
      dimm_.after(head.pins, figures_.host_write + figures_.transaction_queue),
      lookup_free_);
  at = std::max(at, card_.now());
  lookup_scheduled_ = true;
  schedule_event(at, kLookup);
}

OtfEngine::HtlbEntry *OtfEngine::find(uint32_t page) {
  auto &set = htlb_[page & 0xFF];
  for (HtlbEntry &e : set)
    if (e.valid && e.tag == uint8_t(page >> 8))
      return &e;
  return nullptr;
}

void OtfEngine::lookup() {
  if (queue_.empty() || stalled_)
    return;
  lookup_free_ = dimm_.after(card_.now(), 1);
  Transaction &head = queue_.front();
  if (!stalled_ && head.lookup == 0)
    head.lookup = card_.now(); // the first look (a miss looks again)
  Transaction txn = head;
  if (txn.botf) {
    queue_.pop_front();
    finish_lookup(txn, nullptr);
    return;
  }
  if (HtlbEntry *e = find(txn.page)) {
    // A seed of another group is not this process's to use.
    const Member *m = member(txn.process);
    if (!m || e->seed[NICEMU_MARTINI_HDR_PGID] != m->pgid) {
      reject_head();
      return;
    }
    queue_.pop_front();
    finish_lookup(txn, &e->seed);
    return;
  }
  // A miss: the queue stalls behind this store until the core decides.
  ++misses_;
  stalled_ = true;
  miss_page_ = txn.page;
  set_status(NICEMU_OTF_MISS, true);
}

void OtfEngine::resolve(uint64_t how) {
  if (!stalled_ || (how != NICEMU_OTF_REFILL && how != NICEMU_OTF_REJECT))
    return;
  stalled_ = false;
  set_status(NICEMU_OTF_MISS, false);
  if (how == NICEMU_OTF_REJECT) {
    reject_head();
    return;
  }
  uint32_t set = miss_page_ & 0xFF;
  HtlbEntry *e = nullptr;
  for (HtlbEntry &way : htlb_[set])
    if (!way.valid) {
      e = &way;
      break;
    }
  if (!e) { // round robin over the set's ways
    e = &htlb_[set][victim_[set]];
    victim_[set] = uint8_t((victim_[set] + 1) % 4);
  }
  e->valid = true;
  e->tag = uint8_t(miss_page_ >> 8);
  std::memcpy(e->seed.data(), staged_seed_.data(), e->seed.size());
  // The lookup runs again (and hits) on the next DIMM edge.
  lookup_free_ = 0;
  schedule_lookup();
}

void OtfEngine::reject_head() {
  ++rejected_;
  queue_.pop_front();
  give_back_credit();
  schedule_lookup();
}

uint32_t OtfEngine::header_bytes(const uint8_t *header) const {
  bool status = figures_.status_address &&
                (header[NICEMU_MARTINI_HDR_FLAGS] & NICEMU_MARTINI_F_STATUS);
  return status ? NICEMU_MARTINI_STATUS_HEADER_BYTES
                : NICEMU_MARTINI_HEADER_BYTES;
}

// After the HTLB stage: the size check and the send-buffer handshake, then
// the packet goes to the SWIF.
void OtfEngine::finish_lookup(const Transaction &txn,
                              const std::array<uint8_t, 32> *seed) {
  Time ready =
      dimm_.after(card_.now(), figures_.htlb_lookup + figures_.size_check +
                                   figures_.handshake);
  std::vector<uint8_t> bytes;
  if (txn.botf) {
    const Window &w = windows_[txn.window];
    uint32_t length = le16(w.bytes.data() + NICEMU_MARTINI_HDR_LENGTH);
    bytes.assign(w.bytes.begin(),
                 w.bytes.begin() + header_bytes(w.bytes.data()) + length);
    bytes[NICEMU_MARTINI_HDR_FLAGS] &= uint8_t(~NICEMU_MARTINI_F_AOTF);
    // The card stamps the sender's group: a header cannot claim another.
    if (const Member *m = member(txn.process)) {
      bytes[NICEMU_MARTINI_HDR_PGID] = uint8_t(m->pgid);
      bytes[NICEMU_MARTINI_HDR_PID] = uint8_t(m->pid);
    }
  } else {
    std::array<uint8_t, 32> h = *seed;
    h[NICEMU_MARTINI_HDR_FLAGS] |= NICEMU_MARTINI_F_AOTF;
    uint32_t address = le32(h.data() + NICEMU_MARTINI_HDR_ADDRESS);
    put32(h.data() + NICEMU_MARTINI_HDR_ADDRESS,
          (address & ~0xFFFu) | txn.offset);
    put16(h.data() + NICEMU_MARTINI_HDR_LENGTH, uint16_t(txn.size));
    bytes.assign(h.begin(), h.begin() + header_bytes(h.data()));
    for (uint32_t i = 0; i < txn.size; ++i)
      bytes.push_back(uint8_t(txn.value >> (8 * i)));
  }
  if (!figures_.status_address)
    bytes[NICEMU_MARTINI_HDR_FLAGS] &= uint8_t(~NICEMU_MARTINI_F_STATUS);
  bytes[NICEMU_MARTINI_HDR_SOURCE] = uint8_t(card_.node_id());
  uint32_t crc = packet_crc(bytes.data(), bytes.size());
  for (size_t i = 0; i < kCrcBytes; ++i)
    bytes.push_back(uint8_t(crc >> (8 * i)));

  Outgoing out;
  out.packet.source = card_.node_id();
  out.packet.id = (uint64_t(card_.node_id()) << 40) | sequence_++;
  out.packet.payload = std::move(bytes);
  out.ready = ready;
  out.credit = true;
  if (txn.botf)
    out.window = txn.window;
  else
    out.aotf = true;
  if (out.aotf)
    out.times = {out.packet.id, txn.store, txn.pins, txn.lookup, ready, 0};
  to_swif(std::move(out));
  schedule_lookup();
}

void OtfEngine::to_swif(Outgoing out) {
  swif_queue_.push_back(std::move(out));
  if (!swif_busy_)
    send_next();
}

// The SWIF sends one packet at a time: the next one starts its stages once
// the tail of the one before has left.
void OtfEngine::send_next() {
  if (swif_queue_.empty())
    return;
  Outgoing out = std::move(swif_queue_.front());
  swif_queue_.pop_front();
  swif_busy_ = true;
  Time head = swif_.after(std::max(out.ready, card_.now()), figures_.swif_send);
  if (out.aotf) {
    last_sent_ = out.times;
    last_sent_.head = head;
  }
  uint32_t dest = le16(out.packet.payload.data() + NICEMU_MARTINI_HDR_DEST);
  // The packet moves on; sent() needs the rest.
  Packet packet = std::move(out.packet);
  sending_ = std::move(out);
  Fabric *fabric = card_.fabric();
  uint32_t nodes = fabric ? fabric->topology().nodes : 1;
  if (dest == NICEMU_MARTINI_DEST_ALL && fabric && nodes > 1)
    return broadcast(std::move(packet), head);
  if (dest >= nodes) { // no such node: the packet goes nowhere
    ++rejected_;
    schedule_event(head, kNoSuchNode);
    return;
  }
  if (dest == card_.node_id() || !fabric) {
    // To its own node: it turns around in the SWIF, with no cable.
    inbound_[packet.id] = head + receive_floor();
    schedule_event(head, kLoopback, park(std::move(packet)));
    return;
  }
  packet.route = fabric->route(card_.node_id(), dest);
  if (auto *to = dynamic_cast<OtfEngine *>(fabric->receiver(dest))) {
    const FabricParams &net = fabric->params();
    size_t bytes = std::max<size_t>(packet.payload.size(), net.min_frame_bytes);
    to->inbound_[packet.id] = head + fabric->min_path_latency() +
                              Time(bytes) * net.link_ps_per_byte +
                              to->receive_floor();
  }
  fabric->send(
      std::move(packet), head, [this](Time) { sent(true); }, event_tag(kSent));
}

// To every other node, copied by the switches: each receiver learns when
// its copy may arrive at the earliest.
void OtfEngine::broadcast(Packet p, Time head) {
  Fabric *fabric = card_.fabric();
  const FabricParams &net = fabric->params();
  size_t bytes = std::max<size_t>(p.payload.size(), net.min_frame_bytes);
  Time earliest =
      head + fabric->min_path_latency() + Time(bytes) * net.link_ps_per_byte;
  for (uint32_t n = 0; n < fabric->topology().nodes; ++n)
    if (auto *to = dynamic_cast<OtfEngine *>(fabric->receiver(n));
        to && n != card_.node_id())
      to->inbound_[p.id] = earliest + to->receive_floor();
  p.broadcast = true;
  fabric->send(
      std::move(p), head, [this](Time) { sent(true); }, event_tag(kSent));
}

void OtfEngine::sent(bool went_out) {
  if (!sending_)
    return; // only a damaged checkpoint's second end of one packet
  Outgoing out = std::move(*sending_);
  sending_.reset();
  sent_ += went_out ? 1 : 0;
  swif_busy_ = false;
  if (out.window)
    windows_[*out.window].busy = false;
  if (out.credit)
    give_back_credit();
  send_next();
}

void OtfEngine::set_status(uint32_t bits, bool on) {
  uint32_t was = status_;
  status_ = on ? status_ | bits : status_ & ~bits;
  if (status_ & ~was)
    card_.raise_irq(NICEMU_IRQ_OTF);
}

// ---- Receive side ----------------------------------------------------------

bool OtfEngine::accept_head(const Packet &p, Time) {
  bool for_core =
      p.payload.size() > NICEMU_MARTINI_HDR_COMMAND &&
      p.payload[NICEMU_MARTINI_HDR_COMMAND] >= NICEMU_MARTINI_HARDWARE_CMDS;
  if (for_core && commands_.size() + commands_coming_ >= kCommandQueue) {
    command_refused_ = true;
    return false;
  }
  return true;
}

// The receive-side SWIF stages run once the tail (and its CRC) is in; the
// LLCM write follows on the next DIMM edges. The checks are made when the
// write would happen, against the regions as they are then.
void OtfEngine::packet_arrived(Packet p, Time now) {
  inbound_.erase(p.id);
  const std::vector<uint8_t> &b = p.payload;
  if (!well_formed(b) || le32(b.data() + b.size() - kCrcBytes) !=
                             packet_crc(b.data(), b.size() - kCrcBytes)) {
    ++dropped_;
    return;
  }
  Time through_swif = swif_.after(now, figures_.swif_receive);
  uint8_t command = b[NICEMU_MARTINI_HDR_COMMAND];
  if (command != NICEMU_MARTINI_CMD_WRITE &&
      command < NICEMU_MARTINI_HARDWARE_CMDS) {
    rdma_arrived(std::move(p), through_swif);
    return;
  }
  if (command != NICEMU_MARTINI_CMD_WRITE) {
    ++commands_coming_; // through the SWIF stages, not queued yet
    schedule_event(through_swif, kCommand, park(std::move(p)));
    return;
  }
  bool aotf = b[NICEMU_MARTINI_HDR_FLAGS] & NICEMU_MARTINI_F_AOTF;
  uint32_t length = le16(b.data() + NICEMU_MARTINI_HDR_LENGTH);
  Time written = receive_write(through_swif, length,
                               into_bank(b.data())
                                   ? regions_[b[NICEMU_MARTINI_HDR_REGION]].base
                                   : NICEMU_MARTINI_SPACE_LLCM,
                               true);
  if (aotf)
    last_received_ = {p.id, now, through_swif, written};
  llcm_writes_.insert(written);
  schedule_event(written, kLlcmWrite, park(std::move(p)));
}

bool OtfEngine::well_formed(const std::vector<uint8_t> &b) const {
  return b.size() >= NICEMU_MARTINI_HEADER_BYTES + kCrcBytes &&
         header_bytes(b.data()) + le16(b.data() + NICEMU_MARTINI_HDR_LENGTH) +
                 kCrcBytes ==
             b.size();
}

void OtfEngine::command_arrived(Packet p) {
  --commands_coming_;
  ++commands_taken_;
  commands_.push_back(std::move(p));
  set_status(NICEMU_OTF_CMD, true);
}

// An OTF packet's LLCM write is one pipeline stage (the spec's "LLCM write
// 1"); RDMA data and a BOTF packet for a bank go at the memory's speed.
// Writes keep their order: a notice never lands before the data ahead of it.
Time OtfEngine::receive_write(Time ready, uint32_t len, uint32_t address,
                              bool otf) {
  Time start = std::max(ready, write_free_);
  Time written =
      otf && address >> NICEMU_MARTINI_SPACE_SHIFT == NICEMU_MARTINI_SPACE_LLCM
          ? dimm_.after(start, figures_.llcm_write)
          : start + Time(len) * space_ps_per_byte(address);
  write_free_ = written;
  return written;
}

bool OtfEngine::into_bank(const uint8_t *header) const {
  uint32_t region = header[NICEMU_MARTINI_HDR_REGION];
  uint8_t flags = header[NICEMU_MARTINI_HDR_FLAGS];
  return !(flags & (NICEMU_MARTINI_F_AOTF | NICEMU_MARTINI_F_SKIP)) &&
         region < NICEMU_OTF_REGIONS &&
         regions_[region].base >> NICEMU_MARTINI_SPACE_SHIFT !=
             NICEMU_MARTINI_SPACE_LLCM;
}

bool OtfEngine::llcm_open_to(uint32_t pgid, uint32_t pid, uint64_t offset,
                             uint64_t len) const {
  for (uint32_t r = 0; r < NICEMU_OTF_REGIONS; ++r)
    if (regions_[r].base >> NICEMU_MARTINI_SPACE_SHIFT ==
            NICEMU_MARTINI_SPACE_LLCM &&
        region_holds(r, pgid, pid, offset, len))
      return offset + len <= llcm_size_;
  return false;
}

// The checks of the OTF receiver: the region named must be open and owned
// by the packet's process group (and process, unless any may write), and
// the data must lie inside it. The address is an offset in the region, or
// with the skip flag an LLCM address already. AOTF packets write LLCM
// only; a BOTF packet may write a region in a bank that faces the card.
// A receive-status address is in the region, or for a bank's region an
// LLCM address open to the packet's process (the host polls it there).
void OtfEngine::write_arrival(const Packet &p) {
  const uint8_t *h = p.payload.data();
  uint32_t region = h[NICEMU_MARTINI_HDR_REGION];
  uint32_t pgid = h[NICEMU_MARTINI_HDR_PGID], pid = h[NICEMU_MARTINI_HDR_PID];
  uint64_t base = region < NICEMU_OTF_REGIONS ? regions_[region].base : 0;
  uint64_t address = le32(h + NICEMU_MARTINI_HDR_ADDRESS);
  uint32_t length = le16(h + NICEMU_MARTINI_HDR_LENGTH);
  bool skip = h[NICEMU_MARTINI_HDR_FLAGS] & NICEMU_MARTINI_F_SKIP;
  bool bank = into_bank(h);
  uint64_t offset = skip ? address : base + address;
  uint32_t hdr = header_bytes(h);
  bool ok = region_holds(region, pgid, pid, offset, length) &&
            (bank ? space_reachable(uint32_t(offset), length)
                  : offset + length <= llcm_size_);
  uint64_t status_at = 0;
  if (ok && hdr == NICEMU_MARTINI_STATUS_HEADER_BYTES) {
    status_at = le32(h + NICEMU_MARTINI_HDR_STATUS);
    if (bank) {
      ok = status_at % 4 == 0 && llcm_open_to(pgid, pid, status_at, 4);
    } else {
      status_at += base;
      ok = status_at % 4 == 0 &&
           region_holds(region, pgid, pid, status_at, 4) &&
           status_at + 4 <= llcm_size_;
    }
  }
  if (!ok) {
    ++dropped_;
    return;
  }
  if (bank)
    space_write(uint32_t(offset), h + hdr, length);
  else
    card_.card_write(llcm_base_ + uint32_t(offset), h + hdr, length);
  if (hdr == NICEMU_MARTINI_STATUS_HEADER_BYTES) {
    uint32_t done = length | 0x80000000u; // bit 31: complete
    card_.card_write(llcm_base_ + uint32_t(status_at), &done, 4);
  }
  ++received_;
}

bool OtfEngine::region_holds(uint32_t region, uint32_t pgid, uint32_t pid,
                             uint64_t address, uint64_t len) const {
  if (region >= NICEMU_OTF_REGIONS)
    return false;
  const Region &r = regions_[region];
  uint32_t owner_pid = (r.owner >> 8) & 0xFF;
  return r.size > 0 && (r.owner & 0xFF) == pgid &&
         (owner_pid == NICEMU_OTF_ANY_PID || owner_pid == pid) &&
         address >= r.base && address + len <= uint64_t(r.base) + r.size;
}

// ---- When LLCM may change ------------------------------------------------

const OtfEngine::HtlbEntry *OtfEngine::find(uint32_t page) const {
  for (const HtlbEntry &e : htlb_[page & 0xFF])
    if (e.valid && e.tag == uint8_t(page >> 8))
      return &e;
  return nullptr;
}

std::optional<uint32_t> OtfEngine::destination(const Transaction &txn) const {
  const uint8_t *header = nullptr;
  if (txn.botf)
    header = windows_[txn.window].bytes.data();
  else if (const HtlbEntry *e = find(txn.page))
    header = e->seed.data();
  if (!header)
    return std::nullopt; // a miss: the seed may say anything
  return le16(header + NICEMU_MARTINI_HDR_DEST);
}

bool OtfEngine::may_send_to(uint32_t node) const {
  auto may = [&](const Transaction &txn) {
    std::optional<uint32_t> dest = destination(txn);
    return !dest || *dest == node || *dest == NICEMU_MARTINI_DEST_ALL;
  };
  for (const Transaction &txn : queue_)
    if (may(txn))
      return true;
  for (const HeldStore &h : held_)
    if (may(h.txn))
      return true;
  for (const Outgoing &out : swif_queue_)
    if (uint32_t dest =
            le16(out.packet.payload.data() + NICEMU_MARTINI_HDR_DEST);
        dest == node || dest == NICEMU_MARTINI_DEST_ALL)
      return true;
  return false;
}

// Lower bounds: stages counted in whole periods, with no wait for an edge.
Time OtfEngine::receive_floor() const {
  return swif_.domain().time_of(figures_.swif_receive) +
         dimm_.domain().time_of(figures_.llcm_write);
}

Time OtfEngine::store_to_remote_llcm_floor() const {
  const Figures &f = figures_;
  Time t =
      dimm_.domain().time_of(f.to_pins + f.host_write + f.transaction_queue +
                             f.htlb_lookup + f.size_check + f.handshake) +
      swif_.domain().time_of(f.swif_send) + receive_floor();
  if (const Fabric *fabric = card_.fabric()) {
    const FabricParams &net = fabric->params();
    size_t bytes = std::max<size_t>(NICEMU_MARTINI_HEADER_BYTES + 1 + kCrcBytes,
                                    net.min_frame_bytes);
    t += fabric->min_path_latency() + Time(bytes) * net.link_ps_per_byte;
  }
  return t;
}

std::vector<const OtfEngine *> OtfEngine::cards() const {
  const Fabric *fabric = card_.fabric();
  if (!fabric)
    return {this};
  std::vector<const OtfEngine *> all;
  for (uint32_t n = 0; n < fabric->topology().nodes; ++n)
    if (auto *e = dynamic_cast<const OtfEngine *>(fabric->receiver(n)))
      all.push_back(e);
  return all;
}

Time OtfEngine::llcm_quiet_until(Time now, const HostPeers *peers,
                                 uint32_t process) const {
  if (!commands_.empty() || commands_coming_ > 0)
    return now; // the core has work, and may write LLCM
  // A card on another MPI rank (a stand-in here: docs/distributed.md) and
  // its host are not seen from this rank, nor what they send this way: no
  // promise then. The host's loads each go to the card; the figures are
  // the same, only slower to get (the library's load cache).
  if (const Fabric *fabric = card_.fabric())
    for (uint32_t n = 0; n < fabric->topology().nodes; ++n)
      if (!dynamic_cast<const OtfEngine *>(fabric->receiver(n)))
        return now;
  Time t = card_.core_may_act_from();
  if (!llcm_writes_.empty())
    t = std::min(t, *llcm_writes_.begin());
  for (const auto &[id, earliest] : inbound_)
    t = std::min(t, earliest);
  for (const OtfEngine *card : cards())
    if (card->may_send_to(card_.node_id()))
      t = std::min(t, now + receive_floor());
  if (peers) {
    // Another host's store reaches this LLCM through the network; another
    // process of this node's, at once.
    Time other = peers->earliest_action_except(process);
    if (other != kTimeNever)
      t = std::min(t, other + store_to_remote_llcm_floor());
    t = std::min(t, peers->earliest_action_on(card_.node_id(), process));
  }
  return std::max(t, now);
}

// ---- Events and checkpoints ----------------------------------------------

const char *OtfEngine::event_name(uint32_t kind) {
  switch (kind) {
  case kSent:
    return "otf: sent";
  case kLookup:
    return "otf: htlb lookup";
  case kNoSuchNode:
    return "otf: no such node";
  case kLoopback:
    return "otf: loopback";
  case kCommand:
    return "otf: command for the core";
  case kLlcmWrite:
    return "otf: llcm write";
  case kRdmaWrite:
    return "otf: rdma write";
  case kRdmaAck:
    return "otf: rdma ack";
  case kPullServed:
    return "otf: pull served";
  default:
    return nullptr;
  }
}

std::function<void()> OtfEngine::event_action(uint32_t kind, uint64_t a,
                                              Time when) {
  switch (kind) {
  case kLookup:
    return [this] {
      lookup_scheduled_ = false;
      lookup();
    };
  case kNoSuchNode:
    return [this] { sent(false); };
  case kLoopback:
    return [this, a] {
      packet_arrived(unpark(a), card_.now());
      sent(true);
    };
  case kCommand:
    return [this, a] { command_arrived(unpark(a)); };
  case kLlcmWrite:
    return [this, a, when] {
      if (auto it = llcm_writes_.find(when); it != llcm_writes_.end())
        llcm_writes_.erase(it);
      write_arrival(unpark(a));
    };
  case kRdmaWrite:
    return [this, a, when] { rdma_write(unpark(a), when); };
  case kRdmaAck:
    return [this, a] { rdma_finish(uint32_t(a)); };
  case kPullServed:
    return [this, a] { serve_pull(unpark(a)); };
  default:
    return nullptr;
  }
}

void OtfEngine::schedule_event(Time at, uint32_t kind, uint64_t a) {
  card_.scheduler().schedule(at, event_name(kind), event_action(kind, a, at), 0,
                             event_tag(kind, a));
}

uint64_t OtfEngine::park(Packet p) {
  parked_.emplace(next_parked_, std::move(p));
  return next_parked_++;
}

Packet OtfEngine::unpark(uint64_t id) {
  auto it = parked_.find(id);
  Packet p = std::move(it->second); // restore_event checked it is there
  parked_.erase(it);
  return p;
}

namespace {

// Each part of the engine's state, as a checkpoint holds it: one list of
// fields per kind of thing, for saving and loading alike.
template <class T, class Archive> void transaction_fields(T &t, Archive &a) {
  a.fields(t.botf, t.page, t.offset, t.size, t.value, t.window, t.process,
           t.store, t.pins, t.lookup);
}

constexpr uint64_t kMaxQueued = 1 << 20;

} // namespace

void OtfEngine::save_state(StateWriter &out) const {
  out.section("otf");
  if (!held_.empty())
    throw Error("checkpoint: a host's store waits for an OTF credit on node " +
                std::to_string(card_.node_id()) +
                ": such a moment cannot be saved");
  auto outgoing = [&out](const Outgoing &o) {
    save_packet(out, o.packet);
    out.fields(o.ready, o.window, o.credit, o.aotf, o.times);
  };
  plain_fields(*this, out);
  out.u64(queue_.size());
  for (const Transaction &t : queue_)
    transaction_fields(t, out);
  out.u64(swif_queue_.size());
  for (const Outgoing &o : swif_queue_)
    outgoing(o);
  out.flag(sending_.has_value());
  if (sending_)
    outgoing(*sending_);
  for (const auto &set : htlb_)
    for (const HtlbEntry &e : set)
      out.fields(e.valid, e.tag, e.seed);
  for (const Window &w : windows_)
    out.fields(w.bytes, w.busy, w.error, w.owner);
  out.u64(commands_.size());
  for (const Packet &p : commands_)
    save_packet(out, p);
  out.u64(parked_.size());
  for (const auto &[id, p] : parked_) {
    out.u64(id);
    save_packet(out, p);
  }
  out.pods(std::vector<Time>(llcm_writes_.begin(), llcm_writes_.end()));
  out.u64(inbound_.size());
  for (const auto &[id, t] : inbound_)
    out.fields(id, t);
  for (const SodimmBank &b : banks_)
    b.save_state(out);
  for (const auto &g : bank_group_)
    out.fields(g);
  out.u64(members_.size());
  for (const auto &[process, m] : members_)
    out.fields(process, m.pgid, m.pid);
  out.u64(push_failed_.size());
  for (const auto &[node, failed] : push_failed_)
    out.fields(node, failed);
  out.u64(push_bytes_.size());
  for (const auto &[node, bytes] : push_bytes_)
    out.fields(node, bytes);
}

void OtfEngine::load_state(StateReader &in) {
  in.section("otf");
  // `queued`: still to send, its bytes here (the SWIF's own has sent its).
  auto outgoing = [&in, this](Outgoing &o, bool queued) {
    o.packet = load_packet(in);
    in.fields(o.ready, o.window, o.credit, o.aotf, o.times);
    if ((queued &&
         o.packet.payload.size() < NICEMU_MARTINI_HEADER_BYTES + kCrcBytes) ||
        (o.window && *o.window >= windows_.size()))
      in.fail("an OTF packet on its way out that the SWIF cannot send");
  };
  held_.clear();
  plain_fields(*this, in);
  if (credits_ > figures_.credits || region_select_ >= NICEMU_OTF_REGIONS ||
      std::any_of(victim_.begin(), victim_.end(),
                  [](uint8_t v) { return v >= 4; }))
    in.fail("the OTF engine's credits, region select or HTLB victims are "
            "out of range");
  queue_.clear();
  for (uint64_t n = in.count(kMaxQueued); n--;) {
    Transaction t;
    transaction_fields(t, in);
    if (t.size > 8 || (t.botf && t.window >= windows_.size()))
      in.fail("an OTF store of " + std::to_string(t.size) +
              " bytes or for no window");
    queue_.push_back(t);
  }
  swif_queue_.clear();
  for (uint64_t n = in.count(kMaxQueued); n--;)
    outgoing(swif_queue_.emplace_back(), true);
  sending_.reset();
  if (in.flag()) {
    Outgoing o;
    outgoing(o, false);
    sending_ = std::move(o);
  }
  if (sending_.has_value() != swif_busy_)
    in.fail("the SWIF busy without a packet, or a packet without busy");
  for (auto &set : htlb_)
    for (HtlbEntry &e : set)
      in.fields(e.valid, e.tag, e.seed);
  for (Window &w : windows_)
    in.fields(w.bytes, w.busy, w.error, w.owner);
  auto packet = [&in, this] {
    Packet p = load_packet(in);
    if (!well_formed(p.payload))
      in.fail("an OTF packet whose length is not its header's");
    return p;
  };
  commands_.clear();
  for (uint64_t n = in.count(kMaxQueued); n--;)
    commands_.push_back(packet());
  parked_.clear();
  for (uint64_t n = in.count(kMaxQueued); n--;) {
    uint64_t id = in.u64();
    if (id >= next_parked_ || parked_.count(id))
      in.fail("an OTF event's packet numbered twice or ahead");
    parked_.emplace(id, packet());
  }
  std::vector<Time> writes = in.pods<Time>(kMaxQueued);
  llcm_writes_ = std::multiset<Time>(writes.begin(), writes.end());
  inbound_.clear();
  for (uint64_t n = in.count(kMaxQueued); n--;) {
    uint64_t id = 0;
    Time t = 0;
    in.fields(id, t);
    inbound_[id] = t;
  }
  for (SodimmBank &b : banks_)
    b.load_state(in);
  for (auto &g : bank_group_)
    in.fields(g);
  members_.clear();
  for (uint64_t n = in.count(kMaxQueued); n--;) {
    uint32_t process = 0;
    Member m;
    in.fields(process, m.pgid, m.pid);
    members_[process] = m;
  }
  push_failed_.clear();
  for (uint64_t n = in.count(kMaxQueued); n--;) {
    uint32_t node = 0;
    bool failed = false;
    in.fields(node, failed);
    push_failed_[node] = failed;
  }
  push_bytes_.clear();
  for (uint64_t n = in.count(kMaxQueued); n--;) {
    uint32_t node = 0, bytes = 0;
    in.fields(node, bytes);
    push_bytes_[node] = bytes;
  }
  restored_.clear();
  // The SWIF's packet may be in the network: the fabric makes its end
  // again through this.
  if (Fabric *fabric = card_.fabric())
    fabric->set_sent_maker(event_tag(kSent).owner, [this](const EventTag &) {
      return std::function<void(Time)>([this](Time) { sent(true); });
    });
}

void OtfEngine::restore_event(Scheduler &scheduler, const SavedEvent &e) {
  const uint32_t kind = e.tag.kind;
  const bool carries_packet = kind == kLoopback || kind == kCommand ||
                              kind == kLlcmWrite || kind == kRdmaWrite ||
                              kind == kPullServed;
  const bool ends_send = kind == kLoopback || kind == kNoSuchNode;
  if (kind == kSent || !event_name(kind) ||
      (carries_packet &&
       (!parked_.count(e.tag.a) || !restored_.insert(e.tag.a).second)) ||
      (ends_send && !sending_) || (kind == kRdmaAck && e.tag.a > UINT32_MAX))
    throw Error("checkpoint: the OTF engine of node " +
                std::to_string(card_.node_id()) + " has no event \"" + e.name +
                "\" of kind " + std::to_string(kind) + " for " +
                std::to_string(e.tag.a));
  scheduler.restore(e, event_name(kind), event_action(kind, e.tag.a, e.when));
}

} // namespace nicemu::martini
