#include "dist/fabric_calls.hpp"

namespace nicemu {

namespace {

constexpr uint64_t kMaxCalls = 1 << 20;

} // namespace

void write_calls(StateWriter &out, const std::vector<FabricCall> &calls) {
  out.u64(calls.size());
  for (const FabricCall &c : calls) {
    out.u32(uint32_t(c.kind));
    save_packet(out, c.packet);
    out.flag(c.on_sent);
    out.u32(c.node);
    out.u64(c.at);
    const SavedEvent &e = c.posted;
    out.fields(e.when, uint64_t(int64_t(e.priority)), e.origin, e.seq,
               e.tag.owner, e.tag.kind, e.tag.a, e.tag.b);
  }
}

std::vector<FabricCall> read_calls(StateReader &in) {
  std::vector<FabricCall> calls(in.count(kMaxCalls));
  for (FabricCall &c : calls) {
    uint32_t kind = in.u32();
    if (kind > FabricCall::ReceiverReady)
      in.fail("a call of kind " + std::to_string(kind));
    c.kind = FabricCall::Kind(kind);
    c.packet = load_packet(in);
    c.on_sent = in.flag();
    c.node = in.u32();
    c.at = in.u64();
    SavedEvent &e = c.posted;
    uint64_t priority = 0;
    in.fields(e.when, priority, e.origin, e.seq, e.tag.owner, e.tag.kind,
              e.tag.a, e.tag.b);
    e.priority = int(int64_t(priority));
  }
  return calls;
}

void write_reply(StateWriter &out, const CardReply &reply) {
  out.u32(reply.answer);
  write_calls(out, reply.calls);
  out.flag(reply.next.has_value());
  if (reply.next)
    out.fields(reply.next->when, uint64_t(int64_t(reply.next->priority)),
               reply.next->origin, reply.next->seq);
}

CardReply read_reply(std::span<const uint8_t> bytes) {
  StateReader in(bytes, "a card's reply");
  CardReply reply = read_reply(in);
  if (!in.done())
    in.fail("bytes after the reply");
  return reply;
}

CardReply read_reply(StateReader &in) {
  CardReply reply;
  uint32_t answer = in.u32();
  if (answer > 1)
    in.fail("an answer of " + std::to_string(answer));
  reply.answer = answer;
  reply.calls = read_calls(in);
  if (in.flag()) {
    EventKey &next = reply.next.emplace();
    uint64_t priority = 0;
    in.fields(next.when, priority, next.origin, next.seq);
    next.priority = int(int64_t(priority));
  }
  return reply;
}

} // namespace nicemu
