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

namespace tape_io {

// Little-endian fields, one after another, into a gzip file through a
// small buffer: a recording is never held twice in memory (on a virtual
// machine, the page faults of a copy cost more than compressing it).
class Writer {
public:
  explicit Writer(gzFile f) : f_(f) { out_.reserve(kBuffer); }
  void u8(uint8_t v) { put(char(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      put(char(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      put(char(v >> (8 * i)));
  }
  void bytes(const void *p, size_t n) {
    u64(n);
    raw(p, n);
  }
  // Bytes with no length before them (the reader knows it).
  void raw(const void *p, size_t n) {
    if (n <= kBuffer - out_.size()) {
      out_.append(static_cast<const char *>(p), n);
      if (out_.size() == kBuffer)
        flush();
      return;
    }
    flush();
    const char *c = static_cast<const char *>(p);
    for (size_t done = 0; ok_ && done < n;) {
      unsigned chunk = unsigned(std::min<size_t>(n - done, 1u << 30));
      ok_ = gzwrite(f_, c + done, chunk) == int(chunk);
      done += chunk;
    }
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
  // Writes what is buffered; false if any write failed.
  bool ok() const { return ok_; }
  gzFile file() const { return f_; }
  bool flush() {
    if (ok_ && !out_.empty())
      ok_ = gzwrite(f_, out_.data(), unsigned(out_.size())) == int(out_.size());
    out_.clear();
    return ok_;
  }

private:
  static constexpr size_t kBuffer = 64 * 1024;
  void put(char c) {
    out_.push_back(c);
    if (out_.size() == kBuffer)
      flush();
  }
  gzFile f_;
  std::string out_;
  bool ok_ = true;
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
  const char *raw(uint64_t n) { return take(n); }
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

} // namespace tape_io

using tape_io::Reader;
using tape_io::Writer;

namespace {

constexpr char kMagic[] = "NICEMU-RECORDING";
constexpr size_t kMagicSize = sizeof kMagic - 1;

// "3.25 us": a virtual time for people.
std::string at_time(uint64_t ps) {
  char text[48];
  std::snprintf(text, sizeof text, "%.6f us", double(ps) / 1e6);
  return text;
}

// What follows the blobs: one record per thing a host did, as it happened.
enum Record : uint8_t {
  kRequest = 1,
  kReply = 2,
  kRead = 3,
  kEnd = 4,
  kFrameIn = 5,  // the TAP bridge: a frame from Linux
  kFrameOut = 6, // a frame offered to Linux
};

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

HostTape::HostTape(Mode mode) : mode_(mode) {}
HostTape::HostTape(HostTape &&) noexcept = default;
HostTape &HostTape::operator=(HostTape &&) noexcept = default;

// A recording left unfinished (the run failed to start, or threw) could
// not be replayed: it goes.
HostTape::~HostTape() {
  if (!out_)
    return;
  gzclose(out_->file());
  std::remove(path_.c_str());
}

void HostTape::set_ranks(uint32_t ranks, uint32_t per_node) {
  tapes_.resize(ranks);
  per_node_ = per_node ? per_node : 1;
}

void HostTape::took_request(uint32_t rank, const ControlBlock &cb,
                            const Request &r) {
  if (!out_)
    return;
  Writer &w = *out_;
  uint32_t polls = std::min(cb.local_polls, channel::kMaxLocalPolls);
  const bool posted = cb.posted_seq.load(std::memory_order_acquire) !=
                      cb.posted_taken.load(std::memory_order_relaxed);
  w.u8(kRequest);
  w.u32(rank);
  w.u32(polls);
  for (uint32_t i = 0; i < polls; ++i)
    w.u64(cb.local_poll_start[i]);
  w.u8(posted);
  if (posted)
    w.request(cb.posted);
  w.request(r);
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
  if (!playing()) {
    if (out_) {
      out_->u8(kRead);
      out_->u32(rank);
      out_->u64(offset);
      out_->u32(uint32_t(len));
      out_->raw(where, len);
    }
    return;
  }
  RankTape &t = tapes_[rank];
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
  if (!playing()) {
    if (out_) {
      out_->u8(kReply);
      out_->u32(rank);
      out_->reply(r);
    }
    return;
  }
  RankTape &t = tapes_[rank];
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

void HostTape::frame_in(uint64_t at, uint32_t node,
                        const std::vector<uint8_t> &bytes) {
  if (!out_)
    return;
  out_->u8(kFrameIn);
  out_->u32(node);
  out_->u64(at);
  out_->bytes(bytes.data(), bytes.size());
}

bool HostTape::frame_out(uint64_t at, const std::vector<uint8_t> &bytes,
                         bool left) {
  if (!playing()) {
    if (out_) {
      out_->u8(kFrameOut);
      out_->u32(left);
      out_->u64(at);
      out_->bytes(bytes.data(), bytes.size());
    }
    return left;
  }
  const std::string what = "the cluster offers a " +
                           std::to_string(bytes.size()) +
                           "-byte frame to the TAP bridge";
  if (next_frame_out_ == frames_out_.size()) {
    diverged_outside(at, what + "; the recording has no more");
    return false;
  }
  const Frame &rec = frames_out_[next_frame_out_++];
  if (rec.at != at || rec.bytes != bytes)
    diverged_outside(at, what + "; the recording's was " +
                             std::to_string(rec.bytes.size()) + " bytes at " +
                             at_time(rec.at) +
                             (rec.bytes == bytes ? "" : ", other bytes"));
  return rec.left;
}

void HostTape::diverged_outside(uint64_t at, const std::string &what) {
  if (divergence_.empty())
    divergence_ =
        "replay diverged from the recording at " + at_time(at) + ": " + what;
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
  if (next_frame_out_ < frames_out_.size())
    return "the replay ended before the cluster offered frame " +
           std::to_string(next_frame_out_ + 1) + " of " +
           std::to_string(frames_out_.size()) + " to the TAP bridge (at " +
           at_time(frames_out_[next_frame_out_].at) + ")";
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

void HostTape::begin(const std::string &path, const Contents &contents) {
  // Level 1: the flash's erased bytes and the hosts' records compress about
  // as well as at higher levels, at a fraction of the time.
  gzFile f = gzopen(path.c_str(), "wb1");
  if (!f)
    throw Error("--record " + path + ": cannot write: " + std::strerror(errno));
  path_ = path;
  out_ = std::make_unique<Writer>(f);
  Writer &w = *out_;
  w.bytes(kMagic, kMagicSize);
  w.u32(kVersion);
  w.text(contents.manifest);
  w.u64(contents.blobs.size());
  for (const auto &[name, data] : contents.blobs) {
    w.text(name);
    w.bytes(data->data(), data->size());
  }
  if (!w.flush())
    throw Error("--record " + path + ": cannot write (disk full?)");
}

void HostTape::finish(const std::string &trailer) {
  if (!out_)
    return;
  Writer &w = *out_;
  w.u8(kEnd);
  w.u32(uint32_t(tapes_.size()));
  w.u32(per_node_);
  for (const RankTape &t : tapes_) {
    w.u32(uint32_t(t.status));
    w.u8(uint8_t(t.by_itself | t.in_call << 1));
    w.u32(uint32_t(t.pid));
  }
  w.text(trailer);
  bool ok = w.flush();
  gzFile f = out_->file();
  out_.reset();
  if (gzclose(f) != Z_OK || !ok)
    throw Error("--record " + path_ + ": cannot write (disk full?)");
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

void HostTape::read_records(Reader &r, HostTape *into, uint32_t &ranks) {
  if (into)
    into->set_ranks(ranks);
  for (;;) {
    const uint8_t kind = r.u8();
    if (kind == kEnd)
      break;
    if (kind == kFrameIn || kind == kFrameOut) {
      Frame f;
      uint32_t field = r.u32();
      f.at = r.u64();
      f.bytes = r.blob();
      if (kind == kFrameIn) {
        f.node = field;
        if (into)
          into->frames_in_.push_back(std::move(f));
      } else {
        if (field > 1)
          r.damaged("a frame neither left nor kept");
        f.left = field != 0;
        if (into)
          into->frames_out_.push_back(std::move(f));
      }
      continue;
    }
    const uint32_t rank = r.u32();
    if (into && rank >= ranks)
      r.damaged("a host rank past the rank count");
    RankTape *t = into ? &into->tapes_[rank] : nullptr;
    switch (kind) {
    case kRequest: {
      Action a;
      uint32_t polls = r.u32();
      if (polls > channel::kMaxLocalPolls)
        r.damaged("more polls answered under a lease than a host keeps");
      a.local_polls.resize(polls);
      for (uint64_t &start : a.local_polls)
        start = r.u64();
      a.posted = r.u8() != 0;
      if (a.posted)
        a.posted_write = r.request();
      a.request = r.request();
      if (t)
        t->actions.push_back(std::move(a));
      break;
    }
    case kReply: {
      Reply reply = r.reply();
      if (t)
        t->replies.push_back(reply);
      break;
    }
    case kRead: {
      Read read;
      read.offset = r.u64();
      read.len = r.u32();
      const char *bytes = r.raw(read.len);
      if (t) {
        read.at = t->bytes.size();
        t->reads.push_back(read);
        t->bytes.insert(t->bytes.end(), bytes, bytes + read.len);
      }
      break;
    }
    default:
      r.damaged("an unknown record");
    }
  }
  // The end: each rank's process, 9 bytes a rank.
  const uint32_t count = r.u32(), per_node = r.u32();
  if (count > r.left() / 9 || per_node == 0 || per_node > 16)
    r.damaged("an impossible rank count");
  if (!into) {
    ranks = count;
    for (uint32_t i = 0; i < count; ++i) {
      r.u32();
      r.u8();
      r.u32();
    }
    return;
  }
  into->per_node_ = per_node;
  for (RankTape &t : into->tapes_) {
    t.status = int(r.u32());
    uint8_t flags = r.u8();
    t.by_itself = flags & 1;
    t.in_call = flags & 2;
    t.pid = int(r.u32());
  }
}

HostTape HostTape::parse(const std::string &data, const std::string &path,
                         Contents &contents) {
  Reader r(data, path);
  if (data.size() < kMagicSize + 8 || data.compare(8, kMagicSize, kMagic) != 0)
    r.damaged("no recording header");
  r.text(); // the magic
  uint32_t version = r.u32();
  if (version < kOldestVersion || version > kVersion)
    throw Error(path + ": a recording of format version " +
                std::to_string(version) + "; this nicemu reads versions " +
                std::to_string(kOldestVersion) + " to " +
                std::to_string(kVersion));
  contents.manifest = r.text();
  for (uint64_t i = r.count(16); i > 0; --i) {
    std::string name = r.text();
    contents.blobs[name] =
        std::make_shared<const std::vector<uint8_t>>(r.blob());
  }
  // The records come first, the rank count last: one pass to find it and
  // check every record's size and rank, one to fill the tapes.
  Reader first = r;
  uint32_t ranks = 0;
  read_records(first, nullptr, ranks);
  HostTape tape(Mode::Play);
  tape.identity_ =
      uint64_t(data.size()) << 32 ^
      crc32_z(0, reinterpret_cast<const Bytef *>(data.data()), data.size());
  read_records(r, &tape, ranks);
  contents.trailer = r.text();
  if (!r.at_end())
    r.damaged("data after its end");
  return tape;
}

} // namespace nicemu
