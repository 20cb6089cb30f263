// The q, Q and v packets: capabilities, thread lists, object transfers
// (target.xml, the thread list) and monitor commands.
#include "gdb/mips_tdesc.hpp"
#include "gdb/stub.hpp"
#include "gdb/stub_util.hpp"

#include <algorithm>

namespace nicemu::gdb {

namespace {

// Most raw bytes of an object per qXfer reply: even fully escaped, the reply
// stays within what we told GDB a packet may be.
constexpr size_t kXferChunk = Stub::kPacketSize / 2;

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

} // namespace

Stub::Reply Stub::query(std::string_view packet) {
  if (packet == "qC")
    return "QC" + hex_number(current_thread());
  if (packet == "qSupported" || packet.starts_with("qSupported:"))
    return supported(packet.substr(std::min<size_t>(packet.size(), 11)));
  if (packet == "qfThreadInfo" || packet == "qsThreadInfo")
    return thread_info(packet[1] == 'f');
  if (packet.starts_with("qThreadExtraInfo,"))
    return thread_extra_info(packet.substr(17));
  if (packet == "qAttached" || packet.starts_with("qAttached:"))
    return "1"; // so that quitting GDB detaches instead of killing the run
  if (packet == "qOffsets")
    return "Text=0;Data=0;Bss=0";
  if (packet.starts_with("qRcmd,"))
    return monitor(packet.substr(6));
  if (packet.starts_with("qSymbol:"))
    return kOk; // no symbols needed
  if (packet.starts_with("qXfer:"))
    return xfer(packet.substr(6));
  return "";
}

Stub::Reply Stub::query_set(std::string_view packet) {
  if (packet == "QStartNoAckMode") {
    ack_mode_ = false; // this packet was acknowledged already
    return kOk;
  }
  return "";
}

Stub::Reply Stub::query_v(std::string_view packet) {
  if (packet == "vCont?")
    return "vCont;c;C;s;S";
  if (packet.starts_with("vCont;"))
    return resume_vcont(packet.substr(5));
  if (packet == "vKill" || packet.starts_with("vKill;")) {
    kill();
    return kOk;
  }
  if (packet == "vCtrlC") {
    if (running_)
      target_.interrupt();
    return kOk;
  }
  return ""; // vMustReplyEmpty, vRun, vAttach, vFile, ...
}

Stub::Reply Stub::supported(std::string_view features) {
  while (!features.empty()) {
    std::string_view f = features.substr(0, features.find(';'));
    features.remove_prefix(std::min(features.size(), f.size() + 1));
    if (f == "swbreak+")
      gdb_swbreak_ = true;
    else if (f == "hwbreak+")
      gdb_hwbreak_ = true;
  }
  return "PacketSize=" + hex_number(kPacketSize) +
         ";QStartNoAckMode+;qXfer:features:read+;qXfer:threads:read+"
         ";swbreak+;hwbreak+;vContSupported+" +
         (target_.can_reverse() ? ";ReverseStep+;ReverseContinue+" : "");
}

Stub::Reply Stub::thread_info(bool first) {
  std::vector<ThreadId> all = target_.threads();
  if (first)
    thread_cursor_ = 0;
  if (thread_cursor_ >= all.size())
    return "l";
  std::string r = "m";
  while (thread_cursor_ < all.size() && r.size() < kPacketSize / 2) {
    if (r.size() > 1)
      r += ',';
    r += hex_number(all[thread_cursor_++]);
  }
  return r;
}

Stub::Reply Stub::thread_extra_info(std::string_view args) {
  ThreadId thread = 0;
  if (!parse_thread_id(args, thread))
    return kMalformed;
  if (!thread_exists(thread))
    return kNoThread;
  std::string extra = target_.thread_extra(thread);
  return hex_encode(extra.empty() ? target_.thread_name(thread) : extra);
}

std::string Stub::threads_xml() {
  std::string xml = "<?xml version=\"1.0\"?>\n<threads>\n";
  for (ThreadId t : target_.threads()) {
    xml += "<thread id=\"" + hex_number(t) + "\" name=\"" +
           xml_escape(target_.thread_name(t)) + "\">" +
           xml_escape(target_.thread_extra(t)) + "</thread>\n";
  }
  xml += "</threads>\n";
  return xml;
}

// "OBJECT:read:ANNEX:OFFSET,LENGTH": a window of a document.
Stub::Reply Stub::xfer(std::string_view args) {
  std::string_view object, op, annex, range;
  size_t c1 = args.find(':');
  size_t c2 = c1 == args.npos ? c1 : args.find(':', c1 + 1);
  size_t c3 = c2 == args.npos ? c2 : args.find(':', c2 + 1);
  if (c3 == args.npos)
    return "E00";
  object = args.substr(0, c1);
  op = args.substr(c1 + 1, c2 - c1 - 1);
  annex = args.substr(c2 + 1, c3 - c2 - 1);
  range = args.substr(c3 + 1);
  if (op != "read" || (object != "features" && object != "threads"))
    return ""; // nothing else to transfer, and nothing is writable
  size_t comma = range.find(',');
  uint64_t offset = 0, length = 0;
  if (comma == range.npos || !parse_hex(range.substr(0, comma), offset) ||
      !parse_hex(range.substr(comma + 1), length))
    return "E00";
  std::string_view doc;
  if (object == "features") {
    if (annex != "target.xml")
      return "E00";
    doc = mips::target_xml();
  } else {
    if (!annex.empty())
      return "E00";
    if (offset == 0 || threads_xml_.empty())
      threads_xml_ = threads_xml(); // one snapshot per transfer
    doc = threads_xml_;
  }
  if (offset >= doc.size())
    return "l";
  std::string_view part =
      doc.substr(offset, std::min<uint64_t>(length, kXferChunk));
  bool last = offset + part.size() >= doc.size();
  return (last ? "l" : "m") + std::string(part);
}

void Stub::send_output(std::string_view output) {
  constexpr size_t kChunk = 1024;
  for (size_t at = 0; at < output.size(); at += kChunk)
    send_packet("O" + hex_encode(output.substr(at, kChunk)));
}

Stub::Reply Stub::monitor(std::string_view hex) {
  std::vector<uint8_t> bytes;
  if (!hex_decode(hex, bytes))
    return kMalformed;
  std::string output;
  bool ok = target_.monitor(std::string(bytes.begin(), bytes.end()), output);
  send_output(output);
  // GDB prints the output either way; an error makes the command fail.
  return ok ? kOk : kMalformed;
}

void Stub::answer_command(const StopEvent &event, std::string_view output) {
  last_stop_ = event;
  running_ = waiting_ = false;
  if (!client_)
    return;
  send_output(output);
  send_packet(kOk);
}

} // namespace nicemu::gdb
