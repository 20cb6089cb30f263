#include "host/host_tape.hpp"

#include "host/agent.hpp"
#include "nicemu/error.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace nicemu {

using channel::ControlBlock;
using channel::Reply;
using channel::Request;

namespace {

constexpr char kMagic[] = "NICEMU-RECORDING";
constexpr size_t kMagicSize = sizeof kMagic - 1;

// "3.25 us": a virtual time for people.
std::string at_time(uint64_t ps) {
  char text[48];
  std::snprintf(text, sizeof text, "%.6f us", double(ps) / 1e6);
  return text;
}

// Little-endian fields, one after another.
class Writer {
public:
  void u8(uint8_t v) { out_.push_back(char(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      out_.push_back(char(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      out_.push_back(char(v >> (8 * i)));
  }
  void bytes(const void *p, size_t n) {
    u64(n);
    out_.append(static_cast<const char *>(p), n);
  }
  void text(const std::string &s) { bytes(s.data(), s.size()); }
  void request(const Request &r) {
    u32(uint32_t(r.op));
    u32(r.a);
    u32(r.b);
    u32(r.c);
    u64(r.arg64);
    u64(r.time);
  }
  void reply(const Reply &r) {
    u32(uint32_t(r.status));
    u32(r.value);
    u64(r.time);
    u32(r.word);
    u64(r.data);
    u64(r.stable_until);
  }
  const std::string &data() const { return out_; }

private:
  std::string out_;
};

// Reads what Writer wrote; a field past the end is a damaged file.
class Reader {
public:
  Reader(const std::string &in, const std::string &path)
      : in_(in), path_(path) {}
  uint8_t u8() { return uint8_t(*take(1)); }
  uint32_t u32() {
    const char *p = take(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= uint32_t(uint8_t(p[i])) << (8 * i);
    return v;
  }
  uint64_t u64() {
    const char *p = take(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= uint64_t(uint8_t(p[i])) << (8 * i);
    return v;
  }
  // A count of items at least `item_size` bytes each: never more than
  // what is left could hold, so that a damaged count allocates nothing.
  uint64_t count(size_t item_size) {
    uint64_t n = u64();
    if (n > (in_.size() - pos_) / std::max<size_t>(item_size, 1))
      damaged("a count larger than the file");
    return n;
  }
  std::string text() {
    uint64_t n = count(1);
    return std::string(take(n), n);
  }
  std::vector<uint8_t> blob() {
    uint64_t n = count(1);
    const char *p = take(n);
    return std::vector<uint8_t>(p, p + n);
  }
  Request request() {
    Request r;
    r.op = channel::Op(u32());
    r.a = u32();
    r.b = u32();
    r.c = u32();
    r.arg64 = u64();
    r.time = u64();
    return r;
  }
  Reply reply() {
    Reply r;
    r.status = channel::Status(int32_t(u32()));
    r.value = u32();
    r.time = u64();
    r.word = u32();
    r.data = u64();
    r.stable_until = u64();
    return r;
  }
  bool at_end() const { return pos_ == in_.size(); }
  size_t left() const { return in_.size() - pos_; }
  [[noreturn]] void damaged(const std::string &why) const {
    throw Error(path_ + ": not a nicemu recording, or a damaged one (" + why +
                ")");
  }

private:
  const char *take(uint64_t n) {
    if (n > in_.size() - pos_)
      damaged("it ends too soon");
    const char *p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  const std::string &in_;
  const std::string &path_;
  size_t pos_ = 0;
};

constexpr size_t kRequestBytes = 4 * 4 + 2 * 8;

bool same(const Reply &a, const Reply &b) {
  return a.status == b.status && a.value == b.value && a.time == b.time &&
         a.word == b.word && a.data == b.data &&
         a.stable_until == b.stable_until;
}

std::string describe(const Reply &r) {
  std::string s = "at " + at_time(r.time) + ", status " +
                  std::to_string(int(r.status)) + ", value " +
                  std::to_string(r.value);
  if (r.data)
    s += ", data " + std::to_string(r.data);
  if (r.stable_until)
    s += ", stable until " + at_time(r.stable_until);
  return s;
}

} // namespace

void HostTape::set_ranks(uint32_t ranks, uint32_t per_node) {
  tapes_.resize(ranks);
  per_node_ = per_node ? per_node : 1;
}

void HostTape::took_request(uint32_t rank, const ControlBlock &cb,
                            const Request &r) {
  Action a;
  uint32_t polls = std::min(cb.local_polls, channel::kMaxLocalPolls);
  a.local_polls.assign(cb.local_poll_start, cb.local_poll_start + polls);
  a.posted = cb.posted_seq.load(std::memory_order_acquire) !=
             cb.posted_taken.load(std::memory_order_relaxed);
  if (a.posted)
    a.posted_write = cb.posted;
  a.request = r;
  tapes_[rank].actions.push_back(std::move(a));
}

void HostTape::process_ended(uint32_t rank, int status, bool during_run,
                             bool busy) {
  RankTape &t = tapes_[rank];
  t.status = status;
  t.by_itself = during_run;
  t.in_call = busy;
}

void HostTape::arena_read(uint32_t rank, uint64_t now, uint64_t offset,
                          uint8_t *where, size_t len) {
  RankTape &t = tapes_[rank];
  if (!playing()) {
    t.reads.push_back({offset, uint32_t(len), t.bytes.size()});
    t.bytes.insert(t.bytes.end(), where, where + len);
    return;
  }
  if (!divergence_.empty())
    return;
  if (t.next_read == t.reads.size()) {
    diverged(rank, now,
             "the card reads " + std::to_string(len) +
                 " bytes of host memory at arena offset " +
                 std::to_string(offset) +
                 "; the recording has no more reads of that host's memory");
    return;
  }
  const Read &rec = t.reads[t.next_read++];
  if (rec.offset != offset || rec.len != len) {
    diverged(rank, now,
             "the card reads " + std::to_string(len) +
                 " bytes of host memory at arena offset " +
                 std::to_string(offset) + "; the recording read " +
                 std::to_string(rec.len) + " bytes at offset " +
                 std::to_string(rec.offset));
    return;
  }
  std::memcpy(where, t.bytes.data() + rec.at, len);
}

void HostTape::replied(uint32_t rank, const Reply &r) {
  RankTape &t = tapes_[rank];
  if (!playing()) {
    t.replies.push_back(r);
    return;
  }
  if (!divergence_.empty())
    return;
  const char *call =
      t.next_action ? op_name(t.actions[t.next_action - 1].request.op) : "?";
  if (t.next_reply == t.replies.size()) {
    diverged(rank, r.time,
             std::string("its call ") + call + " is answered (" + describe(r) +
                 "); the recording has no more replies to that host");
    return;
  }
  const Reply &rec = t.replies[t.next_reply++];
  if (!same(rec, r))
    diverged(rank, r.time,
             std::string("its call ") + call + " is answered " + describe(r) +
                 "; the recording was answered " + describe(rec));
}

void HostTape::diverged(uint32_t rank, uint64_t at, const std::string &what) {
  if (!divergence_.empty())
    return;
  divergence_ = "replay diverged from the recording at " + at_time(at) +
                ", host rank " + std::to_string(rank) + " (node " +
                std::to_string(rank / per_node_) + "): " + what;
}

bool HostTape::feed(uint32_t rank, ControlBlock &cb) {
  RankTape &t = tapes_[rank];
  if (t.next_action == t.actions.size())
    return false;
  // The host library posts its next request once it has the reply to the
  // last: the channel is then Starting or Computing.
  auto state = channel::HostState(cb.state.load(std::memory_order_acquire));
  if (state != channel::HostState::Starting &&
      state != channel::HostState::Computing)
    return true;
  const Action &a = t.actions[t.next_action++];
  cb.local_polls = uint32_t(a.local_polls.size());
  std::copy(a.local_polls.begin(), a.local_polls.end(), cb.local_poll_start);
  if (a.posted) {
    cb.posted = a.posted_write;
    cb.posted_seq.fetch_add(1, std::memory_order_release);
  }
  cb.request = a.request;
  cb.request_seq += 1;
  cb.state.store(uint32_t(a.request.op == channel::Op::Exit
                              ? channel::HostState::Exited
                              : channel::HostState::Requesting),
                 std::memory_order_release);
  return true;
}

std::string HostTape::unplayed() const {
  for (uint32_t rank = 0; rank < tapes_.size(); ++rank) {
    const RankTape &t = tapes_[rank];
    if (t.next_action == t.actions.size())
      continue;
    const Request &next = t.actions[t.next_action].request;
    return "the replay ended before host rank " + std::to_string(rank) +
           " (node " + std::to_string(rank / per_node_) + ") made its call " +
           std::to_string(t.next_action + 1) + " of " +
           std::to_string(t.actions.size()) + " (" + op_name(next.op) + " at " +
           at_time(next.time) + ")";
  }
  return "";
}

bool HostTape::ended(uint32_t rank, int &status) const {
  const RankTape &t = tapes_[rank];
  if (t.next_action != t.actions.size())
    return false;
  status = t.status;
  return true;
}

void HostTape::save(const std::string &path, const Contents &contents) const {
  Writer w;
  w.bytes(kMagic, kMagicSize);
  w.u32(kVersion);
  w.text(contents.manifest);
  w.u64(contents.blobs.size());
  for (const auto &[name, data] : contents.blobs) {
    w.text(name);
    w.bytes(data.data(), data.size());
  }
  w.u32(uint32_t(tapes_.size()));
  w.u32(per_node_);
  for (const RankTape &t : tapes_) {
    w.u32(uint32_t(t.status));
    w.u8(uint8_t(t.by_itself | t.in_call << 1));
    w.u32(uint32_t(t.pid));
    w.u64(t.actions.size());
    for (const Action &a : t.actions) {
      w.u64(a.local_polls.size());
      for (uint64_t start : a.local_polls)
        w.u64(start);
      w.u8(a.posted);
      if (a.posted)
        w.request(a.posted_write);
      w.request(a.request);
    }
    w.u64(t.replies.size());
    for (const Reply &r : t.replies)
      w.reply(r);
    w.u64(t.reads.size());
    for (const Read &r : t.reads) {
      w.u64(r.offset);
      w.u32(r.len);
    }
    w.bytes(t.bytes.data(), t.bytes.size());
  }
  gzFile f = gzopen(path.c_str(), "wb6");
  if (!f)
    throw Error("--record " + path + ": cannot write");
  const std::string &data = w.data();
  size_t done = 0;
  bool ok = true;
  while (ok && done < data.size()) {
    unsigned chunk = unsigned(std::min<size_t>(data.size() - done, 1u << 30));
    ok = gzwrite(f, data.data() + done, chunk) == int(chunk);
    done += chunk;
  }
  if (gzclose(f) != Z_OK || !ok)
    throw Error("--record " + path + ": cannot write (disk full?)");
}

HostTape HostTape::load(const std::string &path, Contents &contents) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    throw Error(path + ": cannot read: " + std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0)
    data.append(buf, size_t(n));
  int err = Z_OK;
  std::string why = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0)
    Reader(data, path).damaged(why);
  return parse(data, path, contents);
}

HostTape HostTape::parse(const std::string &data, const std::string &path,
                         Contents &contents) {
  Reader r(data, path);
  if (data.size() < kMagicSize + 8 || data.compare(8, kMagicSize, kMagic) != 0)
    r.damaged("no recording header");
  r.text(); // the magic
  uint32_t version = r.u32();
  if (version != kVersion)
    throw Error(path + ": a recording of format version " +
                std::to_string(version) + "; this nicemu reads version " +
                std::to_string(kVersion));
  contents.manifest = r.text();
  for (uint64_t i = r.count(16); i > 0; --i) {
    std::string name = r.text();
    contents.blobs[name] = r.blob();
  }
  HostTape tape(Mode::Play);
  uint32_t ranks = r.u32();
  uint32_t per_node = r.u32();
  // A rank takes 41 bytes at least (its end, pid and four empty lists).
  if (ranks > r.left() / 41 || per_node == 0 || per_node > 16)
    r.damaged("an impossible rank count");
  tape.set_ranks(ranks, per_node);
  for (RankTape &t : tape.tapes_) {
    t.status = int(r.u32());
    uint8_t flags = r.u8();
    t.by_itself = flags & 1;
    t.in_call = flags & 2;
    t.pid = int(r.u32());
    t.actions.resize(r.count(8 + 1 + kRequestBytes));
    for (Action &a : t.actions) {
      a.local_polls.resize(r.count(8));
      if (a.local_polls.size() > channel::kMaxLocalPolls)
        r.damaged("more polls answered under a lease than a host keeps");
      for (uint64_t &start : a.local_polls)
        start = r.u64();
      a.posted = r.u8() != 0;
      if (a.posted)
        a.posted_write = r.request();
      a.request = r.request();
    }
    t.replies.resize(r.count(3 * 4 + 3 * 8));
    for (Reply &reply : t.replies)
      reply = r.reply();
    t.reads.resize(r.count(12));
    uint64_t total = 0;
    for (Read &read : t.reads) {
      read.offset = r.u64();
      read.len = r.u32();
      read.at = total;
      total += read.len;
    }
    t.bytes = r.blob();
    if (t.bytes.size() != total)
      r.damaged("host memory reads that do not add up");
  }
  if (!r.at_end())
    r.damaged("data after the last rank");
  return tape;
}

} // namespace nicemu
