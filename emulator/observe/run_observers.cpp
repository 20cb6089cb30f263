#include "observe/run_observers.hpp"

#include "nicemu/error.hpp"

namespace nicemu {

RunObservers::RunObservers(const ObserveOptions &options) {
  if (!options.trace_filter.empty() && options.trace.empty())
    throw Error("run: --trace-filter needs --trace FILE");
  unsigned categories = options.trace_filter.empty()
                            ? kTraceAll
                            : parse_trace_categories(options.trace_filter);
  if (!options.trace.empty()) {
    trace_ = std::make_unique<TraceWriter>(options.trace, categories);
    fanout_.add(trace_.get());
  }
  if (!options.pcap.empty()) {
    pcap_ = std::make_unique<PcapWriter>(options.pcap);
    fanout_.add(pcap_.get());
  }
}

void RunObservers::start(const Scheduler &clock) {
  if (trace_)
    trace_->set_clock(&clock);
}

void RunObservers::start(std::function<Time()> now) {
  if (trace_)
    trace_->set_clock(std::move(now));
}

void RunObservers::finish(const std::function<void()> &flush_network) {
  // The run's events first, then the crossings stuck in the network, which
  // may end before events already written.
  if (trace_)
    trace_->flush();
  if (flush_network && events())
    flush_network();
  // Close both even if the first fails; report the first failure.
  std::string failure;
  auto close = [&failure](auto &writer) {
    if (!writer)
      return;
    try {
      writer->finish();
    } catch (const Error &e) {
      if (failure.empty())
        failure = e.what();
    }
  };
  close(trace_);
  close(pcap_);
  if (!failure.empty())
    throw Error(failure);
}

} // namespace nicemu
