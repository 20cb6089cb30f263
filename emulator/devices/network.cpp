#include "devices/network.hpp"

#include "nicemu/regs.h"
#include "observe/run_events.hpp"
#include "sim/state_archive.hpp"

#include <algorithm>
#include <cstring>

namespace nicemu {

// ---- Tx ------------------------------------------------------------------

std::vector<ModelKey> TxEngine::model_keys() {
  const char *me = "Tx engine";
  return {{"timing.tx_dma.gap", KeyUse::Required, me},
          {"timing.tx_dma.per_word", KeyUse::Required, me},
          {"timing.tx_dma.startup", KeyUse::Reference, me},
          {"params.tx_dma.peak_MBps", KeyUse::Reference, me, kBandwidthMBps}};
}

TxEngine::TxEngine(DeviceHost &host, DmaTiming timing)
    : Device(RegisterLayout::of("TX")), host_(host), timing_(timing),
      ethernet_(ethernet_framing(host.model())) {
  registers()
      .bind(NICEMU_TX_ADDR, addr_)
      .bind(NICEMU_TX_LENGTH, length_)
      .bind(NICEMU_TX_ROUTE_LEN, route_len_)
      .on_write(NICEMU_TX_CTRL,
                [this](uint64_t v) {
                  if (v & NICEMU_DMA_START)
                    start(uint32_t(v));
                })
      .write_one_to_clear(NICEMU_TX_STATUS, status_,
                          NICEMU_DMA_DONE | NICEMU_DMA_ERROR)
      .on_read(NICEMU_TX_ERROR, [this] { return error_; })
      .stable_read(NICEMU_TX_ERROR);
}

void TxEngine::start(uint32_t ctrl) {
  auto fail = [this](uint32_t code) {
    error_ = code;
    status_ |= NICEMU_DMA_ERROR;
  };
  if (status_ & NICEMU_DMA_BUSY)
    return fail(NICEMU_DMA_EBUSY);
  if (ethernet_ ? route_len_ != 0 || length_ < ethernet_->min_length() ||
                      length_ > ethernet_->max_length()
                : length_ == 0 || length_ > kMaxLength || route_len_ > length_)
    return fail(NICEMU_DMA_ELENGTH);
  Fabric *fabric = host_.fabric();
  if (!fabric)
    return fail(NICEMU_DMA_ENOLINK);
  std::vector<uint8_t> bytes(length_);
  if (!host_.card_read(addr_, bytes.data(), length_))
    return fail(NICEMU_DMA_ECARD);
  Packet p;
  p.source = host_.node_id();
  p.id = (uint64_t(p.source) << 40) | sequence_++;
  if (ethernet_) {
    // Padded to the minimum frame; the switches forward by destination MAC.
    p.payload = std::move(bytes);
    if (p.payload.size() < ethernet_->padded_length())
      p.payload.resize(ethernet_->padded_length(), 0);
    const uint32_t nodes = fabric->topology().nodes;
    std::optional<uint32_t> to = node_of_mac(p.payload.data());
    // Port security: a frame that claims another node's source address
    // never gets past the first switch.
    std::optional<uint32_t> from = node_of_mac(p.payload.data() + 6);
    p.spoofed = from && *from != p.source && *from < nodes;
    if (to && *to != p.source && *to < nodes && !p.spoofed)
      p.route = fabric->route(p.source, *to);
    else
      p.filtered = true;
  } else {
    p.route.assign(bytes.begin(), bytes.begin() + route_len_);
    p.payload.assign(bytes.begin() + route_len_, bytes.end());
  }
  uint32_t crc = packet_crc(p.payload.data(), p.payload.size());
  for (int i = 0; i < 4; ++i)
    p.payload.push_back(uint8_t(crc >> (8 * i)));
  p.source_ps_per_byte = timing_.per_word / 4;
  irq_ = (ctrl & NICEMU_DMA_IRQ) != 0;
  status_ = (status_ & ~NICEMU_DMA_DONE) | NICEMU_DMA_BUSY;
  started_ = host_.now();
  sending_ = length_;
  fabric->send(
      std::move(p), started_ + timing_.gap, [this](Time now) { sent(now); },
      event_tag(0));
}

void TxEngine::sent(Time now) {
  if (RunEvents *events = host_.events())
    events->dma_transfer(host_.node_id(), DmaEngineKind::Tx, started_, now,
                         sending_, false);
  status_ = (status_ & ~NICEMU_DMA_BUSY) | NICEMU_DMA_DONE;
  if (irq_)
    host_.raise_irq(NICEMU_IRQ_TX);
}

// ---- Rx ------------------------------------------------------------------

RxEngine::RxEngine(DeviceHost &host)
    : Device(RegisterLayout::of("RX")), host_(host) {
  registers()
      .bind(NICEMU_RX_ADDR, addr_)
      .bind(NICEMU_RX_SIZE, size_)
      .on_write(NICEMU_RX_CTRL, [this](uint64_t v) { arm(uint32_t(v)); })
      .write_one_to_clear(NICEMU_RX_STATUS, status_,
                          NICEMU_RX_DONE | NICEMU_RX_CRC_ERROR |
                              NICEMU_RX_TRUNCATED)
      .on_read(NICEMU_RX_LENGTH, [this] { return length_; })
      .stable_read(NICEMU_RX_LENGTH);
}

void RxEngine::arm(uint32_t ctrl) {
  if (!(ctrl & NICEMU_RX_ARM) || receiving_)
    return;
  // A new buffer: the last packet's status no longer applies.
  status_ &= ~(NICEMU_RX_DONE | NICEMU_RX_CRC_ERROR | NICEMU_RX_TRUNCATED);
  status_ |= NICEMU_RX_ARMED;
  irq_ = (ctrl & NICEMU_DMA_IRQ) != 0;
  if (head_waiting_ && host_.fabric()) {
    head_waiting_ = false;
    host_.fabric()->receiver_ready(host_.node_id(), host_.now());
  }
}

bool RxEngine::accept_head(const Packet &, Time now) {
  if (!(status_ & NICEMU_RX_ARMED) || receiving_) {
    head_waiting_ = true;
    return false;
  }
  receiving_ = true;
  head_time_ = now;
  return true;
}

void RxEngine::packet_arrived(Packet p, Time now) {
  receiving_ = false;
  status_ &= ~(NICEMU_RX_ARMED | NICEMU_RX_CRC_ERROR | NICEMU_RX_TRUNCATED);
  size_t body = p.payload.size() >= 4 ? p.payload.size() - 4 : 0;
  uint32_t carried = 0;
  for (int i = 0; i < 4 && body + i < p.payload.size(); ++i)
    carried |= uint32_t(p.payload[body + i]) << (8 * i);
  if (p.payload.size() < 4 || packet_crc(p.payload.data(), body) != carried) {
    status_ |= NICEMU_RX_CRC_ERROR;
    ++crc_errors_;
  }
  uint32_t kept = uint32_t(std::min<size_t>(body, size_));
  if (kept < body)
    status_ |= NICEMU_RX_TRUNCATED;
  if (kept && !host_.card_write(addr_, p.payload.data(), kept))
    status_ |= NICEMU_RX_TRUNCATED; // buffer outside card memory: nothing kept
  length_ = uint32_t(body);
  if (RunEvents *events = host_.events())
    events->dma_transfer(host_.node_id(), DmaEngineKind::Rx, head_time_, now,
                         length_, false);
  status_ |= NICEMU_RX_DONE;
  if (irq_)
    host_.raise_irq(NICEMU_IRQ_RX);
}

// ---- Route table -----------------------------------------------------------

RouteTable::RouteTable(DeviceHost &host)
    : Device(RegisterLayout::of("ROUTE")), host_(host) {
  // Bytes `first`.. of `bytes` as a little-endian word (0 past the end).
  auto word = [](const auto &bytes, size_t first) -> uint64_t {
    uint32_t v = 0;
    for (size_t i = 0; i < 4 && first + i < bytes.size(); ++i)
      v |= uint32_t(bytes[first + i]) << (8 * i);
    return v;
  };
  // Addresses are functions of the node number (0 beyond the numbers that
  // have one), whether or not DEST is in this run.
  auto has_address = [this] { return dest_ <= kMaxMacNode; };
  registers()
      .bind(NICEMU_ROUTE_DEST, dest_, [this] { look_up(); })
      .on_read(NICEMU_ROUTE_LENGTH,
               [this]() -> uint64_t {
                 return too_long_ ? NICEMU_ROUTE_TOO_LONG : route_.size();
               })
      .on_read(NICEMU_ROUTE_BYTES_LO, [this, word] { return word(route_, 0); })
      .on_read(NICEMU_ROUTE_BYTES_HI, [this, word] { return word(route_, 4); })
      .on_read(NICEMU_ROUTE_MAC_LO,
               [this, word, has_address]() -> uint64_t {
                 return has_address() ? word(mac_of(dest_), 0) : 0;
               })
      .on_read(NICEMU_ROUTE_MAC_HI,
               [this, word, has_address]() -> uint64_t {
                 return has_address() ? word(mac_of(dest_), 4) : 0;
               })
      .on_read(NICEMU_ROUTE_IPV4, [this, has_address]() -> uint64_t {
        return has_address() ? ipv4_of(dest_) : 0;
      });
}

void RouteTable::look_up() {
  route_.clear();
  too_long_ = false;
  Fabric *f = host_.fabric();
  if (f && dest_ != host_.node_id() && dest_ < f->topology().nodes)
    route_ = f->route(host_.node_id(), dest_);
  // The table holds 8 bytes; make_fabric refuses a source-routed network
  // with longer routes, so only an Ethernet one gets here.
  if (route_.size() > NICEMU_ROUTE_MAX_BYTES) {
    route_.clear();
    too_long_ = true;
  }
}

// Checkpoints: a packet being sent or received is the fabric's to save;
// the engines keep their registers and where they stand.
void TxEngine::save_state(StateWriter &out) const {
  out.section("tx");
  fields(*this, out);
}

void TxEngine::load_state(StateReader &in) {
  in.section("tx");
  fields(*this, in);
  // A packet of this engine's may be in the network: the fabric makes its
  // end of sending again through this.
  if (Fabric *fabric = host_.fabric())
    fabric->set_sent_maker(event_tag(0).owner, [this](const EventTag &) {
      return std::function<void(Time)>([this](Time now) { sent(now); });
    });
}

void RxEngine::save_state(StateWriter &out) const {
  out.section("rx");
  fields(*this, out);
}

void RxEngine::load_state(StateReader &in) {
  in.section("rx");
  fields(*this, in);
}

void RouteTable::save_state(StateWriter &out) const {
  out.section("route");
  out.fields(dest_, route_, too_long_);
}

void RouteTable::load_state(StateReader &in) {
  in.section("route");
  in.fields(dest_, route_, too_long_);
}

} // namespace nicemu
