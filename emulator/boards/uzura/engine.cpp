#include "boards/uzura/engine.hpp"

#include "devices/host_memory.hpp"
#include "fabric/ethernet.hpp"
#include "sim/state_archive.hpp"

#include <algorithm>
#include <cstring>

namespace nicemu::uzura {

namespace {

static_assert(sizeof(uz_wire_header) == UZ_WIRE_HEADER_BYTES);
static_assert(sizeof(uz_cmd) == UZ_CMD_BYTES);
static_assert(sizeof(uz_wr) == UZ_WR_BYTES);
static_assert(sizeof(uz_cqe) == UZ_CQE_BYTES);
static_assert(sizeof(uz_rx_header) == UZ_RX_HEADER_BYTES);
static_assert(sizeof(uz_endpoint) == UZ_ENDPOINT_BYTES);
static_assert(sizeof(uz_sge) == 16 && sizeof(uz_overflow_entry) == 16);

uint32_t page_tag(uint64_t page) {
  return uint32_t(page >> 19) & ((1u << UZ_TE_TAG_BITS) - 1);
}

} // namespace

const RegisterLayout &Engine::layout() {
  return RegisterLayout::of("ENGINE");
}

Engine::Engine(DeviceHost &card, const Figures &figures, uint32_t sram_base,
               uint32_t sram_size)
    : Device(layout()), card_(card), figures_(figures), sram_base_(sram_base),
      sram_size_(sram_size) {
  auto value = [](const uint32_t &v) { return [&v] { return uint64_t(v); }; };
  registers()
      .on_write(NICEMU_ENGINE_SUBMIT,
                [this](uint64_t v) { submit(uint32_t(v)); })
      .bind(NICEMU_ENGINE_EVENTS, events_)
      .bind(NICEMU_ENGINE_EVENT_ENTRIES, event_entries_)
      .on_read(NICEMU_ENGINE_EVENT_COUNT, value(event_count_))
      .bind(NICEMU_ENGINE_EVENT_FREED, event_freed_)
      .on_read(NICEMU_ENGINE_DOORBELL, value(doorbell_))
      .on_read(NICEMU_ENGINE_ENDPOINT, value(endpoint_))
      .bind(NICEMU_ENGINE_HOST_STATUS, host_status_)
      .on_read(NICEMU_ENGINE_RINGS,
               [this](uint32_t i) { return uint64_t(rings_[i]); })
      .on_write(NICEMU_ENGINE_RINGS,
                [this](uint32_t i, uint64_t v) { rings_[i] = uint32_t(v); })
      .bind(NICEMU_ENGINE_NOTIFY, notify_,
            [this] {
              bus_.set_polling((notify_ & 0xFF) == UZ_NOTIFY_NIC_POLLS
                                   ? figures_.nic_poll_host_memory
                                   : 0);
            })
      .bind(NICEMU_ENGINE_CMD_AREA, cmd_area_)
      .bind(NICEMU_ENGINE_DATATYPES, datatypes_)
      .bind(NICEMU_ENGINE_CMD_DONE, cmd_done_,
            [this] {
              bool polls = (notify_ & 0xFF) == UZ_NOTIFY_NIC_POLLS;
              Time at = card_.now();
              fetch_commands(rung_, polls ? bus_.poll_seen(at) : at, polls);
            })
      .on_read(NICEMU_ENGINE_FRAMES_OUT, value(frames_out_))
      .on_read(NICEMU_ENGINE_FRAMES_IN, value(frames_in_))
      .on_read(NICEMU_ENGINE_DROPPED, value(dropped_))
      .on_read(NICEMU_ENGINE_SRAM_HITS, value(sram_hits_))
      .on_read(NICEMU_ENGINE_OVERFLOW_HITS, value(overflow_hits_))
      .on_read(NICEMU_ENGINE_MISSES, value(misses_))
      .on_read(NICEMU_ENGINE_BUS_BUSY_NS,
               [this] { return uint64_t(bus_.busy_total() / 1000); })
      .on_read(NICEMU_ENGINE_EVENTS_LOST, value(events_lost_));
}

// ---- Events and completions ------------------------------------------------

void Engine::post_event(uint32_t kind, uint32_t msg, uint32_t status,
                        uint32_t detail, Time at) {
  const uint64_t a = kind | uint64_t(msg) << 32, b = status | uint64_t(detail)
                                                                  << 32;
  card_.scheduler().schedule(at, event_name(kEngineEvent),
                             event_action(kEngineEvent, a, b, at), 0,
                             event_tag(kEngineEvent, a, b));
}

// The event's four words into the firmware's event ring.
void Engine::write_event(const uint32_t (&words)[4]) {
  if (!event_entries_ || event_count_ - event_freed_ >= event_entries_) {
    ++events_lost_;
    return;
  }
  uint32_t slot = event_count_ % event_entries_;
  if (!card_.card_write(events_ + slot * UZ_EVENT_BYTES, words, sizeof words)) {
    ++events_lost_;
    return;
  }
  ++event_count_;
  card_.raise_irq(NICEMU_IRQ_ENGINE);
}

void Engine::finish_wr(uint32_t msg, uint32_t status, Time at) {
  post_event(UZ_EV_WR_DONE, msg, status, 0, at);
}

// The host's CQ: one 16-byte write, counted when it has landed.
void Engine::complete_for_host(uint64_t cookie, uint32_t status, Time at) {
  uint32_t entries = ring(kCqEntries);
  if (!entries)
    return;
  Work w;
  w.kind = kCqEntry;
  w.u[0] = ++cq_written_; // its sequence number
  w.u[1] = status;
  w.w = ring(kCq) + uint64_t((w.u[0] - 1) % entries) * UZ_CQE_BYTES;
  w.cookie = cookie;
  dma(true, UZ_CQE_BYTES, at, std::move(w));
}

// ---- DMA over PCI-X --------------------------------------------------------

void Engine::dma(bool to_host, uint32_t bytes, Time at, Work then,
                 uint32_t pieces) {
  Time duration = to_host ? figures_.to_host(bytes, pieces)
                          : figures_.to_card(bytes, pieces);
  Time end = bus_.occupy(at, duration) + duration;
  uint64_t id = keep(std::move(then));
  card_.scheduler().schedule(end, event_name(kDmaEnd),
                             event_action(kDmaEnd, id, 0, end), 0,
                             event_tag(kDmaEnd, id));
}

// ---- Commands: the host rings, the engine fetches ---------------------------

void Engine::host_doorbell(uint32_t word, Time at, Time started) {
  doorbell_ = word;
  doorbell_host_ = started;
  doorbell_at_ = at;
  uint32_t queue = word & 0xFF, upto = word >> 8;
  if (queue == UZ_QUEUE_COMMANDS) {
    if (int32_t(upto - rung_) > 0)
      rung_ = upto;
    fetch_commands(rung_, at + figures_.dma_after_doorbell);
  } else
    post_event(UZ_EV_DOORBELL, 0, UZ_S_OK, word, at);
}

void Engine::host_command_written(uint32_t seq, Time at) {
  if ((notify_ & 0xFF) != UZ_NOTIFY_NIC_POLLS)
    return; // a doorbell will come
  if (int32_t(seq - rung_) > 0)
    rung_ = seq;
  fetch_commands(rung_, bus_.poll_seen(at), true);
}

// Each new command, one 64-byte DMA into the card's command area, as long
// as the firmware has read the slot's last one; it hears of each when it
// has landed.
void Engine::fetch_commands(uint32_t upto, Time at, bool polled) {
  uint32_t entries = ring(kCmdEntries);
  if (!entries || !cmd_area_)
    return;
  while (int32_t(upto - fetched_) > 0 && fetched_ - cmd_done_ < entries) {
    uint32_t seq = ++fetched_;
    uint32_t slot = (seq - 1) % entries;
    Work land;
    land.kind = kCommandLands;
    land.u[0] = seq;
    land.u[1] = cmd_area_ + slot * UZ_CMD_BYTES; // in the card
    land.w = ring(kCmd) + uint64_t(slot) * UZ_CMD_BYTES;
    if (polled) {
      uint64_t id = keep(std::move(land));
      card_.scheduler().schedule(at, event_name(kPolledLanded),
                                 event_action(kPolledLanded, id, 0, at), 0,
                                 event_tag(kPolledLanded, id));
    } else {
      dma(false, UZ_CMD_BYTES, at, std::move(land));
    }
  }
}

// ---- Work requests ---------------------------------------------------------

void Engine::submit(uint32_t card_addr) {
  uz_wr wr{};
  if (!card_.card_read(card_addr, &wr, sizeof wr)) {
    post_event(UZ_EV_WR_DONE, 0, UZ_S_BAD_COMMAND, card_addr, card_.now());
    return;
  }
  run_wr(wr, card_.now());
}

void Engine::run_wr(const uz_wr &wr, Time at) {
  switch (wr.op) {
  case UZ_WR_FETCH:
  case UZ_WR_STORE: {
    Work copy;
    copy.kind = kWrCopy;
    copy.u[0] = wr.op == UZ_WR_STORE; // to the host
    copy.u[1] = wr.len;
    copy.u[2] = wr.msg;
    copy.u[3] = wr.card;
    copy.w = wr.host;
    dma(wr.op == UZ_WR_STORE, wr.len, at, std::move(copy));
    return;
  }
  case UZ_WR_COMPLETE:
    complete_for_host(wr.remote, wr.imm, at);
    return;
  case UZ_WR_SEND:
  case UZ_WR_WRITE: {
    if (wr.node >= kMaxMacNode ||
        (wr.op == UZ_WR_SEND && wr.len > UZ_EAGER_MAX)) {
      finish_wr(wr.msg, wr.op == UZ_WR_SEND ? UZ_S_TOO_LONG : UZ_S_BAD_NODE,
                at);
      return;
    }
    Translation t = gather_list(wr);
    if (t.status != UZ_S_OK) {
      finish_wr(wr.msg, t.status, at + t.cost);
      return;
    }
    Outgoing out;
    out.op = wr.op;
    out.node = wr.node;
    out.msg = wr.msg;
    out.len = wr.len;
    out.tag = wr.tag;
    out.imm = wr.imm;
    out.remote = wr.remote;
    if (wr.remote_type) {
      std::optional<uz_datatype> rt = datatype(wr.remote_type);
      if (!rt || wr.op != UZ_WR_WRITE) {
        finish_wr(wr.msg, UZ_S_BAD_COMMAND, at + t.cost);
        return;
      }
      out.remote_type = *rt;
      out.typed = true;
    }
    out.source = std::move(t.pieces);
    if (wr.op == UZ_WR_SEND) {
      pending_ = {};
      pending_.host = doorbell_host_;
      pending_.doorbell = doorbell_at_;
      auto landed = command_landed_.find(wr.msg);
      pending_.command = landed == command_landed_.end() ? at : landed->second;
      pending_.submit = at;
    }
    start_outgoing(std::move(out), at + t.cost);
    return;
  }
  case UZ_WR_READ: {
    // The local side (one range, an SG list or a layout) is translated
    // now and kept by the card until the answer comes: a page in neither
    // table fails here, and the requester's addresses never travel.
    Translation t = gather_list(wr);
    uz_wire_header h{};
    h.type = UZ_PKT_GET;
    h.src = uint16_t(card_.node_id());
    h.msg = wr.msg;
    h.len = wr.len;
    h.addr = wr.remote;
    if (t.status == UZ_S_OK && wr.remote_type) {
      // The remote layout, which only the origin knows, travels with it.
      std::optional<uz_datatype> rt = datatype(wr.remote_type);
      if (!rt)
        t.status = UZ_S_BAD_COMMAND;
      else
        set_layout(h, *rt);
    }
    if (t.status != UZ_S_OK || wr.len == 0) {
      finish_wr(wr.msg, wr.len ? t.status : uint32_t(UZ_S_BAD_COMMAND),
                at + t.cost);
      return;
    }
    reads_[wr.msg] = std::move(t.pieces);
    send_frame_to(wr.node, h, {},
                  at + t.cost + figures_.send_non_pl4 + figures_.send_pl4);
    return;
  }
  default:
    finish_wr(wr.msg, UZ_S_BAD_COMMAND, at);
  }
}

// ---- Translation -----------------------------------------------------------

std::optional<uint64_t> Engine::look_up(uint64_t page, Time &cost) const {
  // While a layout is walked (translate_ranges), the translation unit keeps
  // the last page it translated: coming back to it costs no second lookup.
  if (last_page_valid_ && page == last_page_)
    return last_entry_;
  std::optional<uint64_t> e = look_up_tables(page, cost);
  if (e) {
    last_page_ = page;
    last_entry_ = *e;
    last_page_valid_ = true;
  }
  return e;
}

std::optional<uint64_t> Engine::look_up_tables(uint64_t page,
                                               Time &cost) const {
  cost += figures_.sram_lookup;
  uint32_t index = uint32_t(page) & (UZ_SRAM_ENTRIES - 1);
  uint64_t entry = 0;
  if (uint64_t(index) * 8 + 8 <= sram_size_ &&
      card_.card_read(sram_base_ + index * 8, &entry, sizeof entry) &&
      (entry & UZ_TE_VALID) &&
      ((entry >> UZ_TE_TAG_SHIFT) & ((1u << UZ_TE_TAG_BITS) - 1)) ==
          page_tag(page)) {
    ++sram_hits_;
    return entry;
  }
  uint32_t entries = ring(kOverflowEntries);
  HostMemory *host = card_.host_memory();
  if (entries && host) {
    uint32_t slot = UZ_OVERFLOW_SLOT(page, entries);
    for (uint32_t probe = 0; probe < UZ_OVERFLOW_PROBES; ++probe) {
      cost += figures_.host_lookup;
      uz_overflow_entry e{};
      uint64_t bus =
          ring(kOverflow) + uint64_t((slot + probe) & (entries - 1)) * sizeof e;
      if (!host->read(bus, &e, sizeof e) || e.page == 0)
        break;
      if (e.page == page + 1 && (e.entry & UZ_TE_VALID)) {
        ++overflow_hits_;
        return e.entry;
      }
    }
  }
  ++misses_;
  return std::nullopt;
}

// [va, va + len) as bus pieces, page by page; every page must have the
// bits `need`.
Engine::Translation Engine::translate(uint64_t va, uint32_t len,
                                      uint32_t need) const {
  Translation t;
  uint64_t end = va + len;
  if (end < va) {
    t.status = UZ_S_TRANSLATION;
    return t;
  }
  for (uint64_t at = va; at < end;) {
    uint64_t page = at / UZ_PAGE_BYTES;
    uint32_t in_page = uint32_t(at % UZ_PAGE_BYTES);
    uint32_t n =
        uint32_t(std::min<uint64_t>(UZ_PAGE_BYTES - in_page, end - at));
    std::optional<uint64_t> entry = look_up(page, t.cost);
    if (!entry || (*entry & need) != need) {
      t.status = UZ_S_TRANSLATION;
      return t;
    }
    uint64_t bus = ((*entry >> 32) << 12) + in_page;
    if (!t.pieces.empty() && t.pieces.back().bus + t.pieces.back().len == bus)
      t.pieces.back().len += n;
    else
      t.pieces.push_back({bus, n});
    at += n;
  }
  return t;
}

std::optional<uz_datatype> Engine::datatype(uint16_t id) const {
  uz_datatype t{};
  if (id == 0 || id >= UZ_MAX_DATATYPES || !datatypes_ ||
      !card_.card_read(datatypes_ + id * sizeof t, &t, sizeof t) ||
      t.count == 0 || t.block == 0 || uint64_t(t.count) * t.block > 0xFFFFFFFFu)
    return std::nullopt;
  return t;
}

void Engine::layout(const uz_datatype &type, uint64_t base, uint64_t from,
                    uint32_t n,
                    std::vector<std::pair<uint64_t, uint32_t>> &out) {
  uint64_t item_bytes = uint64_t(type.count) * type.block;
  while (n) {
    uint64_t item = from / item_bytes, in_item = from % item_bytes;
    uint64_t block = in_item / type.block, in_block = in_item % type.block;
    uint64_t va = base + item * type.extent +
                  uint64_t(int64_t(block) * type.stride) + in_block;
    uint32_t take = uint32_t(std::min<uint64_t>(type.block - in_block, n));
    if (!out.empty() && out.back().first + out.back().second == va)
      out.back().second += take;
    else
      out.push_back({va, take});
    from += take;
    n -= take;
  }
}

void Engine::set_layout(uz_wire_header &h, const uz_datatype &type) {
  h.type_id = 1;
  h.dt_count = type.count;
  h.dt_block = type.block;
  h.dt_stride = type.stride;
  h.tag = type.extent;
}

std::optional<uz_datatype> Engine::carried_layout(const uz_wire_header &h) {
  if (!h.type_id)
    return std::nullopt;
  return uz_datatype{h.dt_count, h.dt_block, h.dt_stride, h.tag};
}

std::vector<Engine::Piece> Engine::pieces_at(const std::vector<Piece> &all,
                                             uint32_t offset, uint32_t n) {
  std::vector<Piece> out;
  for (const Piece &p : all) {
    if (!n)
      break;
    if (offset >= p.len) {
      offset -= p.len;
      continue;
    }
    uint32_t take = std::min(p.len - offset, n);
    out.push_back({p.bus + offset, take});
    n -= take;
    offset = 0;
  }
  return out;
}

Engine::Translation Engine::translate_ranges(
    const std::vector<std::pair<uint64_t, uint32_t>> &ranges,
    uint32_t need) const {
  // The last page is kept only while one layout is walked: the host may
  // change its tables between operations.
  last_page_valid_ = false;
  Translation all;
  for (const auto &[va, len] : ranges) {
    Translation one = translate(va, len, need);
    all.cost += one.cost;
    if (one.status != UZ_S_OK) {
      all.status = one.status;
      last_page_valid_ = false;
      return all;
    }
    for (const Piece &p : one.pieces)
      if (!all.pieces.empty() &&
          all.pieces.back().bus + all.pieces.back().len == p.bus)
        all.pieces.back().len += p.len;
      else
        all.pieces.push_back(p);
  }
  last_page_valid_ = false;
  return all;
}

// The local data of a SEND or WRITE: one range, an SG list in host memory
// (read over the bus, then each entry translated), or items of a datatype.
Engine::Translation Engine::gather_list(const uz_wr &wr) const {
  if (wr.local_type) {
    Translation bad;
    std::optional<uz_datatype> type = datatype(wr.local_type);
    if (!type || uint64_t(type->count) * type->block * wr.count != wr.len) {
      bad.status = UZ_S_BAD_COMMAND;
      return bad;
    }
    std::vector<std::pair<uint64_t, uint32_t>> ranges;
    layout(*type, wr.local, 0, wr.len, ranges);
    return translate_ranges(ranges, UZ_TE_VALID);
  }
  if (!(wr.flags & UZ_F_SG))
    return translate(wr.local, wr.len, UZ_TE_VALID);
  Translation all;
  if (wr.count == 0 || wr.count > UZ_MAX_SGE) {
    all.status = UZ_S_BAD_COMMAND;
    return all;
  }
  Translation list = translate(wr.local, wr.count * sizeof(uz_sge), 0);
  all.cost = list.cost + figures_.to_card(wr.count * sizeof(uz_sge));
  HostMemory *host = card_.host_memory();
  if (list.status != UZ_S_OK || !host) {
    all.status = UZ_S_TRANSLATION;
    return all;
  }
  std::vector<uz_sge> sge(wr.count);
  auto *bytes = reinterpret_cast<uint8_t *>(sge.data());
  for (const Piece &p : list.pieces) {
    if (!host->read(p.bus, bytes, p.len)) {
      all.status = UZ_S_TRANSLATION;
      return all;
    }
    bytes += p.len;
  }
  uint64_t total = 0;
  for (const uz_sge &e : sge) {
    Translation one = translate(e.addr, e.len, UZ_TE_VALID);
    all.cost += one.cost;
    if (one.status != UZ_S_OK) {
      all.status = one.status;
      return all;
    }
    total += e.len;
    all.pieces.insert(all.pieces.end(), one.pieces.begin(), one.pieces.end());
  }
  if (total != wr.len)
    all.status = UZ_S_BAD_COMMAND;
  return all;
}

// ---- Sending: frames, one on the bus while the last one travels
// --------------

void Engine::start_outgoing(Outgoing out, Time at) {
  uint32_t id = next_outgoing_++;
  outgoing_.emplace(id, std::move(out));
  next_frame(id, at);
}

void Engine::next_frame(uint32_t id, Time at) {
  Outgoing &out = outgoing_.at(id);
  uint32_t n = std::min(out.len - out.sent, UZ_FRAME_DATA);
  uint32_t offset = out.sent;
  out.sent += n;
  bool last = out.sent == out.len;
  // The frame's pieces (a gathered or typed source may have several),
  // read from host memory when its DMA has ended.
  Work frame;
  frame.kind = kFrame;
  frame.u[0] = id;
  frame.u[1] = n;
  frame.u[2] = offset;
  frame.u[3] = last;
  frame.pieces = pieces_at(out.source, offset, n);
  uint32_t count = uint32_t(frame.pieces.size());
  dma(false, std::max(n, 1u), at, std::move(frame), std::max(count, 1u));
}

uint64_t Engine::send_frame_to(uint32_t node, const uz_wire_header &h,
                               std::vector<uint8_t> data, Time ready) {
  Fabric *fabric = card_.fabric();
  if (node == card_.node_id()) {
    loop_back(h, std::move(data), ready);
    return 0;
  }
  if (!fabric || node >= fabric->topology().nodes) {
    ++dropped_;
    return 0;
  }
  Packet p;
  p.source = card_.node_id();
  p.id = (uint64_t(p.source) << 40) | packet_sequence_++;
  MacAddress to = mac_of(node), from = mac_of(p.source);
  p.payload.reserve(kEthernetHeaderBytes + UZ_WIRE_HEADER_BYTES + data.size() +
                    4);
  p.payload.insert(p.payload.end(), to.begin(), to.end());
  p.payload.insert(p.payload.end(), from.begin(), from.end());
  p.payload.push_back(uint8_t(UZ_ETHERTYPE >> 8));
  p.payload.push_back(uint8_t(UZ_ETHERTYPE & 0xFF));
  const auto *hb = reinterpret_cast<const uint8_t *>(&h);
  p.payload.insert(p.payload.end(), hb, hb + sizeof h);
  p.payload.insert(p.payload.end(), data.begin(), data.end());
  if (p.payload.size() < 60)
    p.payload.resize(60, 0); // the minimum frame, before the FCS
  uint32_t crc = packet_crc(p.payload.data(), p.payload.size());
  for (int i = 0; i < 4; ++i)
    p.payload.push_back(uint8_t(crc >> (8 * i)));
  p.route = fabric->route(p.source, node);
  p.source_ps_per_byte = figures_.link_ps_per_byte;
  ++frames_out_;
  uint64_t id = p.id;
  fabric->send(
      std::move(p), ready + figures_.mac_send, [](Time) {},
      event_tag(kFrameSent));
  return id;
}

void Engine::send_small(uint32_t node, uint8_t type, uint32_t msg,
                        uint32_t status, Time ready) {
  uz_wire_header h{};
  h.type = type;
  h.src = uint16_t(card_.node_id());
  h.msg = msg;
  h.status = uint16_t(status);
  send_frame_to(node, h, {}, ready + figures_.send_non_pl4 + figures_.send_pl4);
}

void Engine::loop_back(const uz_wire_header &h, std::vector<uint8_t> data,
                       Time ready) {
  Work in;
  in.kind = kLoopback;
  in.header = h;
  in.bytes = std::move(data);
  in.w = ready + figures_.receive_pl4 + figures_.receive_non_pl4; // parsed
  uint64_t id = keep(std::move(in));
  card_.scheduler().schedule(ready, event_name(kLoopbackIn),
                             event_action(kLoopbackIn, id, 0, ready), 0,
                             event_tag(kLoopbackIn, id));
}

// ---- Receiving
// ---------------------------------------------------------------

bool Engine::accept_head(const Packet &, Time) {
  return true; // the FPGA's receive FIFO takes every frame
}

void Engine::packet_arrived(Packet p, Time now) {
  ++frames_in_;
  size_t body = p.payload.size() >= 4 ? p.payload.size() - 4 : 0;
  uint32_t carried = 0;
  for (int i = 0; i < 4 && body + i < p.payload.size(); ++i)
    carried |= uint32_t(p.payload[body + i]) << (8 * i);
  size_t head = kEthernetHeaderBytes + UZ_WIRE_HEADER_BYTES;
  if (p.payload.size() < 4 || packet_crc(p.payload.data(), body) != carried ||
      body < head || p.payload[12] != (UZ_ETHERTYPE >> 8) ||
      p.payload[13] != (UZ_ETHERTYPE & 0xFF)) {
    ++dropped_;
    return;
  }
  uz_wire_header h;
  std::memcpy(&h, p.payload.data() + kEthernetHeaderBytes, sizeof h);
  size_t data_bytes = body - head;
  uint32_t expect = h.type == UZ_PKT_EAGER || h.type == UZ_PKT_PUT
                        ? std::min(h.len - h.offset, UZ_FRAME_DATA)
                        : 0;
  if (h.offset > h.len || data_bytes < expect) {
    ++dropped_;
    return;
  }
  std::vector<uint8_t> data(p.payload.begin() + long(head),
                            p.payload.begin() + long(head + expect));
  Time parsed = now + figures_.mac_receive + figures_.receive_pl4 +
                figures_.receive_non_pl4;
  if (h.type == UZ_PKT_EAGER)
    receiving_ = {p.id, now, parsed, 0};
  on_frame(h, std::move(data), parsed);
}

void Engine::on_frame(const uz_wire_header &h, std::vector<uint8_t> data,
                      Time at) {
  switch (h.type) {
  case UZ_PKT_EAGER:
    place_eager(h, std::move(data), at);
    return;
  case UZ_PKT_PUT:
    place_put(h, std::move(data), at);
    return;
  case UZ_PKT_GET:
    serve_get(h, at);
    return;
  case UZ_PKT_ACK:
    finish_wr(h.msg, UZ_S_OK, at);
    return;
  case UZ_PKT_NACK:
    reads_.erase(h.msg); // (a READ's, if it was one)
    finish_wr(h.msg,
              h.status ? uint32_t(h.status) : uint32_t(UZ_S_REMOTE_TRANSLATION),
              at);
    return;
  default:
    ++dropped_;
  }
}

// An eager message: into the next slot of the receive ring, header last
// (one DMA: the host sees the slot's number only with the whole slot).
void Engine::place_eager(const uz_wire_header &h, std::vector<uint8_t> data,
                         Time at) {
  uint32_t entries = ring(kRxEntries);
  if (!entries || rx_placed_ - rx_freed_ >= entries || h.len > UZ_EAGER_MAX) {
    ++dropped_;
    post_event(UZ_EV_REFUSED, h.msg, UZ_S_NO_ROOM, h.src, at);
    send_small(h.src, UZ_PKT_NACK, h.msg, UZ_S_NO_ROOM, at);
    return;
  }
  uint32_t seq = ++rx_placed_;
  uint64_t bus = ring(kRx) + uint64_t((seq - 1) % entries) * UZ_RX_SLOT_BYTES;
  uz_rx_header rh{};
  rh.seq = seq;
  rh.src = h.src;
  rh.tag = h.tag;
  rh.len = h.len;
  rh.imm = h.imm;
  std::vector<uint8_t> slot(UZ_RX_HEADER_BYTES + data.size());
  std::memcpy(slot.data(), &rh, sizeof rh);
  std::copy(data.begin(), data.end(), slot.begin() + UZ_RX_HEADER_BYTES);
  Work placed;
  placed.kind = kEagerPlaced;
  placed.u[0] = seq;
  placed.u[1] = h.src;
  placed.u[2] = h.msg;
  placed.w = bus;
  placed.times = receiving_;
  uint32_t bytes = uint32_t(slot.size());
  placed.bytes = std::move(slot);
  dma(true, bytes, at, std::move(placed));
}

// Data for a virtual address (an RDMA write, or the answer to this node's
// GET): translated page by page, DMA'd into host memory. A message whose
// page fails is refused as a whole from that frame on.
void Engine::place_put(const uz_wire_header &h, std::vector<uint8_t> data,
                       Time at) {
  auto key = std::make_pair(uint32_t(h.src), h.msg);
  Incoming &in = incoming_[key];
  bool last = h.flags & UZ_W_LAST;
  bool answer = h.flags & UZ_W_ANSWER;
  if (in.status == UZ_S_OK && !data.empty()) {
    Translation t;
    if (answer) {
      // This node's READ: placed where the card translated it to.
      auto read = reads_.find(h.msg);
      if (read == reads_.end())
        t.status = UZ_S_TRANSLATION;
      else
        t.pieces = pieces_at(read->second, h.offset, uint32_t(data.size()));
    } else if (std::optional<uz_datatype> type = carried_layout(h)) {
      // Only the origin knew the layout: the frame carries it.
      std::vector<std::pair<uint64_t, uint32_t>> ranges;
      if (type->count == 0 || type->block == 0)
        t.status = UZ_S_BAD_COMMAND;
      else {
        layout(*type, h.addr, h.offset, uint32_t(data.size()), ranges);
        t = translate_ranges(ranges, UZ_TE_VALID | UZ_TE_WRITE);
      }
    } else {
      t = translate(h.addr + h.offset, uint32_t(data.size()),
                    UZ_TE_VALID | UZ_TE_WRITE);
    }
    if (t.status != UZ_S_OK) {
      in.status = answer ? UZ_S_TRANSLATION : UZ_S_REMOTE_TRANSLATION;
      ++dropped_;
    } else {
      Time start = at + t.cost;
      uint32_t bytes = uint32_t(data.size());
      Work placed;
      placed.kind = kPutPlaced;
      placed.pieces = std::move(t.pieces);
      placed.bytes = std::move(data);
      uint32_t count = uint32_t(placed.pieces.size());
      dma(true, bytes, start, std::move(placed), count);
      at = bus_.free_at(); // the answer goes out once the data has landed
    }
  }
  if (!last)
    return;
  uint32_t status = in.status;
  incoming_.erase(key);
  if (answer) {
    reads_.erase(h.msg);
    finish_wr(h.msg, status, at); // this node's READ is done
    return;
  }
  send_small(h.src, status == UZ_S_OK ? UZ_PKT_ACK : UZ_PKT_NACK, h.msg, status,
             at);
}

// A GET: the data at `addr` (in the layout the GET carries, if any) goes
// back as PUT frames, like an RDMA write the hardware starts by itself;
// the requester's card knows where they go.
void Engine::serve_get(const uz_wire_header &h, Time at) {
  Translation t;
  if (std::optional<uz_datatype> type = carried_layout(h)) {
    std::vector<std::pair<uint64_t, uint32_t>> ranges;
    if (type->count == 0 || type->block == 0)
      t.status = UZ_S_BAD_COMMAND;
    else {
      layout(*type, h.addr, 0, h.len, ranges);
      t = translate_ranges(ranges, UZ_TE_VALID | UZ_TE_READ);
    }
  } else {
    t = translate(h.addr, h.len, UZ_TE_VALID | UZ_TE_READ);
  }
  if (t.status != UZ_S_OK || h.len == 0) {
    ++dropped_;
    send_small(h.src, UZ_PKT_NACK, h.msg, UZ_S_REMOTE_TRANSLATION, at + t.cost);
    return;
  }
  Outgoing out;
  out.op = 0; // an answer
  out.node = h.src;
  out.msg = h.msg;
  out.len = h.len;
  out.source = std::move(t.pieces);
  start_outgoing(std::move(out), at + t.cost);
}

// ---- Pending work, events and checkpoints ----------------------------------

uint64_t Engine::keep(Work w) {
  work_.emplace(next_work_, std::move(w));
  return next_work_++;
}

void Engine::run_work(uint64_t id, Time end) {
  auto it = work_.find(id);
  Work w = std::move(it->second); // restore_event checked it is there
  work_.erase(it);
  HostMemory *host = card_.host_memory();
  switch (w.kind) {
  case kCqEntry: {
    uz_cqe e{w.u[0], w.u[1], w.cookie};
    if (host)
      host->write(w.w, &e, sizeof e);
    cq_count_ = w.u[0];
    return;
  }
  case kCommandLands: {
    const uint32_t seq = w.u[0];
    uint8_t cmd[UZ_CMD_BYTES] = {};
    if (host && host->read(w.w, cmd, sizeof cmd))
      card_.card_write(w.u[1], cmd, sizeof cmd);
    if (int32_t(seq - cmd_landed_) > 0)
      cmd_landed_ = seq;
    post_event(UZ_EV_COMMAND, seq, UZ_S_OK, 0, end);
    command_landed_[seq] = end;
    if (command_landed_.size() > 64)
      command_landed_.erase(command_landed_.begin());
    return;
  }
  case kWrCopy: {
    const bool to_host = w.u[0] != 0;
    const uint32_t bytes = w.u[1], card = w.u[3];
    std::vector<uint8_t> data(bytes);
    bool ok = host != nullptr;
    if (ok && to_host)
      ok = card_.card_read(card, data.data(), bytes) &&
           host->write(w.w, data.data(), bytes);
    else if (ok)
      ok = host->read(w.w, data.data(), bytes) &&
           card_.card_write(card, data.data(), bytes);
    finish_wr(w.u[2], ok ? UZ_S_OK : UZ_S_TRANSLATION, end);
    return;
  }
  case kFrame:
    return frame_read(w, end);
  case kEagerPlaced:
    if (host)
      host->write(w.w, w.bytes.data(), w.bytes.size());
    rx_count_ = w.u[0];
    last_received_ = w.times;
    last_received_.placed = end;
    send_small(w.u[1], UZ_PKT_ACK, w.u[2], UZ_S_OK, end); // the SEND's
    return;
  case kPutPlaced: {
    uint32_t done = 0;
    for (const Piece &p : w.pieces) {
      if (host)
        host->write(p.bus, w.bytes.data() + done, p.len);
      done += p.len;
    }
    return;
  }
  case kLoopback: {
    const Time parsed = w.w;
    if (w.header.type == UZ_PKT_EAGER)
      receiving_ = {0, parsed, parsed, 0};
    on_frame(w.header, std::move(w.bytes), parsed);
    return;
  }
  }
}

// A frame's data is read from host memory: it goes out, and the next
// frame's DMA starts (the bus is free for it now).
void Engine::frame_read(const Work &w, Time end) {
  const uint32_t id = w.u[0], n = w.u[1], offset = w.u[2];
  const bool last = w.u[3] != 0;
  Outgoing &o = outgoing_.at(id);
  std::vector<uint8_t> data(n);
  uint32_t filled = 0;
  HostMemory *host = card_.host_memory();
  for (const Piece &p : w.pieces) {
    if (host)
      host->read(p.bus, data.data() + filled, p.len);
    filled += p.len;
  }
  uz_wire_header h{};
  h.type = o.op == UZ_WR_SEND ? UZ_PKT_EAGER : UZ_PKT_PUT;
  h.flags = uint8_t((last ? UZ_W_LAST : 0) | (o.op == 0 ? UZ_W_ANSWER : 0));
  h.src = uint16_t(card_.node_id());
  h.msg = o.msg;
  h.len = o.len;
  h.offset = offset;
  h.addr = o.remote;
  h.tag = o.tag;
  h.imm = o.imm;
  if (o.typed) // the remote layout travels with every frame
    set_layout(h, o.remote_type);
  Time ready = end + figures_.send_non_pl4 + figures_.send_pl4;
  uint64_t packet = send_frame_to(o.node, h, std::move(data), ready);
  if (o.op == UZ_WR_SEND && packet) {
    pending_.packet = packet;
    pending_.data = end;
    pending_.ready = ready;
    pending_.head = ready + figures_.mac_send;
    last_sent_ = pending_;
  }
  if (!last) {
    next_frame(id, end);
    return;
  }
  // A SEND or WRITE is done when the target answers (ACK: placed; NACK:
  // refused, with why); a GET's answer needs no answer.
  outgoing_.erase(id);
}

const char *Engine::event_name(uint32_t kind) {
  switch (kind) {
  case kEngineEvent:
    return "uzura: event";
  case kDmaEnd:
    return "uzura: dma";
  case kPolledLanded:
    return "uzura: polled command";
  case kLoopbackIn:
    return "uzura: loopback";
  case kFrameSent:
    return "uzura: frame sent";
  default:
    return nullptr;
  }
}

std::function<void()> Engine::event_action(uint32_t kind, uint64_t a,
                                           uint64_t b, Time when) {
  if (kind == kEngineEvent)
    return [this, a, b] {
      const uint32_t words[4] = {uint32_t(a), uint32_t(a >> 32), uint32_t(b),
                                 uint32_t(b >> 32)};
      write_event(words);
    };
  return [this, a, when] { run_work(a, when); };
}

namespace {

constexpr uint64_t kMaxItems = 1 << 20;
constexpr uint32_t kMaxCopy = 1u << 28; // a FETCH or STORE (256 MiB)

} // namespace

void Engine::save_state(StateWriter &out) const {
  out.section("uzura engine");
  auto pieces = [&out](const std::vector<Piece> &list) {
    out.u64(list.size());
    for (const Piece &p : list)
      out.fields(p.bus, p.len);
  };
  plain_fields(*this, out);
  out.fields(bus_.free_at(), bus_.busy_total());
  out.u64(outgoing_.size());
  for (const auto &[id, o] : outgoing_) {
    out.u32(id);
    outgoing_fields(o, out);
    pieces(o.source);
  }
  out.u64(incoming_.size());
  for (const auto &[key, in] : incoming_)
    out.fields(key.first, key.second, in.status);
  out.u64(reads_.size());
  for (const auto &[msg, list] : reads_) {
    out.u32(msg);
    pieces(list);
  }
  out.u64(command_landed_.size());
  for (const auto &[seq, t] : command_landed_)
    out.fields(seq, t);
  out.u64(work_.size());
  for (const auto &[id, w] : work_) {
    out.fields(id, w.kind, w.u, w.w, w.cookie, w.bytes, w.times);
    pieces(w.pieces);
    out.raw(&w.header, sizeof w.header);
  }
}

void Engine::load_state(StateReader &in) {
  in.section("uzura engine");
  auto pieces = [&in] {
    std::vector<Piece> list(in.count(kMaxItems));
    for (Piece &p : list)
      in.fields(p.bus, p.len);
    return list;
  };
  plain_fields(*this, in);
  Time free_at = 0, busy = 0;
  in.fields(free_at, busy);
  bus_.restore(free_at, busy);
  bus_.set_polling((notify_ & 0xFF) == UZ_NOTIFY_NIC_POLLS
                       ? figures_.nic_poll_host_memory
                       : 0);
  outgoing_.clear();
  for (uint64_t n = in.count(kMaxItems); n--;) {
    uint32_t id = 0;
    Outgoing o;
    in.fields(id);
    outgoing_fields(o, in);
    o.source = pieces();
    if (o.sent > o.len || id >= next_outgoing_)
      in.fail("a UZURA message sent past its length, or numbered ahead");
    outgoing_[id] = std::move(o);
  }
  incoming_.clear();
  for (uint64_t n = in.count(kMaxItems); n--;) {
    uint32_t src = 0, msg = 0;
    Incoming i;
    in.fields(src, msg, i.status);
    incoming_[{src, msg}] = i;
  }
  reads_.clear();
  for (uint64_t n = in.count(kMaxItems); n--;) {
    uint32_t msg = in.u32();
    reads_[msg] = pieces();
  }
  command_landed_.clear();
  for (uint64_t n = in.count(kMaxItems); n--;) {
    uint32_t seq = 0;
    Time t = 0;
    in.fields(seq, t);
    command_landed_[seq] = t;
  }
  work_.clear();
  for (uint64_t n = in.count(kMaxItems); n--;) {
    uint64_t id = 0;
    Work w;
    in.fields(id, w.kind, w.u, w.w, w.cookie, w.bytes, w.times);
    w.pieces = pieces();
    in.raw(&w.header, sizeof w.header);
    // What run_work reads must be there: the frame's message, data for
    // every piece.
    uint64_t covered = 0;
    for (const Piece &p : w.pieces)
      covered += p.len;
    if (id >= next_work_ || work_.count(id) || w.kind >= kWorkKinds ||
        (w.kind == kFrame && (!outgoing_.count(w.u[0]) ||
                              w.u[1] > UZ_FRAME_DATA || covered > w.u[1])) ||
        (w.kind == kWrCopy && w.u[1] > kMaxCopy) ||
        (w.kind == kPutPlaced && covered > w.bytes.size()))
      in.fail("a UZURA engine's pending work that cannot be done");
    work_.emplace(id, std::move(w));
  }
  restored_.clear();
  // Frames in the network: nothing to do when their tails have left.
  if (Fabric *fabric = card_.fabric())
    fabric->set_sent_maker(event_tag(kFrameSent).owner, [](const EventTag &) {
      return std::function<void(Time)>([](Time) {});
    });
}

void Engine::restore_event(Scheduler &scheduler, const SavedEvent &e) {
  const uint32_t kind = e.tag.kind;
  const bool work =
      kind == kDmaEnd || kind == kPolledLanded || kind == kLoopbackIn;
  if (!event_name(kind) || kind == kFrameSent ||
      (work && (!work_.count(e.tag.a) || !restored_.insert(e.tag.a).second)))
    throw Error("checkpoint: the UZURA engine of node " +
                std::to_string(card_.node_id()) + " has no event \"" + e.name +
                "\" of kind " + std::to_string(kind) + " for " +
                std::to_string(e.tag.a));
  scheduler.restore(e, event_name(kind),
                    event_action(kind, e.tag.a, e.tag.b, e.when));
}

} // namespace nicemu::uzura
