#include "observe/event_log.hpp"

namespace nicemu {

namespace {

constexpr uint64_t kMaxEntries = uint64_t(1) << 28;
constexpr size_t kMaxText = 1 << 20;

} // namespace

void EventLog::keep(Entry e) {
  std::lock_guard lock(mutex_);
  entries_.push_back(std::move(e));
}

void EventLog::handler_call(uint32_t node, std::string_view name, Time start,
                            Time end) {
  keep({Handler, node, start, end, 0, std::string(name)});
}

void EventLog::dma_transfer(uint32_t node, DmaEngineKind engine, Time start,
                            Time end, uint32_t bytes, bool to_host) {
  keep({Dma,
        node,
        start,
        end,
        uint64_t(engine) | uint64_t(to_host) << 8 | uint64_t(bytes) << 32,
        {}});
}

void EventLog::host_call(uint32_t node, std::string_view what, Time start,
                         Time end) {
  keep({HostCall, node, start, end, 0, std::string(what)});
}

void EventLog::console_line(uint32_t node, Time at, std::string_view line) {
  keep({Console, node, at, at, 0, std::string(line)});
}

void EventLog::fault(uint32_t node, Time at, std::string_view what) {
  keep({Fault, node, at, at, 0, std::string(what)});
}

void EventLog::write(StateWriter &out) {
  std::vector<Entry> entries;
  {
    std::lock_guard lock(mutex_);
    entries.swap(entries_);
  }
  out.u64(entries.size());
  for (const Entry &e : entries) {
    out.u32(e.kind);
    out.u32(e.node);
    out.fields(e.start, e.end, e.detail);
    out.str(e.text);
  }
}

void EventLog::play(StateReader &in, RunEvents &to) {
  for (uint64_t i = 0, n = in.count(kMaxEntries); i < n; ++i) {
    const uint32_t kind = in.u32(), node = in.u32();
    Time start = 0, end = 0;
    uint64_t detail = 0;
    in.fields(start, end, detail);
    const std::string text = in.str(kMaxText);
    switch (kind) {
    case Handler:
      to.handler_call(node, text, start, end);
      break;
    case Dma: {
      const uint64_t engine = detail & 0xFF;
      if (engine > uint64_t(DmaEngineKind::Rx))
        in.fail("a DMA engine of kind " + std::to_string(engine));
      to.dma_transfer(node, DmaEngineKind(engine), start, end,
                      uint32_t(detail >> 32), (detail >> 8 & 1) != 0);
      break;
    }
    case HostCall:
      to.host_call(node, text, start, end);
      break;
    case Console:
      to.console_line(node, start, text);
      break;
    case Fault:
      to.fault(node, start, text);
      break;
    default:
      in.fail("an event of kind " + std::to_string(kind));
    }
  }
}

} // namespace nicemu
