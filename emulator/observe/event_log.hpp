// What a rank's cards tell observers, kept to be told again on another
// rank. In a run spread over MPI ranks (docs/distributed.md), only the
// owner of a card runs it, so only the owner hears its handler calls, DMA
// transfers, host calls, console lines and faults; rank 0, which writes
// the trace, gets them with the round's collective and tells its
// observers in the order each card told them. The network's crossings
// (link_packet) are not kept: every rank holds the whole network, and
// rank 0's copy tells its own.
#pragma once

#include "observe/run_events.hpp"
#include "sim/state_archive.hpp"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace nicemu {

class EventLog final : public RunEvents {
public:
  void handler_call(uint32_t node, std::string_view name, Time start,
                    Time end) override;
  void dma_transfer(uint32_t node, DmaEngineKind engine, Time start, Time end,
                    uint32_t bytes, bool to_host) override;
  void host_call(uint32_t node, std::string_view what, Time start,
                 Time end) override;
  void console_line(uint32_t node, Time at, std::string_view line) override;
  void fault(uint32_t node, Time at, std::string_view what) override;

  // Writes what was told since the last write, and forgets it.
  void write(StateWriter &out);
  // Tells `to` what a log wrote, in the order it was told. Throws
  // nicemu::Error on damaged bytes.
  static void play(StateReader &in, RunEvents &to);

private:
  enum Kind : uint32_t { Handler, Dma, HostCall, Console, Fault };
  struct Entry {
    Kind kind;
    uint32_t node;
    Time start, end;
    uint64_t detail; // Dma: engine, bytes and direction
    std::string text;
  };
  void keep(Entry e);

  std::mutex mutex_; // cards running on worker threads may tell at once
  std::vector<Entry> entries_;
};

} // namespace nicemu
