#include "gdb/mips_tdesc.hpp"
#include "gdb/packet.hpp"
#include "gdb/server.hpp"
#include "gdb/stub.hpp"

#include "nicemu/error.hpp"

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace nicemu::gdb;

namespace {

// Three nodes (threads 1..3), each with its own registers and its own card
// memory at [kBase, kBase + kSize); no FPU. Records what the stub asks.
class FakeTarget : public Target {
public:
  static constexpr uint32_t kBase = 0x1000, kSize = 0x2000;
  std::vector<ThreadId> ids{1, 2, 3};
  std::map<ThreadId, std::array<uint32_t, 38>> regs;
  std::map<ThreadId, std::vector<uint8_t>> mem;
  std::vector<std::string> calls;
  std::vector<ResumePlan> plans;
  PointResult point_result = PointResult::Done;
  std::function<void()> during_resume; // e.g. a stop before resume returns

  FakeTarget() {
    for (ThreadId t : ids) {
      for (unsigned i = 0; i < 38; ++i)
        regs[t][i] = t * 0x100 + i;
      mem[t].assign(kSize, uint8_t(t));
    }
  }

  std::vector<ThreadId> threads() override { return ids; }
  std::string thread_name(ThreadId t) override {
    return "node" + std::to_string(t - 1);
  }
  std::string thread_extra(ThreadId t) override {
    return t == 2 ? "sleeping <idle> & \"quiet\"" : "running";
  }
  bool read_register(ThreadId t, unsigned r, uint32_t &v) override {
    if (!regs.count(t) || r >= 38)
      return false;
    v = regs[t][r];
    return true;
  }
  // r0 ignores writes; cause is read-only but takes its own value back.
  bool write_register(ThreadId t, unsigned r, uint32_t v) override {
    if (!regs.count(t) || r >= 38)
      return false;
    if (r == mips::kCause)
      return v == regs[t][r];
    if (r != 0)
      regs[t][r] = v;
    return true;
  }
  bool read_memory(ThreadId t, uint32_t a, std::span<uint8_t> out) override {
    if (!mem.count(t) || a < kBase || a - kBase + out.size() > kSize)
      return false;
    std::memcpy(out.data(), &mem[t][a - kBase], out.size());
    return true;
  }
  bool write_memory(ThreadId t, uint32_t a,
                    std::span<const uint8_t> d) override {
    if (!mem.count(t) || a < kBase || a - kBase + d.size() > kSize)
      return false;
    std::memcpy(&mem[t][a - kBase], d.data(), d.size());
    return true;
  }
  PointResult insert_breakpoint(BreakKind k, uint32_t a) override {
    return point("insert", k == BreakKind::Software ? "sw" : "hw", a, 0);
  }
  PointResult remove_breakpoint(BreakKind k, uint32_t a) override {
    return point("remove", k == BreakKind::Software ? "sw" : "hw", a, 0);
  }
  PointResult insert_watchpoint(WatchKind k, uint32_t a, uint32_t l) override {
    return point("insert", watch_name(k), a, l);
  }
  PointResult remove_watchpoint(WatchKind k, uint32_t a, uint32_t l) override {
    return point("remove", watch_name(k), a, l);
  }
  void resume(const ResumePlan &plan) override {
    plans.push_back(plan);
    calls.push_back("resume");
    if (during_resume)
      during_resume();
  }
  void interrupt() override { calls.push_back("interrupt"); }
  void detach() override { calls.push_back("detach"); }
  void kill() override { calls.push_back("kill"); }
  bool monitor(const std::string &cmd, std::string &out) override {
    calls.push_back("monitor " + cmd);
    if (cmd == "nodes") {
      out = "3 nodes\n";
      return true;
    }
    if (cmd == "big") {
      out = std::string(3000, 'x');
      return true;
    }
    out = "unknown command: " + cmd + "\n";
    return false;
  }

private:
  static const char *watch_name(WatchKind k) {
    return k == WatchKind::Write  ? "write"
           : k == WatchKind::Read ? "read"
                                  : "access";
  }
  PointResult point(const char *op, const char *kind, uint32_t a, uint32_t l) {
    calls.push_back(std::string(op) + " " + kind + " " + hex_number(a) +
                    (l ? "," + std::to_string(l) : ""));
    return point_result;
  }
};

const std::string kNone = "(no reply)";

// A packet as GDB sends it: no escapes (GDB escapes only the binary data of
// X packets itself), the checksum over the payload.
std::string wire(std::string_view payload) {
  uint8_t sum = 0;
  for (char c : payload)
    sum = uint8_t(sum + uint8_t(c));
  std::string cs = hex_number(sum);
  return "$" + std::string(payload) + "#" + (cs.size() < 2 ? "0" : "") + cs;
}

// Splits what the stub sent into acks and packet payloads, checking every
// checksum and undoing escapes as GDB does.
std::vector<std::string> decode(std::string_view out, std::string &acks) {
  std::vector<std::string> packets;
  size_t i = 0;
  while (i < out.size()) {
    char c = out[i++];
    if (c == '+' || c == '-') {
      acks += c;
      continue;
    }
    REQUIRE(c == '$');
    size_t end = out.find('#', i);
    REQUIRE(end != out.npos);
    REQUIRE(end + 2 < out.size());
    uint8_t sum = 0;
    std::string payload;
    bool escape = false;
    for (size_t j = i; j < end; ++j) {
      char b = out[j];
      sum = uint8_t(sum + uint8_t(b));
      if (b == '*')
        FAIL_CHECK("a raw '*' would read as run-length encoding");
      if (escape)
        payload += char(b ^ 0x20);
      else if (b != '}')
        payload += b;
      escape = !escape && b == '}';
    }
    CHECK_FALSE(escape);
    CHECK(hex_value(out[end + 1]) * 16 + hex_value(out[end + 2]) == sum);
    packets.push_back(payload);
    i = end + 3;
  }
  return packets;
}

// GDB's side of a session with the stub, without a socket.
struct Gdb {
  FakeTarget target;
  std::string out;
  std::string acks;                 // acks of the last exchange
  std::vector<std::string> packets; // packets of the last exchange
  bool ack_mode = true;
  Stub stub{target, [this](std::string_view b) { out.append(b); }};

  Gdb() { stub.connected(); }

  // Feeds raw bytes; returns the packets the stub sent back.
  std::vector<std::string> raw(std::string_view bytes) {
    out.clear();
    acks.clear();
    stub.feed(bytes);
    packets = decode(out, acks);
    return packets;
  }
  // Sends one packet; returns the last reply packet, or kNone.
  std::string ask(std::string_view payload) {
    raw(wire(payload));
    CHECK(acks == (ack_mode ? "+" : ""));
    return packets.empty() ? kNone : packets.back();
  }
  void no_ack() {
    CHECK(ask("QStartNoAckMode") == "OK");
    ack_mode = false;
  }
  void announce_breaks() { ask("qSupported:swbreak+;hwbreak+"); }
  // Resumes with `packet`, then has the target stop with `event`.
  std::string run(std::string_view packet, const StopEvent &event) {
    CHECK(ask(packet) == kNone);
    CHECK(stub.running());
    out.clear();
    stub.on_stop(event);
    std::string ignored;
    packets = decode(out, ignored);
    CHECK_FALSE(stub.running());
    return packets.empty() ? kNone : packets.back();
  }
};

// Where register `regno` starts in a g packet.
size_t at(unsigned regno) {
  return size_t(regno) * 8;
}

std::string le32(uint32_t v) {
  std::string s;
  append_le32(s, v);
  return s;
}

// The whole document a qXfer object returns, read in `chunk`-byte pieces.
std::string read_object(Gdb &gdb, const std::string &prefix, size_t chunk) {
  std::string doc;
  for (int guard = 0; guard < 10000; ++guard) {
    std::string r =
        gdb.ask(prefix + hex_number(doc.size()) + "," + hex_number(chunk));
    REQUIRE(!r.empty());
    REQUIRE((r[0] == 'm' || r[0] == 'l'));
    CHECK(r.size() - 1 <= chunk);
    doc += r.substr(1);
    if (r[0] == 'l')
      return doc;
  }
  FAIL("the transfer never ended");
  return doc;
}

} // namespace

TEST_SUITE_BEGIN("gdb");

// --- Framing ---------------------------------------------------------------

TEST_CASE("gdb packet: framing, checksums and escapes") {
  CHECK(frame("OK") == "$OK#9a");
  CHECK(frame("") == "$#00");
  CHECK(frame("?") == "$?#3f");
  // '#', '$', '}' and '*' travel escaped, with the checksum over the wire.
  std::string escaped = frame("a#$}*");
  CHECK(escaped.substr(0, 10) == "$a}\x03}\x04}]}\x0a");
  CHECK(escaped[10] == '#');
  std::string acks;
  auto round = decode(frame(std::string("x#y$z}w*v\0u", 11)), acks);
  REQUIRE(round.size() == 1);
  CHECK(round[0] == std::string("x#y$z}w*v\0u", 11));
}

TEST_CASE("gdb packet: field parsers reject what they should") {
  uint64_t v = 0;
  CHECK(parse_hex("ffffffffffffffff", v));
  CHECK(v == ~uint64_t(0));
  CHECK_FALSE(parse_hex("1ffffffffffffffff", v)); // 17 digits
  CHECK_FALSE(parse_hex("", v));
  CHECK_FALSE(parse_hex("12g", v));
  uint32_t a = 0;
  CHECK(parse_address("ffffffff80001000", a)); // GDB sign-extends on MIPS
  CHECK(a == 0x80001000);
  CHECK_FALSE(parse_address("ffffffff00001000", a));
  CHECK_FALSE(parse_address("100000000", a));
  std::vector<uint8_t> bytes;
  CHECK_FALSE(hex_decode("abc", bytes));
  CHECK_FALSE(hex_decode("zz", bytes));
  CHECK(unescape_binary("a}]b", bytes));
  CHECK(bytes == std::vector<uint8_t>{'a', '}', 'b'});
  CHECK_FALSE(unescape_binary("ab}", bytes));
  ThreadId t = 0;
  CHECK((parse_thread_id("-1", t) && t == kAllThreads));
  CHECK((parse_thread_id("0", t) && t == kAnyThread));
  CHECK((parse_thread_id("1f", t) && t == 0x1f));
  CHECK((parse_thread_id("p1.3", t) && t == 3));
  CHECK_FALSE(parse_thread_id("ffffffff", t));
  CHECK_FALSE(parse_thread_id("-2", t));
  CHECK(hex_number(0) == "0");
  CHECK(hex_number(0x1f00) == "1f00");
}

TEST_CASE("gdb stub: acks, bad checksums and retransmission") {
  Gdb gdb;
  // Good packet: '+' then the reply.
  CHECK(gdb.ask("qC") == "QC1");
  // Bad checksum: '-' and nothing else; the target is not asked.
  CHECK(gdb.raw("$qC#00").empty());
  CHECK(gdb.acks == "-");
  CHECK(gdb.raw("$qC#zz").empty());
  CHECK(gdb.acks == "-");
  // Noise between packets is ignored; '$' inside a packet restarts it.
  CHECK(gdb.raw("xyz\r\n" + wire("qC")).back() == "QC1");
  CHECK(gdb.raw("$qSupp" + wire("qC")).back() == "QC1");
  // GDB's '-' asks for the last packet again; its '+' is ignored.
  gdb.ask("qOffsets");
  CHECK(gdb.raw("-") == std::vector<std::string>{"Text=0;Data=0;Bss=0"});
  CHECK(gdb.raw("+").empty());
  CHECK(gdb.acks.empty());
  // A packet split across reads.
  std::string p = wire("qAttached");
  CHECK(gdb.raw(p.substr(0, 4)).empty());
  CHECK(gdb.raw(p.substr(4)).back() == "1");
  // Several packets in one read are answered in order.
  auto replies = gdb.raw(wire("qC") + wire("qAttached"));
  CHECK(replies == std::vector<std::string>{"QC1", "1"});
  CHECK(gdb.acks == "++");
}

TEST_CASE("gdb stub: no-ack mode") {
  Gdb gdb;
  gdb.raw(wire("QStartNoAckMode"));
  CHECK(gdb.acks == "+"); // the switch itself is still acknowledged
  CHECK(gdb.packets == std::vector<std::string>{"OK"});
  gdb.ack_mode = false;
  CHECK(gdb.ask("qC") == "QC1");
  // A damaged packet is dropped silently; '-' does not resend.
  CHECK(gdb.raw("$qC#00").empty());
  CHECK(gdb.acks.empty());
  CHECK(gdb.raw("-").empty());
  // A new connection starts in ack mode again.
  gdb.stub.disconnected();
  gdb.stub.connected();
  gdb.ack_mode = true;
  CHECK(gdb.ask("qC") == "QC1");
}

TEST_CASE("gdb stub: unknown packets get an empty reply") {
  Gdb gdb;
  for (const char *p :
       {"vMustReplyEmpty", "qTStatus", "QNonStop:1", "!", "vRun;",
        "vFile:open:2f,0,0", "bc", "i", "qFoo", "Z9,1000,4"})
    CHECK(gdb.ask(p) == "");
  CHECK(gdb.ask("") == "");
}

// --- Queries ---------------------------------------------------------------

TEST_CASE("gdb stub: qSupported, qAttached, qOffsets, qSymbol, qC") {
  Gdb gdb;
  std::string r = gdb.ask("qSupported:multiprocess+;swbreak+;xmlRegisters="
                          "i386;vContSupported+");
  CHECK(r == "PacketSize=2000;QStartNoAckMode+;qXfer:features:read+;"
             "qXfer:threads:read+;swbreak+;hwbreak+;vContSupported+");
  CHECK(gdb.ask("qSupported") == r);
  CHECK(gdb.ask("qAttached") == "1");
  CHECK(gdb.ask("qAttached:1") == "1");
  CHECK(gdb.ask("qOffsets") == "Text=0;Data=0;Bss=0");
  CHECK(gdb.ask("qSymbol::") == "OK");
  CHECK(gdb.ask("qC") == "QC1");
}

TEST_CASE("gdb stub: target.xml in pieces, at any offset") {
  Gdb gdb;
  std::string xml = std::string(mips::target_xml());
  const std::string prefix = "qXfer:features:read:target.xml:";
  CHECK(read_object(gdb, prefix, 0x1000) == xml);
  CHECK(read_object(gdb, prefix, 100) == xml);
  CHECK(read_object(gdb, prefix, 1) == xml);
  // What GDB's MIPS code requires, numbered as 'g' and 'p' use them.
  for (const char *f : {"org.gnu.gdb.mips.cpu", "org.gnu.gdb.mips.cp0",
                        "org.gnu.gdb.mips.fpu", "<architecture>mips:isa32"})
    CHECK(xml.find(f) != xml.npos);
  for (const char *reg : {"name=\"r29\" bitsize=\"32\" regnum=\"29\"",
                          "name=\"status\" bitsize=\"32\" regnum=\"32\"",
                          "name=\"lo\" bitsize=\"32\" regnum=\"33\"",
                          "name=\"hi\" bitsize=\"32\" regnum=\"34\"",
                          "name=\"badvaddr\" bitsize=\"32\" regnum=\"35\"",
                          "name=\"cause\" bitsize=\"32\" regnum=\"36\"",
                          "name=\"pc\" bitsize=\"32\" regnum=\"37\"",
                          "name=\"f0\" bitsize=\"32\" regnum=\"38\"",
                          "name=\"fir\" bitsize=\"32\" regnum=\"71\""})
    CHECK(xml.find(reg) != xml.npos);
  // Past the end; huge lengths are capped; errors.
  CHECK(gdb.ask(prefix + hex_number(xml.size()) + ",10") == "l");
  CHECK(gdb.ask(prefix + "ffffffffffff,10") == "l");
  std::string capped = gdb.ask(prefix + "0,ffffffffffffffff");
  CHECK(capped.size() - 1 == std::min(xml.size(), Stub::kPacketSize / 2));
  CHECK(gdb.ask("qXfer:features:read:other.xml:0,10") == "E00");
  CHECK(gdb.ask("qXfer:features:read:target.xml:0") == "E00");
  CHECK(gdb.ask("qXfer:features:read:target.xml:x,10") == "E00");
  CHECK(gdb.ask("qXfer:features:read") == "E00");
  CHECK(gdb.ask("qXfer:features:write:target.xml:0:abc") == "");
  CHECK(gdb.ask("qXfer:libraries:read::0,100") == "");
}

// --- Threads ---------------------------------------------------------------

TEST_CASE("gdb stub: thread list, names, liveness") {
  Gdb gdb;
  CHECK(gdb.ask("qfThreadInfo") == "m1,2,3");
  CHECK(gdb.ask("qsThreadInfo") == "l");
  CHECK(gdb.ask("qsThreadInfo") == "l");
  CHECK(gdb.ask("qfThreadInfo") == "m1,2,3"); // starts over
  CHECK(gdb.ask("T2") == "OK");
  CHECK(gdb.ask("T4") == "E02");
  CHECK(gdb.ask("T0") == "E02");
  CHECK(gdb.ask("Tzz") == "E01");
  CHECK(gdb.ask("qThreadExtraInfo,1") == hex_encode("running"));
  CHECK(gdb.ask("qThreadExtraInfo,9") == "E02");
  CHECK(gdb.ask("qThreadExtraInfo,") == "E01");
  std::string xml = read_object(gdb, "qXfer:threads:read::", 0x1000);
  CHECK(xml.find("<thread id=\"1\" name=\"node0\">running</thread>") !=
        xml.npos);
  CHECK(xml.find("<thread id=\"2\" name=\"node1\">sleeping &lt;idle&gt; "
                 "&amp; &quot;quiet&quot;</thread>") != xml.npos);
  CHECK(read_object(gdb, "qXfer:threads:read::", 7) == xml);
  CHECK(gdb.ask("qXfer:threads:read:x:0,100") == "E00");
}

TEST_CASE("gdb stub: a thousand nodes list in several packets") {
  Gdb gdb;
  gdb.target.ids.clear();
  for (ThreadId t = 1; t <= 4000; ++t)
    gdb.target.ids.push_back(t);
  std::vector<ThreadId> seen;
  std::string r = gdb.ask("qfThreadInfo");
  int replies = 0;
  while (r != "l") {
    REQUIRE(r[0] == 'm');
    CHECK(r.size() <= Stub::kPacketSize);
    ++replies;
    std::string_view list = std::string_view(r).substr(1);
    while (!list.empty()) {
      size_t comma = list.find(',');
      uint64_t v = 0;
      REQUIRE(parse_hex(list.substr(0, comma), v));
      seen.push_back(ThreadId(v));
      list.remove_prefix(comma == list.npos ? list.size() : comma + 1);
    }
    r = gdb.ask("qsThreadInfo");
  }
  CHECK(replies > 1);
  CHECK(seen == gdb.target.ids);
}

TEST_CASE("gdb stub: Hg selects the thread for registers and memory") {
  Gdb gdb;
  CHECK(gdb.ask("p25") == le32(0x125)); // no stop yet: the first thread
  CHECK(gdb.ask("Hg2") == "OK");
  CHECK(gdb.ask("p25") == le32(0x225));
  CHECK(gdb.ask("m1000,2") == "0202"); // node 2's own memory
  CHECK(gdb.ask("Hg3") == "OK");
  CHECK(gdb.ask("m1000,2") == "0303");
  CHECK(gdb.ask("Hg0") == "OK"); // any: the current thread
  CHECK(gdb.ask("p25") == le32(0x125));
  CHECK(gdb.ask("Hg9") == "E02");
  CHECK(gdb.ask("Hgx") == "E01");
  CHECK(gdb.ask("H") == "E01");
  CHECK(gdb.ask("Hq1") == "E01");
  CHECK(gdb.ask("Hc-1") == "OK");
  CHECK(gdb.ask("Hc3") == "OK");
  CHECK(gdb.ask("Hgp1.2") == "OK"); // multiprocess form, tolerated
  CHECK(gdb.ask("p25") == le32(0x225));
}

// --- Registers -------------------------------------------------------------

TEST_CASE("gdb stub: g and G send every register, FPU unavailable") {
  Gdb gdb;
  gdb.ask("Hg2");
  std::string g = gdb.ask("g");
  REQUIRE(g.size() == at(mips::kRegisterCount));
  CHECK(g.substr(0, 8) == le32(0x200));
  CHECK(g.substr(at(mips::kSp), 8) == le32(0x21d));
  CHECK(g.substr(at(mips::kStatus), 8) == le32(0x220));
  CHECK(g.substr(at(mips::kPc), 8) == le32(0x225));
  CHECK(g.substr(at(mips::kF0)) == std::string(at(34), 'x'));

  // G writes back. GDB sends the FPU registers too: refused by the
  // target, ignored, since the target does not have them.
  std::string regs = g;
  regs.replace(at(mips::kPc), 8, le32(0xdeadbeef));
  regs.replace(at(mips::kF0), 8, le32(0));
  CHECK(gdb.ask("G" + regs) == "OK");
  CHECK(gdb.target.regs[2][mips::kPc] == 0xdeadbeef);
  CHECK(gdb.target.regs[1][mips::kPc] == 0x125);
  regs.replace(at(mips::kCause), 8, le32(5)); // a register that refuses
  CHECK(gdb.ask("G" + regs) == "E22");
  CHECK(gdb.ask("G" + g.substr(0, 16)) == "OK"); // a prefix is fine
  CHECK(gdb.ask("G123") == "E01");
  CHECK(gdb.ask("G" + std::string(8, 'z')) == "E01");
  CHECK(gdb.ask("G" + g + "00000000") == "E01"); // too many
}

TEST_CASE("gdb stub: p and P") {
  Gdb gdb;
  CHECK(gdb.ask("p1d") == le32(0x11d));
  CHECK(gdb.ask("p26") == "xxxxxxxx"); // f0: no FPU
  CHECK(gdb.ask("p48") == "E22");      // beyond the description
  CHECK(gdb.ask("p") == "E01");
  CHECK(gdb.ask("pzz") == "E01");
  CHECK(gdb.ask("P8=78563412") == "OK");
  CHECK(gdb.target.regs[1][8] == 0x12345678);
  CHECK(gdb.ask("P24=00000000") == "E22"); // the target refuses
  CHECK(gdb.ask("P48=00000000") == "E22");
  CHECK(gdb.ask("P8=1234") == "E01");
  CHECK(gdb.ask("P8") == "E01");
  CHECK(gdb.ask("P=00000000") == "E01");
}

// --- Memory ----------------------------------------------------------------

TEST_CASE("gdb stub: m reads, partially at the end of memory, capped") {
  Gdb gdb;
  gdb.target.mem[1][0] = 0xab;
  gdb.target.mem[1][1] = 0xcd;
  CHECK(gdb.ask("m1000,2") == "abcd");
  CHECK(gdb.ask("mffffffff00001000,2") == "E01");
  CHECK(gdb.ask("m0,4") == "E14"); // unmapped
  // Only the readable prefix comes back; GDB asks for the rest.
  uint32_t end = FakeTarget::kBase + FakeTarget::kSize;
  CHECK(gdb.ask("m" + hex_number(end - 3) + ",10") == "010101");
  CHECK(gdb.ask("m" + hex_number(end) + ",10") == "E14");
  // Huge lengths do not allocate: the reply is capped.
  CHECK(gdb.ask("m1000,ffffffff").size() == 2 * Stub::kMaxMemoryRead);
  CHECK(gdb.ask("m1000,ffffffffffffffff") == "E01");
  CHECK(gdb.ask("mffffffff,ffff") == "E14"); // never wraps around
  CHECK(gdb.ask("m1000,0") == "");
  CHECK(gdb.ask("m1000") == "E01");
  CHECK(gdb.ask("mxyz,4") == "E01");
  CHECK(gdb.ask("m1000,") == "E01");
}

TEST_CASE("gdb stub: M writes hex") {
  Gdb gdb;
  CHECK(gdb.ask("M1004,3:a1b2c3") == "OK");
  CHECK(gdb.target.mem[1][4] == 0xa1);
  CHECK(gdb.target.mem[1][6] == 0xc3);
  CHECK(gdb.target.mem[2][4] == 0x02);         // another node's memory
  CHECK(gdb.ask("M1004,4:a1b2c3") == "E01");   // length mismatch
  CHECK(gdb.ask("M1004,1:zz") == "E01");       // bad hex
  CHECK(gdb.ask("M1004,1") == "E01");          // no data
  CHECK(gdb.ask("M10,1:00") == "E14");         // unmapped
  CHECK(gdb.ask("Mffffffff,2:0000") == "E14"); // past 4 GB
  CHECK(gdb.ask("M1004,0:") == "OK");
}

TEST_CASE("gdb stub: X writes binary data with escapes") {
  Gdb gdb;
  CHECK(gdb.ask("X1000,0:") == "OK"); // GDB's probe
  std::vector<uint8_t> data = {0x23, 0x24, 0x7d, 0x2a, 0x00, 0x03, 0xff, ':'};
  std::string escaped;
  for (uint8_t b : data) {
    if (b == 0x23 || b == 0x24 || b == 0x7d || b == 0x2a) {
      escaped += '}';
      escaped += char(b ^ 0x20);
    } else {
      escaped += char(b);
    }
  }
  CHECK(gdb.ask("X1010,8:" + escaped) == "OK");
  CHECK(std::vector<uint8_t>(gdb.target.mem[1].begin() + 0x10,
                             gdb.target.mem[1].begin() + 0x18) == data);
  CHECK(gdb.ask("X1010,9:" + escaped) == "E01");
  CHECK(gdb.ask("X1010,1:}") == "E01");
  CHECK(gdb.ask("X10,1:a") == "E14");
  CHECK(gdb.ask("X1010:a") == "E01");
}

// --- Execution and stop replies -------------------------------------------

TEST_CASE("gdb stub: ? before and after a stop") {
  Gdb gdb;
  // Nothing reported yet: stopped, SIGTRAP, the first thread.
  CHECK(gdb.ask("?") ==
        "T05thread:1;25:" + le32(0x125) + ";1d:" + le32(0x11d) + ";");
  gdb.stub.on_stop(StopEvent::fault(3, Signal::Segv));
  CHECK(gdb.ask("?") ==
        "T0bthread:3;25:" + le32(0x325) + ";1d:" + le32(0x31d) + ";");
  CHECK(gdb.ask("qC") == "QC3");
}

TEST_CASE("gdb stub: vCont? and vCont plans") {
  Gdb gdb;
  CHECK(gdb.ask("vCont?") == "vCont;c;C;s;S");
  SUBCASE("continue all") {
    gdb.run("vCont;c", StopEvent::interrupted(1));
    REQUIRE(gdb.target.plans.size() == 1);
    CHECK(gdb.target.plans[0].threads.empty());
    CHECK(gdb.target.plans[0].others == Action::Continue);
  }
  SUBCASE("step one, continue the others") {
    gdb.run("vCont;s:2;c", StopEvent::stepped(2));
    auto &plan = gdb.target.plans.at(0);
    CHECK(plan.action_for(2) == Action::Step);
    CHECK(plan.action_for(1) == Action::Continue);
    CHECK(plan.threads.size() == 1);
  }
  SUBCASE("only one thread moves (scheduler-locking)") {
    gdb.run("vCont;c:3", StopEvent::breakpoint(3, BreakKind::Software));
    auto &plan = gdb.target.plans.at(0);
    CHECK(plan.action_for(3) == Action::Continue);
    CHECK(plan.action_for(1) == Action::Stay);
  }
  SUBCASE("the leftmost action for a thread wins") {
    gdb.run("vCont;s:2;c:2;C0b:1;c", StopEvent::stepped(2));
    auto &plan = gdb.target.plans.at(0);
    CHECK(plan.threads.size() == 2);
    CHECK(plan.action_for(2) == Action::Step);
    CHECK(plan.action_for(1) == Action::Continue);
    CHECK(plan.others == Action::Continue);
  }
  SUBCASE("a default before a thread action covers it too") {
    gdb.run("vCont;c;s:2", StopEvent::interrupted(1));
    CHECK(gdb.target.plans.at(0).action_for(2) == Action::Continue);
  }
  SUBCASE("thread 0 means the current thread") {
    gdb.run("vCont;S05:0", StopEvent::stepped(1));
    CHECK(gdb.target.plans.at(0).action_for(1) == Action::Step);
  }
  SUBCASE("errors") {
    CHECK(gdb.ask("vCont") == "");
    CHECK(gdb.ask("vCont;") == "E01");
    CHECK(gdb.ask("vCont;x") == "E01");
    CHECK(gdb.ask("vCont;t") == "E01");
    CHECK(gdb.ask("vCont;r1000,1004") == "E01");
    CHECK(gdb.ask("vCont;cc") == "E01");
    CHECK(gdb.ask("vCont;Cxx") == "E01");
    CHECK(gdb.ask("vCont;s:9") == "E02");
    CHECK(gdb.ask("vCont;s:zz") == "E01");
    CHECK(gdb.ask("vCont;;c") == "E01");
    CHECK(gdb.target.plans.empty());
    CHECK_FALSE(gdb.stub.running());
  }
}

TEST_CASE("gdb stub: legacy c, s, C, S follow Hc") {
  Gdb gdb;
  SUBCASE("c: everything runs") {
    gdb.run("c", StopEvent::interrupted(1));
    CHECK(gdb.target.plans.at(0).others == Action::Continue);
    CHECK(gdb.target.plans.at(0).threads.empty());
  }
  SUBCASE("s with Hc any: the current thread steps") {
    gdb.ask("Hc0");
    gdb.run("s", StopEvent::stepped(1));
    CHECK(gdb.target.plans.at(0).action_for(1) == Action::Step);
  }
  SUBCASE("Hc names a thread: only it moves") {
    gdb.ask("Hc2");
    gdb.run("S05", StopEvent::stepped(2));
    auto &plan = gdb.target.plans.at(0);
    CHECK(plan.action_for(2) == Action::Step);
    CHECK(plan.action_for(1) == Action::Stay);
  }
  SUBCASE("resume at an address sets the pc first") {
    gdb.ask("Hc3");
    gdb.run("c2000", StopEvent::interrupted(3));
    CHECK(gdb.target.regs[3][mips::kPc] == 0x2000);
    gdb.run("C0b;3000", StopEvent::interrupted(3));
    CHECK(gdb.target.regs[3][mips::kPc] == 0x3000);
  }
  SUBCASE("errors") {
    CHECK(gdb.ask("cxyz") == "E01");
    CHECK(gdb.ask("C") == "E01");
    CHECK(gdb.ask("Czz;1000") == "E01");
    CHECK(gdb.ask("c1ffffffff") == "E01");
    CHECK(gdb.target.plans.empty());
  }
}

TEST_CASE("gdb stub: stop reply formats") {
  Gdb gdb;
  std::string regs2 =
      "25:" + le32(0x225) + ";1d:" + le32(0x21d) + ";"; // expedited
  SUBCASE("breakpoint reasons only once GDB announced them") {
    CHECK(gdb.run("c", StopEvent::breakpoint(2, BreakKind::Software)) ==
          "T05thread:2;" + regs2);
    gdb.announce_breaks();
    CHECK(gdb.run("c", StopEvent::breakpoint(2, BreakKind::Software)) ==
          "T05thread:2;" + regs2 + "swbreak:;");
    CHECK(gdb.run("c", StopEvent::breakpoint(2, BreakKind::Hardware)) ==
          "T05thread:2;" + regs2 + "hwbreak:;");
  }
  SUBCASE("watchpoints carry the data address") {
    CHECK(gdb.run("c", StopEvent::watchpoint(2, WatchKind::Write, 0x1abc)) ==
          "T05thread:2;" + regs2 + "watch:1abc;");
    CHECK(gdb.run("c", StopEvent::watchpoint(2, WatchKind::Read, 0x10)) ==
          "T05thread:2;" + regs2 + "rwatch:10;");
    CHECK(gdb.run("c", StopEvent::watchpoint(2, WatchKind::Access, 0)) ==
          "T05thread:2;" + regs2 + "awatch:0;");
  }
  SUBCASE("signals, interrupt, faults") {
    CHECK(gdb.run("c", StopEvent::interrupted(2)) == "T02thread:2;" + regs2);
    CHECK(gdb.run("c", StopEvent::fault(2, Signal::Bus)) ==
          "T0athread:2;" + regs2);
    CHECK(gdb.run("c", StopEvent::fault(2, Signal::Ill)) ==
          "T04thread:2;" + regs2);
  }
  SUBCASE("the stop's thread becomes the current and the Hg thread") {
    gdb.ask("Hg1");
    gdb.run("c", StopEvent::stepped(2));
    CHECK(gdb.ask("qC") == "QC2");
    CHECK(gdb.ask("p25") == le32(0x225)); // GDB assumes Hg2 now
  }
  SUBCASE("an unknown or missing thread is replaced by the current one") {
    gdb.run("c", StopEvent::stepped(3));
    CHECK(gdb.run("c", StopEvent::stepped(kAnyThread))
              .starts_with("T05thread:3;"));
    CHECK(gdb.run("c", StopEvent::stepped(77)).starts_with("T05thread:3;"));
  }
  SUBCASE("exits") {
    CHECK(gdb.run("c", StopEvent::exited(3)) == "W03");
    CHECK(gdb.ask("?") == "W03");
    CHECK(gdb.run("c", StopEvent::terminated(Signal::Kill)) == "X09");
  }
}

TEST_CASE("gdb stub: a stop inside resume() is answered once") {
  Gdb gdb;
  gdb.target.during_resume = [&] { gdb.stub.on_stop(StopEvent::stepped(2)); };
  auto replies = gdb.raw(wire("vCont;s:2"));
  CHECK(replies.size() == 1);
  CHECK(replies.at(0).starts_with("T05thread:2;"));
  CHECK_FALSE(gdb.stub.running());
}

TEST_CASE("gdb stub: resuming a running target is refused") {
  Gdb gdb;
  CHECK(gdb.ask("c") == kNone);
  CHECK(gdb.ask("vCont;c") == "E01");
  CHECK(gdb.ask("s") == "E01");
  CHECK(gdb.target.plans.size() == 1);
}

TEST_CASE("gdb stub: Ctrl-C interrupts a running target only") {
  Gdb gdb;
  CHECK(gdb.raw("\x03").empty()); // halted: nothing to do
  CHECK(gdb.target.calls.empty());
  CHECK(gdb.ask("vCont;c") == kNone);
  CHECK(gdb.raw("\x03").empty());
  CHECK(gdb.target.calls.back() == "interrupt");
  gdb.out.clear();
  gdb.stub.on_stop(StopEvent::interrupted(3));
  std::string acks;
  CHECK(decode(gdb.out, acks).at(0).starts_with("T02thread:3;"));
  // vCtrlC works too; a 0x03 inside a packet is data, not an interrupt.
  gdb.ask("c");
  CHECK(gdb.ask("vCtrlC") == "OK");
  CHECK(gdb.target.calls.back() == "interrupt");
  gdb.stub.on_stop(StopEvent::interrupted(1));
  gdb.target.calls.clear();
  CHECK(gdb.ask("X1000,1:\x03") == "OK");
  CHECK(gdb.target.calls.empty());
}

TEST_CASE("gdb stub: console output while the target runs") {
  Gdb gdb;
  gdb.stub.console_output("dropped: halted\n");
  CHECK(gdb.out.empty());
  gdb.ask("c");
  gdb.out.clear();
  gdb.stub.console_output("hello\n");
  std::string acks;
  CHECK(decode(gdb.out, acks) ==
        std::vector<std::string>{"O" + hex_encode("hello\n")});
}

// --- Breakpoints and watchpoints -------------------------------------------

TEST_CASE("gdb stub: Z and z are forwarded once per point") {
  Gdb gdb;
  auto &calls = gdb.target.calls;
  CHECK(gdb.ask("Z0,1000,4") == "OK");
  CHECK(gdb.ask("Z0,1000,4") == "OK"); // again: the target is not asked
  CHECK(gdb.ask("Z1,ffffffff80001000,4") == "OK");
  CHECK(gdb.ask("Z2,2000,4") == "OK");
  CHECK(gdb.ask("Z3,2004,2") == "OK");
  CHECK(gdb.ask("Z4,2008,1;X2,abcd") == "OK"); // conditions ignored
  CHECK(calls ==
        std::vector<std::string>{"insert sw 1000", "insert hw 80001000",
                                 "insert write 2000,4", "insert read 2004,2",
                                 "insert access 2008,1"});
  calls.clear();
  CHECK(gdb.ask("z0,1000,4") == "OK");
  CHECK(gdb.ask("z0,1000,4") == "OK"); // not inserted any more
  CHECK(gdb.ask("z2,2000,4") == "OK");
  CHECK(gdb.ask("z3,2004,4") == "OK"); // other length: never inserted
  CHECK(calls ==
        std::vector<std::string>{"remove sw 1000", "remove write 2000,4"});
  SUBCASE("detach removes what GDB left") {
    calls.clear();
    CHECK(gdb.ask("D") == "OK");
    CHECK(calls == std::vector<std::string>{"remove hw 80001000",
                                            "remove read 2004,2",
                                            "remove access 2008,1", "detach"});
  }
  SUBCASE("so does a lost connection") {
    calls.clear();
    gdb.stub.disconnected();
    CHECK(calls.size() == 3);
    gdb.stub.connected();
    gdb.stub.disconnected();
    CHECK(calls.size() == 3);
  }
}

TEST_CASE("gdb stub: a breakpoint's kind is not part of it: Z0 at one "
          "address with kinds 4 and 2 is one breakpoint (found by "
          "fuzz_gdb_stub)") {
  Gdb gdb;
  auto &calls = gdb.target.calls;
  CHECK(gdb.ask("Z0,1000,4") == "OK");
  CHECK(gdb.ask("Z0,1000,2") == "OK");
  CHECK(calls == std::vector<std::string>{"insert sw 1000"});
  calls.clear();
  CHECK(gdb.ask("z0,1000,2") == "OK");
  CHECK(gdb.ask("z0,1000,4") == "OK"); // removed already
  CHECK(calls == std::vector<std::string>{"remove sw 1000"});
}

TEST_CASE("gdb stub: Z and z errors") {
  Gdb gdb;
  gdb.target.point_result = PointResult::Unsupported;
  CHECK(gdb.ask("Z2,1000,4") == "");
  gdb.target.point_result = PointResult::Failed;
  CHECK(gdb.ask("Z0,1000,4") == "E22");
  gdb.target.point_result = PointResult::Done;
  CHECK(gdb.ask("Z0,1000,4") == "OK");
  gdb.target.point_result = PointResult::Failed;
  CHECK(gdb.ask("z0,1000,4") == "E22"); // still inserted: retried later
  gdb.target.point_result = PointResult::Done;
  CHECK(gdb.ask("z0,1000,4") == "OK");
  for (const char *bad : {"Z0", "Z0,1000", "Z0,zz,4", "Z0,1000,zz", "Z0,,4",
                          "Z2,ffffffff,2", "z1,1000"})
    CHECK(gdb.ask(bad) == "E01");
  CHECK(gdb.ask("Z5,1000,4") == "");
  CHECK(gdb.ask("Z01,1000,4") == "");
}

TEST_CASE("gdb stub: the number of points is bounded") {
  Gdb gdb;
  for (uint32_t i = 0; i < Stub::kMaxPoints; ++i)
    REQUIRE(gdb.ask("Z0," + hex_number(uint64_t(i) * 4) + ",4") == "OK");
  CHECK(gdb.ask("Z0,ffff0000,4") == "E22");
}

// --- Monitor, detach, kill -------------------------------------------------

TEST_CASE("gdb stub: monitor commands through qRcmd") {
  Gdb gdb;
  auto replies = gdb.raw(wire("qRcmd," + hex_encode("nodes")));
  CHECK(replies ==
        std::vector<std::string>{"O" + hex_encode("3 nodes\n"), "OK"});
  replies = gdb.raw(wire("qRcmd," + hex_encode("bogus")));
  CHECK(replies == std::vector<std::string>{
                       "O" + hex_encode("unknown command: bogus\n"), "E01"});
  replies = gdb.raw(wire("qRcmd," + hex_encode("big")));
  REQUIRE(replies.size() == 4); // 3000 bytes in 1024-byte pieces, then OK
  std::vector<uint8_t> text;
  std::string all;
  for (size_t i = 0; i + 1 < replies.size(); ++i) {
    REQUIRE(hex_decode(replies[i].substr(1), text));
    all.append(text.begin(), text.end());
  }
  CHECK(all == std::string(3000, 'x'));
  CHECK(gdb.ask("qRcmd,zz") == "E01");
  CHECK(gdb.ask("qRcmd,abc") == "E01");
}

TEST_CASE("gdb stub: detach lets the target run, a new debugger stops it") {
  Gdb gdb;
  CHECK(gdb.ask("D;1") == "OK");
  CHECK(gdb.target.calls.back() == "detach");
  CHECK(gdb.stub.running());
  gdb.stub.disconnected();
  gdb.target.calls.clear();
  gdb.stub.connected();
  CHECK(gdb.target.calls == std::vector<std::string>{"interrupt"});
  CHECK(gdb.ask("qSupported") != "");
  CHECK(gdb.ask("?") == kNone); // answered when the target has stopped
  gdb.out.clear();
  gdb.stub.on_stop(StopEvent::interrupted(2));
  std::string acks;
  CHECK(decode(gdb.out, acks).at(0).starts_with("T02thread:2;"));
}

TEST_CASE("gdb stub: a stop while no debugger waits is kept for ?") {
  Gdb gdb;
  gdb.ask("D");
  gdb.stub.disconnected();
  gdb.out.clear();
  gdb.stub.on_stop(StopEvent::fault(2, Signal::Segv));
  CHECK(gdb.out.empty());
  gdb.stub.connected();
  CHECK(gdb.target.calls.back() == "detach"); // stopped: no interrupt
  CHECK(gdb.ask("?").starts_with("T0bthread:2;"));
}

TEST_CASE("gdb stub: detach after the run ended keeps it ended") {
  Gdb gdb;
  gdb.run("c", StopEvent::exited(0));
  CHECK(gdb.ask("D") == "OK");
  CHECK_FALSE(gdb.stub.running());
}

TEST_CASE("gdb stub: k and vKill end the run") {
  Gdb gdb;
  gdb.ask("Z0,1000,4");
  gdb.target.calls.clear();
  CHECK(gdb.ask("k") == kNone);
  CHECK(gdb.target.calls == std::vector<std::string>{"kill"});
  CHECK_FALSE(gdb.stub.running());
  CHECK(gdb.ask("?") == "X09");
  gdb.stub.disconnected(); // points died with the run: nothing to remove
  CHECK(gdb.target.calls.size() == 1);
  gdb.stub.connected();
  CHECK(gdb.ask("vKill;a410") == "OK");
  CHECK(gdb.target.calls.back() == "kill");
}

// --- Robustness ------------------------------------------------------------

TEST_CASE("gdb stub: an oversized packet is dropped with an error") {
  Gdb gdb;
  std::string huge = "M1000,1:" + std::string(Stub::kPacketSize * 4, '0');
  CHECK(gdb.ask(huge) == "E01");
  CHECK(gdb.target.mem[1][0] == 1); // nothing written
  CHECK(gdb.ask("qC") == "QC1");    // and the stream is still in sync
  // The largest packet GDB may send is taken.
  size_t n = (Stub::kPacketSize - 16) / 2;
  std::string big = "M1000," + hex_number(n) + ":" + std::string(2 * n, 'f');
  REQUIRE(big.size() <= Stub::kPacketSize);
  CHECK(gdb.ask(big) == "OK");
  CHECK(gdb.target.mem[1][n - 1] == 0xff);
}

TEST_CASE("gdb stub: truncated packets and garbage resynchronise") {
  Gdb gdb;
  for (const char *cut : {"$", "$m1000,4", "$m1000,4#", "$m1000,4#3"}) {
    gdb.stub.connected(); // a fresh reader each time
    gdb.raw(cut);
    CHECK(gdb.packets.empty());
    // The next packet's '$' restarts a cut one; a cut checksum eats two
    // characters and the damaged packet is refused.
    auto r = gdb.raw(wire("qC") + wire("qC"));
    CHECK(r.back() == "QC1");
  }
}

TEST_CASE("gdb stub: random bytes and random packets never crash") {
  std::mt19937 rng(12345);
  Gdb gdb;
  gdb.target.during_resume = [&] {
    if (rng() % 2)
      gdb.stub.on_stop(StopEvent::stepped(ThreadId(rng() % 5)));
  };
  // Raw noise, with framing characters made likely.
  const char special[] = "$#}*+-\x03:;,";
  std::string noise;
  for (int i = 0; i < 200000; ++i)
    noise += rng() % 4 ? char(rng()) : special[rng() % 10];
  for (size_t at = 0; at < noise.size(); at += 1 + rng() % 512)
    gdb.stub.feed(std::string_view(noise).substr(at, 1 + rng() % 512));
  // Well-framed packets made of command letters, hex and separators, so
  // that they get past the checksum into every handler.
  const std::string alphabet = "?gGpPmMXcCsSzZHTDvqQ0123456789abcdefx-,:;=p.";
  const std::vector<std::string> heads = {"m",
                                          "M",
                                          "X",
                                          "p",
                                          "P",
                                          "G",
                                          "Z",
                                          "z",
                                          "H",
                                          "vCont;",
                                          "qXfer:features:read:",
                                          "qRcmd,",
                                          "qXfer:threads:read::",
                                          "qThreadExtraInfo,",
                                          "T",
                                          "C"};
  for (int i = 0; i < 20000; ++i) {
    std::string p = heads[rng() % heads.size()];
    size_t len = rng() % 40;
    for (size_t j = 0; j < len; ++j)
      p += alphabet[rng() % alphabet.size()];
    gdb.out.clear();
    gdb.stub.feed(wire(p));
    if (rng() % 3 == 0) // let a running target stop again
      gdb.stub.on_stop(StopEvent::interrupted(ThreadId(rng() % 4)));
    CHECK(gdb.out.size() < 4 * Stub::kPacketSize);
  }
  gdb.stub.on_stop(StopEvent::interrupted(1));
  gdb.stub.disconnected();
  gdb.stub.connected();
  CHECK(gdb.ask("qC").starts_with("QC"));
}

// --- The TCP server --------------------------------------------------------

namespace {

int connect_to(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0);
  return fd;
}

// Reads until `want` bytes came or 2 s passed.
std::string read_some(int fd, size_t want) {
  std::string got;
  for (int i = 0; i < 200 && got.size() < want; ++i) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0)
      continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0)
      break;
    got.append(buf, size_t(n));
  }
  return got;
}

// Pumps until the server reports `event` (or 2 s passed).
bool pump_until(Server &server, Stub &stub, Server::Event event) {
  for (int i = 0; i < 200; ++i) {
    std::string data;
    Server::Event e = server.poll(10, data);
    if (e == Server::Event::Connected)
      stub.connected();
    if (e == Server::Event::Data)
      stub.feed(data);
    if (e == Server::Event::Disconnected)
      stub.disconnected();
    if (e == event)
      return true;
  }
  return false;
}

} // namespace

TEST_CASE("gdb server: connect, exchange, disconnect, reconnect") {
  Server server("127.0.0.1:0");
  REQUIRE(server.port() != 0);
  CHECK(server.address() == "127.0.0.1:" + std::to_string(server.port()));
  FakeTarget target;
  Stub stub(target, [&](std::string_view b) { server.send(b); });
  CHECK_FALSE(pump(server, stub, 0)); // nobody there
  for (int round = 0; round < 2; ++round) {
    CAPTURE(round);
    int fd = connect_to(server.port());
    REQUIRE(pump_until(server, stub, Server::Event::Connected));
    CHECK(server.has_client());
    CHECK(stub.has_client());
    // A second debugger is turned away while the first is served.
    int other = connect_to(server.port());
    std::string data;
    server.poll(50, data);
    CHECK(read_some(other, 1).empty()); // closed without a word
    close(other);
    std::string q = wire("qC");
    REQUIRE(send(fd, q.data(), q.size(), 0) == ssize_t(q.size()));
    REQUIRE(pump_until(server, stub, Server::Event::Data));
    std::string reply = "+" + frame("QC1");
    CHECK(read_some(fd, reply.size()) == reply);
    close(fd);
    REQUIRE(pump_until(server, stub, Server::Event::Disconnected));
    CHECK_FALSE(server.has_client());
    CHECK_FALSE(stub.has_client());
  }
}

TEST_CASE("gdb server: pump blocks for input and feeds Ctrl-C") {
  Server server("0"); // port 0 on loopback
  FakeTarget target;
  Stub stub(target, [&](std::string_view b) { server.send(b); });
  int fd = connect_to(server.port());
  CHECK(pump(server, stub, -1)); // blocks until the connection
  std::string c = wire("vCont;c");
  send(fd, c.data(), c.size(), 0);
  CHECK(pump(server, stub, -1));
  CHECK(stub.running());
  CHECK(read_some(fd, 1) == "+");
  send(fd, "\x03", 1, 0);
  CHECK(pump(server, stub, 2000));
  CHECK(target.calls.back() == "interrupt");
  stub.on_stop(StopEvent::interrupted(1));
  std::string stop =
      frame("T02thread:1;25:" + le32(0x125) + ";1d:" + le32(0x11d) + ";");
  CHECK(read_some(fd, stop.size()) == stop);
  // Sending to a debugger that left reports the loss.
  close(fd);
  REQUIRE(pump_until(server, stub, Server::Event::Disconnected));
  CHECK_FALSE(server.send("+"));
}

TEST_CASE("gdb server: bad addresses are clear errors") {
  CHECK_THROWS_AS(Server("localhost:99999"), nicemu::Error);
  CHECK_THROWS_AS(Server("localhost:port"), nicemu::Error);
  CHECK_THROWS_AS(Server(""), nicemu::Error);
  CHECK_THROWS_AS(Server("[::1"), nicemu::Error);
  CHECK_THROWS_AS(Server("192.0.2.1:0"), nicemu::Error); // not ours
  Server taken("127.0.0.1:0");
  CHECK_THROWS_AS(Server("127.0.0.1:" + std::to_string(taken.port())),
                  nicemu::Error);
}

TEST_SUITE_END();
