// Several observers of one run: each event goes to every observer, in the
// order they were added.
#pragma once

#include "observe/run_events.hpp"

#include <vector>

namespace nicemu {

class EventFanout final : public RunEvents {
public:
  void add(RunEvents *observer) { observers_.push_back(observer); }

  // What to give the emulator: null when nobody listens (so it pays one null
  // test per event), the observer itself when there is one, else the fan-out.
  RunEvents *events() {
    if (observers_.size() <= 1)
      return observers_.empty() ? nullptr : observers_.front();
    return this;
  }

  void handler_call(uint32_t node, std::string_view name, Time start,
                    Time end) override {
    for (RunEvents *o : observers_)
      o->handler_call(node, name, start, end);
  }
  void dma_transfer(uint32_t node, DmaEngineKind engine, Time start, Time end,
                    uint32_t bytes, bool to_host) override {
    for (RunEvents *o : observers_)
      o->dma_transfer(node, engine, start, end, bytes, to_host);
  }
  void link_packet(const LinkRef &link, uint32_t source, uint64_t packet_id,
                   Time head, Time tail,
                   std::span<const uint8_t> frame) override {
    for (RunEvents *o : observers_)
      o->link_packet(link, source, packet_id, head, tail, frame);
  }
  void host_call(uint32_t node, std::string_view what, Time start,
                 Time end) override {
    for (RunEvents *o : observers_)
      o->host_call(node, what, start, end);
  }
  void console_line(uint32_t node, Time at, std::string_view line) override {
    for (RunEvents *o : observers_)
      o->console_line(node, at, line);
  }
  void fault(uint32_t node, Time at, std::string_view what) override {
    for (RunEvents *o : observers_)
      o->fault(node, at, what);
  }

private:
  std::vector<RunEvents *> observers_;
};

} // namespace nicemu
