// nicemu/dimmnet.h over the host channel: every load and store is a sized
// access to the card's host bus (nicemu/martini.h has the map), charged by
// the card's windows. AOTF stores and BOTF kicks are posted (the host goes
// on at once, as a CPU does after an uncached store) while the card surely
// has a credit for them; the reply of a waited-for send says how many
// credits are left, so posting never hides a store the card would hold.
//
// Polling: an LLCM load's reply says until when LLCM stays as it is unless
// this process acts (Reply::stable_until). Until then the library answers
// loads of words it has loaded itself, charging the load's cost to the
// virtual clock: same values, same times, no round trip. Any store or
// request of this process forgets them.
#include "nicemu/dimmnet.h"

#include "dimmnet_card.hpp"
#include "host_end.hpp"
#include "nicemu/dimmnet_protocol.h"
#include "nicemu/error.hpp"
#include "nicemu/host.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

namespace {

using nicemu::channel::Op;
using nicemu::channel::Reply;
using nicemu::channel::Request;
using nicemu::channel::Status;

thread_local std::string last_error;
constexpr uint32_t kBurstBytes = 4096; // the largest burst the card takes

// LLCM words loaded, valid while the host's clock is before `until`.
struct LoadCache {
  struct Word {
    uint32_t offset;
    unsigned size;
    uint64_t value;
  };
  std::vector<Word> words;
  uint64_t until = 0;
  uint64_t load_ps = 0; // what one load costs (the card's figure)
  // NICEMU_DIMMNET_LOAD_CACHE=0 turns it off (every load a round trip:
  // slower in wall time, the same figures; for checking just that).
  bool enabled = true;
  void forget() {
    words.clear();
    until = 0;
  }
};
LoadCache cache; // the card's, for every dimm_card of this process
// The last mailbox request number: the mailbox is the card's, shared by
// every dimm_card of this process (set from the firmware's DONE at the
// first open).
uint32_t mailbox_seq = 0;
bool mailbox_seq_known = false;

int fail(int code, std::string why) {
  last_error = std::move(why);
  return code;
}

} // namespace

int nicemu::dimmnet::fail(int code, std::string why) {
  return ::fail(code, std::move(why));
}

namespace {

// One access through the channel; a stopping emulator is DIMM_ESTOPPED.
struct Access {
  int code = DIMM_OK;
  Reply reply;
};

Access call(dimm_card *card, Request r) {
  Access a;
  try {
    a.reply = card->end->call(r);
  } catch (const nicemu::Error &e) {
    a.code = fail(DIMM_ESTOPPED, e.what());
    return a;
  }
  if (a.reply.status == Status::Shutdown)
    a.code = fail(DIMM_ESTOPPED, "the cluster is stopping");
  else if (a.reply.status != Status::Ok)
    a.code = fail(DIMM_EINVAL, "the card refused the access");
  return a;
}

Access load(dimm_card *card, uint32_t addr, unsigned size) {
  Request r;
  r.op = Op::Read;
  r.a = addr;
  r.b = size;
  return call(card, r);
}

Access store(dimm_card *card, uint32_t addr, unsigned size, uint64_t value) {
  cache.forget();
  Request r;
  r.op = Op::Write;
  r.a = addr;
  r.b = size;
  r.arg64 = value;
  return call(card, r);
}

// A store that takes a transaction credit (an AOTF store, a BOTF kick).
int send_store(dimm_card *card, uint32_t addr, unsigned size, uint64_t value) {
  cache.forget();
  // Other processes of the node take credits too: post only when alone.
  if (card->credits_hint > 1 && card->end->per_node() == 1) {
    try {
      if (card->end->post_write(addr, size, value)) {
        --card->credits_hint;
        return DIMM_OK;
      }
    } catch (const nicemu::Error &e) {
      return fail(DIMM_ESTOPPED, e.what());
    }
  }
  Access a = store(card, addr, size, value);
  if (a.code == DIMM_OK)
    card->credits_hint = a.reply.value;
  return a.code;
}

uint32_t box_word(unsigned offset) {
  return NICEMU_MARTINI_HOST_PRIV + offset;
}

// A word of this process's mailbox slot (its index on the node).
uint32_t slot_word(const dimm_card *card, unsigned offset) {
  return box_word(card->end->local() * DIMMNET_BOX_SLOT_BYTES + offset);
}

// A privileged request through the firmware's mailbox: arguments, then the
// request number; the firmware answers with RESULT and DONE.
int request(dimm_card *card, uint32_t op, const uint32_t *args,
            unsigned count) {
  int code = store(card, slot_word(card, DIMMNET_BOX_OP), 4, op).code;
  for (unsigned i = 0; code == DIMM_OK && i < count; ++i)
    code =
        store(card, slot_word(card, DIMMNET_BOX_ARG + 4 * i), 4, args[i]).code;
  uint32_t seq = mailbox_seq + 1;
  if (code == DIMM_OK)
    code = store(card, slot_word(card, DIMMNET_BOX_SEQ), 4, seq).code;
  if (code != DIMM_OK)
    return code;
  mailbox_seq = seq;
  for (;;) {
    Access done = load(card, slot_word(card, DIMMNET_BOX_DONE), 4);
    if (done.code != DIMM_OK)
      return done.code;
    if (done.reply.value == seq)
      break;
  }
  Access result = load(card, slot_word(card, DIMMNET_BOX_RESULT), 4);
  if (result.code != DIMM_OK)
    return result.code;
  switch (result.reply.value) {
  case DIMMNET_OK:
    return DIMM_OK;
  case DIMMNET_EPAGE:
    return fail(DIMM_EINVAL, "no such kick page");
  case DIMMNET_EREGION:
    return fail(DIMM_EINVAL, "no such region, or not inside LLCM");
  default:
    return fail(DIMM_EREFUSED, "the firmware refused the request");
  }
}

// The packet header as the card reads it (nicemu/martini.h): 16 bytes, 24
// with a receive-status address.
unsigned encode_header(const dimm_card *card, const dimm_header *h,
                       uint32_t length, uint8_t *out) {
  std::memset(out, 0, NICEMU_MARTINI_STATUS_HEADER_BYTES);
  uint8_t flags = 0;
  if (h->skip_translation)
    flags |= NICEMU_MARTINI_F_SKIP;
  if (h->status_address)
    flags |= NICEMU_MARTINI_F_STATUS;
  out[NICEMU_MARTINI_HDR_FLAGS] = flags;
  out[NICEMU_MARTINI_HDR_COMMAND] = uint8_t(h->command);
  out[NICEMU_MARTINI_HDR_PGID] = uint8_t(card->pgid);
  out[NICEMU_MARTINI_HDR_PID] = uint8_t(card->pid);
  out[NICEMU_MARTINI_HDR_REGION] = uint8_t(h->region);
  out[NICEMU_MARTINI_HDR_DEST] = uint8_t(h->dest_node);
  out[NICEMU_MARTINI_HDR_DEST + 1] = uint8_t(h->dest_node >> 8);
  for (int i = 0; i < 4; ++i)
    out[NICEMU_MARTINI_HDR_ADDRESS + i] = uint8_t(h->address >> (8 * i));
  out[NICEMU_MARTINI_HDR_LENGTH] = uint8_t(length);
  out[NICEMU_MARTINI_HDR_LENGTH + 1] = uint8_t(length >> 8);
  if (!h->status_address)
    return NICEMU_MARTINI_HEADER_BYTES;
  for (int i = 0; i < 4; ++i)
    out[NICEMU_MARTINI_HDR_STATUS + i] = uint8_t(h->status_offset >> (8 * i));
  return NICEMU_MARTINI_STATUS_HEADER_BYTES;
}

int check_header(const dimm_card *card, const dimm_header *h) {
  if (!h)
    return fail(DIMM_EINVAL, "no header");
  if (h->dest_node >= card->nodes && h->dest_node != DIMM_ALL_NODES)
    return fail(DIMM_EINVAL, "no node " + std::to_string(h->dest_node));
  if (h->region >= DIMM_REGIONS || h->command > 0xFF)
    return fail(DIMM_EINVAL, "region or command out of range");
  if (h->status_address && !card->status_address)
    return fail(DIMM_EINVAL, "this card's packets carry no receive-status "
                             "address (model option otf.status_address)");
  return DIMM_OK;
}

bool valid_size(unsigned size, uint32_t offset) {
  return (size == 1 || size == 2 || size == 4 || size == 8) &&
         offset % size == 0;
}

} // namespace

extern "C" {

int dimm_open(unsigned pgid, unsigned pid, dimm_card **out) {
  if (!out)
    return fail(DIMM_EINVAL, "no place for the card");
  *out = nullptr;
  if (pgid >= DIMM_GROUPS || pid >= DIMM_ANY_PID)
    return fail(DIMM_EINVAL, "process group 0-63, process 0-254");
  auto *card = new (std::nothrow) dimm_card;
  if (!card)
    return fail(DIMM_EREFUSED, "out of memory");
  try {
    (void)nicemu::host::rank(); // says hello to the emulator
    card->end = &nicemu::channel::HostEnd::from_environment();
    card->node = card->end->node();
    card->nodes = card->end->size() / card->end->per_node();
    card->burst = static_cast<uint8_t *>(nicemu::host::alloc(kBurstBytes));
    card->burst_offset = uint32_t(card->burst - card->end->arena());
  } catch (const std::exception &e) {
    delete card;
    return fail(DIMM_ENOCARD, e.what());
  }
  card->pgid = pgid;
  card->pid = pid;
  if (const char *env = std::getenv("NICEMU_DIMMNET_LOAD_CACHE"))
    cache.enabled = std::string(env) != "0";
  // The firmware says it serves once it has booted; a card with no such
  // page is not a DIMMnet card.
  for (int turn = 0;; ++turn) {
    Access ready = load(card, box_word(DIMMNET_BOX_READY), 4);
    if (ready.code != DIMM_OK || turn == 1000) {
      delete card;
      return fail(DIMM_ENOCARD, ready.code != DIMM_OK
                                    ? "not a DIMMnet (martini) card"
                                    : "the card runs no dimmnet firmware");
    }
    if (ready.reply.value == DIMMNET_READY)
      break;
    try { // a driver would sleep between looks
      nicemu::host::compute(10'000'000);
    } catch (const std::exception &e) {
      delete card;
      return fail(DIMM_ESTOPPED, e.what());
    }
  }
  // Join the group through the driver's word: the card checks this
  // process's accesses against it from now on. A process is one process
  // of one group: opening the card again must name the same.
  Access joined = load(card, NICEMU_MARTINI_HOST_JOIN, 8);
  if (joined.code == DIMM_OK && joined.reply.data != ~0ull &&
      joined.reply.data != (pgid | pid << 8)) {
    delete card;
    return fail(DIMM_EINVAL, "this process is already process " +
                                 std::to_string(joined.reply.data >> 8) +
                                 " of group " +
                                 std::to_string(joined.reply.data & 0xFF));
  }
  if (store(card, NICEMU_MARTINI_HOST_JOIN, 8, pgid | pid << 8).code !=
      DIMM_OK) {
    delete card;
    return fail(DIMM_ENOCARD, "the card refused the process group");
  }
  Access seq = load(card, slot_word(card, DIMMNET_BOX_DONE), 4);
  Access credits =
      load(card, NICEMU_MARTINI_HOST_STATUS + NICEMU_MARTINI_STATUS_CREDITS, 8);
  if (seq.code != DIMM_OK || credits.code != DIMM_OK) {
    delete card;
    return fail(DIMM_ENOCARD, "the card's status pages do not answer");
  }
  if (!mailbox_seq_known) {
    mailbox_seq = seq.reply.value;
    mailbox_seq_known = true;
  }
  card->credits_hint = uint32_t(credits.reply.data);
  Access features = load(
      card, NICEMU_MARTINI_HOST_STATUS + NICEMU_MARTINI_STATUS_FEATURES, 8);
  card->status_address =
      features.code == DIMM_OK &&
      (features.reply.data & NICEMU_MARTINI_FEATURE_STATUS_ADDRESS);
  // The windows: as many kick words as the card answers for.
  while (
      card->windows < 64 &&
      load(card, NICEMU_MARTINI_HOST_BOTF_KICK + 8 * card->windows, 8).code ==
          DIMM_OK)
    ++card->windows;
  last_error.clear();
  *out = card;
  return DIMM_OK;
}

int dimm_close(dimm_card *card) {
  delete card;
  return DIMM_OK;
}

int dimm_node(const dimm_card *card) {
  return card ? int(card->node) : DIMM_EINVAL;
}

int dimm_nodes(const dimm_card *card) {
  return card ? int(card->nodes) : DIMM_EINVAL;
}

int dimm_set_seed(dimm_card *card, unsigned page, const dimm_header *seed) {
  if (!card)
    return fail(DIMM_EINVAL, "no card");
  if (int code = check_header(card, seed); code != DIMM_OK)
    return code;
  if (page >= DIMM_KICK_PAGES || seed->address % DIMM_PAGE_BYTES)
    return fail(DIMM_EINVAL, "page below DIMM_KICK_PAGES, address a "
                             "multiple of the page size");
  uint8_t bytes[NICEMU_MARTINI_SEED_BYTES] = {};
  encode_header(card, seed, 0, bytes);
  uint32_t args[1 + NICEMU_MARTINI_SEED_BYTES / 4];
  args[0] = page;
  std::memcpy(args + 1, bytes, sizeof bytes);
  return request(card, DIMMNET_OP_SET_SEED, args, 9);
}

int dimm_clear_seed(dimm_card *card, unsigned page) {
  if (!card || page >= DIMM_KICK_PAGES)
    return fail(DIMM_EINVAL, "no card, or no such page");
  uint32_t arg = page;
  return request(card, DIMMNET_OP_CLEAR_SEED, &arg, 1);
}

int dimm_open_region(dimm_card *card, unsigned region, uint32_t address,
                     uint32_t bytes, unsigned writer_pid) {
  if (!card || region >= DIMM_REGIONS || writer_pid > DIMM_ANY_PID)
    return fail(DIMM_EINVAL, "no card, or region/process out of range");
  uint32_t args[4] = {region, address, bytes,
                      card->pgid | uint32_t(writer_pid) << 8};
  return request(card, DIMMNET_OP_OPEN_REGION, args, 4);
}

int dimm_close_region(dimm_card *card, unsigned region) {
  if (!card || region >= DIMM_REGIONS)
    return fail(DIMM_EINVAL, "no card, or no such region");
  uint32_t arg = region;
  return request(card, DIMMNET_OP_CLOSE_REGION, &arg, 1);
}

int dimm_aotf_store(dimm_card *card, unsigned page, unsigned offset,
                    const void *data, unsigned size) {
  if (!card || !data || page >= NICEMU_MARTINI_KICK_PAGES ||
      offset >= DIMM_PAGE_BYTES || !valid_size(size, offset))
    return fail(DIMM_EINVAL, "an AOTF store is 1, 2, 4 or 8 bytes, aligned, "
                             "inside one kick page");
  uint64_t value = 0;
  std::memcpy(&value, data, size);
  return send_store(card, NICEMU_MARTINI_HOST_KICK + (page << 12) + offset,
                    size, value);
}

int dimm_aotf_store64(dimm_card *card, unsigned page, unsigned offset,
                      uint64_t value) {
  return dimm_aotf_store(card, page, offset, &value, 8);
}

int dimm_botf_status(dimm_card *card, unsigned window, unsigned *status) {
  if (!card || !status || window >= card->windows)
    return fail(DIMM_EINVAL, "no card, or no such window");
  Access a = load(card, NICEMU_MARTINI_HOST_BOTF_KICK + 8 * window, 8);
  if (a.code == DIMM_OK)
    *status = unsigned(a.reply.data);
  return a.code;
}

int dimm_botf_windows(const dimm_card *card) {
  return card ? int(card->windows) : DIMM_EINVAL;
}

int dimm_botf_send(dimm_card *card, unsigned window, const dimm_header *h,
                   const void *data, unsigned len) {
  if (!card || window >= card->windows)
    return fail(DIMM_EINVAL, "no card, or no such window");
  if (int code = check_header(card, h); code != DIMM_OK)
    return code;
  if (!data || len == 0 || len > DIMM_BOTF_MAX)
    return fail(DIMM_EINVAL, "a BOTF packet carries 1-464 bytes");
  unsigned status = 0;
  if (int code = dimm_botf_status(card, window, &status); code != DIMM_OK)
    return code;
  if (status & NICEMU_MARTINI_BOTF_BUSY)
    return fail(DIMM_EBUSY, "the window is still sending");
  unsigned header = encode_header(card, h, len, card->burst);
  std::memcpy(card->burst + header, data, len);
  Request burst;
  burst.op = Op::WriteBlock;
  burst.a = NICEMU_MARTINI_HOST_BOTF + window * NICEMU_MARTINI_BOTF_STRIDE;
  burst.b = header + len;
  burst.c = card->burst_offset;
  cache.forget();
  if (int code = call(card, burst).code; code != DIMM_OK)
    return code;
  return send_store(card, NICEMU_MARTINI_HOST_BOTF_KICK + 8 * window, 8, 1);
}

int dimm_llcm_load(dimm_card *card, uint32_t offset, void *out, unsigned size) {
  if (!card || !out || !valid_size(size, offset) ||
      offset + size > DIMM_LLCM_BYTES)
    return fail(DIMM_EINVAL, "an LLCM load is 1, 2, 4 or 8 aligned bytes");
  uint64_t t = card->end->time();
  if (t < cache.until)
    for (const LoadCache::Word &w : cache.words)
      if (w.offset == offset && w.size == size) {
        card->end->charge(cache.load_ps);
        std::memcpy(out, &w.value, size);
        return DIMM_OK;
      }
  Access a = load(card, NICEMU_MARTINI_HOST_LLCM + offset, size);
  if (a.code != DIMM_OK)
    return a.code;
  std::memcpy(out, &a.reply.data, size);
  // The words loaded so far stay valid under the newer promise too if the
  // older one still held at this load.
  if (t >= cache.until)
    cache.words.clear();
  if (cache.enabled && a.reply.stable_until > t) {
    cache.until = std::max<uint64_t>(cache.until, a.reply.stable_until);
    cache.load_ps = a.reply.time - t;
    if (cache.words.size() == 8)
      cache.words.erase(cache.words.begin());
    cache.words.push_back({offset, size, a.reply.data});
  } else {
    cache.forget();
  }
  return DIMM_OK;
}

uint64_t dimm_llcm_load64(dimm_card *card, uint32_t offset) {
  uint64_t v = 0;
  dimm_llcm_load(card, offset, &v, 8);
  return v;
}

int dimm_llcm_store(dimm_card *card, uint32_t offset, const void *data,
                    unsigned size) {
  if (!card || !data || !valid_size(size, offset) ||
      offset + size > DIMM_LLCM_BYTES)
    return fail(DIMM_EINVAL, "an LLCM store is 1, 2, 4 or 8 aligned bytes");
  uint64_t value = 0;
  std::memcpy(&value, data, size);
  return store(card, NICEMU_MARTINI_HOST_LLCM + offset, size, value).code;
}

int dimm_llcm_store64(dimm_card *card, uint32_t offset, uint64_t value) {
  return dimm_llcm_store(card, offset, &value, 8);
}

uint64_t dimm_llcm_wait64(dimm_card *card, uint32_t offset, uint64_t mask,
                          uint64_t expected) {
  for (;;) {
    uint64_t v = 0;
    if (dimm_llcm_load(card, offset, &v, 8) != DIMM_OK)
      return v;
    if ((v & mask) == expected)
      return v;
  }
}

int dimm_bank_switch(dimm_card *card, unsigned bank, unsigned side) {
  if (!card || bank > 1 || side > DIMM_SIDE_NIC)
    return fail(DIMM_EINVAL, "bank 0 or 1, side DIMM_SIDE_HOST or _NIC");
  return store(card, NICEMU_MARTINI_HOST_BANKS + 8 * bank, 8, side).code;
}

int dimm_bank_side(dimm_card *card, unsigned bank, unsigned *side) {
  if (!card || bank > 1 || !side)
    return fail(DIMM_EINVAL, "bank 0 or 1");
  Access a = load(card, NICEMU_MARTINI_HOST_BANKS + 8 * bank, 8);
  if (a.code == DIMM_OK)
    *side = unsigned(a.reply.data);
  return a.code;
}

// A bank in bursts through the arena scratch; the card refuses a bank that
// faces it.
static int bank_burst(dimm_card *card, unsigned bank, uint32_t offset,
                      uint8_t *data, size_t len, bool write) {
  if (!card || bank > 1 || (len && !data))
    return fail(DIMM_EINVAL, "bank 0 or 1, and a buffer");
  uint32_t base = bank ? NICEMU_MARTINI_HOST_BANK1 : NICEMU_MARTINI_HOST_BANK0;
  if (write)
    cache.forget();
  for (size_t done = 0; done < len;) {
    uint32_t n = uint32_t(std::min<size_t>(kBurstBytes, len - done));
    if (offset + done + n > NICEMU_MARTINI_SPACE_BYTES)
      return fail(DIMM_EINVAL, "past the bank");
    Request r;
    r.op = write ? Op::WriteBlock : Op::ReadBlock;
    r.a = base + uint32_t(offset + done);
    r.b = n;
    r.c = card->burst_offset;
    if (write)
      std::memcpy(card->burst, data + done, n);
    Access a = call(card, r);
    if (a.code != DIMM_OK)
      return fail(a.code, "the bank refused the burst (it faces the card, "
                          "or the range is past it)");
    if (!write)
      std::memcpy(data + done, card->burst, n);
    done += n;
  }
  return DIMM_OK;
}

int dimm_bank_write(dimm_card *card, unsigned bank, uint32_t offset,
                    const void *data, size_t len) {
  return bank_burst(card, bank, offset,
                    const_cast<uint8_t *>(static_cast<const uint8_t *>(data)),
                    len, true);
}

int dimm_bank_read(dimm_card *card, unsigned bank, uint32_t offset, void *out,
                   size_t len) {
  return bank_burst(card, bank, offset, static_cast<uint8_t *>(out), len,
                    false);
}

// The descriptor's words, then the kick (waited for: a busy engine or a bad
// descriptor is refused at once).
static int rdma_start(dimm_card *card, const dimm_rdma *t, uint32_t op,
                      bool notify = false, uint32_t status_offset = 0) {
  if (!card || !t)
    return fail(DIMM_EINVAL, "no card or no transfer");
  if (t->node >= card->nodes || t->local_region >= DIMM_REGIONS ||
      t->remote_region >= DIMM_REGIONS || t->bytes == 0 ||
      t->bytes > (16u << 20))
    return fail(DIMM_EINVAL, "a node there is, regions 0-63, 1 byte to 16 MiB");
  unsigned status = 0;
  Access s =
      load(card, NICEMU_MARTINI_HOST_RDMA + NICEMU_MARTINI_RDMA_STATUS, 8);
  if (s.code != DIMM_OK)
    return s.code;
  status = unsigned(s.reply.data);
  if (status & NICEMU_MARTINI_RDMA_BUSY)
    return fail(DIMM_EBUSY, "a PUSH or PULL is still running");
  // The receive-status word: written only when it changes.
  if (notify && !card->status_address)
    return fail(DIMM_EINVAL, "this card's packets carry no receive-status "
                             "address (model option otf.status_address)");
  if (notify || card->notify_set) {
    uint64_t word = notify ? NICEMU_MARTINI_NOTIFY_ON | status_offset : 0;
    Access a = store(
        card, NICEMU_MARTINI_HOST_RDMA + NICEMU_MARTINI_RDMA_NOTIFY, 8, word);
    if (a.code != DIMM_OK)
      return a.code;
    card->notify_set = notify;
  }
  const uint64_t words[][2] = {
      {NICEMU_MARTINI_RDMA_LOCAL, t->local},
      {NICEMU_MARTINI_RDMA_REMOTE, t->remote},
      {NICEMU_MARTINI_RDMA_LENGTH, t->bytes},
      {NICEMU_MARTINI_RDMA_TARGET,
       t->node | t->remote_region << 16 | uint64_t(t->local_region) << 24},
      {NICEMU_MARTINI_RDMA_OWNER, card->pgid | card->pid << 8},
      {NICEMU_MARTINI_RDMA_KICK, op}};
  for (const auto &w : words) {
    Access a = store(card, NICEMU_MARTINI_HOST_RDMA + uint32_t(w[0]), 8, w[1]);
    if (a.code != DIMM_OK)
      return a.code;
  }
  return DIMM_OK;
}

int dimm_push(dimm_card *card, const dimm_rdma *transfer) {
  return rdma_start(card, transfer, NICEMU_MARTINI_PUSH);
}

int dimm_push_status(dimm_card *card, const dimm_rdma *transfer,
                     uint32_t status_offset) {
  if (status_offset >= DIMM_LLCM_BYTES || status_offset % 4)
    return fail(DIMM_EINVAL, "the status word is 4 aligned bytes of LLCM");
  return rdma_start(card, transfer, NICEMU_MARTINI_PUSH, true, status_offset);
}

int dimm_pull(dimm_card *card, const dimm_rdma *transfer) {
  return rdma_start(card, transfer, NICEMU_MARTINI_PULL);
}

int dimm_rdma_wait(dimm_card *card) {
  if (!card)
    return fail(DIMM_EINVAL, "no card");
  for (;;) {
    Access a =
        load(card, NICEMU_MARTINI_HOST_RDMA + NICEMU_MARTINI_RDMA_STATUS, 8);
    if (a.code != DIMM_OK)
      return a.code;
    uint64_t status = a.reply.data;
    if (status & NICEMU_MARTINI_RDMA_BUSY)
      continue;
    if (!(status & NICEMU_MARTINI_RDMA_ERROR))
      return DIMM_OK;
    switch ((status >> 8) & 0xFF) {
    case NICEMU_MARTINI_RDMA_ELOCAL:
      return fail(DIMM_EREFUSED, "the local range is not inside the local "
                                 "region, or its bank faces the host");
    case NICEMU_MARTINI_RDMA_EREMOTE:
      return fail(DIMM_EREFUSED, "the other node refused the remote range "
                                 "(its region, or its bank faces its host)");
    default:
      return fail(DIMM_EREFUSED, "the transfer failed");
    }
  }
}

static int status_word(dimm_card *card, uint32_t offset, unsigned *out) {
  if (!card || !out)
    return fail(DIMM_EINVAL, "no card");
  Access a = load(card, NICEMU_MARTINI_HOST_STATUS + offset, 8);
  if (a.code == DIMM_OK)
    *out = unsigned(a.reply.data);
  return a.code;
}

int dimm_credits(dimm_card *card, unsigned *credits) {
  return status_word(card, NICEMU_MARTINI_STATUS_CREDITS, credits);
}

int dimm_rejected(dimm_card *card, unsigned *rejected) {
  return status_word(card, NICEMU_MARTINI_STATUS_REJECTED, rejected);
}

int dimm_dropped(dimm_card *card, unsigned *dropped) {
  return status_word(card, NICEMU_MARTINI_STATUS_DROPPED, dropped);
}

int dimm_firmware_counters(dimm_card *card, dimm_counters *counters) {
  if (!card || !counters)
    return fail(DIMM_EINVAL, "no card");
  const uint32_t offsets[] = {DIMMNET_BOX_STAT_MISSES, DIMMNET_BOX_STAT_REJECTS,
                              DIMMNET_BOX_STAT_COMMANDS,
                              DIMMNET_BOX_STAT_UNKNOWN,
                              DIMMNET_BOX_STAT_REFUSED};
  unsigned *fields[] = {&counters->misses, &counters->rejects,
                        &counters->commands, &counters->unknown_commands,
                        &counters->refused_commands};
  for (size_t i = 0; i < 5; ++i) {
    Access a = load(card, box_word(offsets[i]), 4);
    if (a.code != DIMM_OK)
      return a.code;
    *fields[i] = a.reply.value;
  }
  return DIMM_OK;
}

double dimm_time_ns(dimm_card *) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts); // the clock shim: virtual time
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

const char *dimm_strerror(int code) {
  switch (code) {
  case DIMM_OK:
    return "no error";
  case DIMM_EINVAL:
    return "bad argument";
  case DIMM_EBUSY:
    return "the BOTF window is still sending";
  case DIMM_ENOCARD:
    return "no DIMMnet card (run under nicemu with --model martini and the "
           "dimmnet firmware)";
  case DIMM_EREFUSED:
    return "the card refused";
  case DIMM_ESTOPPED:
    return "the emulator is stopping";
  default:
    return "unknown error";
  }
}

const char *dimm_last_error(void) {
  return last_error.c_str();
}

} // extern "C"
