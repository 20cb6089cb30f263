// The session: framing, dispatch, stop replies and thread selection.
// Registers and memory are in stub_data.cpp, execution and points in
// stub_resume.cpp, queries (q, Q, v packets) in stub_query.cpp.
#include "gdb/stub.hpp"

#include "gdb/mips_tdesc.hpp"
#include "gdb/stub_util.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace nicemu::gdb {

Stub::Stub(Target &target, Sender send)
    : target_(target), send_(std::move(send)) {}

void Stub::connected() {
  reader_.reset();
  last_sent_.clear();
  client_ = true;
  ack_mode_ = true;
  gdb_swbreak_ = gdb_hwbreak_ = false;
  waiting_ = false;
  general_ = continue_ = kAnyThread;
  thread_cursor_ = 0;
  threads_xml_.clear();
  if (running_)
    target_.interrupt(); // '?' will wait for the stop
}

void Stub::disconnected() {
  remove_all_points();
  client_ = false;
  waiting_ = false;
  reader_.reset();
}

void Stub::feed(std::string_view bytes) {
  for (char c : bytes) {
    switch (reader_.push(c)) {
    case PacketReader::Item::Packet: {
      if (ack_mode_)
        send_("+");
      std::string packet = reader_.payload();
      handle_packet(packet);
      break;
    }
    case PacketReader::Item::BadChecksum:
      if (ack_mode_)
        send_("-"); // GDB sends it again
      break;
    case PacketReader::Item::Overflow:
      if (ack_mode_)
        send_("+");
      send_packet(kMalformed);
      break;
    case PacketReader::Item::Interrupt:
      if (running_)
        target_.interrupt();
      break;
    case PacketReader::Item::Nack:
      if (ack_mode_ && !last_sent_.empty())
        send_(last_sent_);
      break;
    case PacketReader::Item::Ack:
    case PacketReader::Item::None:
      break;
    }
  }
}

void Stub::on_stop(const StopEvent &event) {
  StopEvent ev = event;
  bool ended = ev.kind == StopEvent::Kind::Exited ||
               ev.kind == StopEvent::Kind::Terminated;
  if (!ended) {
    if (!thread_exists(ev.thread))
      ev.thread = current_thread();
    current_ = ev.thread;
  }
  last_stop_ = ev;
  running_ = false;
  bool reply = waiting_ && client_;
  waiting_ = false;
  if (reply)
    send_packet(stop_reply(ev));
}

void Stub::console_output(std::string_view text) {
  if (!client_ || !running_ || !waiting_)
    return; // O packets are only allowed while GDB waits for a stop
  constexpr size_t kChunk = 1024;
  for (size_t at = 0; at < text.size(); at += kChunk)
    send_packet("O" + hex_encode(text.substr(at, kChunk)));
}

void Stub::send_packet(std::string_view payload) {
  last_sent_ = frame(payload);
  send_(last_sent_);
}

void Stub::handle_packet(std::string_view packet) {
  Reply reply = dispatch(packet);
  if (reply)
    send_packet(*reply);
}

Stub::Reply Stub::dispatch(std::string_view packet) {
  if (packet.empty())
    return "";
  std::string_view args = packet.substr(1);
  switch (packet[0]) {
  case '?':
    if (running_) {
      waiting_ = true; // answered by on_stop()
      return std::nullopt;
    }
    return stop_reply(last_stop_.value_or(StopEvent::stepped(kAnyThread)));
  case 'q':
    return query(packet);
  case 'Q':
    return query_set(packet);
  case 'v':
    return query_v(packet);
  case 'H':
    return set_thread(args);
  case 'T':
    return thread_alive(args);
  case 'g':
    return read_registers();
  case 'G':
    return write_registers(args);
  case 'p':
    return read_register(args);
  case 'P':
    return write_register(args);
  case 'm':
    return read_memory(args);
  case 'M':
    return write_memory(args, false);
  case 'X':
    return write_memory(args, true);
  case 'c':
  case 's':
  case 'C':
  case 'S':
    return resume_legacy(packet[0], args);
  case 'Z':
  case 'z':
    return point(packet[0] == 'Z', args);
  case 'b':
    if (packet == "bs" || packet == "bc")
      return reverse(packet == "bs");
    return "";
  case 'D':
    return detach();
  case 'k':
    return kill();
  default:
    return ""; // not supported
  }
}

std::string Stub::stop_reply(const StopEvent &event) {
  using Kind = StopEvent::Kind;
  if (event.kind == Kind::Exited)
    return "W" + hex_byte(event.exit_code);
  if (event.kind == Kind::Terminated)
    return "X" + hex_byte(unsigned(event.signal));
  Signal sig = event.kind == Kind::Signal ? event.signal : Signal::Trap;
  ThreadId thread =
      thread_exists(event.thread) ? event.thread : current_thread();
  // GDB takes a stop reply's thread as the stub's new Hg thread.
  general_ = thread;
  std::string r =
      "T" + hex_byte(unsigned(sig)) + "thread:" + hex_number(thread) + ";";
  // Registers GDB needs first come with the stop: one round trip less.
  for (unsigned regno : {unsigned(mips::kPc), unsigned(mips::kSp)}) {
    uint32_t value = 0;
    if (target_.read_register(thread, regno, value)) {
      r += hex_byte(regno) + ":";
      append_le32(r, value);
      r += ';';
    }
  }
  switch (event.kind) {
  case Kind::SoftwareBreak:
    if (gdb_swbreak_)
      r += "swbreak:;";
    break;
  case Kind::HardwareBreak:
    if (gdb_hwbreak_)
      r += "hwbreak:;";
    break;
  case Kind::Watch: {
    static constexpr std::array<const char *, 3> kNames = {"watch", "rwatch",
                                                           "awatch"};
    r += kNames[size_t(event.watch)];
    r += ":" + hex_number(event.address) + ";";
    break;
  }
  default:
    break;
  }
  if (event.history_start)
    r += "replaylog:begin;";
  return r;
}

bool Stub::thread_exists(ThreadId thread) {
  if (thread == kAnyThread || thread == kAllThreads)
    return false;
  std::vector<ThreadId> all = target_.threads();
  return std::find(all.begin(), all.end(), thread) != all.end();
}

ThreadId Stub::current_thread() {
  if (thread_exists(current_))
    return current_;
  std::vector<ThreadId> all = target_.threads();
  return all.empty() ? 1 : all.front();
}

ThreadId Stub::general_thread() {
  return thread_exists(general_) ? general_ : current_thread();
}

Stub::Reply Stub::set_thread(std::string_view args) {
  ThreadId thread = 0;
  if (args.empty() || !parse_thread_id(args.substr(1), thread))
    return kMalformed;
  if (thread != kAnyThread && thread != kAllThreads && !thread_exists(thread))
    return kNoThread;
  if (args[0] == 'g')
    general_ = thread;
  else if (args[0] == 'c')
    continue_ = thread;
  else
    return kMalformed;
  return kOk;
}

Stub::Reply Stub::thread_alive(std::string_view args) {
  ThreadId thread = 0;
  if (!parse_thread_id(args, thread))
    return kMalformed;
  return thread_exists(thread) ? kOk : kNoThread;
}

} // namespace nicemu::gdb
