#include "observe/trace_writer.hpp"

#include "nicemu/error.hpp"
#include "observe/link_names.hpp"
#include "sim/scheduler.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <iterator>
#include <utility>

namespace nicemu {

namespace {

constexpr std::string_view kHeader =
    "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"nicemu\","
    "\"clock\":\"virtual\"},\"traceEvents\":[\n";
constexpr std::string_view kFooter = "\n]}\n";
// Buffered events that make the writer look at the clock.
constexpr size_t kWriteEvents = 4096;

// JSON text of a name. Firmware symbols are ASCII; any other byte becomes
// '?' so the file stays valid UTF-8 whatever it is given.
void append_string(std::string &out, std::string_view text) {
  out += '"';
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c < 0x80 ? ch : '?';
    }
  }
  out += '"';
}

void append_number(std::string &out, uint64_t value) {
  out += std::to_string(value);
}

// Microseconds with three decimals: whole nanoseconds of the virtual clock
// (picoseconds rounded down), written from integers so every run prints the
// same digits.
void append_us(std::string &out, uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%" PRIu64 ".%03" PRIu64, ns / 1000,
                ns % 1000);
  out += text;
}

uint64_t ns_of(Time ps) {
  return uint64_t(ps) / 1000;
}

const char *track_name(uint32_t track) {
  static const char *const names[] = {"",   "core", "host DMA", "Tx",
                                      "Rx", "link", "host",     "packets"};
  return track < std::size(names) ? names[track] : "?";
}

} // namespace

unsigned parse_trace_categories(std::string_view list) {
  unsigned categories = 0;
  while (true) {
    size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    if (name == "core")
      categories |= kTraceCore;
    else if (name == "dma")
      categories |= kTraceDma;
    else if (name == "link")
      categories |= kTraceLink;
    else if (name == "host")
      categories |= kTraceHost;
    else if (name == "console")
      categories |= kTraceConsole;
    else if (name == "fault")
      categories |= kTraceFault;
    else if (name == "all")
      categories |= kTraceAll;
    else
      throw Error("--trace-filter: unknown category '" + std::string(name) +
                  "' (expected a comma list of core, dma, link, host, "
                  "console, fault, all)");
    if (comma == std::string_view::npos)
      return categories;
    list.remove_prefix(comma + 1);
  }
}

TraceWriter::TraceWriter(const std::string &path, unsigned categories)
    : path_(path), categories_(categories), write_at_(kWriteEvents) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_)
    throw Error("--trace: cannot write '" + path +
                "': " + std::strerror(errno));
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  failed_ =
      std::fwrite(kHeader.data(), 1, kHeader.size(), file_) != kHeader.size();
}

TraceWriter::~TraceWriter() {
  try {
    finish();
  } catch (const Error &) {
    // finish() is the place to hear about errors; a destructor cannot say.
  }
}

bool TraceWriter::Pending::operator<(const Pending &o) const {
  return std::tie(end, pid, track, lane, seq) <
         std::tie(o.end, o.pid, o.track, o.lane, o.seq);
}

void TraceWriter::flush() {
  if (file_)
    write_before(kTimeNever);
}

void TraceWriter::finish() {
  if (!file_)
    return;
  flush();
  std::FILE *file = std::exchange(file_, nullptr);
  bool ok =
      !failed_ &&
      std::fwrite(kFooter.data(), 1, kFooter.size(), file) == kFooter.size() &&
      std::fflush(file) == 0;
  int error = errno;
  ok = std::fclose(file) == 0 && ok;
  if (!ok)
    throw Error("--trace: could not write '" + path_ +
                "': " + std::strerror(error ? error : EIO));
}

void TraceWriter::set_clock(const Scheduler *clock) {
  if (clock)
    now_ = [clock] { return clock->now(); };
  else
    now_ = nullptr;
}

// Buffers an event. Once enough wait, those that end before the clock's now
// are written: no event told later can end before them.
void TraceWriter::add(Time end, uint32_t pid, Track track, uint64_t lane,
                      std::string text) {
  uint64_t seq = lane_seq_[{pid, track, lane}]++;
  pending_.push_back({end, pid, track, lane, seq, std::move(text)});
  if (now_ && pending_.size() >= write_at_) {
    write_before(now_());
    // Events far in the future (a long host computation) stay: look again
    // once as many more have come.
    write_at_ = std::max(kWriteEvents, 2 * pending_.size());
  }
}

void TraceWriter::write_before(Time limit) {
  std::sort(pending_.begin(), pending_.end());
  auto ready =
      std::find_if(pending_.begin(), pending_.end(),
                   [limit](const Pending &p) { return p.end >= limit; });
  if (limit == kTimeNever)
    ready = pending_.end();
  for (auto it = pending_.begin(); it != ready; ++it)
    write(*it);
  pending_.erase(pending_.begin(), ready);
}

void TraceWriter::write(Pending &event) {
  announce(event.pid, Track(event.track));
  // Link slices get their ids here, in file order.
  size_t mark = event.text.find('\x01');
  if (mark != std::string::npos) {
    char id[24];
    std::snprintf(id, sizeof id, "\"0x%" PRIx64 "\"", next_slice_id_++);
    for (; mark != std::string::npos; mark = event.text.find('\x01', mark))
      event.text.replace(mark, 1, id);
  }
  emit(event.text);
}

void TraceWriter::emit(const std::string &event) {
  if (!first_)
    failed_ |= std::fputs(",\n", file_) == EOF;
  first_ = false;
  failed_ |= std::fwrite(event.data(), 1, event.size(), file_) != event.size();
}

// Names a process and one of its tracks before their first event.
void TraceWriter::announce(uint32_t pid, Track track) {
  uint8_t *bits;
  if (pid == kFabricPid) {
    bits = &fabric_announced_;
  } else {
    if (pid >= announced_.size())
      announced_.resize(size_t(pid) + 1, 0);
    bits = &announced_[pid];
  }
  auto metadata = [&](const char *what, uint64_t tid, const char *key,
                      const std::string &value, bool is_text) {
    std::string e = "{\"ph\":\"M\",\"name\":\"";
    e += what;
    e += "\",\"pid\":";
    append_number(e, pid);
    e += ",\"tid\":";
    append_number(e, tid);
    e += ",\"args\":{\"";
    e += key;
    e += "\":";
    if (is_text)
      append_string(e, value);
    else
      e += value;
    e += "}}";
    emit(e);
  };
  if (!(*bits & 1)) {
    *bits |= 1;
    std::string name(pid == kFabricPid ? "fabric" : "node ");
    if (pid != kFabricPid)
      name += std::to_string(pid);
    metadata("process_name", 0, "name", name, true);
    metadata("process_sort_index", 0, "sort_index", std::to_string(pid), false);
  }
  if (!(*bits & (1u << track))) {
    *bits |= uint8_t(1u << track);
    uint64_t tid = uint64_t(pid) * 8 + track;
    metadata("thread_name", tid, "name", track_name(track), true);
    metadata("thread_sort_index", tid, "sort_index", std::to_string(track),
             false);
  }
}

// An "X" event: spans of one track nest or follow each other (a handler in
// a handler, transfers of one engine one after another).
std::string TraceWriter::complete(uint32_t pid, Track track,
                                  std::string_view category,
                                  std::string_view name, Time start, Time end,
                                  std::string_view args) {
  uint64_t from = ns_of(start), to = ns_of(std::max(start, end));
  std::string e = "{\"ph\":\"X\",\"cat\":";
  append_string(e, category);
  e += ",\"name\":";
  append_string(e, name);
  e += ",\"pid\":";
  append_number(e, pid);
  e += ",\"tid\":";
  append_number(e, uint64_t(pid) * 8 + track);
  e += ",\"ts\":";
  append_us(e, from);
  e += ",\"dur\":";
  append_us(e, to - from);
  if (!args.empty()) {
    e += ",\"args\":";
    e += args;
  }
  e += '}';
  return e;
}

// A "b"/"e" pair (async): on one cable the next head may enter before the
// last tail has left, so link slices can overlap, which X events must not.
// Perfetto shows the slices of one name in one process as one track.
std::string TraceWriter::link_slice(uint32_t pid, std::string_view name,
                                    Time head, Time tail,
                                    std::string_view args) {
  std::string e;
  for (bool begin : {true, false}) {
    e += begin ? "{\"ph\":\"b\"" : ",\n{\"ph\":\"e\"";
    e += ",\"cat\":\"link\",\"name\":";
    append_string(e, name);
    e += ",\"id\":\x01,\"pid\":";
    append_number(e, pid);
    e += ",\"tid\":";
    append_number(e, uint64_t(pid) * 8 + Link);
    e += ",\"ts\":";
    append_us(e, ns_of(begin ? head : std::max(head, tail)));
    if (begin) {
      e += ",\"args\":";
      e += args;
    }
    e += '}';
  }
  return e;
}

void TraceWriter::handler_call(uint32_t node, std::string_view name, Time start,
                               Time end) {
  if (file_ && (categories_ & kTraceCore))
    add(end, node, Core, 0, complete(node, Core, "core", name, start, end, {}));
}

void TraceWriter::dma_transfer(uint32_t node, DmaEngineKind engine, Time start,
                               Time end, uint32_t bytes, bool to_host) {
  if (!file_ || !(categories_ & kTraceDma))
    return;
  std::string args = "{\"bytes\":" + std::to_string(bytes) + "}";
  Track track = engine == DmaEngineKind::HostDma ? HostDma
                : engine == DmaEngineKind::Tx    ? Tx
                                                 : Rx;
  const char *name = engine == DmaEngineKind::HostDma
                         ? (to_host ? "to host" : "to card")
                     : engine == DmaEngineKind::Tx ? "send"
                                                   : "receive";
  add(end, node, track, 0,
      complete(node, track, "dma", name, start, end, args));
}

// One end of a packet's flow arrow on `node`'s "packets" track: a 2 ns
// slice ("send" starting at the head's entry, "arrive" ending at the
// tail's exit) and the flow event ("s" or "f", id the packet's) inside it,
// which Perfetto binds to that slice.
std::string TraceWriter::flow_end(uint32_t node, uint64_t packet_id, Time at,
                                  bool send, std::string_view args) {
  uint64_t ns = ns_of(at), from = send ? ns : std::max<uint64_t>(ns, 2) - 2;
  std::string e = complete(node, Packets, "link", send ? "send" : "arrive",
                           Time(from) * 1000, Time(from + 2) * 1000, args);
  e += send ? ",\n{\"ph\":\"s\"" : ",\n{\"ph\":\"f\",\"bp\":\"e\"";
  e += ",\"cat\":\"link\",\"name\":\"packet\",\"id\":";
  char id[24];
  std::snprintf(id, sizeof id, "\"0x%" PRIx64 "\"", packet_id);
  e += id;
  e += ",\"pid\":";
  append_number(e, node);
  e += ",\"tid\":";
  append_number(e, uint64_t(node) * 8 + Packets);
  e += ",\"ts\":";
  append_us(e, from + 1);
  e += '}';
  return e;
}

void TraceWriter::link_packet(const LinkRef &link, uint32_t source,
                              uint64_t packet_id, Time head, Time tail,
                              std::span<const uint8_t> frame) {
  if (!file_ || !(categories_ & kTraceLink))
    return;
  size_t route = std::min<size_t>(link.route_bytes, frame.size());
  std::string args = "{\"packet\":";
  char id[24];
  std::snprintf(id, sizeof id, "\"0x%" PRIx64 "\"", packet_id);
  args += id;
  args += ",\"source\":";
  append_number(args, source);
  args += ",\"from\":";
  append_string(args, link.from);
  args += ",\"to\":";
  append_string(args, link.to);
  args += ",\"route\":[";
  for (size_t i = 0; i < route; ++i) {
    if (i)
      args += ',';
    append_number(args, frame[i]);
  }
  args += "],\"bytes\":";
  append_number(args, frame.size() - route);
  args += '}';
  // A node's cable is on that node's "link" track (lane 0 out, 1 in); a
  // cable between two nodes is on both; one between switches on the
  // fabric's, a lane per cable direction.
  auto from = parse_endpoint(link.from), to = parse_endpoint(link.to);
  bool from_node = from && !from->is_switch, to_node = to && !to->is_switch;
  Time end = std::max(head, tail);
  if (from_node)
    add(end, from->index, Link, 0,
        link_slice(from->index, "link out", head, tail, args));
  if (to_node)
    add(end, to->index, Link, 1,
        link_slice(to->index, "link in", head, tail, args));
  // The flow from the send (the source's own cable) to each arrival.
  if (from_node && from->index == source)
    add(end, source, Packets, 0, flow_end(source, packet_id, head, true, args));
  if (to_node)
    add(end, to->index, Packets, 1,
        flow_end(to->index, packet_id, end, false, args));
  if (!from_node && !to_node) {
    std::string name(link.from);
    name += " -> ";
    name += link.to;
    uint64_t lane = uint64_t(link.index) * 2 +
                    (endpoint_before(link.to, link.from) ? 1 : 0);
    add(end, kFabricPid, Link, lane,
        link_slice(kFabricPid, name, head, tail, args));
  }
}

// A thread-scoped instant event on `node`'s core track with one argument.
std::string TraceWriter::instant(uint32_t node, std::string_view category,
                                 std::string_view name, Time at,
                                 std::string_view key, std::string_view value) {
  std::string e = "{\"ph\":\"i\",\"s\":\"t\",\"cat\":";
  append_string(e, category);
  e += ",\"name\":";
  append_string(e, name);
  e += ",\"pid\":";
  append_number(e, node);
  e += ",\"tid\":";
  append_number(e, uint64_t(node) * 8 + Core);
  e += ",\"ts\":";
  append_us(e, ns_of(at));
  e += ",\"args\":{";
  append_string(e, key);
  e += ':';
  append_string(e, value);
  e += "}}";
  return e;
}

void TraceWriter::console_line(uint32_t node, Time at, std::string_view line) {
  if (file_ && (categories_ & kTraceConsole))
    add(at, node, Core, 1, instant(node, "console", line, at, "line", line));
}

void TraceWriter::fault(uint32_t node, Time at, std::string_view what) {
  if (file_ && (categories_ & kTraceFault))
    add(at, node, Core, 2, instant(node, "fault", what, at, "fault", what));
}

void TraceWriter::host_call(uint32_t node, std::string_view what, Time start,
                            Time end) {
  if (file_ && (categories_ & kTraceHost))
    add(end, node, Host, 0, complete(node, Host, "host", what, start, end, {}));
}

} // namespace nicemu
