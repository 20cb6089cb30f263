// --trace: a Chrome trace-event JSON file (opens in the Perfetto UI and
// chrome://tracing), on the virtual clock. One process per node ("node N")
// with a track per activity: "core" (handler spans), "host DMA", "Tx", "Rx"
// (transfers), "link" (packets on the node's cable), "host" (library
// calls) and "packets" (a packet's send and arrival, joined by a flow
// arrow); cables between switches go to a process "fabric". Console lines
// and faults are instant events on the core's track. Format and
// categories: docs/profiling.md, "Traces".
//
// The file is written as the run goes (never held whole in memory), in an
// order fixed by the events themselves, so the same run gives the same bytes.
#pragma once

#include "observe/run_events.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace nicemu {

// Categories, selectable with --trace-filter.
enum TraceCategory : unsigned {
  kTraceCore = 1u << 0,    // "core": handler spans
  kTraceDma = 1u << 1,     // "dma": host DMA, Tx and Rx transfers
  kTraceLink = 1u << 2,    // "link": packets on cables
  kTraceHost = 1u << 3,    // "host": host library calls
  kTraceConsole = 1u << 4, // "console": the firmware's console lines
  kTraceFault = 1u << 5,   // "fault": faults of the cores
  kTraceAll = kTraceCore | kTraceDma | kTraceLink | kTraceHost | kTraceConsole |
              kTraceFault,
};

// "core,dma" -> kTraceCore | kTraceDma ("all" is every category). Throws
// nicemu::Error naming an unknown or missing category.
unsigned parse_trace_categories(std::string_view list);

class Scheduler;

class TraceWriter final : public RunEvents {
public:
  // Creates (or truncates) `path`; throws nicemu::Error if it cannot.
  explicit TraceWriter(const std::string &path,
                       unsigned categories = kTraceAll);
  ~TraceWriter() override; // finishes, ignoring errors, if finish() was not
  TraceWriter(const TraceWriter &) = delete;
  TraceWriter &operator=(const TraceWriter &) = delete;

  // Events are written sorted by (end time, process, track, order on the
  // track), so the file does not depend on the order in which the run
  // happens to tell events of different tracks at one instant. With the
  // run's clock, events that end before its now() are written as the run
  // goes (memory stays bounded): every event must be told no later than
  // the virtual time it ends. Without a clock, all wait for flush().
  void set_clock(const Scheduler *clock);
  // The same with a clock of the caller's: `now()` must say a time before
  // which no event will be told any more (a run spread over ranks gives
  // the time of the last collective that brought every rank's events).
  void set_clock(std::function<Time()> now) { now_ = std::move(now); }
  // Writes every buffered event. Events told after (the fabric's crossings
  // stuck behind a packet at the end of a run) follow, sorted among
  // themselves.
  void flush();
  // Flushes, ends the JSON document and closes the file; nothing is
  // recorded after. Throws nicemu::Error if the file could not be written.
  void finish();

  void handler_call(uint32_t node, std::string_view name, Time start,
                    Time end) override;
  void dma_transfer(uint32_t node, DmaEngineKind engine, Time start, Time end,
                    uint32_t bytes, bool to_host) override;
  void link_packet(const LinkRef &link, uint32_t source, uint64_t packet_id,
                   Time head, Time tail,
                   std::span<const uint8_t> frame) override;
  void host_call(uint32_t node, std::string_view what, Time start,
                 Time end) override;
  void console_line(uint32_t node, Time at, std::string_view line) override;
  void fault(uint32_t node, Time at, std::string_view what) override;

  // The process of the cables between switches (nodes are processes 0..).
  static constexpr uint32_t kFabricPid = 1u << 20;

private:
  // Tracks of a node, in display order; the tid is pid * 8 + track, so every
  // thread of the file has its own tid.
  enum Track : uint32_t { Core = 1, HostDma, Tx, Rx, Link, Host, Packets };

  // An event waiting for its turn. A lane is what one track's events come
  // from in order (link tracks: one per cable direction).
  struct Pending {
    Time end;
    uint32_t pid, track;
    uint64_t lane, seq;
    std::string text; // link slices: '\x01' where the slice id goes
    bool operator<(const Pending &o) const;
  };

  void add(Time end, uint32_t pid, Track track, uint64_t lane,
           std::string text);
  void write_before(Time limit);
  void write(Pending &event);
  std::string complete(uint32_t pid, Track track, std::string_view category,
                       std::string_view name, Time start, Time end,
                       std::string_view args);
  std::string link_slice(uint32_t pid, std::string_view name, Time head,
                         Time tail, std::string_view args);
  std::string flow_end(uint32_t node, uint64_t packet_id, Time at, bool send,
                       std::string_view args);
  std::string instant(uint32_t node, std::string_view category,
                      std::string_view name, Time at, std::string_view key,
                      std::string_view value);
  void announce(uint32_t pid, Track track);
  void emit(const std::string &event);

  std::FILE *file_ = nullptr;
  std::string path_;
  unsigned categories_;
  std::function<Time()> now_; // empty: no clock
  bool first_ = true;
  bool failed_ = false;
  std::vector<Pending> pending_;
  size_t write_at_; // pending_ size that triggers a write
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint64_t> lane_seq_;
  std::vector<uint8_t> announced_; // per node: bit 0 process, bit t track t
  uint8_t fabric_announced_ = 0;
  uint64_t next_slice_id_ = 1; // ids of the link slices (async events)
};

} // namespace nicemu
