// The observers `nicemu run` was asked for (--trace, --trace-filter,
// --pcap), opened before the run so that a bad path stops it early.
#pragma once

#include "observe/event_fanout.hpp"
#include "observe/pcap_writer.hpp"
#include "observe/trace_writer.hpp"

#include <functional>
#include <memory>
#include <string>

namespace nicemu {

class Scheduler;

struct ObserveOptions {
  std::string trace;        // trace-event JSON file; empty: none
  std::string trace_filter; // categories, e.g. "core,dma"; empty: all
  std::string pcap;         // capture directory; empty: none
};

class RunObservers {
public:
  // Throws nicemu::Error for a file or directory that cannot be written or
  // an unknown category.
  explicit RunObservers(const ObserveOptions &options);

  // For ClusterSpec::events (null: nothing to observe).
  RunEvents *events() { return fanout_.events(); }
  // Other observers of the same run (reports) join here, before the run.
  EventFanout &fanout() { return fanout_; }

  // Once the cluster is built: the run's clock lets the trace be written as
  // the run goes instead of at the end.
  void start(const Scheduler &clock);
  // The same with a clock of the caller's (TraceWriter::set_clock).
  void start(std::function<Time()> now);
  // After the run: has the network tell its last crossings through
  // `flush_network` (Fabric::flush_events; empty: no network) and closes
  // the files. Throws nicemu::Error if one could not be written.
  void finish(const std::function<void()> &flush_network);

private:
  EventFanout fanout_;
  std::unique_ptr<TraceWriter> trace_;
  std::unique_ptr<PcapWriter> pcap_;
};

} // namespace nicemu
